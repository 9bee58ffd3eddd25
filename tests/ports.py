"""Free loopback ports for the servers tests start on a port chosen beforehand: one, a run of them,
or a run a test restarts a server on. All below the kernel's ephemeral range, where nothing else
takes them meanwhile: a port bound and let go in that range (the usual "free port") can be handed
to the next port-0 bind or outgoing connection of any process before the test's server binds it;
a dev server's own ports, picked that way, collided with those of another test's server (seen in
CI: the dev server exited with "address already in use")."""

from __future__ import annotations

import random
import socket
from pathlib import Path

# The fixed ports of the docs' examples and the simulators' defaults (`trawl simulator --port 18504`,
# the demo's 18765): a test's server on one of them would take it from a page running meanwhile.
FIXED = range(18000, 19000)
# The ports this process handed out lately, oldest first: two calls of one test (the Temporal
# server's port, then the simulators' run) must not get overlapping ports that were both free
# when asked (seen in CI: the demo's dev server address was its first simulator's port).
GIVEN_KEPT = 3000
_given: dict[int, None] = {}


def _all_free(first: int, count: int) -> bool:
    """Ports ``first`` to ``first + count - 1`` can all be bound on 127.0.0.1 now."""
    try:
        for offset in range(count):
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", first + offset))
    except OSError:
        return False
    return True


def free_port() -> int:
    """A free loopback port for a server a test starts."""
    return restartable_ports(1)


def free_ports(count: int) -> int:
    """The first of ``count`` consecutive free loopback ports."""
    return restartable_ports(count)


def restartable_ports(count: int) -> int:
    """The first of ``count`` consecutive free loopback ports, for a server the test starts, or
    starts again on them (a restart, or a second command on the same settings).

    Chosen below the kernel's ephemeral range: while the server is not yet up, or down, no outgoing
    connection and no port-0 bind (a dev server picks five of its own that way) can take them.
    """
    try:
        ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral = 32768
    top = min(20000, ephemeral) - count  # SeaweedFS test servers choose from 20000 up
    for _ in range(200):
        first = random.randrange(10000, top)
        if FIXED.start - count < first < FIXED.stop:
            continue
        span = range(first, first + count)
        if any(port in _given for port in span) or not _all_free(first, count):
            continue
        _given.update(dict.fromkeys(span))
        while len(_given) > GIVEN_KEPT:
            del _given[next(iter(_given))]
        return first
    raise RuntimeError("no free loopback port range below the ephemeral ports")
