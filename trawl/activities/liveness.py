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
import itertools
import os
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from temporalio import activity

F = TypeVar("F", bound=Callable[..., Any])
BEAT_EVERY_S = 1.0


class _Beater:
    """One thread of the process heartbeats every body that runs, each every :data:`BEAT_EVERY_S`.

    A thread each (started, then joined) cost more CPU than a tiny item's verify: three of them an
    item. A beat is sent under the lock, so once :meth:`done` returns no beat of that body follows
    (none reaches an activity that has completed)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._due: dict[int, tuple[float, contextvars.Context]] = {}
        self._tokens = itertools.count()
        self._thread: threading.Thread | None = None

    def running(self, context: contextvars.Context) -> int:
        with self._changed:
            token = next(self._tokens)
            self._due[token] = (time.monotonic() + BEAT_EVERY_S, context)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._beat, name="heartbeat", daemon=True)
                self._thread.start()
            self._changed.notify()
            return token

    def done(self, token: int) -> None:
        with self._changed:
            self._due.pop(token, None)

    def _beat(self) -> None:
        with self._changed:
            while True:
                now = time.monotonic()
                for token, (due, context) in list(self._due.items()):
                    if due <= now:
                        try:
                            context.run(activity.heartbeat)  # queued to the worker's loop: quick
                        except Exception:  # noqa: BLE001 - one body's failing beat must not end the others'
                            self._due.pop(token)
                            continue
                        self._due[token] = (now + BEAT_EVERY_S, context)
                soonest = min((due for due, _ in self._due.values()), default=None)
                self._changed.wait(None if soonest is None else max(soonest - time.monotonic(), 0.0))

    def _after_fork(self) -> None:
        """A forked child has no beating thread and maybe a lock held mid-beat: start afresh."""
        self.__init__()  # type: ignore[misc]


_beater = _Beater()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_beater._after_fork)


def heartbeating(method: F) -> F:
    """Heartbeat every :data:`BEAT_EVERY_S` while a sync activity runs (from the process's one
    heartbeat thread)."""

    @functools.wraps(method)
    def run(*args: Any, **kwargs: Any) -> Any:
        # The activity's context lives in context variables; a copy carries it to the beating thread.
        token = _beater.running(contextvars.copy_context())
        try:
            return method(*args, **kwargs)
        finally:
            _beater.done(token)

    return run  # type: ignore[return-value]
