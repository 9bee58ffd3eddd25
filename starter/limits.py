"""ASGI middlewares that protect the API: a request body size limit and an authenticated rate limit."""

from __future__ import annotations

import hmac
import ipaddress
import json
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


async def _json_error(send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": body})


class BodySizeLimit:
    """Refuse request bodies over ``limit`` bytes with 413, declared or streamed.

    The body is read here (at most ``limit`` bytes are held) and replayed to the app, because
    frameworks turn an error raised while they read the body into their own 400.
    """

    def __init__(self, app: App, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await _json_error(send, 413, f"request body over {self.limit} bytes")
            return
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body") or b"")
            if size > self.limit:
                await _json_error(send, 413, f"request body over {self.limit} bytes")
                return
            if not message.get("more_body"):
                break

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


class RateLimit:
    """Authenticate, then a token bucket per identity: 429 with Retry-After; a wrong token is 401.

    The identity is the API token when the request carries the right one, and otherwise the
    client address (an IPv6 client by its /64), however many made-up tokens it sends: a token
    is checked (in constant time) before it picks a bucket, so inventing tokens buys no fresh
    buckets and no 200s. Every request is counted, reads included, before anything else runs.
    A token that is presented and wrong is refused with 401 on every endpoint; a missing one is
    the app's business (mutating endpoints refuse it, reads take it).
    """

    MAX_BUCKETS = 100_000  # least recently seen identities are forgotten beyond this

    def __init__(self, app: App, per_minute: int, token: str = "") -> None:
        self.app = app
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, per_minute / 6.0)  # bursts of ten seconds' worth
        self.token = token.encode()
        self.buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def identify(self, scope: Scope) -> tuple[str, bool | None]:
        """The bucket key, and whether a token was presented and right (None: none presented or
        none configured)."""
        address = _address_key(scope)
        auth = dict(scope.get("headers") or []).get(b"authorization")
        if not self.token or not auth:
            return address, None
        scheme, _, given = auth.strip().partition(b" ")
        valid = scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token)
        return ("token", True) if valid else (address, False)

    def _take(self, key: str) -> float:
        """Take one token from ``key``'s bucket; 0 when it had one, else seconds until it will."""
        now = time.monotonic()
        tokens, last = self.buckets.pop(key, (self.capacity, now))
        tokens = min(self.capacity, tokens + (now - last) * self.rate)
        if tokens >= 1:
            tokens -= 1
            wait = 0.0
        else:
            wait = (1 - tokens) / self.rate
        self.buckets[key] = (tokens, now)  # most recently seen last
        while len(self.buckets) > self.MAX_BUCKETS:
            self.buckets.popitem(last=False)
        return wait

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        key, valid = self.identify(scope)
        if self.rate > 0:
            wait = self._take(key)
            if wait:
                await _json_error(send, 429, "too many requests",
                                  [(b"retry-after", str(max(1, math.ceil(wait))).encode())])
                return
        if valid is False:
            await _json_error(send, 401, "missing or wrong bearer token", [(b"www-authenticate", b"Bearer")])
            return
        await self.app(scope, receive, send)


def _address_key(scope: Scope) -> str:
    host = (scope.get("client") or ("?", 0))[0]
    try:
        ip = ipaddress.ip_address(host)
        if isinstance(ip, ipaddress.IPv6Address):
            if ip.ipv4_mapped is not None:
                return f"a:{ip.ipv4_mapped}"
            return f"a:{ipaddress.ip_network((ip.exploded.split('%')[0], 64), strict=False)}"
    except ValueError:
        pass
    return f"a:{host}"
