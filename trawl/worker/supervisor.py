"""``trawl worker --processes N``: N worker processes, restarted when they die, stopped together.

Each child is a plain ``trawl worker`` with its own identity and metrics port (the base port
plus its index); SIGTERM or SIGINT to the supervisor is forwarded so every child shuts down
gracefully (running downloads record their offset), then the supervisor exits.

A child whose server is unreachable does not exit: it says so once and retries the connection
with backoff (``trawl worker --supervised``), so a server that is down or not up yet costs no
restart loop. A child that exits with status 2 (its settings cannot work) soon after starting
would fail the same way again: the supervisor stops them all and exits 2.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

from trawl.logs import get_logger
from trawl.settings import Settings

log = get_logger("trawl.supervisor")

# A child that dies within this many seconds of starting is restarted after a growing pause,
# so a worker that cannot start (bad settings, no server) does not spin.
QUICK_DEATH = 5.0
EXIT_USAGE = 2  # a child's settings cannot work: restarting it would not help
PR_SET_PDEATHSIG = 1
MAX_BACKOFF = 30.0


@dataclass
class Child:
    index: int
    process: subprocess.Popen[bytes]
    started: float
    backoff: float = 0.0


def child_env(settings: Settings, index: int) -> dict[str, str]:
    env = dict(os.environ)
    identity = settings.worker.identity or f"{socket.gethostname()}:{os.getpid()}"
    env["TRAWL_WORKER__PROCESSES"] = "1"
    env["TRAWL_WORKER__IDENTITY"] = f"{identity}-w{index}"
    if settings.worker.metrics_port:
        env["TRAWL_WORKER__METRICS_PORT"] = str(settings.worker.metrics_port + index)
    return env


def _die_with_parent() -> None:
    """Linux: SIGTERM this child when the supervisor dies, even by SIGKILL (no orphan workers)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


def spawn(settings: Settings, index: int) -> Child:
    process = subprocess.Popen([sys.executable, "-m", "trawl.cli", "worker", "--supervised"],
                               env=child_env(settings, index),
                               preexec_fn=_die_with_parent if sys.platform == "linux" else None)
    log.info("worker process started", index=index, pid=process.pid)
    return Child(index, process, time.monotonic())


def supervise(settings: Settings, processes: int) -> int:
    stopping = False

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    children = [spawn(settings, i) for i in range(processes)]
    status = 0
    while not stopping:
        time.sleep(0.2)
        for n, child in enumerate(children):
            code = child.process.poll()
            if code is None or stopping:
                continue
            quick = time.monotonic() - child.started < QUICK_DEATH
            if quick and code == EXIT_USAGE:
                log.error("worker process cannot start with these settings (see its message above); stopping",
                          index=child.index, pid=child.process.pid, exit_code=code)
                stopping, status = True, EXIT_USAGE
                break
            backoff = min(MAX_BACKOFF, child.backoff * 2 or 1.0) if quick else 0.0
            log.warning("worker process died; restarting", index=child.index, pid=child.process.pid,
                        exit_code=code, restart_in_s=backoff)
            deadline = time.monotonic() + backoff
            while time.monotonic() < deadline and not stopping:
                time.sleep(0.1)
            if not stopping:
                children[n] = spawn(settings, child.index)
                children[n].backoff = backoff
    log.info("stopping worker processes", count=len(children))
    for child in children:
        if child.process.poll() is None:
            child.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + settings.worker.graceful_shutdown_timeout.total_seconds() + 5
    for child in children:
        try:
            child.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log.warning("worker process did not stop in time; killing it", pid=child.process.pid)
            child.process.kill()
            child.process.wait()
    return status
