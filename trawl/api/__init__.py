"""The HTTP API: jobs (TaskCrawler-compatible), crawls and the catalog, over Temporal.

Run with ``trawl api``; docs at ``/docs`` and ``/redoc``, served with no internet. With ``api.token``
set, every endpoint but ``/healthz`` and the docs (``OPEN_PATHS``) needs ``Authorization: Bearer
<api.token>``, reads included; ``api.read_token``, when set, is enough for reads (``GET``) and is
403 on the rest. Without a token the API answers anyone who reaches it, so it refuses to listen
beyond loopback (``trawl.starter.binding``, applied by ``trawl api``, ``trawl up`` and ``serve_api``). A
wrong token is 401 on any endpoint. Every request is rate limited: per token when it carries a
right one, per client address otherwise (``trawl.api.limits.RateLimit``, which checks the token too).

The catalog blocks (SQLAlchemy): its calls run in threads (``ApiState.in_catalog``), never on the
event loop, which ``trawl up`` shares with the worker; its engine bounds every connect and query.

The web page for people (``trawl.web``: the library, an item, the activity) is served beside it,
under ``/``.

One router per resource: ``jobs``, ``crawls``, ``items`` (the catalog), ``watches``, ``health``; ``docs``
serves the documentation pages, ``error_responses`` turns exceptions into JSON answers and declares them,
``models`` holds the bodies, ``state`` what the routers share. Items and crawls are rendered by
``trawl.starter.views``, as the CLI renders them.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable

import anyio
from fastapi import FastAPI
from temporalio.client import Client

from trawl import web
from trawl.api import crawls, docs, error_responses, health, items, jobs, watches
from trawl.api.state import CATALOG_THREADS, ApiState
from trawl.starter.client import connect, ensure_search_attributes
from trawl.api.limits import BodySizeLimit, FrameGuard, RateLimit
from trawl.api.methods import ReadMethods
from trawl.platforms.registry import build_registry
from trawl.settings import Settings
from trawl.storage.blobs import open_blob_store
from trawl.storage.catalog import Catalog

__all__ = ["OPEN_PATHS", "ApiStartError", "create_app", "serve_api"]

# Open without a token: the health check (for probes and load balancers) and the docs, which
# hold nothing of the deployment's. A path ending in "/" opens what is under it.
OPEN_PATHS = ("/healthz", "/openapi.json", "/docs", "/redoc", docs.OAUTH2_REDIRECT, f"{docs.ASSETS}/", *web.OPEN_PATHS)


def create_app(settings: Settings, client: Client | None = None) -> FastAPI:
    """The API app; ``client`` is connected at start-up when not given (tests pass one)."""
    state = ApiState(settings)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        state.client = client or await connect(settings)
        await ensure_search_attributes(state.client, settings.temporal.namespace)
        state.registry = build_registry(settings.platforms)
        state.catalog_threads = anyio.CapacityLimiter(CATALOG_THREADS)
        state.catalog = Catalog(settings.catalog_url)
        await state.in_catalog(state.catalog.create_schema)
        state.blobs = open_blob_store(settings)  # a directory or a bucket, by storage.url
        yield
        state.blobs.close()
        await asyncio.to_thread(state.catalog.close)  # not behind calls a stalled catalog holds

    app = FastAPI(title="trawl", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="A durable media crawler on Temporal: jobs, crawls and the catalog.")
    app.state.trawl = state
    app.add_middleware(ReadMethods, routes=app.router.routes)  # innermost: HEAD and OPTIONS, once let in
    app.add_middleware(BodySizeLimit, limit=settings.api.max_body_bytes)
    # Authenticate and count every request before its body is read.
    app.add_middleware(RateLimit, per_minute=settings.api.requests_per_minute, token=settings.api.token,
                       read_token=settings.api.read_token, open_paths=OPEN_PATHS,
                       cookie=web.session_cookie(settings.api.port), cookie_access=state.sessions.access,
                       login_path=web.LOGIN_PATH)
    app.add_middleware(FrameGuard)  # outermost: refusals too are never framed
    error_responses.install(app)
    for resource in (jobs, crawls, items, watches, health):
        app.include_router(resource.router)
    docs.install(app)
    web.install(app)  # the web page, under /
    return app


class ApiStartError(Exception):
    """The API could not start or stopped serving by itself; the message is one line."""


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [err.__class__.__name__])[0]


async def serve_api(settings: Settings, client: Client, stop: asyncio.Event, sock: socket.socket | None = None,
                    ready: Callable[[], None] | None = None) -> None:
    """Serve the API with uvicorn until ``stop`` is set; refuses a non-loopback address without a token.

    ``sock`` listens on api.host:api.port already (``trawl up`` and ``trawl api`` bind it before
    anything starts, so a taken port stops them early); without it the port is bound here. The
    app's start-up (catalog, blob store) runs here, before serving, rather than in uvicorn: its
    failure raises :class:`ApiStartError`, which ends the command, where uvicorn would log it and
    leave the command running without an API. ``ready`` is called once it has started, before it
    serves (the command's banner: said only when true).
    """
    import uvicorn

    from trawl.starter.binding import require_safe_binding

    require_safe_binding(settings)
    host, port = settings.api.host, settings.api.port
    app = create_app(settings, client)
    async with contextlib.AsyncExitStack() as stack:
        try:
            await stack.enter_async_context(app.router.lifespan_context(app))
        except Exception as err:  # noqa: BLE001 - whatever the start-up met, said in one line
            raise ApiStartError(f"the API could not start: {_first_line(err)}") from None
        if sock is None:
            try:
                sock = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
            except OSError as err:
                raise ApiStartError(f"the API cannot listen on {host}:{port} ({err.strerror or err}); set api.port "
                                    "(TRAWL_API__PORT) to a free port") from None
            stack.callback(sock.close)
        # Nagle off (trawl.cli.common.no_delay says why); a socket given has it from its maker.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if ready is not None:
            ready()
        config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="off")
        server = uvicorn.Server(config)
        # The caller's signal handlers stop it (through ``stop``); uvicorn's own would replace
        # them while it serves and raise the signal again when it ends.
        server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign]

        async def serving() -> None:
            try:
                await server.serve(sockets=[sock])
            except SystemExit:  # uvicorn's way out of a failed start; would stop the whole event loop
                raise ApiStartError(f"the API on {host}:{port} could not start (see the log above)") from None

        task = asyncio.create_task(serving())
        stopping = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            server.should_exit = True
            stopping.cancel()
            await asyncio.wait({task})
        failure = None if task.cancelled() else task.exception()
        if failure is not None:
            raise failure
        if not stop.is_set():
            raise ApiStartError(f"the API on {host}:{port} stopped serving (see the log above)")
