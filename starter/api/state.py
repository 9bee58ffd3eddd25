"""What every router shares: the app's clients (built at start-up) and the bearer check."""

from __future__ import annotations

import asyncio
import hmac
from dataclasses import dataclass, field

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from temporalio.client import Client

from trawl.platforms.registry import Registry
from trawl.settings import Settings
from trawl.storage.blobs import BlobStore
from trawl.storage.catalog import Catalog


@dataclass
class ApiState:
    """The app's clients; ``create_app`` builds one and its lifespan connects them."""

    settings: Settings
    client: Client = field(init=False)
    registry: Registry = field(init=False)
    catalog: Catalog = field(init=False)
    blobs: BlobStore = field(init=False)
    # The crawl limits count what a crawl holds: one addition at a time.
    adding: asyncio.Lock = field(default_factory=asyncio.Lock)


def api_state(request: Request) -> ApiState:
    return request.app.state.trawl


_bearer = HTTPBearer(auto_error=False)


def authorized(state: ApiState = Depends(api_state),
               credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> None:
    """Mutating endpoints need the API token when one is set (compared in constant time).

    A token presented and wrong is refused earlier, on every endpoint (``starter.limits.RateLimit``);
    this refuses a missing one.
    """
    token = state.settings.api.token
    if not token:
        return
    given = credentials.credentials if credentials else ""
    if not hmac.compare_digest(given.encode(), token.encode()):
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "missing or wrong bearer token",
                            headers={"WWW-Authenticate": "Bearer"})
