"""The one way a test waits for something that happens elsewhere: poll until it holds.

``until`` is for async tests (the check may return a value or an awaitable of one),
``wait_until`` for plain ones. Both return the check's first truthy answer and fail naming
``what`` when ``timeout`` seconds pass without one.

Two additions for a check that reads a state rather than answering yes or no:

- ``holds``: a predicate on the check's answer. The wait ends when ``holds(answer)`` is true and
  returns that answer (whatever its truth), and a failure shows the last answer read, so it says
  where the state stopped (``until(lambda: read(job), "the job to end", holds=ended)``).
- ``what`` may be a function of the last answer, for a failure that shows more than the answer
  (a log's tail, what is missing): ``what=lambda answer: f"the copy to start: {log.read_text()}"``.

A check may also assert, for what must not happen while it waits (a process exiting early).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any

EVERY_S = 0.1  # between two looks: short enough not to slow a test, long enough not to load the machine
SHOWN = 2000  # characters of the last answer a failure shows


def _done(answer: Any, holds: Callable[[Any], Any] | None) -> bool:
    return bool(holds(answer) if holds is not None else answer)


def _gave_up(what: str | Callable[[Any], str], timeout: float, answer: Any,
             holds: Callable[[Any], Any] | None) -> str:
    if callable(what):
        return f"gave up after {timeout:.0f} s waiting for {what(answer)}"
    message = f"gave up after {timeout:.0f} s waiting for {what}"
    return f"{message}; the last answer: {repr(answer)[:SHOWN]}" if holds is not None else message


async def until(check: Callable[[], Any], what: str | Callable[[Any], str] = "the condition", timeout: float = 60,
                every: float = EVERY_S, *, holds: Callable[[Any], Any] | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        answer = check()
        if inspect.isawaitable(answer):
            answer = await answer
        if _done(answer, holds):
            return answer
        assert time.monotonic() < deadline, _gave_up(what, timeout, answer, holds)
        await asyncio.sleep(every)


def wait_until(check: Callable[[], Any], what: str | Callable[[Any], str] = "the condition", timeout: float = 60,
               every: float = EVERY_S, *, holds: Callable[[Any], Any] | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        answer = check()
        if _done(answer, holds):
            return answer
        assert time.monotonic() < deadline, _gave_up(what, timeout, answer, holds)
        time.sleep(every)
