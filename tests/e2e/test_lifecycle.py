"""Long-running commands start, fail and stop cleanly (issue 24, items 1, 4 and 13).

A port trawl needs that is taken is one line and exit 2 before anything starts; every
long-running command (``up``, ``server``, ``worker``, ``api``, ``simulator``) ends soon after
SIGTERM or SIGINT, while starting too, and leaves no process of its own behind. Real ``trawl``
subprocesses, real dev servers, loopback only; bounds are generous (a loaded two-core machine).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_cli import TRAWL, trawl_env
from tests.ports import free_port
from tests.e2e.test_cli_mistakes import one_line_error
from tests.starter.test_embedded import DEADLINE, answers, dev_servers, wait_until

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="scans /proc")

STOP_BOUND_S = 30.0  # "within seconds" on a quiet machine; generous on a loaded one


def descendants(pid: int) -> set[int]:
    """Every live process under ``pid`` (the keeper of an embedded server, its dev server, ...)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@contextlib.contextmanager
def busy_port() -> Iterator[int]:
    """A loopback port something else listens on."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield busy.getsockname()[1]


class Command:
    """A long-running ``trawl`` command in the background; its output in files."""

    def __init__(self, tmp_path: Path, args: list[str], env: dict[str, str], name: str = "cmd") -> None:
        self.out = tmp_path / f"{name}.out"
        self.err = tmp_path / f"{name}.err"
        with open(self.out, "w") as out, open(self.err, "w") as err:
            self.proc = subprocess.Popen([TRAWL, *args], env=env, cwd=tmp_path, stdout=out, stderr=err)
        self.seen: set[int] = set()

    def output(self) -> str:
        return self.out.read_text() + self.err.read_text()

    def note_children(self) -> set[int]:
        self.seen |= descendants(self.proc.pid)
        return self.seen

    def stop(self, sig: signal.Signals) -> int:
        """Send ``sig``; the exit status, which must come within the bound, with no child left alive."""
        self.note_children()
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=STOP_BOUND_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"still running {STOP_BOUND_S:.0f} s after {sig.name}:\n{self.output()}") from None
        wait_until(lambda: not any(alive(pid) for pid in self.seen), f"{sorted(self.seen)} to end", STOP_BOUND_S)
        return code

    def kill(self) -> None:
        pids = self.note_children() if self.proc.poll() is None else self.seen
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait(timeout=30)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def commands() -> Iterator[list[Command]]:
    started: list[Command] = []
    yield started
    for command in started:
        command.kill()


def embedded_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A data directory whose own dev server runs on free ports (started by the command)."""
    return trawl_env(tmp_path, TRAWL_TEMPORAL__ADDRESS=f"127.0.0.1:{free_port()}",
                     TRAWL_TEMPORAL__UI_PORT=str(free_port()), TRAWL_WORKER__METRICS_PORT="0", **extra)


