"""What a running item waits for, read from its pending activities (the protos Temporal's describe
returns, built here)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from temporalio.api.enums.v1 import PendingActivityState
from temporalio.api.workflow.v1 import PendingActivityInfo

from trawl.starter.waiting import items_dict, tally, what_it_waits_for

NOW = datetime(2026, 12, 4, 21, 20, tzinfo=UTC)
SCHEDULED = PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
STARTED = PendingActivityState.PENDING_ACTIVITY_STATE_STARTED


def pending(kind: str, state: int, queue: str = "trawl-download", scheduled: datetime = NOW,
            failure: tuple[str, str] | None = None, first: datetime | None = None) -> PendingActivityInfo:
    info = PendingActivityInfo(activity_id="1", state=state, attempt=1)
    info.activity_type.name = kind
    info.activity_options.task_queue.name = queue
    info.scheduled_time.FromDatetime(scheduled)
    if first is not None:  # a schedule-to-close of 2 h from the first attempt
        info.activity_options.schedule_to_close_timeout.FromTimedelta(timedelta(hours=2))
        info.expiration_time.FromDatetime(first + timedelta(hours=2))
    if failure is not None:
        info.last_failure.message, info.last_failure.application_failure_info.type = failure[1], failure[0]
    return info


def test_a_running_activity_is_its_stage() -> None:
    assert what_it_waits_for([pending("download", STARTED, "trawl-host-a")], NOW) == ("download", None)
    assert what_it_waits_for([pending("small_item", STARTED)], NOW) == ("download", None)
    assert what_it_waits_for([], NOW) == ("between steps", None)


def test_a_failure_being_retried_is_waited_for_since_the_first_attempt() -> None:
    first = NOW - timedelta(minutes=3)
    stage, waiting = what_it_waits_for([pending("commit", SCHEDULED, "trawl-host-a", NOW + timedelta(seconds=4),
                                                ("storage_error", "object store: upload ...:\n refused"), first)], NOW)
    assert stage == "commit" and waiting is not None
    assert (waiting.error_class, waiting.message, waiting.since) == ("storage_error", "object store: upload ...: refused",
                                                                     first)


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
