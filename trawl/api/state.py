"""What every router shares: the app's clients (built at start-up), the thread its catalog calls
run in, and the bearer token's place in the schema.

The token itself is checked before any route, by ``trawl.api.limits.RateLimit``: with ``api.token``
set, every endpoint but ``/healthz`` and the docs needs it (``api.read_token`` is enough for
reads), and the API refuses to listen beyond loopback without it (``trawl.starter.binding``).
"""

from __future__ import annotations

import asyncio
import functools
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from temporalio.client import Client

from trawl.platforms.registry import Registry
from trawl.settings import Settings
from trawl.storage.blobs import BlobStore
from trawl.storage.catalog import Catalog
from trawl.web.sessions import Sessions

T = TypeVar("T")

# One per connection the catalog's pool holds (5 + 5 overflow): a stalled catalog ties up these
# threads, not the ones the blob store streams in.
CATALOG_THREADS = 10


@dataclass
class ApiState:
    """The app's clients; ``create_app`` builds one and its lifespan connects them."""

    settings: Settings
    client: Client = field(init=False)
    registry: Registry = field(init=False)
    catalog: Catalog = field(init=False)
    blobs: BlobStore = field(init=False)
    catalog_threads: anyio.CapacityLimiter = field(init=False)  # made in the event loop, at start-up
    catalog_probe: asyncio.Future[int] | None = None  # /healthz's count of the catalog, while it runs
    # The crawl limits count what a crawl holds: one addition at a time.
    adding: asyncio.Lock = field(default_factory=asyncio.Lock)
    # Keys the web page's form token (``trawl.web.pages.form_token``); new with each process.
    form_secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    sessions: Sessions = field(init=False)  # the web page's sign-ins, in this process's memory

    def __post_init__(self) -> None:
        self.sessions = Sessions(self.settings.api.session_lifetime)

    async def in_catalog(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``call`` (a blocking SQLAlchemy call) in a thread: never on the event loop, which
        ``trawl up`` shares with the worker's pollers and heartbeats. The engine bounds how long
        it can wait (``trawl.storage.catalog.CONNECT_TIMEOUT_S``, ``STATEMENT_TIMEOUT_S``)."""
        return await anyio.to_thread.run_sync(functools.partial(call, *args, **kwargs),
                                              limiter=self.catalog_threads)


def api_state(request: Request) -> ApiState:
    return request.app.state.trawl


_bearer = HTTPBearer(auto_error=False, description="api.token; api.read_token is enough for reads")


def bearer(_: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> None:
    """Declares the bearer token on a router's operations, so the schema lists it and Swagger
    UI's Authorize sends it. The check is ``trawl.api.limits.RateLimit``'s, which runs before any
    route and covers paths no router serves."""
