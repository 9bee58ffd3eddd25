"""CrawlWorkflow: many items as child workflows, a bounded window, steerable, unbounded in length.

Children are started with parent close policy ABANDON, so continue-as-new (when the history
grows large) does not end them: the items in flight are carried in the state and the next run
waits for them through the ``join_item`` activity, as it does for an item another crawl or a
CLI command already runs. A crawl pauses, resumes and cancels only the items it started; an
item it joined belongs to whoever started it and is only waited for.

A crawl of a source expands it first (an activity); a source that cannot be expanded fails the
crawl before any item starts, the reason in the failure's message and its counts (``CrawlStats``,
``error`` set) in the failure's details (``trawl.starter.views.crawl_failure`` reads both back).
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Coroutine
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    WorkflowAlreadyStartedError,
)
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from trawl.activities.crawl import CrawlActivities
    from trawl.contracts import (  # noqa: F401 - the crawl's types, imported from here by clients too
        SOURCE_FAILED, CrawlInput, CrawlItem, CrawlState, CrawlStats, ExpandInput, ExpandResult, JoinInput, JoinResult)
    from trawl.models import MoreItem
    from trawl.contracts import ExtrasSweep, SweepInput
    from trawl.contracts import (
        ADD_URLS, CANCEL_CRAWL, CRAWL_ID, CRAWL_WORKFLOW, FRONTIER_ADDED, FRONTIER_MISSING, FRONTIER_PAGE, KEPT_REFUSALS,
        OUTCOME, PAUSE, FOLLOWER_PATIENCE_S, RESULTS, RESULTS_BACKLOG, RESULTS_KEPT, RESULTS_PAGE, RESULTS_READ,
        RESULTS_TAIL, RESUME, STATS, CrawlEnded, CrawlResults, FrontierAdd, FrontierGrew, FrontierPage, FrontierRead,
        ResultsRead)
    from trawl.workflows.media_item import MediaItemWorkflow
    # Imported here, not only through media_item, so the sandbox knows the module that decodes
    # the items' results (their field types are looked up in it).
    from trawl.contracts import ItemInput, ItemResult
    from trawl.contracts import workflow_queue


# workflow.patched ids of the crawl (docs/upgrading.md), one per change of its command sequence:
# - OWN_RECORD: a part named in another item's ``more`` that this run already started (or joined)
#   counts as a duplicate from the run's own record of what it started, not from the set of
#   items still running: that set shrank as completions were applied, so a replay that saw the
#   same completions grouped in other workflow tasks could start a child the history did not
#   have, and the crawl failed every workflow task after it (NON_DETERMINISTIC_ERROR).
OWN_RECORD = "crawl-own-record"
# - REFRESH_EXTRAS: a watch's run with CrawlInput.refresh_extras first starts the extras refreshes of
#   the watch's young items (one activity); only runs of watches with that option schedule it.
REFRESH_EXTRAS = "crawl-refresh-extras"
SHOWN_REFUSALS = 10  # the latest refusals a crawl's stats name (all are counted)
RUNNING_NAMED = 32  # running items a page of results names (a following command samples their progress)


@workflow.defn(name=CRAWL_WORKFLOW)
class CrawlWorkflow:
    def __init__(self) -> None:
        self._state = CrawlState()
        self._running: dict[str, asyncio.Task[None]] = {}
        self._items: dict[str, CrawlItem] = {}
        # The items this run started or joined (OWN_RECORD): written only in the run's own order,
        # never by a callback, and never shrinking but for an item found missing and queued again.
        self._started: set[str] = set()
        self._finished_at: str | None = None
        self._starting = 0  # child starts not yet confirmed by the server
        self._joined: set[str] = set()  # running items this crawl did not start
        self._unconfirmed: set[str] = set()  # items whose start the server has not answered yet
        self._error: str | None = None
        # The latest results (RESULTS_KEPT), numbered from CrawlState.reported - len(_results); kept
        # in memory, never carried: a followed crawl lets its command read them before it goes on.
        self._results: deque[ItemResult] = deque(maxlen=RESULTS_KEPT)
        self._awaiting_reader = False  # held back until the following command reads on

    # -- signals and queries ---------------------------------------------------------------
    @workflow.signal(name=ADD_URLS)
    def add_urls(self, items: list[CrawlItem]) -> None:
        """Queue more (already routed) items."""
        self._state.pending.extend(items)

    @workflow.signal(name=FRONTIER_ADDED)
    def frontier_added(self, grew: FrontierGrew) -> None:
        """A client added entries to this crawl's frontier: read on."""
        self._grew(grew.added, grew.repeated)
        self._refuse(grew.refused)

    @workflow.signal(name=PAUSE)
    async def pause(self) -> None:
        """Start no new items; pause the running ones it started (their downloads keep their bytes)."""
        self._state.paused = True
        await self._signal_running("pause")

    @workflow.signal(name=RESUME)
    async def resume(self) -> None:
        self._state.paused = False
        await self._signal_running("resume")

    @workflow.signal(name=CANCEL_CRAWL)
    def cancel(self) -> None:
        """Cancel the running items it started (their partial files are removed), stop waiting for
        the ones it joined, and drop the queued ones."""
        self._state.cancelled = True

    @workflow.signal(name=RESULTS_READ)
    def results_read(self, read: ResultsRead) -> None:
        """The following command has read the results up to ``read.read`` (or lets go)."""
        state = self._state
        state.results_read = max(state.results_read, read.read)
        state.unfollowed |= read.leaving

    @workflow.query(name=RESULTS)
    def results(self, since: int) -> CrawlResults:
        """The results recorded from number ``since`` on (a page of them), with the counts."""
        reported = self._state.reported
        first_kept = reported - len(self._results)
        first = min(max(since, first_kept), reported)
        page = list(itertools.islice(self._results, first - first_kept, first - first_kept + RESULTS_PAGE))
        running = [self._items[wid] for wid in itertools.islice(self._running, RUNNING_NAMED) if wid in self._items]
        return CrawlResults(page, first, first + len(page), max(0, first_kept - since), self.stats(), running,
                            wants_read=self._awaiting_reader)

    @workflow.query(name=STATS)
    def stats(self) -> CrawlStats:
        s = self._state
        return CrawlStats(
            queued=len(s.pending) + self._unread(), running=len(self._running), finished=sum(s.outcomes.values()),
            outcomes=dict(s.outcomes), bytes=s.bytes, refused=len(s.refused) + s.refused_dropped,
            started_at=s.started_at, finished_at=self._finished_at, paused=s.paused, cancelled=s.cancelled,
            runs=s.runs, error=self._error, frontier=self._inp.frontier, refusals=s.refused[-SHOWN_REFUSALS:])

    # -- the run ---------------------------------------------------------------------------
    @workflow.run
    async def run(self, inp: CrawlInput) -> CrawlStats:
        self._inp = inp
        # Signals delivered with the start are handled before this method runs: keep them.
        early = self._state
        if inp.state is not None:
            self._state = inp.state
            self._state.runs += 1
            self._state.pending.extend(early.pending)
            self._state.paused |= early.paused
            self._state.cancelled |= early.cancelled
            self._state.results_read = max(self._state.results_read, early.results_read)
            self._state.unfollowed |= early.unfollowed
        else:
            if not inp.frontier:
                self._state.pending[:0] = inp.items
            self._state.frontier_added += inp.frontier_added
            self._state.started_at = workflow.now().isoformat()
        workflow.upsert_search_attributes([CRAWL_ID.value_set(workflow.info().workflow_id)])
        state = self._state
        if inp.refresh_extras is not None and inp.state is None and workflow.patched(REFRESH_EXTRAS):
            await self._refresh_extras(inp.refresh_extras)
        if inp.frontier and inp.state is None and inp.items:
            await self._seed(inp.items)
        if inp.source and not state.source_expanded:
            failure = await self._expand(inp.source)
            if failure is not None:
                self._fail(failure)
        self._joined = set(state.joined)
        for item in state.in_flight:
            self._track(item, self._join(item))
        state.in_flight, state.joined = [], []
        try:
            await self._loop()
        except asyncio.CancelledError:
            # Cancelled through Temporal (`trawl cancel`, the API, the Web UI): children are
            # ABANDON-ed, so cancel them here; the crawl then ends as Canceled.
            state.cancelled = True
            await self._cancel_all()
            self._finished_at = workflow.now().isoformat()
            workflow.upsert_search_attributes([OUTCOME.value_set("cancelled")])
            raise
        self._finished_at = workflow.now().isoformat()
        workflow.upsert_search_attributes([OUTCOME.value_set("cancelled" if state.cancelled else "done")])
        if not inp.follow:
            return self.stats()
        tail = list(self._results)[-RESULTS_TAIL:]
        return CrawlEnded(**vars(self.stats()), last_results=tail, last_results_from=state.reported - len(tail))

    async def _loop(self) -> None:
        state = self._state
        while True:
            await workflow.wait_condition(lambda: self._can_start() or self._should_read() or self._idle()
                                          or state.cancelled or self._history_full() or self._reader_behind())
            if self._reader_behind() and not state.cancelled:
                await self._wait_for_reader(lambda: not self._held_back())
                continue
            if state.cancelled:
                await self._cancel_all()
                break
            if self._history_full():
                await self._continue_as_new()
            if self._should_read():
                await self._read_frontier()
                continue
            if self._idle():
                break
            if self._can_start():
                item = state.pending.pop(0)
                if item.listing is not None:
                    await self._expand_listing(item)
                    continue
                if self._already_started(item.workflow_id):
                    self._count("duplicate", 0)  # the same item twice in one crawl
                    continue
                self._track(item, self._child(item))

    def _already_started(self, wid: str) -> bool:
        """This run started (or joined) ``wid`` before: the same item twice in one crawl."""
        if wid in self._running:
            return True
        # Started and already finished: the old path started it again (a second run, a duplicate).
        return wid in self._started and workflow.patched(OWN_RECORD)

    def _can_start(self) -> bool:
        state = self._state
        return (bool(state.pending) and not state.paused and len(self._running) < max(1, self._inp.concurrency)
                and not self._held_back())

    def _followed(self) -> bool:
        return self._inp.follow and not self._state.unfollowed

    def _held_back(self) -> bool:
        """A followed crawl whose command has RESULTS_BACKLOG results still to read starts and
        reads nothing more until it has: no result is dropped before the command has read it."""
        return self._followed() and self._state.reported - self._state.results_read >= RESULTS_BACKLOG

    def _reader_behind(self) -> bool:
        """Held back with work to do: there is something to start or read, once the command reads."""
        state = self._state
        return (self._held_back() and not state.paused
                and (bool(state.pending) or (self._inp.frontier and not state.exhausted)))

    async def _wait_for_reader(self, caught_up: Any) -> None:
        """Wait until ``caught_up()`` (the command has read far enough, or let go); a command that
        reads nothing for FOLLOWER_PATIENCE_S is given up on (the crawl goes on alone)."""
        if caught_up():
            return
        self._awaiting_reader = True
        try:
            await workflow.wait_condition(lambda: caught_up() or self._state.cancelled or not self._followed(),
                                          timeout=timedelta(seconds=FOLLOWER_PATIENCE_S))
        except asyncio.TimeoutError:
            workflow.logger.info("the command following this crawl read nothing for "
                                 f"{FOLLOWER_PATIENCE_S} s: going on without it")
            self._state.unfollowed = True
        finally:
            self._awaiting_reader = False

    def _report(self, result: ItemResult) -> None:
        """Record one URL's result for whoever follows the crawl (the RESULTS query)."""
        self._results.append(result)
        self._state.reported += 1

    def _idle(self) -> bool:
        return not self._state.pending and not self._running and (not self._inp.frontier or self._state.exhausted)

    def _unread(self) -> int:
        """Entries added to the frontier and not read yet (0 for a crawl without one)."""
        return max(0, self._state.frontier_added - self._state.frontier_read) if self._inp.frontier else 0

    def _drop_queued(self) -> None:
        """Count every URL queued and not started, here or unread in the frontier, as not_started
        (every URL is counted once), and queue nothing more."""
        state = self._state
        dropped = len(state.pending) + self._unread()
        if dropped:
            self._count("not_started", 0, dropped)
        state.pending.clear()
        state.frontier_read = max(state.frontier_read, state.frontier_added)
        state.exhausted = True

    def _should_read(self) -> bool:
        """The window has room, nothing is queued here, and the frontier may hold more."""
        state = self._state
        return (self._inp.frontier and not state.pending and not state.exhausted and not state.paused
                and len(self._running) < max(1, self._inp.concurrency) and not self._held_back())

    async def _seed(self, items: list[CrawlItem]) -> None:
        """The URLs given in the input (a watch's run) into the frontier, before anything is read."""
        grew: FrontierGrew = await workflow.execute_activity_method(
            CrawlActivities.frontier_add, FrontierAdd(workflow.info().workflow_id, items),
            task_queue=self._inp.options.download_queue, start_to_close_timeout=timedelta(minutes=2),
            retry_policy=self._inp.options.commit.retry_policy())
        self._grew(grew.added, grew.repeated)

    def _grew(self, added: int, repeated: int) -> None:
        """The frontier took ``added`` entries; ``repeated`` URLs were items it held already (the
        same item twice in one crawl: counted as duplicates, as a repeated queued item is)."""
        self._state.frontier_added += added
        if added:
            self._state.exhausted = False
        if repeated:
            self._count("duplicate", 0, repeated)

    async def _read_frontier(self) -> None:
        """The next page of the frontier: its items queued, the ones the catalog knows counted."""
        state = self._state
        page: FrontierPage = await workflow.execute_activity_method(
            CrawlActivities.frontier_next,
            FrontierRead(workflow.info().workflow_id, state.cursor, FRONTIER_PAGE),
            task_queue=self._inp.options.download_queue, start_to_close_timeout=timedelta(minutes=2),
            retry_policy=self._inp.options.commit.retry_policy())
        if page.read == 0 and self._unread() and not self._running:
            # Entries the starter wrote are not there: it wrote them to another catalog.
            self._fail(f"the {self._unread()} URL(s) queued for this crawl are not in its workers' catalog: whoever "
                       "starts crawls (trawl crawl --detach, the API) and the workers must use the same catalog.url",
                       FRONTIER_MISSING)
        state.pending.extend(page.items)
        state.cursor = page.cursor
        state.frontier_read += page.read
        state.exhausted = page.read == 0
        if page.known_items:
            self._known(page.known_items)
        elif page.known:  # read by a worker from before known_items: counted only
            self._count("duplicate", 0, page.known)

    def _known(self, items: list[CrawlItem]) -> None:
        """Items the catalog knows committed: duplicates without a workflow, and a line for each
        unless this run has had it already (given twice, or a part of a known video given too).
        Counted once for the page: the counts line is built once, not once per item."""
        self._count("duplicate", 0, len(items))
        for item in items:
            if item.workflow_id not in self._started:
                self._started.add(item.workflow_id)
                self._report(ItemResult(item.workflow_id, item.url, "duplicate", platform=item.platform))

    def _history_full(self) -> bool:
        info = workflow.info()
        return info.get_current_history_length() >= self._inp.history_limit or info.is_continue_as_new_suggested()

    async def _continue_as_new(self) -> None:
        # Signals being handled must finish first, and every child start must be confirmed: a
        # start still in flight when this run closes may never happen. The items in flight go
        # on without us (ABANDON) and the next run joins them.
        await workflow.wait_condition(lambda: workflow.all_handlers_finished() and self._starting == 0)
        if self._followed():  # the results are not carried: the command reads them all first
            await self._wait_for_reader(lambda: self._state.results_read >= self._state.reported)
        self._state.in_flight = [self._items[wid] for wid in self._running]
        self._state.joined = [wid for wid in self._running if wid in self._joined]
        workflow.continue_as_new(CrawlInput(
            source=self._inp.source, concurrency=self._inp.concurrency, options=self._inp.options,
            history_limit=self._inp.history_limit, state=self._state, source_definition=self._inp.source_definition,
            frontier=self._inp.frontier, follow=self._inp.follow))

    async def _expand(self, source: str) -> str | None:
        """Queue the source's items; returns why it could not be expanded (None once it is)."""
        expanded = await self._expansion(f"source {source}", source, self._inp.source_definition)
        self._state.source_expanded = True
        if isinstance(expanded, tuple):
            return expanded[0]
        self._queue_expanded(expanded)
        return None

    async def _expand_listing(self, item: CrawlItem) -> None:
        """Queue a listing's items (a profile, a collection, a feed given as a URL), once per crawl;
        a listing that cannot be expanded counts as one failed URL, its reason among the refused."""
        if item.workflow_id in self._state.listed:
            self._count("duplicate", 0)
            return
        self._state.listed.append(item.workflow_id)
        expanded = await self._expansion(f"listing {item.url}", item.url, item.listing)
        if isinstance(expanded, tuple):
            reason, kind = expanded
            self._refuse([reason])
            self._count("failed", 0)
            self._report(ItemResult(item.workflow_id, item.url, "failed", platform=item.platform, error_class=kind,
                                    error=reason))
            return
        self._queue_expanded(expanded)

    async def _refresh_extras(self, sweep: ExtrasSweep) -> None:
        """Start the refreshes of the watch's young items' extras (they go on on their own); one
        that cannot be started leaves the run to its crawl all the same."""
        try:
            await workflow.execute_activity_method(
                CrawlActivities.refresh_watch_extras, SweepInput(sweep, self._inp.options),
                task_queue=self._inp.options.download_queue, start_to_close_timeout=timedelta(minutes=5),
                schedule_to_close_timeout=timedelta(minutes=15), retry_policy=self._inp.options.fetch.retry_policy())
        except ActivityError as err:
            workflow.logger.warning("extras refresh of the watch's items not started: %s", err.cause or err)

    async def _expansion(self, what: str, source: str, definition: dict[str, Any] | None
                         ) -> ExpandResult | tuple[str, str]:
        """A source's or a listing's items, by activity; or why they could not be had (and the
        error's class)."""
        try:
            return await workflow.execute_activity_method(
                CrawlActivities.expand_source,
                ExpandInput(source, stage_attempts=self._inp.options.fetch.maximum_attempts, definition=definition,
                            crawl_id=workflow.info().workflow_id if self._inp.frontier else None),
                task_queue=self._inp.options.download_queue,
                start_to_close_timeout=timedelta(minutes=10),
                heartbeat_timeout=timedelta(seconds=self._inp.options.heartbeat_timeout_s),
                schedule_to_close_timeout=self._inp.options.fetch.schedule_to_close,
                retry_policy=self._inp.options.fetch.retry_policy(),
            )
        except ActivityError as err:
            cause = err.cause
            return (f"{what}: {cause.message if isinstance(cause, ApplicationError) else cause or err}",
                    (cause.type if isinstance(cause, ApplicationError) else None) or "internal_error")

    def _queue_expanded(self, expanded: ExpandResult) -> None:
        state = self._state
        state.pending.extend(expanded.items)
        self._grew(expanded.added, expanded.repeated)  # into the frontier, read from there
        self._refuse(expanded.refused)
        if expanded.known:  # committed items the catalog knows offline: no item workflow
            self._count("duplicate", 0, len(expanded.known))
        for url in expanded.known:
            self._report(ItemResult("-", url, "duplicate"))

    def _refuse(self, refusals: list[str]) -> None:
        """Count refusals, keeping the latest few (the crawl's state must not grow with them)."""
        state = self._state
        state.refused.extend(refusals)
        if len(state.refused) > KEPT_REFUSALS:
            state.refused_dropped += len(state.refused) - KEPT_REFUSALS
            del state.refused[:-KEPT_REFUSALS]

    def _fail(self, reason: str, kind: str = SOURCE_FAILED) -> None:
        """End the crawl failed before any item started (the URLs it was given count as not
        started): a failed run, its reason in the failure's message (the Web UI shows it), its
        counts in the failure's details."""
        self._drop_queued()
        self._error = reason
        self._finished_at = workflow.now().isoformat()
        workflow.set_current_details(f"failed: {reason}"[:1000])
        workflow.upsert_search_attributes([OUTCOME.value_set("failed")])
        raise ApplicationError(reason, self.stats(), type=kind, non_retryable=True)

    def _track(self, item: CrawlItem, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` for ``item`` in the window. It leaves the window when its own coroutine
        ends, not in a done-callback: what the loop sees next never depends on when a callback
        ran relative to its wake-up."""
        wid = item.workflow_id
        self._items[wid] = item
        self._started.add(wid)
        self._running[wid] = asyncio.create_task(self._in_window(wid, work))

    async def _in_window(self, wid: str, work: Coroutine[Any, Any, None]) -> None:
        try:
            await work
        finally:
            self._running.pop(wid, None)
            self._items.pop(wid, None)
            self._joined.discard(wid)

    def _count(self, outcome: str, size: int, urls: int = 1) -> None:
        """One URL's outcome (or ``urls`` URLs'); ``bytes`` counts what was downloaded (a duplicate's
        stored size is not)."""
        self._state.outcomes[outcome] = self._state.outcomes.get(outcome, 0) + urls
        if outcome == "committed":
            self._state.bytes += size
        self._show_counts()

    def _show_counts(self) -> None:
        """The crawl's live counts in the Web UI's details line."""
        s = self.stats()
        counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(s.outcomes.items()))
        state = "cancelled" if s.cancelled else ("paused" if s.paused else "running")
        workflow.set_current_details(f"{state}: {s.queued} queued, {s.running} running"
                                     + (f", {counts}" if counts else "") + f"; {s.bytes / 1048576:.1f} MiB downloaded"
                                     + (f"; {s.refused} refused" if s.refused else ""))

    async def _child(self, item: CrawlItem) -> None:
        options = self._inp.options
        self._starting += 1
        self._unconfirmed.add(item.workflow_id)
        try:
            handle = await workflow.start_child_workflow(
                MediaItemWorkflow.run,
                ItemInput(url=item.url, platform=item.platform, crawl_id=workflow.info().workflow_id,
                          options=options),
                id=item.workflow_id,
                task_queue=workflow_queue(options.queue_prefix),
                parent_close_policy=ParentClosePolicy.ABANDON,
                static_summary=f"{item.platform}: {item.url[:200]}",
            )
        except WorkflowAlreadyStartedError:
            self._starting -= 1
            self._unconfirmed.discard(item.workflow_id)
            self._joined.add(item.workflow_id)  # another crawl or command runs it: wait, never steer
            if self._state.cancelled:
                self._count("cancelled", 0)  # cancelled while asking: nothing of ours to wait for
                self._report(ItemResult(item.workflow_id, item.url, "cancelled", platform=item.platform))
                return
            await self._join(item)
            return
        self._starting -= 1
        self._unconfirmed.discard(item.workflow_id)
        if self._state.cancelled or self._state.paused:
            # Steered while the start was in flight: the item missed the signal, so it gets it now.
            await self._steer(item.workflow_id, "cancel" if self._state.cancelled else "pause")
        try:
            result = await handle
        except ChildWorkflowError as err:
            # A child cancelled on its own (the CLI, the Web UI) is cancelled, not failed.
            cancelled = self._state.cancelled or isinstance(err.cause, CancelledError)
            self._count("cancelled" if cancelled else "failed", 0)
            self._report(_ended(item, err.cause, cancelled))
            if not cancelled:  # a failed part 1 still names parts 2..N (the result is in the details)
                details = getattr(err.cause, "details", None) or [None]
                self._queue_more(details[0].get("more") if isinstance(details[0], dict) else None)
            return
        self._count(result.outcome, sum(a.size for a in result.assets))
        self._report(result)
        self._queue_more(result.more)

    def _queue_more(self, more: list | None) -> None:
        """Queue the other items a finished item stands for, each as its own item."""
        if not more or self._state.cancelled:
            return
        for entry in filter(None, map(MoreItem.of, more)):
            if entry.workflow_id:
                self._state.pending.append(CrawlItem(entry.url, entry.platform, entry.workflow_id))

    async def _join(self, item: CrawlItem) -> None:
        try:
            joined: JoinResult = await workflow.execute_activity_method(
                CrawlActivities.join_item, JoinInput(item.workflow_id),
                task_queue=self._inp.options.join_queue,
                start_to_close_timeout=timedelta(days=7),
                heartbeat_timeout=timedelta(seconds=60),
                retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(minutes=1),
                                         maximum_attempts=20),
            )
        except ActivityError as err:
            outcome = "cancelled" if self._state.cancelled else "failed"
            self._count(outcome, 0)
            self._report(ItemResult(item.workflow_id, item.url, outcome, platform=item.platform,
                                    error_class=None if outcome == "cancelled" else "internal_error",
                                    error=None if outcome == "cancelled" else f"waiting for the item: {err.cause or err}"))
            return
        except asyncio.CancelledError:
            # This crawl was cancelled and stopped waiting for an item it did not start; the item
            # goes on for whoever started it.
            self._count("cancelled", 0)
            self._report(ItemResult(item.workflow_id, item.url, "cancelled", platform=item.platform))
            return
        if joined.outcome == "missing":  # never started (or already deleted): start it again
            self._started.discard(item.workflow_id)
            self._state.pending.insert(0, item)
            return
        self._count(joined.outcome, joined.bytes)
        # What the item found is in its own result: a following command reads it from there.
        self._report(ItemResult(item.workflow_id, item.url, joined.outcome, platform=item.platform,
                                error_class=joined.error_class))

    def _steered(self) -> list[str]:
        """The running items this crawl pauses, resumes and cancels: those it started (an item
        whose start is still unanswered is steered once the answer comes, in :meth:`_child`)."""
        return [wid for wid in self._running if wid not in self._joined and wid not in self._unconfirmed]

    async def _steer(self, wid: str, name: str) -> None:
        """Signal ``name`` to one item, or cancel it (``cancel``); an item that just finished cannot be."""
        try:
            external = workflow.get_external_workflow_handle(wid)
            await (external.cancel() if name == "cancel" else external.signal(name))
        except Exception:  # noqa: BLE001 - already finished
            workflow.logger.info(f"could not {name} {wid}")

    async def _signal_running(self, name: str) -> None:
        for wid in self._steered():
            await self._steer(wid, name)

    async def _cancel_all(self) -> None:
        self._drop_queued()
        steered = self._steered()
        for wid, task in list(self._running.items()):
            if wid in steered:
                await self._steer(wid, "cancel")
            elif wid in self._joined:
                task.cancel()  # stop waiting for an item someone else started; it goes on
        if self._running:
            await workflow.wait(list(self._running.values()))


def _ended(item: CrawlItem, cause: BaseException | None, cancelled: bool) -> ItemResult:
    """The result of an item that failed or was cancelled, from its failure: a failed item's own
    result travels in the failure's details; other failures (terminated, timed out) say only why."""
    if cancelled:
        return ItemResult(item.workflow_id, item.url, "cancelled", platform=item.platform)
    details = getattr(cause, "details", None) or [None]
    if isinstance(details[0], dict):
        return ItemResult.from_details(details[0], item.url)
    kind = cause.type if isinstance(cause, ApplicationError) else type(cause).__name__ if cause else None
    return ItemResult(item.workflow_id, item.url, "failed", platform=item.platform,
                      error_class=_FAILURE_CLASSES.get(kind or "", kind) or "internal_error",
                      error=str(cause) if cause else None)


# The class a failure that is not an item's own (no result in its details) is shown under.
_FAILURE_CLASSES = {"TerminatedError": "terminated", "TimeoutError": "timeout"}


# -- for clients ---------------------------------------------------------------------------------
