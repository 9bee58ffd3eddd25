"""ASGI middlewares that protect the API: a request body size limit and a per-client rate limit."""

from __future__ import annotations

import hashlib
import json
import math
import time
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
    """A token bucket per bearer token (per client address without one): 429 with Retry-After."""

    def __init__(self, app: App, per_minute: int) -> None:
        self.app = app
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, per_minute / 6.0)  # bursts of ten seconds' worth
        self.buckets: dict[str, tuple[float, float]] = {}

    def _key(self, scope: Scope) -> str:
        auth = dict(scope.get("headers") or []).get(b"authorization")
        if auth:  # never keep the token itself
            return "t:" + hashlib.sha256(auth).hexdigest()[:16]
        client = scope.get("client") or ("?", 0)
        return f"a:{client[0]}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.rate <= 0:
            await self.app(scope, receive, send)
            return
        key = self._key(scope)
        now = time.monotonic()
        tokens, last = self.buckets.get(key, (self.capacity, now))
        tokens = min(self.capacity, tokens + (now - last) * self.rate)
        if tokens < 1:
            wait = math.ceil((1 - tokens) / self.rate)
            self.buckets[key] = (tokens, now)
            await _json_error(send, 429, "too many requests", [(b"retry-after", str(wait).encode())])
            return
        self.buckets[key] = (tokens - 1, now)
        if len(self.buckets) > 10_000:  # forget idle clients
            self.buckets = {k: v for k, v in self.buckets.items() if now - v[1] < 600}
        await self.app(scope, receive, send)
