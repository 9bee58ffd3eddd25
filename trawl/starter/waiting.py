"""What a crawl's running items are doing, and what those that make no progress wait for.

A crawl's own counts say "3 running" through an outage as before it. The items' pending activities
say more: an activity waiting for its next attempt after a failure names the failure's class and
message, one scheduled on a host's queue that no worker has taken waits for that host, one on a
shared queue for any worker; one whose worker died (its attempt timed out: no heartbeat) waits for
another worker, not for a fix of trawl's. So ``trawl crawl-status``, the API and the web page can
say ``3 waiting: storage_error (object store: ...) since 21:14:05``, ``1 waiting: worker_lost
(worker lost (no heartbeat for 10 s); waiting for its host or another)`` or ``10 waiting for a host``.

Each running item is described once (one request each, at most :data:`ITEMS_READ` of them).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.api.enums.v1 import PendingActivityState, TimeoutType
from temporalio.client import Client
from temporalio.service import RPCError

from trawl.contracts import ITEM_WORKFLOW
from trawl.formatting import recording_words
from trawl.starter.views import visibility_literal

ITEMS_READ = 100  # running items described per look; a crawl's window is usually smaller
DESCRIBE_AT_ONCE = 16
# A task no worker took within this long is waiting for one (a fresh one is merely queued).
UNTAKEN_AFTER = timedelta(seconds=10)
# An attempt begun after a failure counts as that failure's wait until it has run this long: an
# item retrying an outage every few seconds is mostly waiting, and each attempt lasts a moment;
# counted as its stage, it flickered between the two in every look.
RETRY_SETTLES_AFTER = timedelta(seconds=10)
STAGE_OF = {"fetch": "fetch", "fetch_and_store_tiny": "fetch", "claim_host": "claim", "download": "download", "small_item": "download",
            "record_broadcast": "joined a recording",
            "verify": "verify", "commit": "commit", "discard": "clean-up"}
HOST_QUEUE_MARK = "-host-"  # trawl.contracts.host_queue names a host's queue so


@dataclass
class Waiting:
    """Items that make no progress for one reason: ``error_class`` (a failure they retry after;
    ``message`` is the latest) or, without one, ``for a host`` / ``for a worker``."""

    reason: str
    count: int
    since: datetime  # when the first of them began waiting (UTC); for a failure, when it failed (see _failed_at)
    error_class: str | None = None
    message: str = ""

    def line(self) -> str:
        what = f": {self.error_class} ({self.message})" if self.error_class else f" {self.reason}"
        return f"{self.count} waiting{what} since {self.since.astimezone():%H:%M:%S}"


@dataclass
class Recording:
    """A live recording among the running items (trawl.download.live.recording_view): the media
    it holds in every part, its size, the part in progress and the playlist window it waits in."""

    workflow_id: str
    seconds: float = 0.0
    segments: int = 0
    missing: int = 0
    bytes: int = 0
    part: int = 0
    window: list[int] | None = None  # [first, last] media sequence the playlist named
    next: int | None = None  # the media sequence it waits for
    started_at: str = ""

    @classmethod
    def of(cls, workflow_id: str, view: dict[str, Any]) -> Recording:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(workflow_id=workflow_id, **{k: v for k, v in view.items() if k in known and k != "workflow_id"})

    def line(self) -> str:
        return recording_words(dataclasses.asdict(self))


@dataclass
class RunningItems:
    """The running items read (``read`` of ``running``), by stage, and those waiting by reason."""

    running: int = 0
    read: int = 0
    stages: dict[str, int] = field(default_factory=dict)
    waiting: list[Waiting] = field(default_factory=list)
    recordings: list[Recording] = field(default_factory=list)  # live recordings among them

    def doing(self) -> str:
        """``2 download, 1 commit`` (and how many were read, when not all)."""
        doing = ", ".join(f"{n} {stage}" for stage, n in sorted(self.stages.items(), key=lambda kv: -kv[1]))
        if doing and self.read < self.running:
            doing += f" (of the {self.read} running items read, of {self.running})"
        return doing

    def line(self) -> str:
        """``3 waiting: ... since ...; 2 download, 1 commit; recording 0:12 of media, ...`` ("" when
        nothing runs)."""
        return "; ".join([w.line() for w in self.waiting] + ([self.doing()] if self.stages else [])
                         + [r.line() for r in self.recordings])


def items_dict(items: RunningItems | None) -> dict[str, Any] | None:
    """The JSON form (``since`` in ISO 8601); None stays None (a crawl that is not running)."""
    if items is None:
        return None
    return {**dataclasses.asdict(items),
            "waiting": [{**dataclasses.asdict(w), "since": w.since.isoformat()} for w in items.waiting]}


def _time(stamp: Any) -> datetime | None:
    return stamp.ToDatetime(tzinfo=UTC) if stamp is not None and stamp.seconds else None


def _failed_at(activity: Any) -> datetime | None:
    """When the activity's failures began, as far as the server tells: the latest failed attempt's
    end (``last_attempt_complete_time``; the server keeps no first failure's time), else the
    latest attempt's start. Never the first attempt's schedule: an item may have run fine for
    minutes before its store went away."""
    return _time(activity.last_attempt_complete_time) or _time(activity.last_started_time)


# A worker that stops heartbeating (SIGKILL, power, a cut network) or never answers is seen by the
# server as a timeout of its attempt, a failure with no application type: not an error of trawl's.
_WORKER_LOST = {TimeoutType.TIMEOUT_TYPE_HEARTBEAT: "no heartbeat for {} s",
                TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE: "no answer within {} s"}
_WORKER_LOST_TIMEOUTS = {TimeoutType.TIMEOUT_TYPE_HEARTBEAT: "heartbeat_timeout",
                         TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE: "start_to_close_timeout"}
WORKER_LOST = "worker_lost"


def _worker_lost(activity: Any, on_host: bool) -> str | None:
    """The message for an attempt whose worker was lost, or None for any other failure."""
    failure = activity.last_failure
    kind = failure.timeout_failure_info.timeout_type if failure.HasField("timeout_failure_info") else None
    if kind not in _WORKER_LOST:
        return None
    timeout = getattr(activity.activity_options, _WORKER_LOST_TIMEOUTS[kind])
    gone = _WORKER_LOST[kind].format(f"{timeout.ToTimedelta().total_seconds():.0f}")
    # A host's step waits for that host (another takes the item after worker.local_schedule_to_start).
    then = "waiting for its host or another" if on_host else "retried on another worker"
    return f"worker lost ({gone}); {then}"


def what_it_waits_for(activities: Iterable[Any], now: datetime) -> tuple[str, Waiting | None]:
    """One item's stage and, when it makes no progress, what it waits for (its pending activities,
    ``PendingActivityInfo``). A failure being retried counts first (also while its next attempt is
    young: :data:`RETRY_SETTLES_AFTER`), then a task no worker took."""
    stage = "between steps"
    untaken: Waiting | None = None
    for activity in activities:
        stage = STAGE_OF.get(activity.activity_type.name, activity.activity_type.name)
        scheduled = activity.state == PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
        failure = activity.last_failure
        on_host = HOST_QUEUE_MARK in activity.activity_options.task_queue.name
        attempt_began = _time(activity.last_started_time)
        retrying = (not scheduled and attempt_began is not None and activity.attempt > 1
                    and now - attempt_began < RETRY_SETTLES_AFTER)
        if (scheduled or retrying) and failure.message:
            since = _failed_at(activity) or now
            lost = _worker_lost(activity, on_host)
            if lost is not None:
                return stage, Waiting(WORKER_LOST, 1, since, WORKER_LOST, lost)
            error_class = failure.application_failure_info.type or "internal_error"
            message = " ".join(failure.message.split())[:160]
            return stage, Waiting(error_class, 1, since, error_class, message)
        queued_at = _time(activity.scheduled_time)
        if scheduled and queued_at is not None and now - queued_at >= UNTAKEN_AFTER and untaken is None:
            untaken = Waiting("for a host" if on_host else "for a worker", 1, queued_at)
    return stage, untaken


def tally(items: Iterable[tuple[str, Waiting | None]], running: int) -> RunningItems:
    """The items' stages and waits, grouped: waits by reason, the earliest since, the latest message."""
    view = RunningItems(running=running)
    grouped: dict[str, Waiting] = {}
    for stage, waiting in items:
        view.read += 1
        if waiting is None:
            view.stages[stage] = view.stages.get(stage, 0) + 1
            continue
        group = grouped.get(waiting.reason)
        if group is None:
            grouped[waiting.reason] = waiting
            continue
        group.count += 1
        if waiting.since < group.since:
            group.since = waiting.since
        group.message = group.message or waiting.message
    view.waiting = sorted(grouped.values(), key=lambda w: (-w.count, w.since))
    return view


