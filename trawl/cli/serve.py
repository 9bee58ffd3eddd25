"""The foreground services and their setup: ``server``, ``worker``, ``up``, ``api``, ``setup``, ``demo``,
``simulator``; and ``down``, which stops the server and worker running in the background."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import logging
import signal
import socket
import sys
import threading

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from trawl.starter.binding import require_safe_binding
from trawl.cli.common import (
    connect_failed,
    connect_or_explain,
    listen,
    open_catalog,
    page_address,
    session,
    stop_event,
    temporal,
)
from trawl.cli.output import CommandError
from trawl.starter.client import connect, ensure_search_attributes, metrics_url, unreachable
from trawl.starter.embedded import answers
from trawl.errors import StorageError
from trawl.logs import get_logger
from trawl.settings import Settings
from trawl.storage.blobs import open_blob_store

log = get_logger("trawl.worker")

MAX_CONNECT_BACKOFF_S = 30.0
BOOTING_POLL_S = 0.05  # how often the background worker asks while its server boots
BOOTING_QUIET_S = 30.0  # how long it retries before it says the server is unreachable


async def wait_for_server(settings: Settings, stop: asyncio.Event, *, first_delay: float = 1.0,
                          quiet_s: float = 0.0) -> Client | None:
    """Connect once the server answers; None if stopped first. It asks every ``first_delay`` s
    until ``quiet_s`` has passed, then says the server is unreachable, once, and retries quietly
    with backoff.

    A supervised worker waits like this instead of exiting (and being restarted, again and again)
    while its server is down.
    """
    delay = first_delay
    told = False
    quiet_until = asyncio.get_running_loop().time() + quiet_s
    while not stop.is_set():
        if await asyncio.to_thread(answers, settings.temporal.address, 1.0):
            try:
                return await connect(settings, metrics=True)
            except RuntimeError as err:
                if not connect_failed(err):
                    raise
        if not told and asyncio.get_running_loop().time() >= quiet_until:
            told = True
            log.warning("Temporal server unreachable; retrying the connection with backoff until it answers "
                        "(start it, or check temporal.address)", address=settings.temporal.address)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)
        if told:
            delay = min(max(delay * 2, 1.0), MAX_CONNECT_BACKOFF_S)
    return None


async def ready_server(settings: Settings, stop: asyncio.Event, **waiting: float) -> Client | None:
    """:func:`wait_for_server`, then the search attributes checked; None if stopped first.

    The server can stop between the connect and the check (a restart): the check's connection
    error is then a server that is down, waited for again, not a setting that cannot work (a
    supervisor stops every worker for one of those, and a crawl would wait for ever).
    """
    while True:
        client = await wait_for_server(settings, stop, **waiting)
        if client is None:
            return None
        try:
            await ensure_search_attributes(client, settings.temporal.namespace)
            return client
        except RPCError as err:
            if not unreachable(err):  # refused ("tcp connect error") or cut mid-call ("transport error")
                raise
            log.warning("the Temporal server went away as the worker connected; waiting for it again",
                        address=settings.temporal.address, error=err.message)


async def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    stop = stop_event()
    if args.background:
        return await _background_worker(stop)
    # Here (the other commands of this module need no worker), and before waiting for the server:
    # the workflow code it keeps is the code on disk now, beside the trawl modules already loaded,
    # not what an upgrade may install while the server is down.
    from trawl.worker.main import running_worker

    if args.supervised:
        client = await ready_server(settings, stop)
        if client is None:
            return 0
    else:
        client = await connect_or_explain(settings, metrics=True)
        await ensure_search_attributes(client, settings.temporal.namespace)

    async with running_worker(client, settings):
        logging.getLogger("trawl").info(
            "worker started", extra={"trawl": {"address": settings.temporal.address,
                                               "queues": f"{settings.temporal.task_queue_prefix}-*",
                                               "metrics": metrics_url(client)}})
        await stop.wait()
    return 0


async def _background_worker(stop: asyncio.Event) -> int:
    """The worker an embedded server's keeper runs in the background (trawl.starter.embedded),
    with the settings of the command that asked for it, read from stdin. While an activity runs
    it holds the server's ``users.lock`` shared, so the server does not stop as idle under it."""
    import fcntl
    import os

    from trawl.logs import default_worker_name
    from trawl.settings import settings_from_json
    from trawl.worker.interceptors import BusyInterceptor
    from trawl.worker.main import running_worker
    from trawl.worker.runtime import BACKGROUND_MARK

    settings = settings_from_json(sys.stdin.read())
    # It names its data directory: a command of another one that finds it on the same server
    # refuses to have its items done with this archive's settings (trawl.cli.common.session).
    identity = f"{settings.worker.identity or default_worker_name()}@{settings.data_dir}{BACKGROUND_MARK}"
    settings = settings.model_copy(update={"worker": settings.worker.model_copy(update={"identity": identity})})
    users = os.open(settings.data_dir / "run" / "users.lock", os.O_RDWR | os.O_CREAT, 0o644)

    def busy(now: bool) -> None:
        fcntl.flock(users, fcntl.LOCK_SH if now else fcntl.LOCK_UN)

    # Its keeper starts it beside a server that is still booting: it asks often, and quietly at first.
    client = await ready_server(settings, stop, first_delay=BOOTING_POLL_S, quiet_s=BOOTING_QUIET_S)
    if client is None:
        return 0
    async with running_worker(client, settings, interceptors=[BusyInterceptor(busy)]):
        log.info("background worker started", address=settings.temporal.address,
                 queues=f"{settings.temporal.task_queue_prefix}-*", data_dir=str(settings.data_dir))
        await stop.wait()
    return 0


