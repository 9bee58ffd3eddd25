"""MediaItemWorkflow: fetch -> (dedup) -> download -> verify -> commit for one item.

The story of one run (:meth:`MediaItemWorkflow.run`): fetch resolves the URL to an item; an item
the catalog holds ends as a duplicate; a small item is downloaded, verified and committed in one
activity on any host; any other claims one host and downloads and verifies its files there, in
parallel, then commits them. Every attempt at the media goes through one bounded loop
(:meth:`MediaItemWorkflow._until_done`): a pause stops it and runs it again on resume, expired URLs
are fetched again and a corrupt file is downloaded again, each a bounded number of times.

Changes to the commands this code produces follow the versioning policy (docs/upgrading.md):
behind ``workflow.patched`` ids listed below.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import replace
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, TimeoutType
from temporalio.exceptions import TimeoutError as ActivityTimeoutError
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from trawl.activities.broadcast import BroadcastActivities
    from trawl.activities.commit import CommitActivities
    from trawl.activities.download import DownloadActivities
    from trawl.activities.extras import ExtraActivities
    from trawl.activities.fetch import FetchActivities
    from trawl.activities.tiny import TinyItemActivities
    from trawl.activities.host import HostActivities
    from trawl.activities.small import SmallItemActivities, SmallItemInput
    from trawl.activities.verify import VerifyActivities
    from trawl.contracts import (
        CANONICAL_KEY, CRAWL_ID, DOWNLOAD_PROGRESS, ERROR_CLASS, EXPECTED_FAILURES, ITEM_WORKFLOW, OUTCOME, PAUSE,
        PLATFORM, PROGRESS, RESUME, SMALL_ITEM_ASSET, STAGE, STAGES, TITLE, BroadcastInput, CommitFile, CommitInput,
        CommitResult, END_RECORDING, broadcast_workflow_id,
        DiscardInput, DownloadInput, DownloadProgress, DownloadResult, ExtraInput, ExtraResult, FetchInput, FetchResult,
        ItemInput, ItemResult, LivePart, MissingExtraInput, Progress, StoredExtra, VerifyInput, VerifyResult)
    from trawl.models import LIVE_PROTOCOL, OPTIONAL_KINDS, Asset, Resolved, small_item
    from trawl.workflows.progress import ProgressBook


# workflow.patched ids (docs/upgrading.md), one per change of the command sequence since the
# baseline (trawl 0.x):
# - LEAN_HISTORY: the stage goes to the current details only (Stage is upserted with the identity
#   once fetch is done, and at the end), no memo (the identity's search attributes say it), and a
#   tiny item is downloaded and committed by its fetch, its identity upserted with its outcome. A
#   tiny item went from 22 history events (4 upserts, a memo, 2 activities) to 14 (bench/cost.py).
LEAN_HISTORY = "lean-history"
# - ONE_ACTIVITY_ON_HOST: a larger item's download, verify and commit in one small_item on the host
#   it claimed (ItemOptions.one_activity_on_host asks for it; the patch keeps a run that a worker of
#   the version before took the stages for, and a worker of this one replays, on the stages).
ONE_ACTIVITY_ON_HOST = "one-activity-on-host"
# - FETCH_CLAIMS_HOST: a larger item goes to the host its first fetch claimed (FetchResult.host_queue,
#   asked for by FetchInput.claim_host_over) with no claim_host. The patch keeps a run whose next
#   workflow task a worker of the version before took (it drops the field, and claimed a host
#   through the shared queue) on that path when a new worker replays it.
FETCH_CLAIMS_HOST = "fetch-claims-host"
# A live recording's download (Asset.protocol hls-live) must move to another worker while the
# playlist still names the segments after the last one it holds (a live room's often hold about nine
# seconds): it is given up on after this long without a heartbeat (or the item's own timeout, if
# shorter) and retried at once. Only its options differ, so every recorded history replays.
RECORDING_HEARTBEAT_TIMEOUT = timedelta(seconds=3)
RECORDING_RETRY_INTERVAL = timedelta(milliseconds=500)
RECORDING_RETRY_MAX_INTERVAL = timedelta(seconds=2)
# An extra's reason as the item's result carries it (a crawl keeps many results; the catalog the whole reason).
RESULT_REASON = 300
# The error type of an activity task that reached a worker which does not register its activity
# (the SDK's): a host whose worker is older than small_item on its own queue.
UNREGISTERED = "NotFoundError"
# A recording part that fails for these reasons ends the recording, committing what it holds
# (LivePart.end): its source was resolved again and is over, or gave no working address.
RECORDING_ENDS = {"not_found": "source_ended", "url_expired": "url_expired"}
T = TypeVar("T")
Done = TypeVar("Done")


class ItemFailed(Exception):
    def __init__(self, error_class: str, message: str) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.message = message


def _failure(err: ActivityError) -> tuple[str, str]:
    cause = err.cause
    if isinstance(cause, ApplicationError):
        return cause.type or "internal_error", cause.message
    if isinstance(cause, CancelledError):
        return "cancelled", "cancelled"
    return type(cause).__name__ if cause else "internal_error", str(cause or err)


@workflow.defn(name=ITEM_WORKFLOW)
class MediaItemWorkflow:
    def __init__(self) -> None:
        self._book = ProgressBook()
        self._progress = self._book.progress  # the progress query's answer, kept by the book
        self._paused = False
        self._pause_cancelled: set[str] = set()
        self._running: dict[str, asyncio.Task[DownloadResult]] = {}
        self._canonical_url: str | None = None
        # Re-fetches after url_expired: a generation counter so concurrent assets share one.
        self._generation = 0
        self._fresh: Resolved | None = None
        self._refetch_lock = asyncio.Lock()
        self._local_queue: str | None = None  # the claimed host's queue (None: the shared queue)
        self._fetch_claimed = ""  # the host's queue the first fetch claimed for the item ("": none)
        self._lean = False  # LEAN_HISTORY
        self._identified = False  # the identity's search attributes are upserted
        self._recordings: dict[str, _Recording] = {}  # live recordings committed in parts, by asset name
        self._passed_on: list[asyncio.Task[None]] = []  # pauses and resumes sent to a broadcast's workflow
        self._ending = ""  # END_RECORDING: why the recording ends now ("" while it goes on)

    # -- signals and queries ---------------------------------------------------------------
    @workflow.signal(name=DOWNLOAD_PROGRESS)
    def download_progress(self, report: DownloadProgress) -> None:
        """A running download's bytes, sent by the activity at coarse steps for the live details."""
        if report.stage in STAGES and report.asset in self._running:
            # A small item's one activity: its download is done and a later stage waits.
            self._progress.stage = report.stage
            self._book.show(report.stage)
            return
        self._book.reported(report)

    @workflow.signal(name=PAUSE)
    def pause(self) -> None:
        """Stop at the next step; a running download stops at its next heartbeat, keeping its bytes."""
        self._paused = self._progress.paused = True
        for name, task in self._running.items():
            self._pause_cancelled.add(name)
            task.cancel()
        self._book.show(self._progress.stage)
        self._pass_on(PAUSE)

    @workflow.signal(name=RESUME)
    def resume(self) -> None:
        self._paused = self._progress.paused = False
        self._book.show(self._progress.stage)
        self._pass_on(RESUME)

    @workflow.signal(name=END_RECORDING)
    def end_recording(self) -> None:
        """A live recording ends now: its part in progress is finished and committed (LivePart.end
        ``stopped``), a clean end. Passed on by a run that left its recording to the broadcast's
        workflow; nothing for an item that records nothing."""
        if self._ending:
            return
        self._ending = "stopped"
        self._paused = self._progress.paused = False  # a paused recording ends too, committed
        for name, task in self._running.items():
            if name in self._recordings:  # its download stops at its next heartbeat and is asked to end
                self._pause_cancelled.add(name)
                task.cancel()
        self._pass_on(END_RECORDING)

    def _pass_on(self, signal: str) -> None:
        """A pause or resume of a run that left its recording to the broadcast's workflow is that
        recording's (the only runs that send this command)."""
        if self._progress.recording is not None:
            handle = workflow.get_external_workflow_handle(self._progress.recording)
            self._passed_on.append(asyncio.create_task(handle.signal(signal)))

    @workflow.query(name=PROGRESS)
    def progress(self) -> Progress:
        return self._progress

    # -- the pipeline ----------------------------------------------------------------------
    @workflow.run
    async def run(self, inp: ItemInput) -> ItemResult:
        self._inp = inp
        self._opts = inp.options
        self._lean = workflow.patched(LEAN_HISTORY)
        self._mark_start()
        resolved: Resolved | None = None
        try:
            # A broadcast's own run was handed what the URL's run resolved (ItemInput.broadcast).
            fetched = FetchResult(inp.broadcast, committed=False) if inp.broadcast else await self._fetch(first=True)
            resolved = fetched.resolved
            self._fetch_claimed = fetched.host_queue
            self._canonical_url = resolved.canonical_url
            self._book.title = resolved.title
            if not (self._lean and (fetched.committed or fetched.finished)):
                self._identify(resolved)  # lean: an item done by its fetch says it with its outcome
            if fetched.committed:
                return self._finish(self._result("duplicate", resolved, fetched.stored))
            self._book.known_sizes({asset.name: asset.expected_size for asset in resolved.assets})
            if self._hands_over(resolved):
                return self._finish(await self._recorded_by_broadcast(resolved))
            if fetched.finished:
                self._book.all_done([asset.name for asset in resolved.assets],
                                    sum(asset.size for asset in fetched.finished.assets))
                return self._finish(await self._with_extras(
                    self._result(fetched.finished.outcome, resolved, fetched.finished.assets), resolved))
            if self._small(resolved):
                committed = await self._in_one_activity(resolved)
            else:
                committed = await self._on_one_host(resolved)
            return self._finish(await self._with_extras(self._result(committed.outcome, resolved, committed.assets),
                                                        resolved))
        except ItemFailed as failed:
            raise await self._failed(failed, resolved) from (
                None if failed.error_class in EXPECTED_FAILURES else failed.__cause__)
        except (asyncio.CancelledError, CancelledError):
            await self._cancelled(resolved)
            raise

    def _hands_over(self, resolved: Resolved) -> bool:
        """Whether this run of a URL leaves the recording it found to the broadcast's own workflow
        (ItemOptions.broadcast_workflows; runs started before record it themselves)."""
        return (self._opts.broadcast_workflows and self._inp.broadcast is None
                and any(asset.protocol == LIVE_PROTOCOL for asset in resolved.assets)
                and workflow.info().workflow_id != broadcast_workflow_id(resolved.canonical_key))

    async def _recorded_by_broadcast(self, resolved: Resolved) -> ItemResult:
        """Start or join the broadcast's own recording (one per broadcast, however many URLs and
        crawls lead to it) and answer with its result (a failure as this item's)."""
        broadcast_id = self._progress.recording = broadcast_workflow_id(resolved.canonical_key)
        self._stage("download")
        self._book.show(f"recording in {broadcast_id}")
        try:
            result: ItemResult = await workflow.execute_activity_method(
                BroadcastActivities.record_broadcast,
                BroadcastInput(broadcast_id, workflow.info().task_queue,
                               replace(self._inp, broadcast=resolved), f"{resolved.platform}: {resolved.title or ''}"),
                task_queue=self._opts.join_queue,
                start_to_close_timeout=self._opts.download.schedule_to_close or timedelta(days=2),
                heartbeat_timeout=timedelta(seconds=60),
                retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(minutes=1)),
            )
        except ActivityError as err:
            error_class, message = _failure(err)
            if error_class == "cancelled":
                raise asyncio.CancelledError from None
            raise ItemFailed(error_class, f"recording {broadcast_id}: {message}") from err
        if result.outcome == "failed":
            raise ItemFailed(result.error_class or "internal_error", result.error or f"{broadcast_id} failed")
        if result.outcome == "cancelled":
            raise asyncio.CancelledError
        return replace(result, workflow_id=workflow.info().workflow_id, url=self._inp.url)

    def _mark_start(self) -> None:
        """Platform (and CrawlId) filterable from the start; the starter usually set them already."""
        attrs = [PLATFORM.value_set(self._inp.platform)]
        if self._inp.crawl_id:
            attrs.append(CRAWL_ID.value_set(self._inp.crawl_id))
        if not _set_at_start(attrs):
            workflow.upsert_search_attributes(attrs)

    def _identify(self, resolved: Resolved) -> None:
        """What fetch found, where operators look: search attributes (Title among them), which a
        cancelled run (it has no result) keeps for the CLI, the API and the Web UI.

        Lean (LEAN_HISTORY): with the Stage the item goes on to (``download``: its downloads,
        verifies and commit; the details line says which). Before: the same in the memo too."""
        self._identified = True
        if self._lean:
            workflow.upsert_search_attributes([*_identity(resolved), STAGE.value_set("download")])
            return
        workflow.upsert_search_attributes(_identity(resolved))
        workflow.upsert_memo({"canonical_key": resolved.canonical_key, "title": (resolved.title or "")[:500],
                              "platform": resolved.platform})

    def _result(self, outcome: str, resolved: Resolved | None, assets: list | None = None,
                failed: ItemFailed | None = None) -> ItemResult:
        return ItemResult(workflow.info().workflow_id, self._inp.url, outcome,
                          resolved.canonical_key if resolved else None,
                          resolved.platform if resolved else self._inp.platform, resolved.title if resolved else None,
                          assets=assets or [], error_class=failed.error_class if failed else None,
                          error=failed.message if failed else None, more=resolved.more if resolved else [])

    async def _failed(self, failed: ItemFailed, resolved: Resolved | None) -> ApplicationError:
        """A failed item is a Failed execution (the Web UI's Failures view, ExecutionStatus queries);
        its result rides along in the failure's details for the CLI and API. An expected class is
        told by its class and message alone; anything else (a bug) keeps the activity failure behind
        it, with its stack trace.

        Partial files are kept so a re-crawl resumes from them (the workers remove them after
        download.keep_failed_partials), unless they are what failed.
        """
        if failed.error_class == "content_corrupt":
            await self._discard()
        result = self._finish(self._result("failed", resolved, failed=failed))
        return ApplicationError(f"{failed.error_class}: {' '.join(failed.message.split())[:500]}", result,
                                type=failed.error_class, non_retryable=True)

    async def _cancelled(self, resolved: Resolved | None) -> None:
        last_stage = self._progress.stage
        self._progress.stage = "cancelled"
        self._book.show("cancelled")
        identity = _identity(resolved) if self._lean and resolved and not self._identified else []
        workflow.upsert_search_attributes([*identity, STAGE.value_set("cancelled"), OUTCOME.value_set("cancelled")])
        await self._discard()
        self._summary("cancelled", last_stage, resolved.platform if resolved else self._inp.platform,
                      resolved.canonical_key if resolved else None, None, 0)

    def _small(self, resolved: Resolved) -> bool:
        return small_item(resolved.assets, self._opts.small_item_size)

    def _one_activity_on_host(self, resolved: Resolved) -> bool:
        """Whether a larger item's files go one after another in one activity on its claimed
        host (ItemOptions.one_activity_on_host): one file besides its cover, and no live recording
        (it commits in parts as it records). DASH's video and audio, or a gallery, download side
        by side, an activity each: on a CDN that throttles each connection, one after another
        would add the smaller file's whole time."""
        if not self._opts.one_activity_on_host or any(a.protocol == LIVE_PROTOCOL for a in resolved.assets):
            return False
        return sum(asset.kind not in OPTIONAL_KINDS for asset in resolved.assets) <= 1

    async def _in_one_activity(self, resolved: Resolved) -> CommitResult:
        """Download, verify and commit an item in one activity (trawl.activities.small): a small
        item on any host, a larger one on the host it claimed (``_local``: its retries resume
        there, and a host that stops taking work is lost as on the other path).

        The activity's failures are the stages' own, handled as on the other path; the Stage
        attribute says download throughout.
        """
        retry = self._opts.download.retry_policy()
        if self._local_queue is not None:  # a host of an older trawl fails it at once (UNREGISTERED)
            retry = replace(retry, non_retryable_error_types=[*(retry.non_retryable_error_types or []), UNREGISTERED])

        async def attempt(resolved: Resolved) -> CommitResult:
            self._stage("download")
            return await self._track(SMALL_ITEM_ASSET, workflow.start_activity_method(
                SmallItemActivities.small_item,
                SmallItemInput(workflow.info().workflow_id, self._inp.url, resolved, self._opts.quality,
                               self._opts.limit_rate, stage_attempts=self._opts.download.maximum_attempts),
                start_to_close_timeout=self._opts.download.start_to_close,
                schedule_to_close_timeout=self._opts.download.schedule_to_close,
                heartbeat_timeout=self._heartbeat_timeout,
                retry_policy=retry,
                cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                **self._local(),  # no host claimed (a small item): the shared download queue
            ))

        async def corrupt() -> None:  # the activity removed the corrupt file
            self._book.unfinished_gone()

        committed = await self._until_done(SMALL_ITEM_ASSET, resolved, attempt, corrupt)
        self._book.all_done([asset.name for asset in resolved.assets], sum(asset.size for asset in committed.assets))
        return committed

    async def _on_one_host(self, resolved: Resolved) -> CommitResult:
        """Download, verify and commit on one host, the one holding the partial files: in one
        activity when it is one file and its cover (``_one_activity_on_host``), else an
        activity per file and stage.

        The host is the one the first fetch claimed, when its worker had room (the fetch's
        answer says so; patch ``fetch-claims-host``), else one claimed
        through the shared download queue (whichever worker has a free slot answers with its
        own host's queue). If that host stops taking work (a schedule-to-start timeout there),
        its files are gone with it: another host is claimed and the item's files are downloaded
        again, at most ``max_host_changes`` times.
        """
        changes = 0
        while True:
            if self._fetch_claimed and workflow.patched(FETCH_CLAIMS_HOST):
                self._local_queue = self._fetch_claimed
            else:
                self._local_queue = await self._claim_host()
            self._fetch_claimed = ""  # a host lost is claimed through the shared queue
            try:
                if self._one_activity_on_host(resolved) and workflow.patched(ONE_ACTIVITY_ON_HOST):
                    last_error = self._progress.last_error
                    try:
                        return await self._in_one_activity(resolved)
                    except ItemFailed as failed:
                        if failed.error_class != UNREGISTERED:
                            raise
                        # The host's worker runs a trawl from before (a rolling upgrade): it takes
                        # the stages one by one. Nothing was downloaded.
                        self._progress.last_error = last_error
                        workflow.logger.info("the claimed host takes no small_item yet: an activity per stage")
                verified = await _all_or_none([self._download_kept(resolved, asset.name) for asset in resolved.assets])
                kept = [v for v in verified if v]
                if not self._recordings:
                    return await self._commit(resolved, kept)
                # A recording committed its parts as they came: the item's other files join them.
                recorded = [r.result for r in self._recordings.values() if r.result is not None]
                return await self._commit(resolved, kept, append=True) if kept or not recorded else recorded[-1]
            except HostLost as lost:
                if changes >= self._opts.max_host_changes:
                    raise ItemFailed("host_lost", f"{lost}; gave up after {changes} host changes") from None
                changes += 1
                self._book.restart()
                workflow.logger.warning(f"host lost ({lost}); downloading again on another host")

    async def _claim_host(self) -> str:
        return await workflow.execute_activity_method(
            HostActivities.claim_host,
            task_queue=self._opts.download_queue,
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=self._opts.download.retry_policy(),
        )

    def _local(self) -> dict[str, Any]:
        """Where host-local work goes: the claimed host's queue, bounded in how long it may wait
        (before a host is claimed, the shared queue: a failed fetch's clean-up)."""
        if self._local_queue is None:
            return {"task_queue": self._opts.download_queue}
        return {"task_queue": self._local_queue,
                "schedule_to_start_timeout": timedelta(seconds=self._opts.local_schedule_to_start_s)}

    async def _commit(self, resolved: Resolved, verified: list[tuple[Asset, DownloadResult, VerifyResult]],
                      append: bool = False) -> CommitResult:
        self._stage("commit")
        await self._wait_unpaused()
        return await self._commit_files(resolved, [CommitFile(asset, dl, ver.mime) for asset, dl, ver in verified],
                                        append)

    async def _commit_files(self, resolved: Resolved, files: list[CommitFile], append: bool = False) -> CommitResult:
        try:
            return await workflow.execute_activity_method(
                CommitActivities.commit,
                CommitInput(workflow.info().workflow_id, self._inp.url, resolved, files,
                            stage_attempts=self._opts.commit.maximum_attempts, append=append),
                start_to_close_timeout=self._opts.commit.start_to_close,
                schedule_to_close_timeout=self._opts.commit.schedule_to_close,
                heartbeat_timeout=self._heartbeat_timeout,
                retry_policy=self._opts.commit.retry_policy(),
                **self._local(),
            )
        except ActivityError as err:
            if _host_lost(err):
                raise HostLost("commit waited too long for its host") from None
            raise

    async def _fetch(self, fresh_urls: bool = False, first: bool = False) -> FetchResult:
        """Resolve the item; the first fetch of a lean run may also store a tiny one whole
        (fetch_and_store_tiny)."""
        self._stage("fetch")
        finishing = {}
        if first and self._lean:
            finishing = dict(with_fetch_size=self._opts.with_fetch_size, limit_rate=self._opts.limit_rate,
                             download_attempts=self._opts.download.maximum_attempts,
                             run_started_at=workflow.info().start_time.isoformat())
        # A tiny item's fetch may be committing it when a cancel comes: the run waits for the
        # fetch to stop (before its commit: nothing stored, the run cancelled) or to finish its
        # commit (the run committed), so its outcome and the catalog agree (LEAN_HISTORY: only
        # runs cancelled in that fetch issue other commands, and the path was off by default).
        committing = bool(finishing) and self._opts.with_fetch_size > 0
        # The activity that may store a tiny item says so by its name (runs started before it ask
        # fetch, which hands them to it: ItemOptions.tiny_activity).
        method = (TinyItemActivities.fetch_and_store_tiny if committing and self._opts.tiny_activity
                  else FetchActivities.fetch)
        try:
            fetching = workflow.start_activity_method(
                method,
                FetchInput(self._inp.url, workflow.info().workflow_id, self._inp.platform, fresh_urls,
                           self._opts.quality, self._opts.keep_previews, self._opts.audio,
                           stage_attempts=self._opts.fetch.maximum_attempts, **finishing,
                           # An item that is not small claims a host: the fetch's own, if it has room.
                           claim_host_over=max(self._opts.small_item_size, 0) if first else -1),
                task_queue=self._opts.fetch_queue(self._inp.platform),
                start_to_close_timeout=self._opts.fetch.start_to_close,
                schedule_to_close_timeout=self._opts.fetch.schedule_to_close,
                heartbeat_timeout=self._heartbeat_timeout,
                retry_policy=self._opts.fetch.retry_policy(),
                cancellation_type=(ActivityCancellationType.WAIT_CANCELLATION_COMPLETED if committing
                                   else ActivityCancellationType.TRY_CANCEL),
            )
            if not committing:
                return await fetching
            try:
                return await asyncio.shield(fetching)
            except asyncio.CancelledError:
                fetching.cancel()  # it stops unless its commit has begun
                fetched = await fetching  # stopped: ActivityError (cancelled), below
                if fetched.finished is None:
                    raise
                return fetched
        except ActivityError as err:
            error_class, message = _failure(err)
            if error_class == "cancelled":
                raise asyncio.CancelledError from None
            self._progress.last_error = f"{error_class}: {message}"
            raise ItemFailed(error_class, message) from err

    async def _download_kept(self, resolved: Resolved, name: str) -> tuple[Asset, DownloadResult, VerifyResult] | None:
        """An asset downloaded and verified; None for an optional one (a thumbnail) that failed:
        after its own retries it is left out of the commit instead of failing the item, and for a
        live recording, which commits itself in parts (ItemOptions.live_parts)."""
        asset = _named(resolved, name)
        if asset.protocol == LIVE_PROTOCOL and self._opts.live_parts is not None:
            await self._record_in_parts(resolved, name)
            return None
        try:
            return await self._download_verified(resolved, name)
        except ItemFailed as failed:
            if asset.kind not in OPTIONAL_KINDS:
                raise
            workflow.logger.warning(f"{name} left out: {failed.error_class}: {failed.message}")
            self._book.left_out(name)
            return None

    async def _download_verified(self, resolved: Resolved, name: str) -> tuple[Asset, DownloadResult, VerifyResult]:
        """Download and verify one asset (the asset of that name in the latest fetch's answer)."""
        async def attempt(resolved: Resolved) -> tuple[Asset, DownloadResult, VerifyResult]:
            asset = _named(resolved, name)
            self._stage("download")
            download = await self._download(asset, resolved)
            self._stage("verify")
            verified = await workflow.execute_activity_method(
                VerifyActivities.verify,
                VerifyInput(asset, download, resolved.platform, resolved.canonical_url, resolved.duration,
                            stage_attempts=self._opts.verify.maximum_attempts),
                start_to_close_timeout=self._opts.verify.start_to_close,
                schedule_to_close_timeout=self._opts.verify.schedule_to_close,
                heartbeat_timeout=self._heartbeat_timeout,
                retry_policy=self._opts.verify.retry_policy(),
                **self._local(),
            )
            return asset, download, verified

        async def corrupt() -> None:
            self._book.dropped(name)
            await self._discard([name])

        asset, download, verified = await self._until_done(name, resolved, attempt, corrupt)
        self._book.verified(name, download.size)
        return asset, download, verified

    async def _record_in_parts(self, resolved: Resolved, name: str) -> None:
        """Record a live stream part after part, each committed as soon as it is recorded while the
        next one records (so a crash loses at most the part in progress, and the parts can be
        watched while the broadcast goes on), until a part says the recording ended.

        Each part is one download (:class:`LivePart`: its index, its length, and the record of the
        part it goes on from); the history grows by a few events a part and the parts are at most
        ``live_parts.max_parts``. A host lost (HostLost, raised on to :meth:`_on_one_host`, which
        claims another) takes the part in progress and any part not committed with it: the next
        host goes on from the last part committed, and the lost span is a gap in the record.
        """
        parts = self._opts.live_parts
        assert parts is not None
        rec = self._recordings.setdefault(name, _Recording())
        pending: asyncio.Task[None] | None = None
        while not rec.ended:
            index, rec.next = rec.next, rec.next + 1
            part = LivePart(index, parts.seconds, parts.bytes, last=index >= parts.max_parts, after=rec.after)

            async def attempt(resolved: Resolved, part: LivePart = part) -> DownloadResult:
                self._stage("download")
                asked = replace(part, end=self._ending) if self._ending else part  # END_RECORDING came
                return await self._download(_named(resolved, name), resolved, asked)

            async def corrupt() -> None:
                self._book.dropped(name)
                await self._discard([name])

            try:
                download = await self._until_done(name, resolved, attempt, corrupt)
            except HostLost:
                await self._settled(pending, rec)
                rec.after = rec.committed
                raise
            except ItemFailed as failed:
                why = RECORDING_ENDS.get(failed.error_class)
                if why is None:
                    raise
                # The source says the broadcast is over (or gives no working address): what the
                # part holds is finished and committed, a clean end (nothing held: the item fails).
                workflow.logger.info(f"recording ends: {failed.error_class}: {failed.message}")
                ending = replace(part, end=why)
                download = await self._until_done(
                    name, resolved, lambda resolved: self._download(_named(resolved, name), resolved, ending), corrupt)
            self._book.dropped(name)  # its bytes count once verified, as a part of their own
            await self._settled(pending, rec)  # the part before committed, while this one recorded
            pending = asyncio.create_task(self._commit_part(resolved, name, index, download, rec))
            rec.after = download.live
            rec.ended = bool((download.live or {}).get("ended"))
        await self._settled(pending, rec)

    async def _settled(self, pending: asyncio.Task[None] | None, rec: _Recording) -> None:
        """The commit of the part before, awaited: a part lost with its host is not committed, and
        the recording goes on (on another host) from the last part that was."""
        if pending is None:
            return
        try:
            await pending
        except HostLost:
            rec.after = rec.committed
            raise

    async def _commit_part(self, resolved: Resolved, name: str, index: int, download: DownloadResult,
                           rec: _Recording) -> None:
        """Verify one part of a recording on its host and add it to the item (a part without a
        file, one that ended with the broadcast empty, brings only its record)."""
        asset = replace(_named(resolved, name), name=name if index == 1 else f"{name}-part{index:03d}")
        try:
            mime = ""
            if download.path:
                verified = await workflow.execute_activity_method(
                    VerifyActivities.verify,
                    VerifyInput(asset, download, resolved.platform, resolved.canonical_url, None,
                                stage_attempts=self._opts.verify.maximum_attempts),
                    start_to_close_timeout=self._opts.verify.start_to_close,
                    schedule_to_close_timeout=self._opts.verify.schedule_to_close,
                    heartbeat_timeout=self._heartbeat_timeout,
                    retry_policy=self._opts.verify.retry_policy(),
                    **self._local(),
                )
                mime = verified.mime
            rec.result = await self._commit_files(resolved, [CommitFile(asset, download, mime)], append=True)
        except ActivityError as err:
            if _host_lost(err):
                raise HostLost(f"part {index} of {name} waited too long for its host") from None
            error_class, message = _failure(err)
            raise ItemFailed(error_class, message) from err
        rec.committed = download.live
        self._book.verified(asset.name, download.size)
        if download.live:
            live = download.live
            self._book.recording({"seconds": live.get("total_seconds"), "segments": live.get("total_segments"),
                                  "missing": live.get("missing_segments"), "bytes": live.get("total_bytes"),
                                  "part": live.get("part")})

    async def _until_done(self, running: str, resolved: Resolved, attempt: Callable[[Resolved], Awaitable[Done]],
                          corrupt: Callable[[], Awaitable[None]]) -> Done:
        """Run ``attempt`` until it succeeds or fails for good: the one loop of every media attempt.

        A pause stops it (``running`` names it among the running downloads) and it runs again once
        resumed; expired URLs are fetched again (assets whose URLs expired together share one fetch)
        and the attempt gets the fresh answer; a corrupt file is removed (``corrupt``) and downloaded
        again. Each at most ``max_refetches`` / ``max_redownloads`` times; anything else fails the item.
        """
        redownloads = refetches = 0
        seen_generation = self._generation
        while True:
            await self._wait_unpaused()
            try:
                return await attempt(resolved)
            except ActivityError as err:
                if _host_lost(err):
                    raise HostLost(f"{self._progress.stage} of {running} waited too long for its host") from None
                error_class, message = _failure(err)
                if error_class == "cancelled":
                    self._paused_not_cancelled(running)
                    continue
                self._progress.last_error = f"{error_class}: {message}"
                if error_class == "url_expired" and refetches < self._opts.max_refetches:
                    refetches += 1
                    resolved = await self._refetch(seen_generation)
                    seen_generation = self._generation
                    continue
                if error_class == "content_corrupt" and redownloads < self._opts.max_redownloads:
                    redownloads += 1
                    self._progress.attempt += 1
                    await corrupt()
                    continue
                raise ItemFailed(error_class, message) from err

    async def _track(self, running: str, task: asyncio.Task[Done]) -> Done:
        """Await a download (or the small item's one activity) that a pause may stop."""
        self._running[running] = task
        try:
            done = await task
        finally:
            self._running.pop(running, None)
        # A pause that came too late (the activity finished first) must not make a later
        # cancellation of this one look like a pause.
        self._pause_cancelled.discard(running)
        return done

    def _paused_not_cancelled(self, running: str) -> None:
        """A cancelled download (``running``: the asset, or the small item's one activity): a pause
        stopped it, and it runs again once resumed; otherwise the item itself is being cancelled.

        A pause is not a failure: no last_error. The bytes kept stay counted: the download's last
        progress report carries them (the SDK drops the details of a requested cancellation).
        """
        if running not in self._pause_cancelled:
            raise asyncio.CancelledError
        self._pause_cancelled.discard(running)
        self._book.show(self._progress.stage)

    async def _download(self, asset: Asset, resolved: Resolved, live_part: LivePart | None = None) -> DownloadResult:
        recording = asset.protocol == LIVE_PROTOCOL
        result = await self._track(asset.name, workflow.start_activity_method(
            DownloadActivities.download,
            DownloadInput(workflow.info().workflow_id, asset, resolved.platform, resolved.canonical_url,
                          self._opts.quality, self._opts.limit_rate, stage_attempts=self._opts.download.maximum_attempts,
                          live_part=live_part),
            start_to_close_timeout=self._opts.download.start_to_close,
            schedule_to_close_timeout=self._opts.download.schedule_to_close,
            heartbeat_timeout=(min(self._heartbeat_timeout, RECORDING_HEARTBEAT_TIMEOUT) if recording
                               else self._heartbeat_timeout),
            retry_policy=_recording_retry(self._opts.download.retry_policy()) if recording
            else self._opts.download.retry_policy(),
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            **self._local(),
        ))
        # Downloads report no progress at completion: their result says it.
        self._book.downloaded(asset.name, result.size, whole=not recording)
        return result

    @property
    def _heartbeat_timeout(self) -> timedelta:
        # Every stage heartbeats, so a dead worker's task moves to another within this time.
        return timedelta(seconds=self._opts.heartbeat_timeout_s)

    async def _refetch(self, seen_generation: int) -> Resolved:
        """Fresh media URLs; assets whose URLs expired together share one fetch."""
        async with self._refetch_lock:
            if self._generation == seen_generation:
                self._fresh = (await self._fetch(fresh_urls=True)).resolved
                self._generation += 1
            assert self._fresh is not None
            return self._fresh

    async def _wait_unpaused(self) -> None:
        if self._paused:
            self._book.show("paused")
            await workflow.wait_condition(lambda: not self._paused)
            self._book.show(self._progress.stage)

    async def _discard(self, names: list[str] | None = None) -> None:
        try:
            await workflow.execute_activity_method(
                DownloadActivities.discard,
                DiscardInput(workflow.info().workflow_id, names or [], self._inp.platform),
                start_to_close_timeout=timedelta(seconds=60),
                schedule_to_close_timeout=timedelta(minutes=10),  # the policy itself has no attempt limit
                retry_policy=self._opts.commit.retry_policy(),
                **self._local(),
            )
        except ActivityError as err:
            if not _host_lost(err):
                raise  # a host that is gone took its partial files with it

    # -- extras (issue 41): after the media is committed, each extra on its own ------------------
    # Only runs whose options carry ItemOptions.extras (a field runs started before lack) take
    # these steps. An extra never fails the item: one that keeps failing (its own retry policy,
    # retry.extras) is recorded missing with its class; a cancel here leaves the item committed.
    async def _with_extras(self, result: ItemResult, resolved: Resolved) -> ItemResult:
        if self._opts.extras is None or result.outcome != "committed" or not resolved.extras:
            return result
        self._book.show("extras")
        # What an extra needs of the item (its ids, duration, metadata); not the media's URLs.
        item = replace(resolved, assets=[], more=[])
        try:
            done = await asyncio.gather(*(self._extra(item, name) for name in resolved.extras))
        except (asyncio.CancelledError, CancelledError):
            workflow.logger.warning("extras cancelled; the item stays committed")
            return result
        # Lean in the result (a crawl keeps and carries many): the key follows from the sha256.
        result.extras = [replace(file, key="", mime=None) for extra in done for file in extra.files]
        return result

    async def _extra(self, resolved: Resolved, name: str) -> ExtraResult:
        policy = self._opts.extras
        assert policy is not None
        try:
            return await workflow.execute_activity_method(
                ExtraActivities.fetch_extra,
                ExtraInput(workflow.info().workflow_id, resolved, name, stage_attempts=policy.maximum_attempts),
                task_queue=self._opts.fetch_queue(resolved.platform),
                start_to_close_timeout=policy.start_to_close,
                schedule_to_close_timeout=policy.schedule_to_close,
                heartbeat_timeout=self._heartbeat_timeout,
                retry_policy=policy.retry_policy(),
            )
        except ActivityError as err:
            error_class, message = _failure(err)
            if error_class == "cancelled":
                raise asyncio.CancelledError from None
        missing = MissingExtraInput(workflow.info().workflow_id, resolved.canonical_key, resolved.platform, name,
                                    error_class, message[:2000])
        try:
            return await workflow.execute_activity_method(
                ExtraActivities.record_missing_extra, missing,
                task_queue=self._opts.fetch_queue(resolved.platform),
                start_to_close_timeout=timedelta(seconds=60),
                schedule_to_close_timeout=timedelta(minutes=10),
                retry_policy=self._opts.commit.retry_policy(),
            )
        except ActivityError:  # the catalog stayed down: the result still says it is missing
            return ExtraResult(name, [StoredExtra(name, "", missing=error_class, reason=message[:RESULT_REASON])])
    # -- end of extras ---------------------------------------------------------------------------

    def _stage(self, stage: str) -> None:
        if stage != self._progress.stage:
            self._progress.stage = stage
            if not self._lean:  # lean: the details line (and the progress query) say it
                workflow.upsert_search_attributes([STAGE.value_set(stage)])
        self._book.show(stage)

    def _finish(self, result: ItemResult) -> ItemResult:
        """Stage, Outcome and ErrorClass in the one upsert that ends the run (lean: with the
        identity, if not upserted after fetch); one summary line.

        A failed run keeps the stage it failed in (the web page's failures group by it); the
        others say ``done``. The upsert is the same command either way, so recorded runs replay."""
        last_stage = self._progress.stage
        self._progress.stage = "done"
        failed_in = last_stage if result.outcome == "failed" and last_stage in STAGES else "done"
        identity = _identity(result) if self._lean and result.canonical_key and not self._identified else []
        ended = [*identity, STAGE.value_set(failed_in), OUTCOME.value_set(result.outcome)]
        if result.error_class:
            ended.append(ERROR_CLASS.value_set(result.error_class[:255]))
        workflow.upsert_search_attributes(ended)
        self._book.ended(result.outcome, result.error_class)
        self._summary(result.outcome, last_stage, result.platform or self._inp.platform, result.canonical_key,
                      result.error_class, sum(a.size for a in result.assets))
        return result

    def _summary(self, outcome: str, stage: str, platform: str, canonical_key: str | None,
                 error_class: str | None, size: int) -> None:
        """One log line and one metric per finished item (both skipped on replay)."""
        info = workflow.info()
        elapsed = workflow.now() - info.start_time
        workflow.metric_meter().create_counter(
            "trawl_items", "Items finished, by platform and outcome").add(
            1, {"platform": platform, "outcome": outcome})
        fields = {"task_id": info.workflow_id, "platform": platform, "stage": stage if stage in STAGES else None,
                  "canonical_url": self._canonical_url or self._inp.url, "canonical_key": canonical_key, "outcome": outcome,
                  "error_class": error_class, "bytes": size, "duration_ms": int(elapsed.total_seconds() * 1000),
                  "attempt": self._progress.attempt}
        log = workflow.logger.warning if outcome == "failed" else workflow.logger.info
        log("item", extra={"trawl": fields})


