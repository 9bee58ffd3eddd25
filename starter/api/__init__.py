"""The HTTP API: jobs (TaskCrawler-compatible), crawls and the catalog, over Temporal.

Run with ``trawl api``; docs at ``/docs`` and ``/redoc``, served with no internet. Every mutating
endpoint needs ``Authorization: Bearer <api.token>`` when a token is set, and a token is required
whenever the API listens on a non-loopback address. A wrong token is 401 on any endpoint. Every
request, reads included, is rate limited: per token when it carries the right one, per client
address otherwise (``starter.limits.RateLimit``).

One router per resource: ``jobs``, ``crawls``, ``items`` (the catalog), ``watches``, ``health``; ``docs``
serves the documentation pages, ``errors`` turns exceptions into JSON answers and declares them,
``models`` holds the bodies, ``state`` what the routers share. Items and crawls are rendered by
``starter.views``, as the CLI renders them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI
from temporalio.client import Client

from starter.api import crawls, docs, errors, health, items, jobs, watches
from starter.api.state import ApiState
from starter.client import connect, ensure_search_attributes
from starter.limits import BodySizeLimit, RateLimit
from trawl.platforms.registry import build_registry
from trawl.settings import Settings
from trawl.storage.blobs import open_blob_store
from trawl.storage.catalog import Catalog

__all__ = ["create_app", "serve_api"]


def create_app(settings: Settings, client: Client | None = None) -> FastAPI:
    """The API app; ``client`` is connected at start-up when not given (tests pass one)."""
    state = ApiState(settings)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        state.client = client or await connect(settings)
        await ensure_search_attributes(state.client, settings.temporal.namespace)
        state.registry = build_registry(settings.platforms)
        state.catalog = Catalog(settings.catalog_url)
        state.catalog.create_schema()
        state.blobs = open_blob_store(settings)  # a directory or a bucket, by storage.url
        yield
        state.blobs.close()
        state.catalog.close()

    app = FastAPI(title="trawl", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="A durable media crawler on Temporal: jobs, crawls and the catalog.")
    app.state.trawl = state
    app.add_middleware(BodySizeLimit, limit=settings.api.max_body_bytes)
    # Outermost (added last): authenticate and count every request before its body is read.
    app.add_middleware(RateLimit, per_minute=settings.api.requests_per_minute, token=settings.api.token)
    errors.install(app)
    for resource in (jobs, crawls, items, watches, health):
        app.include_router(resource.router)
    docs.install(app)
    return app


async def serve_api(settings: Settings, client: Client, stop: asyncio.Event) -> None:
    """Serve the API with uvicorn until ``stop`` is set; refuses a non-loopback address without a token."""
    import uvicorn

    from starter.binding import require_safe_binding

    require_safe_binding(settings)
    config = uvicorn.Config(create_app(settings, client), host=settings.api.host, port=settings.api.port,
                            log_config=None, access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign] - the caller's handlers stop it
    task = asyncio.create_task(server.serve())
    await stop.wait()
    server.should_exit = True
    await task
