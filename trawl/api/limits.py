"""ASGI middlewares that protect the API: a request body size limit, the bearer token check with
the rate limit it keys, and the headers that keep every answer out of other sites' frames."""

from __future__ import annotations

import hmac
import ipaddress
import json
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlencode, urlsplit

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

    def _too_big(self) -> str:
        return (f"request body over {self.limit} bytes (api.max_body_bytes): send a long list of URLs in parts, "
                "the first to POST /api/v1/crawls, the rest to POST /api/v1/crawls/{id}/urls")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await _json_error(send, 413, self._too_big())
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
                await _json_error(send, 413, self._too_big())
                return
            if not message.get("more_body"):
                break

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


# What every answer may load and who may frame it: nothing from elsewhere, no inline script or
# style (the web page has none; the docs pages name theirs by hash), and no site may frame it,
# so no other page can lay it under a decoy and have the person click Cancel or Run now.
POLICY = {"default-src": "'self'", "script-src": "'self'", "style-src": "'self'", "img-src": "'self' data:",
          "media-src": "'self'", "object-src": "'none'", "base-uri": "'none'", "form-action": "'self'",
          "frame-ancestors": "'none'"}


def content_policy(**more: str) -> str:
    """The Content-Security-Policy header, with ``more`` sources added to directives
    (``script_src="'sha256-...'"``)."""
    merged = dict(POLICY)
    for name, sources in more.items():
        directive = name.replace("_", "-")
        merged[directive] = f"{merged.get(directive, '')} {sources}".strip()
    return "; ".join(f"{name} {sources}" for name, sources in merged.items())


