"""Free loopback ports for the servers tests start: one, a run of them, or a run a test restarts a
server on (below the kernel's ephemeral range, where nothing else takes them meanwhile)."""

from __future__ import annotations

import random
import socket
from pathlib import Path


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
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_ports(count: int) -> int:
    """The first of ``count`` consecutive free loopback ports."""
    for _ in range(50):
        first = free_port()
        if _all_free(first, count):
            return first
    raise RuntimeError("no free port range")


def restartable_ports(count: int) -> int:
    """The first of ``count`` consecutive free loopback ports for a server the test starts again
    on them (a restart, or a second command on the same settings).

    Chosen below the kernel's ephemeral range: while the server is down, no outgoing connection and
    no port-0 bind (a dev server picks five of its own that way) can take them, as happened to
    restarts on ports from :func:`free_ports`.
    """
    try:
        ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral = 32768
    top = min(20000, ephemeral) - count  # SeaweedFS test servers choose from 20000 up
    for _ in range(200):
        first = random.randrange(10000, top)
        if _all_free(first, count):
            return first
    raise RuntimeError("no free loopback port range below the ephemeral ports")