def cmd_down(args: argparse.Namespace, settings: Settings) -> int:
    from trawl.starter.embedded import EmbeddedServer

    print(EmbeddedServer(settings).down(), file=sys.stderr)
    return 0


async def _serve_api(settings: Settings, client: Client, stop: asyncio.Event, sock: socket.socket,
                     banner: str) -> None:
    from trawl.api import ApiStartError, serve_api  # FastAPI and uvicorn load only for the commands that serve

    try:
        await serve_api(settings, client, stop, sock, ready=lambda: print(banner, file=sys.stderr, flush=True))
    except ApiStartError as err:
        raise CommandError(str(err)) from None


def _with_api_args(args: argparse.Namespace, settings: Settings) -> Settings:
    api = settings.api.model_copy(update={k: v for k, v in (("host", args.host), ("port", args.port)) if v})
    settings = settings.model_copy(update={"api": api})
    require_safe_binding(settings)  # refused before anything starts or is announced
    return settings


def _listen_api(settings: Settings) -> socket.socket:
    """The API's port, bound before the server, the worker or the API start."""
    return listen(settings.api.host, settings.api.port, setting="api.port",
                  fix="pass --port or set TRAWL_API__PORT (api.port) to a free port")


async def cmd_api(args: argparse.Namespace, settings: Settings) -> int:
    settings = _with_api_args(args, settings)
    stop = stop_event()
    with _listen_api(settings) as sock:
        async with session(settings, worker=False) as client:
            await _serve_api(settings, client, stop, sock, f"trawl api on http://{settings.api.host}:"
                             f"{settings.api.port} (the library at {page_address(settings)}, docs at /docs); Ctrl-C stops")
    return 0


async def cmd_up(args: argparse.Namespace, settings: Settings) -> int:
    settings = _with_api_args(args, settings)
    stop = stop_event()
    with _listen_api(settings) as sock:
        async with session(settings, worker=True, metrics=True) as client:
            metrics = metrics_url(client)
            await _serve_api(settings, client, stop, sock, f"trawl up: Temporal {settings.temporal.address}, Web UI "
                             f"http://127.0.0.1:{settings.temporal.ui_port}, library {page_address(settings)}, "
                             f"API http://{settings.api.host}:{settings.api.port}/docs"
                             + (f", metrics {metrics}" if metrics else "")
                             + f", data {settings.data_dir.resolve()}; Ctrl-C stops")
    return 0


# How long `trawl setup` waits for its namespace: one created a moment ago (compose's admin-tools
# service, then setup) is not found until the server's namespace cache has seen it.
NAMESPACE_WAIT_S = 30.0


