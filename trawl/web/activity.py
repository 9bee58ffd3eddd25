"""The activity page's data: crawls with live counts, speed and ETA; watches; running items; and the
failures, grouped from the item workflows' outcomes in Temporal's visibility (no log needed).

A failed item ends with ``Outcome = 'failed'``, its ``ErrorClass``, its ``Platform`` and the
``Stage`` it failed in (items that failed before trawl kept the stage say ``done``). Groups are
platform x stage x error class with their count, first and last seen, and the newest example;
they are read from the newest :data:`FAILURES_SCANNED` failures of this deployment's task queue
prefix, its demo's included (``trawl demo`` runs on the prefix's demo queues). The newest
:data:`FAILED_NAMED` failures are named one by one, each with its URL, class and message (read
from its result), and link to the item's own page when the catalog holds the item (a URL committed
before, failing now), else to its workflow in Temporal's Web UI.

A running item shows Pause or Resume, whichever applies: its ``progress`` query says whether it is
paused (an item no worker answers for within :data:`PAUSED_WAIT_S` shows both).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime

from fastapi import HTTPException
from temporalio.client import WorkflowExecution
from temporalio.service import RPCError

from trawl.api import crawls as crawl_routes
from trawl.starter.failures import failed_items, failure_message
from trawl.starter.views import visibility_literal
from trawl.starter.waiting import RunningItems, running_items
from trawl.api.models import Crawl
from trawl.api.state import ApiState
from trawl.formatting import eta_seconds
from trawl.contracts import DEMO_QUEUE_SUFFIX, ITEM_WORKFLOW, PROGRESS, ItemResult, Progress, workflow_queue
from trawl.errors import NON_RETRYABLE
from trawl.starter.watches import Watch, list_watches

FAILURES_SCANNED = 5000
FAILED_NAMED = 10  # the newest failures named one by one (one result read each, at every look)
PAUSED_WAIT_S = 1.0  # a running item's answer to "paused?"; without one it shows both Pause and Resume
ASKED_AT_ONCE = 16
RUNNING_SHOWN = 50
CRAWLS_SHOWN = 10
CRAWLS_READ = 3  # running crawls whose items are read (one request per running item) for each look
# Visibility answers within this, or the page says that part is unavailable.
VISIBILITY_WAIT_S = 10.0


@dataclass
class FailureGroup:
    platform: str
    stage: str
    error_class: str
    count: int = 0
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    example_id: str = ""
    example_title: str = ""
    example_key: str = ""  # its canonical key, when known
    example_in_catalog: bool = False  # the key is a committed item: the example links to its page
    permanent: bool = False


@dataclass
class FailedItem:
    """One failed item, named: its URL, class and message; ``key`` the catalog item it links to."""

    result: ItemResult
    key: str | None = None

    @property
    def message(self) -> str:
        return failure_message(self.result)


@dataclass
class CrawlLine:
    crawl: Crawl
    speed: float | None = None  # bytes/s since it started
    rate: float | None = None  # items/s since it started
    eta_s: float | None = None
    items: RunningItems | None = None  # a running crawl's items: their stages, what they wait for


@dataclass
class RunningItem:
    workflow_id: str
    platform: str
    stage: str
    title: str
    started: datetime | None
    paused: bool | None = None  # None: not known (no worker answered)


@dataclass
class ActivityView:
    crawls: list[CrawlLine] = field(default_factory=list)
    watches: list[Watch] = field(default_factory=list)
    running: list[RunningItem] = field(default_factory=list)
    failures: list[FailureGroup] = field(default_factory=list)
    failures_counted: int = 0
    failed: list[FailedItem] = field(default_factory=list)  # the newest failures, named
    problems: list[str] = field(default_factory=list)  # parts that could not be read, one line each
    at: datetime = field(default_factory=lambda: datetime.now(UTC))


def _attr(execution: WorkflowExecution, name: str) -> str:
    values = execution.search_attributes.get(name) if execution.search_attributes else None
    return str(values[0]) if values else ""


def group_failures(executions: list[WorkflowExecution]) -> list[FailureGroup]:
    """Failed item workflows grouped by platform x stage x error class, the most recent group first."""
    groups: dict[tuple[str, str, str], FailureGroup] = {}
    for execution in executions:
        error_class = _attr(execution, "ErrorClass") or "unknown"
        key = (_attr(execution, "Platform") or "?", _attr(execution, "Stage") or "?", error_class)
        group = groups.get(key)
        if group is None:
            group = groups[key] = FailureGroup(*key, permanent=error_class in NON_RETRYABLE)
        group.count += 1
        seen = execution.close_time or execution.start_time
        if seen and (group.first_seen is None or seen < group.first_seen):
            group.first_seen = seen
        if seen and (group.last_seen is None or seen >= group.last_seen):
            group.last_seen = seen
            group.example_id = execution.id
            group.example_title = _attr(execution, "Title")
            group.example_key = _attr(execution, "CanonicalKey")
    return sorted(groups.values(), key=lambda g: g.last_seen or datetime.min.replace(tzinfo=UTC), reverse=True)


def crawl_line(crawl: Crawl, now: datetime) -> CrawlLine:
    """Average speed and item rate since the crawl started, and the time left at that rate."""
    stats = crawl.stats
    if stats is None or not stats.started_at:
        return CrawlLine(crawl)
    try:
        started = datetime.fromisoformat(stats.started_at.replace("Z", "+00:00"))
    except ValueError:
        return CrawlLine(crawl)
    end = now
    if stats.finished_at:
        try:
            end = datetime.fromisoformat(stats.finished_at.replace("Z", "+00:00"))
        except ValueError:
            pass
    elapsed = max((end - started).total_seconds(), 0.001)
    rate = stats.finished / elapsed
    eta = eta_seconds(stats.queued + stats.running, rate) if crawl.status == "RUNNING" else None
    return CrawlLine(crawl, speed=stats.bytes / elapsed, rate=rate, eta_s=eta)


async def _listed(state: ApiState, query: str, limit: int) -> list[WorkflowExecution]:
    return [e async for e in state.client.list_workflows(query, limit=limit, page_size=min(limit, 1000))]


async def activity_view(state: ApiState) -> ActivityView:
    """Everything the activity page shows, read at once; a part that cannot be read is named in
    ``problems`` and the rest is still shown."""
    view = ActivityView()

    async def crawls() -> None:
        page = await crawl_routes.list_crawls(limit=CRAWLS_SHOWN, offset=0, state=state)
        view.crawls = [crawl_line(c, view.at) for c in page.crawls]
        running = [line for line in view.crawls if line.crawl.status == "RUNNING" and line.crawl.stats][:CRAWLS_READ]

        async def read(line: CrawlLine) -> None:
            assert line.crawl.stats is not None
            line.items = await running_items(state.client, line.crawl.id, line.crawl.stats.running)
        await asyncio.gather(*(read(line) for line in running))

    async def watches() -> None:
        view.watches = await list_watches(state.client, state.settings)

    prefix = state.settings.temporal.task_queue_prefix
    items = (f"WorkflowType = '{ITEM_WORKFLOW}' AND TaskQueue IN "
             f"({visibility_literal(workflow_queue(prefix))}, "
             f"{visibility_literal(workflow_queue(prefix + DEMO_QUEUE_SUFFIX))})")

    async def running() -> None:
        found = await _listed(state, f"{items} AND ExecutionStatus = 'Running'", RUNNING_SHOWN)
        view.running = [RunningItem(e.id, _attr(e, "Platform"), _attr(e, "Stage") or "fetch", _attr(e, "Title"),
                                    e.start_time) for e in found]
        await paused_or_not(state, view.running)

    async def failures() -> None:
        found = await _listed(state, f"{items} AND Outcome = 'failed'", FAILURES_SCANNED)
        view.failures_counted = len(found)
        view.failures = group_failures(found)
        if found:
            view.failed = [FailedItem(result) for result in await failed_items(state.client, items, FAILED_NAMED)]
            try:
                await in_catalog(state, view.failures, view.failed)
            except Exception as err:  # noqa: BLE001 - the failures are still shown, linked to their workflows
                view.problems.append(f"the catalog, for the failed items' pages: {reason(err)}")

    parts = {"crawls": crawls, "watches": watches, "running items": running, "failures": failures}
    done = await asyncio.gather(*(asyncio.wait_for(part(), VISIBILITY_WAIT_S) for part in parts.values()),
                                return_exceptions=True)
    for name, outcome in zip(parts, done):
        if isinstance(outcome, BaseException):
            view.problems.append(f"{name}: {reason(outcome)}")
    return view


async def paused_or_not(state: ApiState, running: list[RunningItem]) -> None:
    """Whether each running item is paused, from its ``progress`` query; left None when no worker
    answers at once (the page then offers both Pause and Resume)."""
    slots = asyncio.Semaphore(ASKED_AT_ONCE)

    async def ask(item: RunningItem) -> None:
        async with slots:
            try:
                progress = await asyncio.wait_for(
                    state.client.get_workflow_handle(item.workflow_id).query(PROGRESS, result_type=Progress),
                    PAUSED_WAIT_S)
            except Exception:  # noqa: BLE001 - not known now: both buttons stay
                return
        item.paused = bool(progress.paused)

    await asyncio.gather(*(ask(item) for item in running))


async def in_catalog(state: ApiState, groups: list[FailureGroup], failed: list[FailedItem]) -> None:
    """Mark the failures whose item the catalog holds, so that they link to the item's page: by
    their canonical key, else (an item that failed before it was resolved) by its URL."""
    keys = [g.example_key for g in groups if g.example_key] + [f.result.canonical_key for f in failed
                                                               if f.result.canonical_key]
    by_url = [f.result.url for f in failed if not f.result.canonical_key and f.result.url]
    committed = await state.in_catalog(state.catalog.committed_keys, keys) if keys else set()
    url_keys = await state.in_catalog(state.catalog.keys_for_urls, by_url) if by_url else {}
    committed |= await state.in_catalog(state.catalog.committed_keys, list(url_keys.values())) if url_keys else set()
    for group in groups:
        group.example_in_catalog = group.example_key in committed
    for item in failed:
        key = item.result.canonical_key or url_keys.get(item.result.url)
        item.key = key if key in committed else None


def reason(err: BaseException) -> str:
    """What went wrong reading or steering, in one line for the page."""
    if isinstance(err, TimeoutError):
        return f"Temporal did not answer within {VISIBILITY_WAIT_S:.0f} s"
    if isinstance(err, HTTPException):
        return str(err.detail)
    if isinstance(err, RPCError):
        return f"Temporal: {err.message}"
    return (str(err).strip().splitlines() or [err.__class__.__name__])[0]

