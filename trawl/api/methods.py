"""HEAD and OPTIONS on every route that answers GET, the web page's and the file downloads included.

FastAPI's routes answer only the methods they name, so HEAD and OPTIONS were 405 everywhere. Here
HEAD is answered as GET without the body (the same status and headers, ``Content-Length``
included; a file being streamed is not read on), and OPTIONS with ``Allow`` listing the methods
the path answers (204). Both are reads: the read token may send them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from starlette.routing import BaseRoute, Match, Mount

from trawl.api.limits import App, Message, Receive, Scope, Send

DISCONNECT: Message = {"type": "http.disconnect"}


CANDIDATES = ("GET", "POST", "PUT", "PATCH", "DELETE")


def allowed_methods(routes: Sequence[BaseRoute], scope: Scope) -> set[str]:
    """The methods some route answers at the request's path (a mount of files: GET and HEAD).

    Each method is tried on the routes as the router would (an included router keeps its routes
    to itself, so asking each route which methods it names would not see them)."""
    methods: set[str] = set()
    for route in routes:
        for method in CANDIDATES:
            if route.matches({**scope, "method": method})[0] == Match.FULL:
                methods |= {"GET"} if isinstance(route, Mount) else {method}
    if "GET" in methods:
        methods.add("HEAD")
    return methods | {"OPTIONS"} if methods else methods


class ReadMethods:
    """HEAD as GET without the body; OPTIONS answered with ``Allow`` for any path a route serves."""

    def __init__(self, app: App, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self.routes = routes  # the app's own list, which grows as routers are included

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS":
            allowed = allowed_methods(self.routes, scope)
            if not allowed:
                await self.app(scope, receive, send)  # no such path: the app's own 404
                return
            await send({"type": "http.response.start", "status": 204,
                        "headers": [(b"allow", ", ".join(sorted(allowed)).encode())]})
            await send({"type": "http.response.body", "body": b""})
            return
        await self._head(scope, receive, send)

    async def _head(self, scope: Scope, receive: Receive, send: Send) -> None:
        answered = asyncio.Event()

        async def headers_only(message: Message) -> None:
            if answered.is_set():
                return  # the body, which HEAD does not carry
            if message["type"] == "http.response.start":
                await send(message)
            elif message["type"] == "http.response.body":
                await send({"type": "http.response.body", "body": b""})
                answered.set()

        async def until_answered() -> Message:
            # Once the headers are out, the request is over for whatever still streams a body
            # (a file being read): it stops as it would for a client that went away.
            if answered.is_set():
                return DISCONNECT
            reading = asyncio.ensure_future(receive())
            done = asyncio.ensure_future(answered.wait())
            await asyncio.wait({reading, done}, return_when=asyncio.FIRST_COMPLETED)
            done.cancel()
            if reading.done():
                return reading.result()
            reading.cancel()
            return DISCONNECT

        await self.app({**scope, "method": "GET"}, until_answered, headers_only)