def run_bounded(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([TRAWL, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=DEADLINE)
    except subprocess.TimeoutExpired as err:
        raise AssertionError(f"trawl {' '.join(args)} still running after {DEADLINE:.0f} s: {err.stderr!r}") from None


# -- a taken port: one line, exit 2, nothing started ----------------------------------------------
def test_up_on_a_taken_api_port_is_one_line_and_starts_no_server(tmp_path: Path) -> None:
    with busy_port() as port:
        done = run_bounded(["up", "--port", str(port)], embedded_env(tmp_path), tmp_path)
    line = one_line_error(done)
    assert f"{port} is in use" in line and "--port" in line and "TRAWL_API__PORT" in line, line
    assert not dev_servers(tmp_path / "data" / "temporal.db")


def test_api_on_a_taken_port_is_one_line(tmp_path: Path, temporal_address: str) -> None:
    with busy_port() as port:
        done = run_bounded(["api", "--port", str(port)], trawl_env(tmp_path, temporal_address), tmp_path)
    line = one_line_error(done)
    assert f"{port} is in use" in line and "TRAWL_API__PORT" in line, line


def test_simulator_on_a_taken_port_is_one_line(tmp_path: Path) -> None:
    with busy_port() as port:
        done = run_bounded(["simulator", "--port", str(port)], trawl_env(tmp_path), tmp_path)
    line = one_line_error(done)
    assert f"{port} is in use" in line and "--port" in line, line


# -- the API's start-up failing: one line, exit, nothing left running ------------------------------
def broken_catalog(tmp_path: Path) -> str:
    """A SQLite catalog that cannot be opened: a directory where its file should be."""
    (tmp_path / "catalog.db").mkdir()
    return f"sqlite:///{tmp_path / 'catalog.db'}"


def test_up_whose_catalog_cannot_open_ends_with_one_line(tmp_path: Path) -> None:
    env = embedded_env(tmp_path, TRAWL_CATALOG__URL=broken_catalog(tmp_path), TRAWL_API__PORT=str(free_port()))
    line = one_line_error(run_bounded(["up"], env, tmp_path))
    assert "catalog" in line and "unable to open database file" in line, line
    assert not dev_servers(tmp_path / "data" / "temporal.db")


def test_api_whose_catalog_cannot_open_ends_with_one_line(tmp_path: Path, temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address, TRAWL_CATALOG__URL=broken_catalog(tmp_path),
                    TRAWL_API__PORT=str(free_port()))
    line = one_line_error(run_bounded(["api"], env, tmp_path))
    assert "the API could not start" in line and "unable to open database file" in line, line


# -- stopping: every long-running command, running or starting -------------------------------------
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_up_stops_on_a_signal_and_leaves_no_server(tmp_path: Path, commands: list[Command],
                                                   sig: signal.Signals) -> None:
    api = free_port()
    up = Command(tmp_path, ["up", "--port", str(api)], embedded_env(tmp_path))
    commands.append(up)
    wait_until(lambda: "Ctrl-C stops" in up.err.read_text() or up.proc.poll() is not None, "up to run")
    assert up.proc.poll() is None, up.output()
    assert dev_servers(tmp_path / "data" / "temporal.db")
    assert up.stop(sig) == 0, up.output()
    assert not dev_servers(tmp_path / "data" / "temporal.db") and not answers(api)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_server_stops_on_a_signal(tmp_path: Path, commands: list[Command], sig: signal.Signals) -> None:
    server = Command(tmp_path, ["server"], embedded_env(tmp_path))
    commands.append(server)
    wait_until(lambda: "Ctrl-C stops" in server.err.read_text() or server.proc.poll() is not None, "the server")
    assert server.stop(sig) == 0, server.output()
    assert not dev_servers(tmp_path / "data" / "temporal.db")


@pytest.mark.parametrize("command", [["server"], ["up"], ["crawls"]])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_command_waiting_to_start_a_server_stops_on_a_signal(tmp_path: Path, commands: list[Command],
                                                               command: list[str], sig: signal.Signals) -> None:
    """Another command holds the data directory's state lock (as while it starts the server): this
    one waits for it, and a signal ends the wait."""
    run_dir = tmp_path / "data" / "run"
    run_dir.mkdir(parents=True)
    lock = os.open(run_dir / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cmd = Command(tmp_path, [*command, *(["--port", str(free_port())] if command == ["up"] else [])],
                      embedded_env(tmp_path))
        commands.append(cmd)
        wait_until(lambda: cmd.output() or cmd.proc.poll() is not None or _waits_on_lock(cmd.proc.pid),
                   "the command to wait for the lock")
        assert cmd.proc.poll() is None, cmd.output()
        code = cmd.stop(sig)
    finally:
        os.close(lock)
    assert code in (0, 128 + sig, -sig), cmd.output()
    assert "Traceback" not in cmd.output(), cmd.output()
    assert not dev_servers(tmp_path / "data" / "temporal.db")


def _waits_on_lock(pid: int) -> bool:
    """``pid`` has the run directory's lock file open (it is waiting to lock it)."""
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                if os.readlink(fd).endswith("/run/lock"):
                    return True
    return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_up_stopped_while_its_server_starts_leaves_none(tmp_path: Path, commands: list[Command],
                                                        sig: signal.Signals) -> None:
    db = tmp_path / "data" / "temporal.db"
    up = Command(tmp_path, ["up", "--port", str(free_port())], embedded_env(tmp_path))
    commands.append(up)
    wait_until(lambda: dev_servers(db) or up.proc.poll() is not None, "the dev server to be started")
    assert up.proc.poll() is None, up.output()
    code = up.stop(sig)
    assert code in (0, 128 + sig), up.output()
    assert "Traceback" not in up.output(), up.output()
    wait_until(lambda: not dev_servers(db), "no dev server", STOP_BOUND_S)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_worker_stops_on_a_signal(tmp_path: Path, commands: list[Command], temporal_address: str,
                                  sig: signal.Signals) -> None:
    worker = Command(tmp_path, ["worker"], trawl_env(tmp_path, temporal_address, TRAWL_WORKER__METRICS_PORT="0"))
    commands.append(worker)
    wait_until(lambda: "worker started" in worker.output() or worker.proc.poll() is not None, "the worker")
    assert worker.stop(sig) == 0, worker.output()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_api_stops_on_a_signal(tmp_path: Path, commands: list[Command], temporal_address: str,
                               sig: signal.Signals) -> None:
    port = free_port()
    api = Command(tmp_path, ["api", "--port", str(port)], trawl_env(tmp_path, temporal_address))
    commands.append(api)
    wait_until(lambda: "Ctrl-C stops" in api.err.read_text() or api.proc.poll() is not None, "the API")
    assert api.stop(sig) == 0, api.output()
    assert not answers(port)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_simulator_stops_on_a_signal(tmp_path: Path, commands: list[Command], sig: signal.Signals) -> None:
    port = free_port()
    sim = Command(tmp_path, ["simulator", "--port", str(port)], trawl_env(tmp_path))
    commands.append(sim)
    wait_until(lambda: "Ctrl-C stops" in sim.err.read_text() or sim.proc.poll() is not None, "the simulator")
    assert sim.stop(sig) == 0, sim.output()
    assert not answers(port)


# -- 4: the simulator says how to crawl it ---------------------------------------------------------
def test_simulator_says_how_to_crawl_loopback(tmp_path: Path, commands: list[Command]) -> None:
    port = free_port()
    sim = Command(tmp_path, ["simulator", "--port", str(port)], trawl_env(tmp_path))
    commands.append(sim)
    wait_until(lambda: "Ctrl-C stops" in sim.err.read_text() or sim.proc.poll() is not None, "the simulator")
    text = sim.output()
    assert "TRAWL_NET__ALLOW_PRIVATE=true" in text and "net.allowed_networks" in text, text
    urls = [line for line in sim.out.read_text().splitlines() if line.strip()]
    assert urls and all(line.startswith(f"http://127.0.0.1:{port}/") for line in urls), urls  # stdout: URLs only


# -- 13: quiet logs --------------------------------------------------------------------------------
def test_api_logs_no_alembic_info(tmp_path: Path, commands: list[Command], temporal_address: str) -> None:
    port = free_port()
    api = Command(tmp_path, ["api", "--port", str(port)], trawl_env(tmp_path, temporal_address))
    commands.append(api)
    wait_until(lambda: "Ctrl-C stops" in api.err.read_text() or api.proc.poll() is not None, "the API")
    assert api.stop(signal.SIGTERM) == 0, api.output()
    logged = [json.loads(line) for line in api.out.read_text().splitlines() if line.startswith("{")]
    assert logged, api.output()
    noisy = [r["event"] for r in logged if "setup plugin" in r["event"] or "Context impl" in r["event"]
             or "non-transactional DDL" in r["event"]]
    assert not noisy, noisy
