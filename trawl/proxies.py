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

A rest is shared by every worker process over the same catalog (``shared``, trawl.shared_state:
the worker's): a proxy one rests is rested for all, until the same time, read back at most every
SHARED_EVERY seconds. A run of server errors is counted by each process on its own.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from trawl.errors import redact
from trawl.logs import get_logger
from trawl.shared_state import SharedState

log = get_logger("trawl.proxies")
SHARED_PREFIX = "proxy.rest."
SHARED_EVERY = 1.0  # seconds between two reads of the rests others shared

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
    shared: SharedState | None = None  # the rests every worker process sees (see the module)
    wall: Callable[[], float] = time.time  # the shared rests' clock (the processes share no other)
    health: dict[str, ProxyHealth] = field(init=False)
    _next: dict[str, int] = field(init=False, default_factory=dict)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _shared_read_at: float | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if not self.urls:
            raise ValueError("a proxy pool needs at least one proxy")
        self.health = {url: ProxyHealth(url) for url in self.urls}
        self._by_key = {shared_key(url): url for url in self.urls}

    def pick(self, route: str, now: float, exclude: frozenset[str] = frozenset()) -> str:
        """The proxy for ``route``'s next request: the next one in its walk that is not resting
        (nor in ``exclude``, those already tried for this request); when all rest, the one back
        soonest."""
        self._read_shared(now)
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
        self._share(url, why)

    def server_error(self, url: str, now: float, why: str) -> None:
        """One of its own 5xx: rested once ``failures_to_rest`` come in a row."""
        with self._lock:
            health = self.health[url]
            health.errors_in_a_row += 1
            rested = health.errors_in_a_row >= self.failures_to_rest
            if rested:
                self._rest(health, now, why)
        if rested:
            self._share(url, why)

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

    def _share(self, url: str, why: str) -> None:
        if self.shared is None:
            return
        until = self.wall() + self.rest_s
        try:
            self.shared.put(shared_key(url), json.dumps({"until": until, "why": redact(why)}), self.rest_s)
        except Exception as err:  # noqa: BLE001 - the bookkeeping never fails a request; this process still rests it
            log.warning("proxy rest not shared", error=str(err))

    def _read_shared(self, now: float) -> None:
        """Take the rests other processes shared (at most every SHARED_EVERY seconds)."""
        if self.shared is None or (self._shared_read_at is not None and now - self._shared_read_at < SHARED_EVERY):
            return
        self._shared_read_at = now
        try:
            rests = self.shared.items(SHARED_PREFIX)
        except Exception as err:  # noqa: BLE001 - as in _share: the walk goes on with what this process knows
            log.warning("shared proxy rests not read", error=str(err))
            return
        wall = self.wall()
        with self._lock:
            for key, raw in rests.items():
                try:
                    doc = json.loads(raw)
                    health, left = self.health.get(self._by_key.get(key, "")), float(doc["until"]) - wall
                except (ValueError, TypeError, KeyError):
                    continue
                if health is not None and left > 0 and now + left > health.resting_until:
                    health.resting_until = now + left
                    health.last_failure = str(doc.get("why", ""))


def shared_key(url: str) -> str:
    """A proxy's rest in the shared state (hashed: its URL may carry a password)."""
    return SHARED_PREFIX + hashlib.sha256(url.encode()).hexdigest()[:32]


__all__ = ["ROUTE", "ProxyHealth", "ProxyPool", "check_proxy_url", "shared_key"]
