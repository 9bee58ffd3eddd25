"""The single translation from a classified trawl failure to a Temporal ApplicationError."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from temporalio.exceptions import ApplicationError, CancelledError

from trawl.errors import classify_exception, redact

F = TypeVar("F", bound=Callable[..., Any])
MAX_RETRY_DELAY_S = 86_400.0


def to_application_error(exc: BaseException, max_delay: timedelta | None = None) -> ApplicationError:
    error = classify_exception(exc)
    delay = None
    if error.retry_after is not None and error.retryable:
        # Cap before building the timedelta: a hostile Retry-After may be astronomically large.
        cap = max_delay.total_seconds() if max_delay is not None else MAX_RETRY_DELAY_S
        delay = timedelta(seconds=min(error.retry_after, cap, MAX_RETRY_DELAY_S))
    return ApplicationError(
        redact(error.message),
        type=error.error_class,
        non_retryable=not error.retryable,
        next_retry_delay=delay,
    )


def classified(max_delay: Callable[[Any], timedelta | None]) -> Callable[[F], F]:
    """Wrap a sync activity method so every failure leaves it classified.

    ``max_delay(self)`` gives the stage's maximum retry interval, which caps ``Retry-After``.
    """

    def wrap(method: F) -> F:
        @functools.wraps(method)
        def run(self: Any, *args: Any) -> Any:
            try:
                return method(self, *args)
            except (ApplicationError, CancelledError):
                raise
            except Exception as exc:  # noqa: BLE001 - classification is the point
                raise to_application_error(exc, max_delay(self)) from None

        return run  # type: ignore[return-value]

    return wrap


def workdir_name(workflow_id: str) -> str:
    """A file-system-safe directory name for one workflow's partial files."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", workflow_id)[:80]
    return f"{safe}-{hashlib.sha1(workflow_id.encode()).hexdigest()[:12]}"

