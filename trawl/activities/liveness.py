"""Heartbeats for activities whose work has no natural progress points.

Only activities with a heartbeat timeout are retried on another worker soon after their worker
dies; without one a dead worker's task waits for its whole start-to-close timeout (minutes to
hours). Hashing a large file, copying it into the store or listing a source has no loop that
could report progress at a steady pace, so a side thread heartbeats while the body runs: the
heartbeat says "this worker is alive and still on it", and start-to-close still bounds a body
that hangs.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import functools
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from temporalio import activity

F = TypeVar("F", bound=Callable[..., Any])
BEAT_EVERY_S = 1.0
SENDERS = 4  # threads sending heartbeats; each waits for the worker's loop to take its beat


class _Beater:
    """One thread of the process times the heartbeats of every body that runs, each every
    :data:`BEAT_EVERY_S`; a few sender threads send them.

    A thread each (started, then joined) cost more CPU than a tiny item's verify: three of them an
    item. A heartbeat from an activity thread is a round trip to the worker's event loop (the SDK
    waits for it), so the beats are sent outside the lock, by :data:`SENDERS` threads: a busy loop
    slows the beats, never a body's start or end. A body's beat still on its way is not sent
    again. One that arrives after its body ended is dropped by the SDK if the activity ended; if a
    later step of the same activity runs by then (small_item's next asset), it stands in for that
    step's own next beat, which says the same: this worker is alive and on it."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._due: dict[int, tuple[float, contextvars.Context]] = {}
        self._sending: set[int] = set()
        self._tokens = itertools.count()
        self._thread: threading.Thread | None = None
        self._senders: concurrent.futures.ThreadPoolExecutor | None = None  # made at the first beat

    def running(self, context: contextvars.Context) -> int:
        with self._changed:
            token = next(self._tokens)
            self._due[token] = (time.monotonic() + BEAT_EVERY_S, context)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._time, name="heartbeat", daemon=True)
                self._thread.start()
            self._changed.notify()
            return token

    def done(self, token: int) -> None:
        with self._changed:
            self._due.pop(token, None)

    def _time(self) -> None:
        with self._changed:
            while True:
                now = time.monotonic()
                for token, (due, context) in list(self._due.items()):
                    if due > now:
                        continue
                    # Every BEAT_EVERY_S from the body's start; a late wake-up does not slow the beats.
                    self._due[token] = (due + BEAT_EVERY_S if due + BEAT_EVERY_S > now else now + BEAT_EVERY_S,
                                        context)
                    if token in self._sending:  # a context runs in one thread at a time
                        continue
                    if self._senders is None:
                        self._senders = concurrent.futures.ThreadPoolExecutor(
                            max_workers=SENDERS, thread_name_prefix="heartbeat-send")
                    try:
                        self._senders.submit(self._send, token, context)
                    except RuntimeError:  # the interpreter is shutting down: no more beats
                        return
                    self._sending.add(token)
                soonest = min((due for due, _ in self._due.values()), default=None)
                self._changed.wait(None if soonest is None else max(soonest - time.monotonic(), 0.0))

    def _send(self, token: int, context: contextvars.Context) -> None:
        failed = False
        try:
            context.run(activity.heartbeat)
        except TimeoutError:
            pass  # the loop took more than the SDK's wait: the beat may still go; the next one will
        except Exception as err:  # noqa: BLE001 - one body's failing beat must not end the others'
            logging.getLogger(__name__).warning("heartbeats of an activity body stopped: %r", err)
            failed = True
        with self._changed:
            self._sending.discard(token)
            if failed:
                self._due.pop(token, None)

    def _after_fork(self) -> None:
        """A forked child has no timing thread or senders, and maybe a lock held: start afresh."""
        self.__init__()  # type: ignore[misc]


_beater = _Beater()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_beater._after_fork)


def heartbeating(method: F) -> F:
    """Heartbeat every :data:`BEAT_EVERY_S` while a sync activity runs (timed by the process's one
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
