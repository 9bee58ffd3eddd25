"""Several proxies (``net.proxies``): which one carries a request, and which are resting.

Each platform walks the list on its own, one proxy after the other (the platform of the running
activity, :data:`ROUTE`, set by the worker's interceptor; requests outside an activity share one
walk), so one platform's traffic is spread over every proxy whatever the others do. A proxy that
fails is rested for ``net.proxy_rest`` and skipped meanwhile by every platform:

- at once, when it cannot be reached (connection refused, reset or timed out) or asks for
  credentials (407);
- after ``net.proxy_failures`` server errors in a row that are its own: a CONNECT it answers with
  5xx (every https request goes through one), or a 5xx it marks as its own (``Proxy-Status``,
  RFC 9209; Squid's ``X-Squid-Error``). A 5xx an origin sends through it is the origin's.

When every proxy rests, the one whose rest ends first is tried: a crawl never waits on this
bookkeeping alone, and finds a proxy back as soon as it answers. Pure logic with the clock handed
in; :mod:`trawl.http_client` drives it.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from dataclasses import dataclass, field
from urllib.parse import urlsplit

# The platform whose request is being sent (the worker's interceptor sets it per activity).
ROUTE: ContextVar[str] = ContextVar("trawl_proxy_route", default="")


def check_proxy_url(entry: str) -> None:
    """An entry of ``net.proxies``: ``http://`` or ``https://``, a host, an optional port and
    ``user:password@``, nothing else.

    Raises:
        ValueError: naming the entry (its password hidden) and what is wrong with it.
    """
    parts = urlsplit(entry.strip())
    shown = parts._replace(netloc=f"***@{parts.hostname}" if parts.password else parts.netloc).geturl()
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"proxy {shown!r}: give http://HOST:PORT or https://HOST:PORT")
    try:
        parts.port  # noqa: B018 - a port that is not a number (or out of range) raises here
    except ValueError:
        raise ValueError(f"proxy {shown!r}: the port is not a number from 1 to 65535") from None
    if not parts.hostname:
        raise ValueError(f"proxy {shown!r}: no host")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"proxy {shown!r}: a proxy is HOST:PORT, without a path or query")


@dataclass
class ProxyHealth:
    url: str
    resting_until: float = 0.0
    errors_in_a_row: int = 0  # the proxy's own server errors since its last good answer
    rests: int = 0  # times rested, for the logs and tests
    last_failure: str = ""


@dataclass
class ProxyPool:
    """The proxies, their health and each platform's place in the walk (thread-safe)."""

    urls: list[str]
    rest_s: float = 60.0
    failures_to_rest: int = 3
    health: dict[str, ProxyHealth] = field(init=False)
    _next: dict[str, int] = field(init=False, default_factory=dict)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if not self.urls:
            raise ValueError("a proxy pool needs at least one proxy")
        self.health = {url: ProxyHealth(url) for url in self.urls}

    def pick(self, route: str, now: float, exclude: frozenset[str] = frozenset()) -> str:
        """The proxy for ``route``'s next request: the next one in its walk that is not resting
        (nor in ``exclude``, those already tried for this request); when all rest, the one back
        soonest."""
        with self._lock:
            start = self._next.get(route, 0)
            order = [self.urls[(start + i) % len(self.urls)] for i in range(len(self.urls))]
            candidates = [url for url in order if url not in exclude] or order
            awake = [url for url in candidates if self.health[url].resting_until <= now]
            chosen = awake[0] if awake else min(candidates, key=lambda url: self.health[url].resting_until)
            self._next[route] = (self.urls.index(chosen) + 1) % len(self.urls)
            return chosen

    def unreachable(self, url: str, now: float, why: str) -> None:
        """It could not be reached, or refused us (407): rested at once."""
        with self._lock:
            self._rest(self.health[url], now, why)

    def server_error(self, url: str, now: float, why: str) -> None:
        """One of its own 5xx: rested once ``failures_to_rest`` come in a row."""
        with self._lock:
            health = self.health[url]
            health.errors_in_a_row += 1
            if health.errors_in_a_row >= self.failures_to_rest:
                self._rest(health, now, why)

    def answered(self, url: str) -> None:
        """A good answer (whatever the origin said): its run of errors ends."""
        with self._lock:
            health = self.health[url]
            health.errors_in_a_row = 0

    def resting(self, now: float) -> list[str]:
        with self._lock:
            return [url for url, health in self.health.items() if health.resting_until > now]

    def _rest(self, health: ProxyHealth, now: float, why: str) -> None:
        health.resting_until = now + self.rest_s
        health.errors_in_a_row = 0
        health.rests += 1
        health.last_failure = why


__all__ = ["ROUTE", "ProxyHealth", "ProxyPool", "check_proxy_url"]