async def running_items(client: Client, crawl_id: str, running: int | None = None) -> RunningItems:
    """What the running items of crawl ``crawl_id`` do and wait for (``running``: how many the
    crawl counts, else as many as visibility lists)."""
    query = f"WorkflowType = '{ITEM_WORKFLOW}' AND CrawlId = {visibility_literal(crawl_id)} AND ExecutionStatus = 'Running'"
    ids = [e.id async for e in client.list_workflows(query, limit=ITEMS_READ, page_size=ITEMS_READ)]
    now = datetime.now(UTC)
    slots = asyncio.Semaphore(DESCRIBE_AT_ONCE)

    recordings: list[Recording] = []

    async def read(workflow_id: str) -> tuple[str, Waiting | None] | None:
        async with slots:
            try:
                desc = await client.get_workflow_handle(workflow_id).describe()
            except RPCError:
                return None  # ended (and gone) since it was listed
        pending = desc.raw_description.pending_activities
        stage, waiting = what_it_waits_for(pending, now)
        recording = await _recording(client, pending)
        if recording is not None:
            recordings.append(Recording.of(workflow_id, recording))
            stage = "recording" if stage == "download" else stage
        return stage, waiting

    read_items = [r for r in await asyncio.gather(*(read(i) for i in ids)) if r is not None]
    view = tally(read_items, max(running or 0, len(ids)))
    view.recordings = sorted(recordings, key=lambda r: r.workflow_id)
    return view


async def _recording(client: Client, pending: Iterable[Any]) -> dict[str, Any] | None:
    """A live recording's measures from its download's heartbeat, or None for any other item."""
    from trawl.download.live import recording_view  # here: only a crawl's look at its items needs it

    for activity in pending:
        if activity.activity_type.name == "download" and activity.heartbeat_details.payloads:
            details = (await client.data_converter.decode(activity.heartbeat_details.payloads))[0]
            return recording_view(details)
    return None

