"""The embedded Temporal dev server as trawl commands start, share and stop it (issue 12, items 2 and 3).

Real ``trawl`` subprocesses, each test with its own data directory and free loopback ports. Dev
servers are found by scanning /proc for ``temporal server start-dev`` processes whose command
line names the test's database file, so nothing here depends on the run-state format; every
wait has a deadline, and whatever a test leaves behind is killed when it ends.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_cli import TRAWL, run, trawl_env
from tests.ports import free_port, free_ports
from tests.polling import wait_until

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="scans /proc; PR_SET_PDEATHSIG is Linux only")

DEADLINE = 90.0  # a generous bound for a dev server to start or stop on a busy two-core machine


def dev_servers(db: Path) -> list[int]:
    """Pids of running ``temporal server start-dev`` processes persisted in ``db``."""
    found = []
    target = str(db.resolve())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        args = [a.decode(errors="replace") for a in argv]
        if state != "Z" and "start-dev" in args and "server" in args and target in args:
            found.append(int(entry.name))
    return sorted(found)


def answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


class Stack:
    """One test's data directory, its ports and the trawl processes it started."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.db = tmp_path / "data" / "temporal.db"
        self.procs: list[subprocess.Popen[str]] = []

    def env(self, port: int, ui_port: int | None = None, **extra: str) -> dict[str, str]:
        return trawl_env(self.tmp_path, TRAWL_TEMPORAL__ADDRESS=f"127.0.0.1:{port}",
                         TRAWL_TEMPORAL__UI_PORT=str(ui_port or free_port()), **extra)

    def server(self, env: dict[str, str], name: str) -> subprocess.Popen[str]:
        """``trawl server`` in the background, its output in files (a pipe nobody reads could block it)."""
        out = open(self.tmp_path / f"{name}.out", "w")
        err = open(self.tmp_path / f"{name}.err", "w")
        proc = subprocess.Popen([TRAWL, "server"], env=env, cwd=self.tmp_path, stdout=out, stderr=err, text=True)
        out.close()
        err.close()
        self.procs.append(proc)
        return proc

    def stderr(self, name: str) -> str:
        return (self.tmp_path / f"{name}.err").read_text()

    def cleanup(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
        for pid in dev_servers(self.db):  # orphans of a failing test must not outlive it
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    s = Stack(tmp_path)
    try:
        yield s
    finally:
        s.cleanup()


@pytest.fixture
def unserved_port() -> Iterator[int]:
    """A loopback port nothing answers at for the whole test: bound here and never listened on, so
    no process (a dev server picks five more ports of its own at random) can take it meanwhile."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def serving(stack: Stack, port: int) -> list[int]:
    """Wait until a dev server of the stack's database answers at ``port``; its pids."""
    return wait_until(lambda: answers(port) and dev_servers(stack.db), f"a dev server at {port}")  # type: ignore[return-value]


def stop(proc: subprocess.Popen[str], sig: signal.Signals = signal.SIGINT) -> int:
    proc.send_signal(sig)
    return proc.wait(timeout=DEADLINE)


# -- item 2: one server per data directory, never outliving its commands ------------------------
@pytest.mark.parametrize("command", [["crawls"], ["server"]])
def test_a_command_told_another_address_refuses_the_running_server_and_starts_none(stack: Stack,
                                                                                   command: list[str],
                                                                                   unserved_port: int) -> None:
    """An explicit temporal.address is never swapped for this data directory's server elsewhere
    (issue 24, item 5): nothing answers there, and a second server on one temporal.db cannot run."""
    port, other = free_port(), unserved_port
    up = stack.server(stack.env(port), "up")
    first = serving(stack, port)
    assert len(first) == 1

    done = run(command, stack.env(other), stack.tmp_path, timeout=DEADLINE)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert f"127.0.0.1:{port}" in lines[0] and f"127.0.0.1:{other}" in lines[0], lines
    assert "TRAWL_TEMPORAL__ADDRESS" in lines[0], lines
    assert dev_servers(stack.db) == first  # no second server on the same temporal.db, none left behind
    assert not answers(other)

    assert stop(up) == 0, stack.stderr("up")  # Ctrl-C on the first stops the server it started
    wait_until(lambda: not dev_servers(stack.db), "the dev server to stop after Ctrl-C")
    assert not answers(port)


def test_a_sigkilled_command_leaves_no_server_running(stack: Stack) -> None:
    port = free_port()
    server = stack.server(stack.env(port), "server")
    pids = serving(stack, port)
    stop(server, signal.SIGKILL)
    wait_until(lambda: not dev_servers(stack.db), f"dev server {pids} to die with its SIGKILLed command")
    wait_until(lambda: not answers(port), "the frontend port to close")


def test_a_shared_server_lives_while_any_command_uses_it(stack: Stack) -> None:
    """Sharing stays: the command that started the server dies, the one still using it keeps it."""
    port = free_port()
    env = stack.env(port)
    starter = stack.server(env, "starter")
    pids = serving(stack, port)
    joiner = stack.server(env, "joiner")
    wait_until(lambda: "Ctrl-C stops" in stack.stderr("joiner"), "the second command to join")
    stop(starter, signal.SIGKILL)
    time.sleep(2)  # long enough for a server dying with its starter to be gone
    assert dev_servers(stack.db) == pids and answers(port)
    assert stop(joiner) == 0, stack.stderr("joiner")
    wait_until(lambda: not dev_servers(stack.db), "the last user to stop the server")


def test_a_sigkilled_one_shot_command_leaves_no_server_running(stack: Stack) -> None:
    """``crawl --no-worker`` waits for a result no worker will produce: killed while it waits."""
    port = free_port()
    proc = subprocess.Popen([TRAWL, "crawl", "--no-worker", "http://127.0.0.1:9/never.mp4"], env=stack.env(port),
                            cwd=stack.tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    stack.procs.append(proc)
    serving(stack, port)
    assert proc.poll() is None
    stop(proc, signal.SIGKILL)
    wait_until(lambda: not dev_servers(stack.db), "the dev server to die with its command")


# -- item 3: the dev server's HTTP port, and what a failed start shows --------------------------
def test_the_ui_port_next_to_the_frontend_port_works(stack: Stack) -> None:
    port = free_ports(2)
    server = stack.server(stack.env(port, ui_port=port + 1), "server")
    serving(stack, port)
    assert stop(server) == 0, stack.stderr("server")
    wait_until(lambda: not dev_servers(stack.db), "the dev server to stop")


def test_a_failed_start_shows_only_this_starts_log_lines(stack: Stack) -> None:
    run_dir = stack.tmp_path / "data" / "run"
    run_dir.mkdir(parents=True)
    (run_dir / "temporal.log").write_text("STALE banner of an earlier run\n" * 5)
    stack.db.mkdir()  # a directory where the database file should be: the dev server cannot open it
    done = run(["server"], stack.env(free_port()), stack.tmp_path, timeout=DEADLINE)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "unable to open database file" in done.stderr  # this start's own output
    assert "STALE" not in done.stderr


def test_a_busy_ui_port_is_one_line(stack: Stack) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        ui_port = busy.getsockname()[1]
        done = run(["server"], stack.env(free_port(), ui_port=ui_port), stack.tmp_path, timeout=DEADLINE)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and str(ui_port) in lines[0] and "TRAWL_TEMPORAL__UI_PORT" in lines[0], lines
    assert not dev_servers(stack.db)


def test_the_frontend_port_as_ui_port_is_one_line(stack: Stack) -> None:
    port = free_port()
    done = run(["server"], stack.env(port, ui_port=port), stack.tmp_path, timeout=DEADLINE)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "TRAWL_TEMPORAL__UI_PORT" in lines[0], lines
    assert not dev_servers(stack.db)


def test_the_keeper_starts_its_server_without_importing_temporals_sdk() -> None:
    # The keeper (python -m trawl.starter.embedded) is on the first command's path to a server.
    code = ("import sys, trawl.starter.embedded\n"
            "print(sorted(m for m in sys.modules if m.startswith(('temporalio', 'trawl.contracts', 'httpx'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def _first_start_loses_a_port(port_line: str, marker: Path, real: list[str]) -> list[str]:
    """A dev server command whose first start fails as a dev server does when a port was taken
    before it bound it, and whose next starts are the real server's."""
    script = (f"if [ -e {marker} ]; then exec \"$@\"; fi; touch {marker}; "
              f"echo 'Error: unable to start server: {port_line}' >&2; exit 1")
    return ["sh", "-c", script, "sh", *real]


@pytest.mark.parametrize("chosen", [False, True], ids=["its-own-port", "a-port-of-the-settings"])
def test_a_dev_server_that_lost_a_port_it_picked_itself_is_started_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chosen: bool) -> None:
    from trawl.settings import Settings, TemporalSettings
    from trawl.starter import embedded

    port, ui_port = free_port(), free_port()
    settings = Settings(data_dir=tmp_path / "data",
                        temporal=TemporalSettings(address=f"127.0.0.1:{port}", ui_port=ui_port))
    lost = ui_port if chosen else free_port()
    marker = tmp_path / "first-start"
    real = embedded.dev_server_command
    monkeypatch.setattr(embedded, "dev_server_command", lambda s: _first_start_loses_a_port(
        f"listen tcp 127.0.0.1:{lost}: bind: address already in use", marker, real(s)))
    if chosen:  # a port trawl was told to use, taken: starting again would not help
        with pytest.raises(embedded.ServerError, match=f"{lost}: bind: address already in use"):
            with embedded.temporal_server(settings):
                pass
        assert not dev_servers(settings.temporal_db)
        return
    with embedded.temporal_server(settings) as running:
        assert marker.exists()
        assert answers(port) and running.temporal.address == f"127.0.0.1:{port}"
        assert not (settings.data_dir / "run" / "ended.json").exists()
    wait_until(lambda: not dev_servers(settings.temporal_db), "the dev server to stop")
