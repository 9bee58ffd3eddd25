"""What a running item waits for, read from its pending activities (the protos Temporal's describe
returns, built here)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from temporalio.api.enums.v1 import PendingActivityState, TimeoutType
from temporalio.api.workflow.v1 import PendingActivityInfo

from trawl.starter.waiting import items_dict, tally, what_it_waits_for

NOW = datetime(2026, 12, 4, 21, 20, tzinfo=UTC)
SCHEDULED = PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
STARTED = PendingActivityState.PENDING_ACTIVITY_STATE_STARTED


def pending(kind: str, state: int, queue: str = "trawl-download", scheduled: datetime = NOW,
            failure: tuple[str, str] | None = None, first: datetime | None = None,
            failed: datetime | None = None) -> PendingActivityInfo:
    """A pending activity as describe returns it; ``first``: when its first attempt was scheduled
    (a schedule-to-close of 2 h), ``failed``: when its latest attempt failed (``first`` if not given)."""
    info = PendingActivityInfo(activity_id="1", state=state, attempt=1)
    info.activity_type.name = kind
    info.activity_options.task_queue.name = queue
    info.scheduled_time.FromDatetime(scheduled)
    if first is not None:
        info.activity_options.schedule_to_close_timeout.FromTimedelta(timedelta(hours=2))
        info.expiration_time.FromDatetime(first + timedelta(hours=2))
    if failure is not None:
        info.attempt = 2
        info.last_failure.message, info.last_failure.application_failure_info.type = failure[1], failure[0]
        info.last_attempt_complete_time.FromDatetime(failed or first or NOW)
    return info


def test_a_running_activity_is_its_stage() -> None:
    assert what_it_waits_for([pending("download", STARTED, "trawl-host-a")], NOW) == ("download", None)
    assert what_it_waits_for([pending("small_item", STARTED)], NOW) == ("download", None)
    assert what_it_waits_for([], NOW) == ("between steps", None)


def test_a_failure_being_retried_is_waited_for_since_it_failed_not_since_the_first_attempt() -> None:
    """The first attempt was scheduled 3 min ago and ran fine until the store went away 20 s ago:
    "since" is the failure's time (crawl-status said 04:29:57 for an outage that began 04:30:02)."""
    first, failed = NOW - timedelta(minutes=3), NOW - timedelta(seconds=20)
    stage, waiting = what_it_waits_for([pending("commit", SCHEDULED, "trawl-host-a", NOW + timedelta(seconds=4),
                                                ("storage_error", "object store: upload ...:\n refused"), first,
                                                failed)], NOW)
    assert stage == "commit" and waiting is not None
    assert (waiting.error_class, waiting.message, waiting.since) == ("storage_error", "object store: upload ...: refused",
                                                                     failed)
    # Without the failure's time, the latest attempt's start (after the failure, never before it).
    info = pending("commit", SCHEDULED, failure=("storage_error", "down"), first=first)
    info.ClearField("last_attempt_complete_time")
    info.last_started_time.FromDatetime(NOW - timedelta(seconds=5))
    assert what_it_waits_for([info], NOW)[1].since == NOW - timedelta(seconds=5)


def killed(queue: str, timeout_type: int = TimeoutType.TIMEOUT_TYPE_HEARTBEAT) -> PendingActivityInfo:
    """An attempt whose worker was SIGKILLed: the server timed it out, a failure with no application type."""
    info = PendingActivityInfo(activity_id="1", state=SCHEDULED, attempt=2)
    info.activity_type.name = "download"
    info.activity_options.task_queue.name = queue
    info.activity_options.heartbeat_timeout.FromTimedelta(timedelta(seconds=10))
    info.activity_options.start_to_close_timeout.FromTimedelta(timedelta(hours=1))
    info.scheduled_time.FromDatetime(NOW - timedelta(seconds=30))
    info.last_failure.message = "activity Heartbeat timeout" if timeout_type == TimeoutType.TIMEOUT_TYPE_HEARTBEAT \
        else "activity StartToClose timeout"
    info.last_failure.timeout_failure_info.timeout_type = timeout_type
    info.last_attempt_complete_time.FromDatetime(NOW - timedelta(seconds=30))
    return info


