"""How many times a failure is retried: the stage's limit for ordinary classes, none for infrastructure."""

from __future__ import annotations

import pytest

from activities.errors import to_application_error
from trawl.errors import Http5xx, NameNotFound, NotFound, StorageError


@pytest.mark.parametrize(("error", "attempt", "final"), [
    (Http5xx("HTTP 503"), 4, False),
    (Http5xx("HTTP 503"), 5, True),  # the stage's maximum_attempts
    (StorageError("No space left on device"), 5, False),
    (StorageError("No space left on device"), 500, False),  # until schedule_to_close
    (NameNotFound("no such host"), 3, True),  # its own, shorter limit
    (NotFound("HTTP 404"), 1, True),
])
def test_attempt_limits_by_class(error: Exception, attempt: int, final: bool) -> None:
    converted = to_application_error(error, attempt=attempt, stage_attempts=5)
    assert converted.non_retryable is final
    assert converted.type == error.error_class  # type: ignore[attr-defined]


def test_an_unlimited_stage_leaves_ordinary_classes_to_schedule_to_close() -> None:
    assert to_application_error(Http5xx("HTTP 503"), attempt=1000, stage_attempts=0).non_retryable is False


def test_the_last_attempt_says_it_gave_up() -> None:
    assert "after 5 attempts" in to_application_error(Http5xx("HTTP 503"), attempt=5, stage_attempts=5).message
