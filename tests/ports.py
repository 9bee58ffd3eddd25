"""Free loopback ports for the servers tests start on a port chosen beforehand: one, a run of them,
or a run a test restarts a server on. All below the kernel's ephemeral range, where nothing else
takes them meanwhile: a port bound and let go in that range (the usual "free port") can be handed
to the next port-0 bind or outgoing connection of any process before the test's server binds it;
a dev server's own ports, picked that way, collided with those of another test's server (seen in
CI: the dev server exited with "address already in use")."""

from __future__ import annotations

import os
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
# Where the ports come from: 10000 up to the fixed ones, split between the suite's processes
# (pytest-xdist), each choosing from its own share: a port one process handed out, not yet bound
# by its test's server, could otherwise be found free and taken by another's (seen in CI: `trawl
# api` found its port in use).
PORTS = range(10000, FIXED.start)


def share(worker: str | None = None, workers: int | None = None) -> range:
    """This process's share of PORTS (all of them outside pytest-xdist)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "") if worker is None else worker
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) if workers is None else workers
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    if workers <= 1 or index >= workers:
        return PORTS
    size = len(PORTS) // workers
    return range(PORTS.start + index * size, PORTS.start + (index + 1) * size)


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
    own = share()
    top = min(own.stop, ephemeral) - count  # SeaweedFS test servers choose from 20000 up
    kept = min(GIVEN_KEPT, len(own) // 2)  # so that half of the share is always there to choose from
    for _ in range(200):
        first = random.randrange(own.start, top)
        span = range(first, first + count)
        if any(port in _given for port in span) or not _all_free(first, count):
            continue
        _given.update(dict.fromkeys(span))
        while len(_given) > kept:
            del _given[next(iter(_given))]
        return first
    raise RuntimeError("no free loopback port range below the ephemeral ports")


# Sockets bound (never listening) for the life of the test process: a connection to their port is
# refused, and no other process can bind it meanwhile. A port bound and let go at once was taken by
# another test's server before the command connected (seen in CI: a read-only command found an HTTP
# server there, "h2 protocol error", not "no server answers").
_held: list[socket.socket] = []


def closed_address() -> str:
    """A loopback address where nothing listens, for as long as the test process lives."""
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    _held.append(held)
    return f"127.0.0.1:{held.getsockname()[1]}"
