"""Fault injection: how a route misbehaves, per request and over time.

A :class:`FaultRule` applies to every path matching its pattern. It answers from a queue of
one-shot steps first (a status, a 429 with Retry-After, a reset, a stall, an HTML page served
as media), then from an outage window (every request fails until a deadline), then lets the
route answer normally.
"""

from __future__ import annotations

import collections
import re
import threading
import time
from dataclasses import dataclass, field

ERROR_PAGE = b"<!DOCTYPE html><html><head><title>Error</title></head><body>Something went wrong</body></html>"


@dataclass(frozen=True)
class Step:
    """One misbehaving answer.

    kind: ``status`` (answer ``status`` with ``headers``), ``reset`` (drop the connection
    without answering), ``stall`` (send nothing for ``seconds``, then answer normally), ``html``
    (answer 200 with an HTML error page whatever was asked).
    """

    kind: str
    status: int = 500
    headers: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0


def status(code: int, times: int = 1, **headers: str) -> list[Step]:
    return [Step("status", code, tuple((k.replace("_", "-"), v) for k, v in headers.items()))] * times


def rate_limited(retry_after: int, times: int = 1) -> list[Step]:
    return status(429, times, Retry_After=str(retry_after))


def reset(times: int = 1) -> list[Step]:
    return [Step("reset")] * times


def stall(seconds: float, times: int = 1) -> list[Step]:
    return [Step("stall", seconds=seconds)] * times


def html_error(times: int = 1) -> list[Step]:
    return [Step("html")] * times


@dataclass
class FaultRule:
    pattern: re.Pattern[str]
    steps: collections.deque[Step] = field(default_factory=collections.deque)
    outage_until: float = 0.0
    outage_status: int = 503
    # Fail this share of requests (0..1) with `random_status`, deterministically by request count.
    failure_rate: float = 0.0
    random_status: int = 500
    _count: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next_step(self) -> Step | None:
        with self._lock:
            self._count += 1
            if self.steps:
                return self.steps.popleft()
            if time.time() < self.outage_until:
                return Step("status", self.outage_status)
            if self.failure_rate and (self._count * self.failure_rate) % 1.0 + self.failure_rate >= 1.0:
                return Step("status", self.random_status)
            return None


class Faults:
    """The fault rules of one simulator."""

    def __init__(self) -> None:
        self._rules: list[FaultRule] = []
        self._lock = threading.Lock()

    def rule(self, pattern: str) -> FaultRule:
        """The rule for ``pattern`` (a regular expression matched against the whole path)."""
        with self._lock:
            for existing in self._rules:
                if existing.pattern.pattern == pattern:
                    return existing
            created = FaultRule(re.compile(pattern))
            self._rules.append(created)
            return created

    def add(self, pattern: str, steps: list[Step]) -> FaultRule:
        found = self.rule(pattern)
        found.steps.extend(steps)
        return found

    def outage(self, pattern: str, seconds: float, status_code: int = 503) -> FaultRule:
        found = self.rule(pattern)
        found.outage_until = time.time() + seconds
        found.outage_status = status_code
        return found

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def step_for(self, path: str) -> Step | None:
        with self._lock:
            rules = [r for r in self._rules if r.pattern.fullmatch(path)]
        for found in rules:
            step = found.next_step()
            if step is not None:
                return step
        return None
