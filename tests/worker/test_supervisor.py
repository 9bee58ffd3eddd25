"""`trawl worker --processes N`: N real processes, each its own identity and metrics port; a
killed one is restarted; SIGTERM stops them all."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.e2e.test_cli import trawl_env
from tests.polling import wait_until as wait

TRAWL = str(Path(sys.executable).parent / "trawl")


def _all_free(first: int, count: int) -> bool:
    """Ports ``first`` to ``first + count - 1`` can all be bound on 127.0.0.1 now."""
    try:
        for offset in range(count):
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", first + offset))
    except OSError:
        return False
    return True


def free_ports(count: int) -> int:
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            first = s.getsockname()[1]
        if _all_free(first, count):
            return first
    raise RuntimeError("no free port range")


def restartable_ports(count: int) -> int:
    """The first of ``count`` consecutive free loopback ports for a server the test restarts on them.

    Chosen below the kernel's ephemeral range: while the server is down, no outgoing connection and
    no port-0 bind (a dev server picks five of its own that way) can take them, as happened to a
    restart on ports from :func:`free_ports`.
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


def metrics_up(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as resp:
            return resp.status == 200
    except OSError:
        return False


def started_pids(log: Path) -> list[int]:
    pids = []
    for line in log.read_text().splitlines():
        if line.startswith("{"):
            event = json.loads(line)
            if event["event"] == "worker process started":
                pids.append(event["pid"])
    return pids


def test_processes_are_supervised(tmp_path: Path, temporal_address: str) -> None:
    port = free_ports(2)
    env = trawl_env(tmp_path, temporal_address, TRAWL_WORKER__METRICS_PORT=str(port))
    log = tmp_path / "supervisor.log"
    with open(log, "wb") as out:
        supervisor = subprocess.Popen([TRAWL, "worker", "--processes", "2"], env=env, cwd=tmp_path, stdout=out,
                                      stderr=subprocess.STDOUT)
    try:
        wait(lambda: metrics_up(port) and metrics_up(port + 1))  # two processes, one port each
        first = started_pids(log)
        assert len(first) == 2
        os.kill(first[0], signal.SIGKILL)
        wait(lambda: len(started_pids(log)) == 3)
        replacement = started_pids(log)[2]
        wait(lambda: metrics_up(port))
        assert replacement not in first
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(timeout=60) == 0
        for pid in (first[1], replacement):
            assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    finally:
        if supervisor.poll() is None:
            supervisor.kill()


def test_workers_do_not_outlive_a_killed_supervisor(tmp_path: Path, temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address, TRAWL_WORKER__METRICS_PORT="0")
    log = tmp_path / "supervisor.log"
    with open(log, "wb") as out:
        supervisor = subprocess.Popen([TRAWL, "worker", "--processes", "2"], env=env, cwd=tmp_path, stdout=out,
                                      stderr=subprocess.STDOUT)
    wait(lambda: len(started_pids(log)) == 2)
    children = started_pids(log)
    supervisor.kill()
    supervisor.wait()
    wait(lambda: not any(Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text()
                         for pid in children), timeout=30)