def test_a_heartbeat_timeout_is_a_lost_worker_not_an_internal_error() -> None:
    stage, waiting = what_it_waits_for([killed("trawl-host-a")], NOW)
    assert stage == "download" and waiting is not None
    assert (waiting.reason, waiting.error_class) == ("worker_lost", "worker_lost")
    assert waiting.message == "worker lost (no heartbeat for 10 s); waiting for its host or another"
    assert "internal_error" not in waiting.line()
    shared = what_it_waits_for([killed("trawl-fetch-generic")], NOW)[1]
    assert shared.message == "worker lost (no heartbeat for 10 s); retried on another worker"
    stuck = what_it_waits_for([killed("trawl-fetch-generic", TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE)], NOW)[1]
    assert stuck.message == "worker lost (no answer within 3600 s); retried on another worker"
    # Any other failure without an application type is still what it was.
    other = pending("download", SCHEDULED, failure=("", "boom"), first=NOW)
    assert what_it_waits_for([other], NOW)[1].error_class == "internal_error"


def test_a_young_attempt_after_a_failure_is_still_that_wait_and_a_settled_one_is_its_stage() -> None:
    """An item retrying an outage every 5 s spends a moment of each in an attempt: a look then
    must not count it as committing (CI caught crawl-status saying "1 waiting ... 1 download")."""
    def retried(began: datetime, attempt: int = 4) -> PendingActivityInfo:
        info = pending("small_item", STARTED, failure=("storage_error", "object store: refused"),
                       first=NOW - timedelta(minutes=1))
        info.attempt = attempt
        info.last_started_time.FromDatetime(began)
        return info

    stage, waiting = what_it_waits_for([retried(NOW - timedelta(seconds=1))], NOW)
    assert stage == "download" and waiting is not None
    assert (waiting.error_class, waiting.since) == ("storage_error", NOW - timedelta(minutes=1))
    # Running for a while (a download resumed after a failure, moving again): its stage.
    assert what_it_waits_for([retried(NOW - timedelta(seconds=30))], NOW) == ("download", None)
    # A first attempt has no failure of its own to wait for.
    assert what_it_waits_for([retried(NOW - timedelta(seconds=1), attempt=1)], NOW) == ("download", None)


def test_a_task_no_worker_took_waits_for_its_host_or_any_worker() -> None:
    old = NOW - timedelta(minutes=2)
    assert what_it_waits_for([pending("download", SCHEDULED, "trawl-host-a", old)], NOW)[1].reason == "for a host"
    assert what_it_waits_for([pending("fetch", SCHEDULED, "trawl-fetch-generic", old)], NOW)[1].reason == "for a worker"
    # A task scheduled a moment ago is merely queued.
    assert what_it_waits_for([pending("download", SCHEDULED, "trawl-host-a", NOW - timedelta(seconds=1))], NOW)[1] is None


def test_items_are_grouped_by_reason_with_the_earliest_since() -> None:
    early, late = NOW - timedelta(minutes=5), NOW - timedelta(minutes=1)
    failing = [what_it_waits_for([pending("commit", SCHEDULED, failure=("storage_error", "down"), first=t)], NOW)
               for t in (late, early, late)]
    hosts = [what_it_waits_for([pending("download", SCHEDULED, "trawl-host-b", early)], NOW)]
    busy = [what_it_waits_for([pending("download", STARTED)], NOW) for _ in range(2)]
    view = tally(failing + hosts + busy, running=10)
    assert [(w.reason, w.count, w.since) for w in view.waiting] == [("storage_error", 3, early),
                                                                    ("for a host", 1, early)]
    assert view.stages == {"download": 2} and (view.read, view.running) == (6, 10)
    since = early.astimezone().strftime("%H:%M:%S")
    assert view.line() == (f"3 waiting: storage_error (down) since {since}; 1 waiting for a host since {since}; "
                           "2 download (of the 6 running items read, of 10)")
    assert items_dict(view)["waiting"][0]["since"] == early.isoformat()
    assert items_dict(None) is None
