"""Heartbeats for activities whose work has no natural progress points.

Only activities with a heartbeat timeout are retried on another worker soon after their worker
dies; without one a dead worker's task waits for its whole start-to-close timeout (minutes to
hours). Hashing a large file, copying it into the store or listing a source has no loop that
could report progress at a steady pace, so a side thread heartbeats while the body runs: the
heartbeat says "this worker is alive and still on it", and start-to-close still bounds a body
that hangs.
"""

from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from temporalio import activity

F = TypeVar("F", bound=Callable[..., Any])
BEAT_EVERY_S = 1.0


def heartbeating(method: F) -> F:
    """Heartbeat every :data:`BEAT_EVERY_S` from a side thread while a sync activity runs."""

    @functools.wraps(method)
    def run(*args: Any, **kwargs: Any) -> Any:
        stop = threading.Event()
        # The activity's context lives in context variables; a copy carries it to the side thread.
        context = contextvars.copy_context()

        def beat() -> None:
            while not stop.wait(BEAT_EVERY_S):
                context.run(activity.heartbeat)

        beater = threading.Thread(target=beat, name="heartbeat", daemon=True)
        beater.start()
        try:
            return method(*args, **kwargs)
        finally:
            stop.set()
            beater.join()

    return run  # type: ignore[return-value]