async def register_search_attributes(client: Client, settings: Settings, wait_s: float = NAMESPACE_WAIT_S) -> None:
    """trawl's search attributes in the settings' namespace, once the server knows the namespace.

    Raises:
        CommandError: the namespace is still unknown after ``wait_s``.
    """
    namespace = settings.temporal.namespace
    deadline = asyncio.get_running_loop().time() + wait_s
    told = False
    while True:
        try:
            await ensure_search_attributes(client, namespace)
            return
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
            if asyncio.get_running_loop().time() >= deadline:
                raise CommandError(f"namespace {namespace} does not exist at {settings.temporal.address}: create it "
                                   f"(`temporal operator namespace create --namespace {namespace}`; the compose "
                                   "file's admin-tools service does) or set temporal.namespace") from None
            if not told:
                told = True
                print(f"waiting for namespace {namespace} (one just created takes the server a few seconds to see)",
                      file=sys.stderr, flush=True)
            await asyncio.sleep(0.5)


async def cmd_setup(args: argparse.Namespace, settings: Settings) -> int:
    """Prepare a server and catalog trawl did not create: search attributes and tables."""
    client = await connect_or_explain(settings)
    await register_search_attributes(client, settings)
    open_catalog(settings).close()
    print(f"search attributes registered in namespace {settings.temporal.namespace} at {settings.temporal.address}; "
          f"catalog tables ready in {settings.catalog_url.split('@')[-1]}")
    blobs = open_blob_store(settings)
    try:
        ensure = getattr(blobs, "ensure_upload_lifecycle", None)  # an object store's
        if ensure is not None:
            print(await asyncio.to_thread(ensure, settings.storage.abandon_uploads_after))
    except StorageError as err:
        # Not every store or every key may set lifecycle rules: the workers' clean-up still
        # aborts abandoned uploads.
        print(f"warning: {err}; abandoned uploads are still aborted by the workers' clean-up", file=sys.stderr)
    finally:
        blobs.close()
    return 0


async def cmd_server(args: argparse.Namespace, settings: Settings) -> int:
    stop = stop_event()
    async with temporal(settings) as settings:
        print(f"Temporal at {settings.temporal.address}, Web UI http://127.0.0.1:{settings.temporal.ui_port}; "
              "Ctrl-C stops", file=sys.stderr)
        await stop.wait()
    return 0


async def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    from trawl.cli.export import export_and_show
    from trawl.cli.demo import library_line, run_demo

    code = await run_demo(settings, sim_port=args.sim_port)
    if code != 2:  # the simulators ran: show the catalog as named files, as `trawl export` writes them
        await asyncio.to_thread(export_and_show, settings, settings.data_dir / "export")
    if code == 0:
        print(f"\n{library_line(settings)}")
    return code


SIMULATOR_HOST = "127.0.0.1"


def cmd_simulator(args: argparse.Namespace, settings: Settings) -> int:
    from trawl.simulator import Simulator
    from trawl.simulator.demo import install_demo_site
    from trawl.simulator.live_site import install_live_site

    try:
        simulator = Simulator(host=SIMULATOR_HOST, port=args.port)  # binds here, before anything is printed
    except OSError as err:
        reason = (f"port {args.port} is in use on {SIMULATOR_HOST} (another trawl simulator?)"
                  if err.errno == errno.EADDRINUSE else f"cannot listen on port {args.port} ({err.strerror or err})")
        raise CommandError(f"{reason}: pass --port with a free port") from None
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with simulator as sim:
        for case in install_demo_site(sim):
            print(case.url, flush=True)  # stdout: the URLs only, for scripts
        live = install_live_site(sim)
        for name in live.streams:  # a live HLS broadcast, from its first request on (docs/live.md)
            print(live.url(name), flush=True)
        # trawl refuses loopback targets by default (blocked_address): the one setting to crawl this.
        print(f"trawl simulator: the demo site on {sim.base_url}; trawl refuses loopback addresses unless told: crawl "
              "it with TRAWL_NET__ALLOW_PRIVATE=true, or net.allowed_networks = [\"127.0.0.0/8\"] in trawl.toml; "
              "Ctrl-C stops", file=sys.stderr, flush=True)
        while not stop.wait(1.0):
            pass
    return 0
