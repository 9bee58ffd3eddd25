"""The one way a test waits for something that happens elsewhere: poll until it holds.

``until`` is for async tests (the check may return a value or an awaitable of one),
``wait_until`` for plain ones. Both return the check's first truthy answer and fail naming
``what`` when ``timeout`` seconds pass without one.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any

EVERY_S = 0.1  # between two looks: short enough not to slow a test, long enough not to load the machine


async def until(check: Callable[[], Any], what: str = "the condition", timeout: float = 60,
                every: float = EVERY_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        answer = check()
        if inspect.isawaitable(answer):
            answer = await answer
        if answer:
            return answer
        assert time.monotonic() < deadline, f"gave up after {timeout:.0f} s waiting for {what}"
        await asyncio.sleep(every)


def wait_until(check: Callable[[], Any], what: str = "the condition", timeout: float = 60,
               every: float = EVERY_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        answer = check()
        if answer:
            return answer
        assert time.monotonic() < deadline, f"gave up after {timeout:.0f} s waiting for {what}"
        time.sleep(every)
