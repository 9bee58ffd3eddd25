"""The single translation from a classified trawl failure to a Temporal ApplicationError."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError, CancelledError

from trawl.errors import classify_exception, redact

F = TypeVar("F", bound=Callable[..., Any])
MAX_RETRY_DELAY_S = 86_400.0
# A wait trawl chose itself (no Retry-After) is drawn from a window this share of it wide, as high
# as the stage's cap lets it reach (a rate limit's 120 s under a 5 min cap: 120-180 s; cut to a
# 2 s cap: 1-2 s), so that items throttled together do not come back together, in lockstep,
# where a limit of a few requests a second turns all of them away again, every attempt.
OWN_WAIT_SPREAD = 0.5


def to_application_error(exc: BaseException, max_delay: timedelta | None = None,
                         attempt: int | None = None, stage_attempts: int | None = None) -> ApplicationError:
    """The Temporal error for ``exc``, classified; the retry policy decides from its type.

    The stages' retry policies have no attempt limit of their own (schedule_to_close bounds
    them), so that infrastructure failures (``patient`` classes: a full disk, the catalog down)
    wait for as long as the stage may take. Every other retryable class is made final here at
    the stage's ``maximum_attempts``, or earlier at its own ``max_attempts`` (e.g. name_not_found),
    with a message saying so.

    Args:
        exc: the failure.
        max_delay: the stage's maximum retry interval; caps ``Retry-After``.
        attempt: the activity attempt that failed (1-based); read from the running activity
            when not given.
        stage_attempts: the stage's ``maximum_attempts`` (0 or None: unlimited).
    """
    error = classify_exception(exc)
    attempt = _current_attempt() if attempt is None else attempt
    limits = [n for n in (error.max_attempts, None if error.patient else stage_attempts) if n]
    final = not error.retryable or (bool(limits) and attempt >= min(limits))
    message = error.message
    if final and error.retryable:
        message += f" (still so after {attempt} attempts: {error.give_up_hint or 'giving up'})"
    delay = None
    if error.retry_after is not None and not final:
        # Cap before building the timedelta: a hostile Retry-After may be astronomically large.
        cap = max_delay.total_seconds() if max_delay is not None else MAX_RETRY_DELAY_S
        seconds = min(error.retry_after, cap, MAX_RETRY_DELAY_S)
        if error.own_wait:
            longest = min(seconds * (1 + OWN_WAIT_SPREAD), cap, MAX_RETRY_DELAY_S)
            shortest = max(longest - OWN_WAIT_SPREAD * seconds, seconds * (1 - OWN_WAIT_SPREAD))
            seconds = random.uniform(shortest, longest)
        delay = timedelta(seconds=seconds)
    elif error.max_retry_interval is not None and not final:
        delay = timedelta(seconds=min(_backoff(attempt), error.max_retry_interval))
    return ApplicationError(
        redact(message),
        type=error.error_class,
        non_retryable=final,
        next_retry_delay=delay,
    )


def _backoff(attempt: int) -> float:
    """Seconds the running activity's retry policy waits after ``attempt`` (infinity when unknown:
    outside an activity, or a policy without an initial interval)."""
    policy = activity.info().retry_policy if activity.in_activity() else None
    if policy is None or not policy.initial_interval:
        return float("inf")
    wait = policy.initial_interval.total_seconds() * policy.backoff_coefficient ** min(attempt - 1, 64)
    return min(wait, policy.maximum_interval.total_seconds()) if policy.maximum_interval else wait


def _current_attempt() -> int:
    """The running activity's attempt number; 1 outside an activity (nothing was retried yet)."""
    return activity.info().attempt if activity.in_activity() else 1


def stage_attempts(arg: Any, worker_setting: int | None) -> int | None:
    """The attempt limit of the stage ``arg`` (an activity input) runs: the item's options'
    (``arg.stage_attempts``), so the outcome is the same on every worker; the worker's setting
    only for inputs of runs started before the options carried it."""
    given = getattr(arg, "stage_attempts", None)
    return worker_setting if given is None else given


def stage_max_delay(worker_setting: timedelta | None) -> timedelta | None:
    """The running activity's maximum retry interval, from the retry policy the item set (the
    same on every worker); the worker's setting outside an activity or without a policy."""
    if activity.in_activity():
        policy = activity.info().retry_policy
        if policy is not None and policy.maximum_interval is not None:
            return policy.maximum_interval
    return worker_setting


def classified(max_delay: Callable[[Any], timedelta | None]) -> Callable[[F], F]:
    """Wrap a sync activity method so every failure leaves it classified.

    The stage's maximum retry interval (which caps ``Retry-After``) and attempt limit come from
    the item (the activity's retry policy, the input's ``stage_attempts``); ``max_delay(self)``
    and ``self.max_attempts`` are the worker's, for runs started before the input carried them.
    """

    def wrap(method: F) -> F:
        @functools.wraps(method)
        def run(self: Any, *args: Any) -> Any:
            try:
                return method(self, *args)
            except (ApplicationError, CancelledError):
                raise
            except Exception as exc:  # noqa: BLE001 - classification is the point
                raise to_application_error(
                    exc, stage_max_delay(max_delay(self)),
                    stage_attempts=stage_attempts(args[0] if args else None, getattr(self, "max_attempts", None)),
                ) from None

        return run  # type: ignore[return-value]

    return wrap
