"""State a platform's workers share whatever process they run in: a visitor session, the proxies
that rest.

The rate limit is shared by the fetch queue (the Temporal server keeps it for every worker on
every host); a session or a proxy's rest cannot go through Temporal (nothing of a session may
enter a workflow's history), so they go through the catalog every worker opens: short text values
by key, each with an expiry (:class:`trawl.storage.catalog_state.CatalogState`, the
``shared_state`` table). :class:`MemoryState` is the same for one process alone (a command's own
resolve, a resolver without a catalog). Only activities and the HTTP client read and write it.

Times are wall-clock seconds (``time.time()``): the processes sharing a value share no other clock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

# How long a caller holds the right to make a value the others wait for (a visitor session takes
# one or two requests); past it, a waiting caller makes its own (the holder died or hangs).
LEASE_S = 20.0
POLL_S = 0.05


class SharedState(Protocol):
    """Short text values by key, each until its expiry; an expired value reads as absent."""

    def get(self, key: str) -> str | None: ...

    def items(self, prefix: str) -> dict[str, str]:
        """Every live value whose key starts with ``prefix``."""
        ...

    def put(self, key: str, value: str, ttl: float) -> None: ...

    def put_new(self, key: str, value: str, ttl: float) -> bool:
        """Store ``value`` only if ``key`` has none (or an expired one); whether it was stored."""
        ...

    def delete(self, key: str) -> None: ...


class MemoryState:
    """:class:`SharedState` in this process's memory (thread-safe)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._values: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._clock = clock

    def _live(self, key: str) -> str | None:
        found = self._values.get(key)
        if found is None or found[1] <= self._clock():
            return None
        return found[0]

    def get(self, key: str) -> str | None:
        with self._lock:
            return self._live(key)

    def items(self, prefix: str) -> dict[str, str]:
        with self._lock:
            return {key: value for key in list(self._values)
                    if key.startswith(prefix) and (value := self._live(key)) is not None}

    def put(self, key: str, value: str, ttl: float) -> None:
        with self._lock:
            self._values[key] = (value, self._clock() + ttl)

    def put_new(self, key: str, value: str, ttl: float) -> bool:
        with self._lock:
            if self._live(key) is not None:
                return False
            self._values[key] = (value, self._clock() + ttl)
            return True

    def delete(self, key: str) -> None:
        with self._lock:
            self._values.pop(key, None)


def made_once(state: SharedState, lease: str, ready: Callable[[], str | None], make: Callable[[], str], *,
              wait: float = LEASE_S, sleep: Callable[[float], None] = time.sleep) -> str:
    """What ``ready`` reads; when it reads nothing, what ``make`` makes (and stores), made by one
    caller among all that share ``state``: the one holding ``lease``. The others wait for it, up to
    ``wait`` seconds, then make their own (the holder died or hangs)."""
    value = ready()
    if value is not None:
        return value
    deadline = time.monotonic() + wait
    while True:
        if state.put_new(lease, "held", wait):
            try:
                value = ready()  # made by another between the first look and the lease
                return value if value is not None else make()
            finally:
                state.delete(lease)
        sleep(POLL_S)
        value = ready()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            return make()


__all__ = ["LEASE_S", "MemoryState", "SharedState", "made_once"]
