"""How many times a failure is retried: the stage's limit for ordinary classes, none for infrastructure."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from trawl.activities.application_errors import classified, to_application_error
from trawl.contracts import DownloadInput
from trawl.errors import Http5xx, NameNotFound, NotFound, RateLimited, StorageError
from trawl.models import Asset


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


class _Stage:
    """An activity class as the worker builds it, with the worker's own (different) settings."""

    max_attempts = 1

    def __init__(self, error: Exception) -> None:
        self.error = error

    @classified(lambda self: timedelta(minutes=10))
    def run(self, inp: DownloadInput) -> None:
        raise self.error


def _attempt(error: Exception, inp: DownloadInput, attempt: int = 2) -> ApplicationError:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=attempt,
                                   retry_policy=RetryPolicy(maximum_interval=timedelta(seconds=30)))
    with pytest.raises(ApplicationError) as caught:
        env.run(_Stage(error).run, inp)
    return caught.value


def test_the_item_s_options_decide_the_attempts_not_the_worker_s_settings() -> None:
    """Two workers with different retry settings give one item the same outcome."""
    inp = DownloadInput("item-x", Asset(name="video", kind="video", urls=["http://127.0.0.1/v.mp4"]),
                        stage_attempts=5)
    assert _attempt(Http5xx("HTTP 503"), inp).non_retryable is False  # the worker alone would stop at 1
    assert _attempt(Http5xx("HTTP 503"), inp, attempt=5).non_retryable is True
    # A run started before the options carried the limit keeps the worker's.
    assert _attempt(Http5xx("HTTP 503"), dataclasses.replace(inp, stage_attempts=None)).non_retryable is True


def test_retry_after_is_capped_by_the_item_s_interval_not_the_worker_s() -> None:
    inp = DownloadInput("item-x", Asset(name="video", kind="video", urls=["http://127.0.0.1/v.mp4"]),
                        stage_attempts=0)
    error = _attempt(RateLimited("HTTP 429", retry_after=3600), inp)
    assert error.next_retry_delay == timedelta(seconds=30)


def test_a_wait_of_trawl_s_own_is_spread_and_a_server_s_retry_after_is_kept() -> None:
    """Items throttled together must not all come back together: with a limit of two requests a
    second, three items retrying in lockstep were turned away on every attempt until they failed."""
    own = [to_application_error(RateLimited("HTTP 412"), timedelta(seconds=2), attempt=1).next_retry_delay
           for _ in range(200)]
    # The stage's cap (2 s) cut trawl's default (120 s): spread below the cap.
    assert all(timedelta(seconds=1) <= wait <= timedelta(seconds=2) for wait in own)
    assert len(set(own)) > 100  # drawn afresh each time, not one value for everybody
    # Under the cap the default is never shortened: 120 s to 180 s.
    longer = [to_application_error(RateLimited("HTTP 412"), timedelta(minutes=5), attempt=1).next_retry_delay
              for _ in range(200)]
    assert all(timedelta(seconds=120) <= wait <= timedelta(seconds=180) for wait in longer)
    assert len(set(longer)) > 100
    said = {to_application_error(RateLimited("HTTP 429", retry_after=1.5), timedelta(seconds=2),
                                 attempt=1).next_retry_delay for _ in range(20)}
    assert said == {timedelta(seconds=1.5)}  # the server said how long: that long


@pytest.mark.parametrize(("attempt", "delay"), [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (40, 5.0)])
def test_a_storage_error_waits_no_longer_than_its_class_allows(attempt: int, delay: float) -> None:
    """The stage's backoff (1 s doubling up to 5 min here) up to 5 s: an item waiting for the store
    tries again within 5 s of its return, however long the outage lasted."""
    inp = DownloadInput("item-x", Asset(name="video", kind="video", urls=["http://127.0.0.1/v.mp4"]),
                        stage_attempts=3)
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=attempt, retry_policy=RetryPolicy(
        initial_interval=timedelta(seconds=1), backoff_coefficient=2.0, maximum_interval=timedelta(minutes=5)))
    with pytest.raises(ApplicationError) as caught:
        env.run(_Stage(StorageError("object store: upload: EndpointConnectionError")).run, inp)
    assert caught.value.non_retryable is False  # past the stage's 3 attempts: patient
    assert caught.value.next_retry_delay == timedelta(seconds=delay)
    # Other classes keep the policy's own backoff.
    assert _attempt(Http5xx("HTTP 503"), inp).next_retry_delay is None
