"""A download's bandwidth limit (``download.limit_rate``, yt-dlp's ``--limit-rate``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

MIN_WAIT_S = 0.001


class Throttle:
    """Holds a transfer to ``rate`` bytes per second on average: a token bucket holding at most one
    second's worth, so a pause (a retry, a slow disk) never buys a burst longer than that.

    The waits are cut into slices of at most ``slice_s`` seconds with ``tick`` called after each,
    so a throttled download still heartbeats and notices pause and cancel while it waits.

    Args:
        rate: bytes per second; must be positive.
        clock, sleep: injectable for tests.
    """

    def __init__(self, rate: int, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, slice_s: float = 0.2) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self._clock = clock
        self._sleep = sleep
        self._slice = slice_s
        self._tokens = float(rate)
        self._last = clock()
        self._lock = threading.Lock()

    def take(self, size: int, tick: Callable[[], None] | None = None) -> None:
        """Account for ``size`` bytes just received; return once the average allows them."""
        with self._lock:
            self._refill()
            self._tokens -= size
            while self._tokens <= -1:  # less than a byte owed is nothing (and floats never reach 0 exactly)
                self._sleep(max(MIN_WAIT_S, min(-self._tokens / self.rate, self._slice)))
                self._refill()
                if tick is not None:
                    tick()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(float(self.rate), self._tokens + (now - self._last) * self.rate)
        self._last = now