class FrameGuard:
    """Every answer, whoever makes it (a route, a static file, a refusal before any route), says
    ``X-Frame-Options: DENY`` and carries the Content-Security-Policy (:data:`POLICY`) unless it
    brings its own; and ``X-Content-Type-Options: nosniff``, so a file is only what its type says."""

    HEADERS = ((b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff"))

    def __init__(self, app: App) -> None:
        self.app = app
        self.policy = content_policy().encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                names = {name.lower() for name, _ in headers}
                headers += [(name, value) for name, value in self.HEADERS if name not in names]
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", self.policy))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, guarded)


READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class RateLimit:
    """Authenticate, count, then authorize: a token bucket per identity (429 with Retry-After).

    With ``token`` (or ``read_token``) set, every path but ``open_paths`` needs
    ``Authorization: Bearer`` with one of them: none is 401, and ``read_token`` on a method that
    is not a read is 403. A token presented and wrong is 401 everywhere, open paths included.
    The check is here, before any route, so it covers every path the app serves or will serve.

    A browser carries, instead of the token, the cookie the web page's sign-in sets (``cookie``:
    its name; ``cookie_access``: what the session it names allows, ``all``, ``read`` or None),
    which counts as the header does; a cookie that names no live session is ignored (a stale
    sign-in must still reach the sign-in page). A request that changes something on the cookie's strength
    alone must come from this site (its ``Origin``), or any page could make the browser send it.
    A browser asking for a page (``text/html``, outside ``/api/``) without a token is sent to
    ``login_path`` rather than answered 401.

    With no token configured the API serves loopback only, and then it answers only requests whose
    ``Host`` is a loopback name (``loopback_hosts``): a page of another site whose name was made to
    resolve to 127.0.0.1 (DNS rebinding) is refused instead of served as this site.

    The identity is the token when the request carries a right one, and otherwise the client
    address (an IPv6 client by its /64), however many made-up tokens it sends: a token is checked
    (in constant time) before it picks a bucket, so inventing tokens buys no fresh buckets and no
    200s. Every request is counted before anything else runs, refused ones included.
    """

    MAX_BUCKETS = 100_000  # least recently seen identities are forgotten beyond this

    def __init__(self, app: App, per_minute: int, token: str = "", read_token: str = "",
                 open_paths: tuple[str, ...] = (), cookie: str = "",
                 cookie_access: Callable[[bytes], str | None] | None = None, login_path: str = "") -> None:
        self.app = app
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, per_minute / 6.0)  # bursts of ten seconds' worth
        self.tokens = [(t.encode(), access) for t, access in ((token, "all"), (read_token, "read")) if t]
        # Exact paths; one ending in "/" opens everything under it.
        self.open_paths = open_paths
        self.buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self.cookie = cookie.encode()
        self.session_access = cookie_access or (lambda _: None)
        self.login_path = login_path
        self.loopback_hosts = not self.tokens

    def _cookie_access(self, headers: dict[bytes, bytes]) -> str | None:
        """What the sign-in cookie allows (``all`` or ``read``); None without a right one."""
        if not self.cookie:
            return None
        for pair in (headers.get(b"cookie") or b"").split(b";"):
            name, _, value = pair.strip().partition(b"=")
            if name == self.cookie and value and (access := self.session_access(value.strip())):
                return access
        return None

    def identify(self, scope: Scope, headers: dict[bytes, bytes] | None = None) -> tuple[str, str]:
        """The bucket key, and what the request may do: ``all`` or ``read`` (a right token),
        ``anonymous`` (no token presented, or none configured), ``wrong`` (a token, not a right one)."""
        address = _address_key(scope)
        headers = dict(scope.get("headers") or []) if headers is None else headers
        auth = headers.get(b"authorization")
        if self.tokens and _on_cookie(headers) and (cookie := self._cookie_access(headers)):
            return f"token:{cookie}", cookie
        if not self.tokens or not auth:
            return address, "anonymous"
        scheme, _, given = auth.strip().partition(b" ")
        given = given.strip()
        # Every configured token is compared, so the time taken tells nothing of which one matched.
        matches = [access for token, access in self.tokens if hmac.compare_digest(given, token)]
        if scheme.lower() != b"bearer" or not matches:
            return address, "wrong"
        return f"token:{matches[0]}", matches[0]

    def is_open(self, scope: Scope) -> bool:
        path = scope.get("path") or "/"
        root = scope.get("root_path") or ""
        if root and path.startswith(root):
            path = path[len(root):] or "/"
        return any(path == p or (p.endswith("/") and path.startswith(p)) for p in self.open_paths)

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
        headers = dict(scope.get("headers") or [])
        if self.loopback_hosts and not _loopback_host(headers.get(b"host")):
            await _json_error(send, 421, "without api.token this trawl answers only to a loopback address or "
                                         "localhost: open it as http://127.0.0.1:<port>/")
            return
        key, access = self.identify(scope, headers)
        if self.rate > 0:
            wait = self._take(key)
            if wait:
                await _json_error(send, 429, "too many requests",
                                  [(b"retry-after", str(max(1, math.ceil(wait))).encode())])
                return
        if access == "wrong" or (access == "anonymous" and self.tokens and not self.is_open(scope)):
            if self._wants_page(scope, headers):
                target = scope.get("path") or "/"
                if scope.get("query_string"):
                    target += "?" + scope["query_string"].decode("latin-1")
                location = f"{self.login_path}?{urlencode({'next': target})}".encode("latin-1", "replace")
                await send({"type": "http.response.start", "status": 303,
                            "headers": [(b"location", location), (b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
                return
            await _json_error(send, 401, "missing or wrong bearer token", [(b"www-authenticate", b"Bearer")])
            return
        # Whenever the cookie is what let the request in (an empty Authorization header included),
        # the browser may have sent it on another site's behalf.
        if (scope["method"] not in READ_METHODS and _on_cookie(headers) and access in ("all", "read")
                and not _same_origin(headers)):
            await _json_error(send, 403, "a request on the sign-in cookie must come from this site's pages")
            return
        if access == "read" and scope["method"] not in READ_METHODS and not self.is_open(scope):
            await _json_error(send, 403, f"this token is read-only: {scope['method']} needs api.token")
            return
        await self.app(scope, receive, send)


    def _wants_page(self, scope: Scope, headers: dict[bytes, bytes]) -> bool:
        path = scope.get("path") or "/"
        return bool(self.login_path) and scope["method"] in READ_METHODS and not path.startswith("/api/") \
            and b"text/html" in (headers.get(b"accept") or b"")


def _on_cookie(headers: dict[bytes, bytes]) -> bool:
    """Whether the sign-in cookie is what a request authenticates with: it carries no token
    (no ``Authorization`` header, or an empty one)."""
    return not headers.get(b"authorization")


def _loopback_host(host: bytes | None) -> bool:
    """A ``Host`` header naming loopback (``127.0.0.1:8000``, ``[::1]:8000``, ``localhost``); a
    request without one (HTTP/1.0) is taken too: browsers always send it."""
    if host is None:
        return True
    name = urlsplit("//" + host.decode("latin-1")).hostname or ""
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _same_origin(headers: dict[bytes, bytes]) -> bool:
    """The request's ``Origin`` is the host it was sent to (browsers send it with every POST)."""
    origin = headers.get(b"origin")
    return origin is not None and urlsplit(origin.decode("latin-1")).netloc.encode("latin-1") == headers.get(b"host")


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
