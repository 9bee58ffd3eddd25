"""A download's bandwidth limit (``download.limit_rate``, yt-dlp's ``--limit-rate``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

MIN_WAIT_S = 0.001
# The bucket holds this many seconds of the rate: what a pause (a retry, a slow disk) can buy at
# once. A second's worth let a 1 MiB batch through at full speed and then slept for ten seconds
# at 100K, which every speed shown read as 1 MiB/s, then 0 B/s.
BURST_S = 0.1


class Throttle:
    """Holds a transfer to ``rate`` bytes per second at an even pace: a token bucket holding
    :data:`BURST_S` seconds' worth.

    The pace is only as even as the pieces it is given: a caller that hands over bytes in batches
    of at most :attr:`batch_bytes` lets them through at most a tenth of a second apart; a bigger
    batch is let through whole and then waited for.

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
        self.capacity = rate * BURST_S
        self._clock = clock
        self._sleep = sleep
        self._slice = slice_s
        self._tokens = self.capacity
        self._last = clock()
        self._lock = threading.Lock()

    @property
    def batch_bytes(self) -> int:
        """The most bytes a caller should receive before calling :meth:`take`, for an even pace."""
        return max(1, int(self.capacity))

    def take(self, size: int, tick: Callable[[], None] | None = None) -> None:
        """Account for ``size`` bytes just received; return once the rate allows them."""
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
        self._tokens = min(self.capacity, self._tokens + (now - self._last) * self.rate)
        self._last = now
