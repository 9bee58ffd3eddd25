"""What the command modules share: a Temporal session, stop signals, naming an item by id or URL,
listening sockets, notices."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import errno
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio.client import Client

from trawl.cli.output import CommandError, StatusLine
from trawl.starter.client import background_workers, connect, ensure_search_attributes, live_workers
from trawl.starter.embedded import EmbeddedServer, background_worker_settings, settings_for, take_early
from trawl.logs import get_logger, plain_stream
from trawl.platforms.registry import Registry
from trawl.worker.runtime import BACKGROUND_MARK
from trawl.settings import Settings

if TYPE_CHECKING:
    from trawl.storage.catalog import Catalog

log = get_logger("trawl.cli")

# Set by the dispatcher (trawl.cli.main) for the commands that only read: status, crawls, ...
# Their session starts no server and their catalog is never created (see session, open_catalog).
_read_only: contextvars.ContextVar[bool] = contextvars.ContextVar("read_only", default=False)


def only_reading(read_only: bool = True) -> None:
    """Mark this command as one that only reads, for :func:`session` and :func:`open_catalog`."""
    _read_only.set(read_only)


# Set by the dispatcher for the foreground services (up, server, worker, api): a server they start
# stops with them; one a one-shot command starts lingers in the background (temporal.idle_timeout).
_foreground: contextvars.ContextVar[bool] = contextvars.ContextVar("foreground", default=False)


def in_foreground(foreground: bool = True) -> None:
    """Mark this command as a foreground service, for :func:`session`."""
    _foreground.set(foreground)


def _linger(settings: Settings, read_only: bool) -> float:
    """How long a server this command starts runs on after it (0: it stops with its last user)."""
    if read_only or _foreground.get():
        return 0.0
    return settings.temporal.idle_timeout.total_seconds()


def notice(message: str, **fields: Any) -> None:
    """Tell the person running the command something they should know, once.

    A plain line on stderr (kept in the data directory's log file too); with ``--log-json`` stderr
    carries JSON log lines, so the notice is one of them, at warning level so that the default
    level keeps it.
    """
    if sys.stderr.isatty() or plain_stream():
        line = StatusLine.shown
        if line is not None and line.text:
            line.print(f"trawl: {message}", file=sys.stderr)
        else:
            print(f"trawl: {message}", file=sys.stderr, flush=True)
        log.info(message, **fields)
    else:
        log.warning(message, **fields)


def listen(host: str, port: int, *, setting: str, fix: str) -> socket.socket:
    """A socket listening on ``host:port``, bound before anything else starts: a taken port is
    then one line naming ``setting`` and ``fix``, not a failure after servers and workers started."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.create_server((host, port), family=family, backlog=2048)
    except OSError as err:
        if err.errno == errno.EADDRINUSE:
            raise CommandError(f"{setting} {port} is in use on {host} (another trawl running?): {fix}") from None
        raise CommandError(f"cannot listen on {host}:{port} ({err.strerror or err}): {fix}") from None
    no_delay(sock)
    return sock


def no_delay(sock: socket.socket) -> None:
    """Nagle off for every connection ``sock`` accepts, from the first (they inherit it when their
    handshake completes, which may be before the server accepts them). asyncio turns it off only
    on sockets whose protocol says TCP, and socket.create_server leaves that 0: every answer after
    the first on a kept-alive connection (a browser's thumbnails, a page's refresh, an API
    client's calls) then waited 40 ms for the client's delayed ACK."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _missing_sqlite_file(url: str) -> str | None:
    """The path of a SQLite catalog file that does not exist yet; None for any other catalog."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    path = Path(parsed.database).resolve()
    return None if path.exists() else str(path)


def open_catalog(settings: Settings, *, schema: bool = True, read_only: bool | None = None) -> Catalog:
    """The catalog, for a command that reads or writes it; its tables are made or migrated first
    unless ``schema`` is False (a catalog the same command's crawl already used). SQLAlchemy
    loads here, so the commands that never open the catalog start without it.

    A command that only reads (``read_only``, by default what the dispatcher said) creates no
    SQLite catalog where there is none: a person in the wrong directory is told where it looked.
    """
    from trawl.storage.catalog import Catalog

    if _read_only.get() if read_only is None else read_only:
        missing = _missing_sqlite_file(settings.catalog_url)
        if missing:
            raise CommandError(f"no catalog at {missing}: nothing was crawled with the data directory "
                               f"{settings.data_dir.resolve()}; run this where you crawled, or point it there "
                               "with TRAWL_DATA_DIR (data_dir) or TRAWL_CATALOG__URL (catalog.url)")
    catalog = Catalog(settings.catalog_url)
    if schema:
        catalog.create_schema()
    return catalog


def connect_failed(err: BaseException) -> bool:
    """The SDK's way of saying nothing answered at the address (a RuntimeError, not an RPCError)."""
    return isinstance(err, RuntimeError) and "Failed client connect" in str(err)


def unreachable_error(settings: Settings, err: BaseException) -> CommandError:
    reason = str(err)
    for known in ("Connection refused", "timed out", "No route to host", "Name or service not known",
                  "failed to lookup address"):
        if known in reason:
            reason = known.lower()
            break
    else:
        reason = reason.removeprefix("Failed client connect: ")[:120]
    return CommandError(f"no Temporal server answers at {settings.temporal.address} ({reason}): start one with "
                        "`trawl server` (or `trawl up`), or set temporal.address (TRAWL_TEMPORAL__ADDRESS) to yours")


async def connect_or_explain(settings: Settings, *, metrics: bool = False) -> Client:
    """``connect``, with an unreachable server turned into a :class:`CommandError`."""
    try:
        return await connect(settings, metrics=metrics)
    except RuntimeError as err:
        if connect_failed(err):
            raise unreachable_error(settings, err) from None
        raise


@contextlib.asynccontextmanager
async def temporal(settings: Settings, *, read_only: bool = False) -> AsyncIterator[Settings]:
    """A Temporal server answering for the body (found, joined or started: the policy is
    ``trawl.starter.embedded``'s); yields the settings naming it."""
    async with _embedded(settings, read_only=read_only) as (settings, _):
        yield settings


async def _in_thread(server: EmbeddedServer, call: Any) -> Any:
    """``call()`` (blocking, abandonable through ``server.abandon``) in a thread; a cancel tells it
    to give up and waits for it."""
    running = asyncio.ensure_future(asyncio.to_thread(call))
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        server.abandon.set()
        while not running.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({running})
        raise


def _tell(server: EmbeddedServer) -> None:
    for message in server.notices:
        notice(message)
    server.notices.clear()


@contextlib.asynccontextmanager
async def _embedded(settings: Settings, *, read_only: bool = False
                    ) -> AsyncIterator[tuple[Settings, EmbeddedServer]]:
    """:func:`temporal`, with the :class:`EmbeddedServer` that found or started the server.

    The blocking search runs in a thread, so that a stop (a signal cancelling the command while
    it starts) ends the wait at once: the thread is told to give up, which stops a server it was
    starting, and is waited for.
    """
    linger = _linger(settings, read_only)
    server = take_early(settings, read_only=read_only, linger=linger)  # begun by the dispatcher
    if server is None:
        server = EmbeddedServer(settings, read_only=read_only, linger=linger)
        server.begin()
    assert server.acquiring is not None
    acquiring = asyncio.wrap_future(server.acquiring)
    try:
        await _load_worker_while_it_boots(server, acquiring)
        address = await asyncio.shield(acquiring)
    except asyncio.CancelledError:
        server.abandon.set()
        while not acquiring.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({acquiring})
        if not acquiring.cancelled() and acquiring.exception() is None:
            server.release()  # it found a server just before giving up
        raise
    try:
        _tell(server)
        if address != settings.temporal.address:
            notice(f"using the Temporal server of {settings.data_dir} at {address} (temporal.address is not set)",
                   address=address)
        yield settings_for(settings, server, address), server
    finally:
        server.release()


async def _load_worker_while_it_boots(server: EmbeddedServer, acquiring: asyncio.Future[str]) -> None:
    """A command that starts the server and does its own items first (EmbeddedServer.deferred_worker)
    loads its worker while the server boots, here in the main thread, which only waits meanwhile (a
    thread of its own would import beside the command's imports, and two threads importing at once
    can meet in a circle of some library's modules)."""
    while not acquiring.done():
        if server.deferred_worker:
            import trawl.worker.main  # noqa: F401 - session's running_worker finds it loaded

            return
        await asyncio.wait({acquiring}, timeout=0.02)


async def background_worker(settings: Settings, server: EmbeddedServer) -> None:
    """Have the lingering server's keeper run a worker with ``settings`` (the command's own, paths
    made absolute: the worker outlives the command and its working directory)."""
    text = background_worker_settings(settings)
    await _in_thread(server, lambda: server.ensure_worker(text))
    _tell(server)


@contextlib.asynccontextmanager
async def session(settings: Settings, *, worker: bool, registry: Registry | None = None,
                  metrics: bool = False, one_shot: bool = False, read_only: bool | None = None,
                  background: bool = False) -> AsyncIterator[Client]:
    """A Temporal client (starting the embedded server if needed) and, optionally, a worker.

    ``background`` (with no worker here): the command leaves work for workers elsewhere (crawl
    --detach); on an embedded server that lingers, with no long-running worker polling, its
    background worker is asked for.

    A ``one_shot`` command (crawl, fsck --repair) runs its own worker only when none of the
    deployment's workers polls its queues: workers on one queue must be interchangeable, and the
    running ones carry the operator's settings (net policy, limits, platforms), which a client's
    settings may not widen or change.

    A ``read_only`` command (by default what the dispatcher said: status, crawls, ...) never
    starts a server: when none answers it says where it looked, and creates no file.
    """
    read_only = _read_only.get() if read_only is None else read_only
    async with _embedded(settings, read_only=read_only) as (settings, server):
        client = await connect_or_explain(settings, metrics=metrics)
        if not server.started:  # a server this command started registered them at its start
            await ensure_search_attributes(client, settings.temporal.namespace)
        if worker and not server.lingering:
            await _no_other_archives_worker(client, settings)
        if worker and one_shot:
            running = await live_workers(client, settings)
            if running:
                shown = ", ".join(running[:3]) + (f" and {len(running) - 3} more" if len(running) > 3 else "")
                notice(f"the workers already polling the {settings.temporal.task_queue_prefix!r} queues ({shown}) do "
                       "this work, under their own settings; no worker started here", workers=running)
                await _in_thread(server, server.retract_worker)  # one its start asked for, if any
                worker = False
            elif server.lingering:  # the server runs on in the background: so does the worker
                await background_worker(settings, server)
                # The command that started it does its own items first, with a worker of its own
                # (trawl.starter.embedded.OWN_WORKER_LOCK): the background one starts once it is
                # done, and its imports do not take the cores this first crawl needs.
                worker = server.deferred_worker
        elif background and server.lingering:  # the work of a detached crawl, say
            if await live_workers(client, settings):
                await _in_thread(server, server.retract_worker)  # theirs to do; one its start asked for, if any
            else:
                await background_worker(settings, server)
        if worker:
            from trawl.worker.main import running_worker  # the worker and its activities: only when one runs here

            async with running_worker(client, settings, registry, one_shot=one_shot) as workers:
                giving_way = asyncio.create_task(_give_way(server, workers)) if server.deferred_worker else None
                try:
                    yield client
                finally:  # before this worker stops: what it leaves running goes on in the background
                    if giving_way is not None:
                        giving_way.cancel()
                    if server.deferred_worker:
                        await asyncio.to_thread(server.background_worker_now)
        else:
            yield client


GIVE_WAY_POLL_S = 0.5


async def _give_way(server: EmbeddedServer, workers: list[Any]) -> None:
    """The command that started the server does its items with its own worker: once another
    command asks for a background worker with other settings, that worker stops (the items go on
    in the new one, as when a background worker with other settings replaces one), and only then
    does the other command's wait end (EmbeddedServer.ensure_worker)."""
    while not await asyncio.to_thread(server.background_worker_settings_changed):
        await asyncio.sleep(GIVE_WAY_POLL_S)
    notice("another command asked for a background worker with other settings: this command's items go on in it")
    await asyncio.gather(*(worker.shutdown() for worker in workers), return_exceptions=True)
    await asyncio.to_thread(server.background_worker_now)


async def _no_other_archives_worker(client: Client, settings: Settings) -> None:
    """Refuse a server on which another data directory's background worker polls these queues: it
    would do this command's items with that archive's settings, into that archive."""
    own = f"@{settings.data_dir.resolve()}{BACKGROUND_MARK}"
    others = [name for name in await background_workers(client, settings) if not name.endswith(own)]
    if others:
        where = others[0].rsplit("@", 1)[-1].removesuffix(BACKGROUND_MARK)
        raise CommandError(f"the Temporal server at {settings.temporal.address} runs in the background for the data "
                           f"directory {where}, whose worker would do this work into that archive: stop it "
                           f"(TRAWL_DATA_DIR={where} trawl down), or use that data directory, or give this one "
                           "another temporal.address (TRAWL_TEMPORAL__ADDRESS)")


def workflow_id_for(registry: Registry, ident: str) -> str:
    """An item's workflow id from what a person typed: the id itself or one of the item's URLs."""
    if ident.startswith(("http://", "https://")):
        return registry.route(ident).workflow_id
    return ident


class Stop(asyncio.Event):
    """Set by SIGINT or SIGTERM: the foreground commands' way to stop.

    A running command waits for it. A command still starting (a server, a worker, the API) is
    not waiting yet: the signal cancels its start instead, and what had started is torn down on
    the way out. Waiting for the start to finish first could take a minute, or forever (a lock
    another command holds). The dispatcher exits 0 for a start cancelled so (see
    :func:`stopped_by_signal`): the command stopped as asked.
    """

    def __init__(self) -> None:
        super().__init__()
        self.command = asyncio.current_task()
        self.waiters = 0

    async def wait(self) -> bool:
        self.waiters += 1
        try:
            return await super().wait()
        finally:
            self.waiters -= 1

    def signalled(self, signum: int) -> None:
        if self.is_set():  # stopping already: let the teardown finish
            return
        _stop_signals.append(signum)
        self.set()
        if not self.waiters and self.command is not None and not self.command.done():
            self.command.cancel()


# The signals that stopped this process's command; a module's, not a context variable: the
# dispatcher reads it outside the event loop whose task recorded it.
_stop_signals: list[int] = []


def stop_event() -> Stop:
    """A :class:`Stop` that SIGINT and SIGTERM set, for the command running now."""
    stop = Stop()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.signalled, sig)
    return stop


def stopped_by_signal() -> int:
    """The signal that stopped this process's command (0: none), for the dispatcher."""
    return _stop_signals[0] if _stop_signals else 0


class OutageNotice:
    """Says, at most every few seconds, that the server is unreachable while results are awaited."""

    EVERY_S = 10.0

    def __init__(self, address: str, line: StatusLine | None = None) -> None:
        self.address = address
        self.line = line  # a terminal's live status line, kept below the notice
        self.last = 0.0

    def unreachable(self, message: str) -> None:
        now = time.monotonic()
        if now - self.last < self.EVERY_S:
            return
        self.last = now
        if sys.stderr.isatty():
            text = f"trawl: Temporal server at {self.address} unreachable, still waiting ({message})"
            if self.line is not None:
                self.line.print(text, file=sys.stderr)
            else:
                print(text, file=sys.stderr, flush=True)
        else:
            log.warning("temporal server unreachable, still waiting", address=self.address, error=message)


def page_address(settings: Settings) -> str:
    """The web page's address as ``trawl up`` and ``trawl api`` serve it (under ``/``)."""
    host = settings.api.host
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else f"[{host}]" if ":" in host else host
    return f"http://{shown}:{settings.api.port}/"