class HostLost(Exception):
    """The host holding this item's partial files stopped taking work."""


class _Recording:
    """Where a recording in parts stands (MediaItemWorkflow._record_in_parts)."""

    def __init__(self) -> None:
        self.next = 1  # the next part's index (never reused)
        self.after: dict[str, Any] | None = None  # the record the next part goes on from
        self.committed: dict[str, Any] | None = None  # the record of the last part committed
        self.ended = False
        self.result: CommitResult | None = None  # the item's files after the last commit


def _host_lost(err: ActivityError) -> bool:
    cause = err.cause
    return isinstance(cause, ActivityTimeoutError) and cause.type == TimeoutType.SCHEDULE_TO_START


async def _all_or_none(coroutines: list[Coroutine[Any, Any, T]]) -> list[T]:
    """Like gather, but the first failure cancels the others (and waits for them) before it is raised."""
    tasks = [asyncio.create_task(c) for c in coroutines]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _recording_retry(policy: RetryPolicy) -> RetryPolicy:
    """A live recording's download retried within a second or two: the playlist's window slides on
    while it waits, and each retry goes on from the last media sequence held."""
    return replace(policy, initial_interval=min(policy.initial_interval, RECORDING_RETRY_INTERVAL),
                   maximum_interval=min(policy.maximum_interval or RECORDING_RETRY_MAX_INTERVAL,
                                        RECORDING_RETRY_MAX_INTERVAL))


def _set_at_start(attrs: list[Any]) -> bool:
    """The run started with these search attribute values (the starter set them): no upsert needed."""
    started = workflow.info().typed_search_attributes
    return all(started.get(update.key) == update.value for update in attrs)


def _identity(item: Resolved | ItemResult) -> list[Any]:
    """The search attributes that say which item a run is (once fetch has found it)."""
    identity = [PLATFORM.value_set(item.platform or ""), CANONICAL_KEY.value_set((item.canonical_key or "")[:255])]
    if _keyword(item.title):
        identity.append(TITLE.value_set(_keyword(item.title)))
    return identity


def _keyword(text: str | None) -> str:
    """``text`` as a Keyword attribute value: one line, at most 255 characters ("" for none)."""
    return " ".join((text or "").split())[:255]


def _named(resolved: Resolved, name: str) -> Asset:
    for asset in resolved.assets:
        if asset.name == name:
            return asset
    raise ItemFailed("parse_error", f"re-fetch no longer lists asset {name}")



