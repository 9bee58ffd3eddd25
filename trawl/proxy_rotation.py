"""The HTTP client's transport over several proxies (``net.proxies``): each request goes through
the proxy :class:`trawl.proxies.ProxyPool` picks for its platform, and what the proxy did is
told back to the pool (see there for what rests a proxy).

A request that never reached its origin (the proxy could not be reached, asked for credentials,
or refused the CONNECT) is sent again through the next proxy, once through each at most, when it
has no body to send again (GET, HEAD, OPTIONS); otherwise the failure goes on to the caller,
classified as usual (``network_error``, ``http_5xx``). Each proxy's own transport is guarded as
the single proxy's is (:mod:`trawl.http_client`): the proxy's address by the network backend,
each target before it is handed over.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping

import httpx

from trawl.errors import redact
from trawl.logs import get_logger
from trawl.proxies import ROUTE, ProxyPool

log = get_logger("trawl.proxies")

# A 5xx a proxy marks as its own, not the origin's it relays: RFC 9209's Proxy-Status, Squid's.
OWN_ERROR_HEADERS = ("proxy-status", "x-squid-error")
RESENDABLE = frozenset({"GET", "HEAD", "OPTIONS"})
_STATUS = re.compile(r"\b([1-5]\d\d)\b")


def proxy_status(err: httpx.ProxyError) -> int | None:
    """The status of a refused CONNECT (httpcore says ``"407 Proxy Authentication Required"``)."""
    match = _STATUS.search(str(err))
    return int(match[1]) if match else None


class RotatingProxies(httpx.BaseTransport):
    """Sends each request through one of ``transports`` (proxy URL -> that proxy's transport)."""

    def __init__(self, pool: ProxyPool, transports: Mapping[str, httpx.BaseTransport],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.pool = pool
        self.transports = dict(transports)
        self.clock = clock

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        route = ROUTE.get()
        tried: set[str] = set()
        while True:
            proxy = self.pool.pick(route, self.clock(), frozenset(tried))
            tried.add(proxy)
            again = request.method in RESENDABLE and len(tried) < len(self.transports)
            try:
                response = self.transports[proxy].handle_request(request)
            except httpx.ProxyError as err:  # the CONNECT was refused: nothing reached the origin
                status = proxy_status(err)
                if status is not None and status >= 500 and status != 511:
                    self._told(proxy, self.pool.server_error, f"CONNECT answered {status}", route)
                else:
                    self._told(proxy, self.pool.unreachable, f"CONNECT refused: {err}", route)
                if again:
                    continue
                raise
            except (httpx.ConnectError, httpx.ConnectTimeout) as err:  # every connection here is to the proxy
                self._told(proxy, self.pool.unreachable, f"unreachable: {err or type(err).__name__}", route)
                if again:
                    continue
                raise
            if response.status_code == 407:
                self._told(proxy, self.pool.unreachable, "407 Proxy Authentication Required", route)
                if again:
                    response.close()
                    continue
            elif response.status_code >= 500 and any(name in response.headers for name in OWN_ERROR_HEADERS):
                self._told(proxy, self.pool.server_error, f"its own {response.status_code}", route)
            else:
                self.pool.answered(proxy)
            return response

    def _told(self, proxy: str, tell: Callable[[str, float, str], None], why: str, route: str) -> None:
        before = self.pool.health[proxy].rests
        tell(proxy, self.clock(), why)
        if self.pool.health[proxy].rests > before:
            log.warning("proxy rested", proxy=redact(proxy), reason=redact(why), platform=route or None,
                        rest_s=self.pool.rest_s, resting=len(self.pool.resting(self.clock())),
                        proxies=len(self.transports))

    def __enter__(self) -> RotatingProxies:
        for transport in self.transports.values():
            transport.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        for transport in self.transports.values():
            transport.__exit__(*exc)

    def close(self) -> None:
        for transport in self.transports.values():
            transport.close()


__all__ = ["RotatingProxies", "proxy_status"]
