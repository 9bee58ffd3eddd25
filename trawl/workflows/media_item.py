"""MediaItemWorkflow: fetch -> (dedup) -> download -> verify -> commit for one item."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, TimeoutType
from temporalio.exceptions import TimeoutError as ActivityTimeoutError
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from trawl.activities.commit import CommitActivities
    from trawl.activities.download import DownloadActivities
    from trawl.activities.fetch import FetchActivities
    from trawl.activities.host import HostActivities
    from trawl.activities.small import SmallItemActivities, SmallItemInput
    from trawl.contracts import (
        CommitFile,
        CommitInput,
        CommitResult,
        DiscardInput,
        DownloadInput,
        DownloadResult,
        FetchInput,
        FetchResult,
        VerifyInput,
        VerifyResult,
    )
    from trawl.activities.verify import VerifyActivities
    from trawl.models import OPTIONAL_KINDS, Asset, Resolved
    from trawl.contracts import DownloadProgress, ItemInput, ItemResult, Progress
    from trawl.contracts import EXPECTED_FAILURES, STAGES
    from trawl.contracts import (  # noqa: F401 - SEARCH_ATTRIBUTES: imported from here by tests and tools
        CANONICAL_KEY, CRAWL_ID, ERROR_CLASS, OUTCOME, PLATFORM, SEARCH_ATTRIBUTES, STAGE, TITLE)


# workflow.patched ids (the versioning policy in the README): one per change of the command sequence.
KEEP_FAILED_PARTIALS = "keep-failed-partials"
HOST_LOCAL_WORK = "host-local-work"
FAILED_RUNS_FAIL = "failed-item-fails-the-run"
IDENTITY_MEMO = "identity-memo"
# A thumbnail that cannot be downloaded is left out; the item commits without it.
OPTIONAL_THUMBNAILS = "optional-thumbnails"
# A crawl queues the other items a finished item stands for (parts 2..N of a video).
CRAWL_MORE_ITEMS = "crawl-more-items"
SMALL_ITEM_ONE_ACTIVITY = "small-item-one-activity"
# A crawl pauses, resumes and cancels only the items it started; one it joined is only waited for.
CRAWL_STEERS_OWN_ITEMS = "crawl-steers-own-items"
# A crawl whose source cannot be expanded fails, saying why (it completed, the reason one refusal).
CRAWL_SOURCE_FAILS = "crawl-source-fails"
# The Web UI's list columns at no extra upsert: Title joins the identity upsert after fetch, ErrorClass
# and Outcome join Stage=done (Outcome=cancelled joins Stage=cancelled), and attributes the starter
# set at start are not upserted again.
UI_COLUMNS = "ui-columns"
MiB = 1024 * 1024
SMALL_ITEM = "*"  # the one activity of a small item, among the running downloads (by asset name)
T = TypeVar("T")


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


@workflow.defn
class MediaItemWorkflow:
    def __init__(self) -> None:
        self._progress = Progress()
        self._paused = False
        self._pause_cancelled: set[str] = set()
        self._running: dict[str, asyncio.Task[DownloadResult]] = {}
        self._canonical_url: str | None = None
        self._title: str | None = None
        # Re-fetches after url_expired: a generation counter so concurrent assets share one.
        self._generation = 0
        self._fresh: Resolved | None = None
        self._refetch_lock = asyncio.Lock()
        self._partial: dict[str, int] = {}  # asset name -> bytes of its unfinished download
        self._local_queue: str | None = None  # the claimed host's queue (None: the shared queue)
        self._verified: set[str] = set()  # assets whose download was verified
        self._reported_totals: dict[str, int] = {}  # asset name -> size its server announced
        self._totals_known = False  # the platform gave every asset's size up front
        self._one_activity = False  # a small item: download, verify and commit in one activity
        self._ui_columns = False  # runs since ui-columns (see UI_COLUMNS)

    # -- signals and queries ---------------------------------------------------------------
    @workflow.signal
    def download_progress(self, report: DownloadProgress) -> None:
        """A running download's bytes, sent by the activity at coarse steps for the live details."""
        # A paused download's last report may arrive after its activity ended: take reports of
        # every asset not verified yet.
        if report.asset not in self._verified:
            self._partial[report.asset] = max(self._partial.get(report.asset, 0), report.bytes_done)
            if report.bytes_total and not self._totals_known:
                # Sizes the platform did not give: what the servers announce, as they announce it.
                self._reported_totals[report.asset] = report.bytes_total
                self._progress.bytes_total = sum(self._reported_totals.values())
            self._refresh_bytes()
            self._stage_details(self._progress.stage)

    @workflow.signal
    def pause(self) -> None:
        """Stop at the next step; a running download stops at its next heartbeat, keeping its bytes."""
        self._paused = self._progress.paused = True
        for name, task in self._running.items():
            self._pause_cancelled.add(name)
            task.cancel()
        self._stage_details(self._progress.stage)

    @workflow.signal
    def resume(self) -> None:
        self._paused = self._progress.paused = False
        self._stage_details(self._progress.stage)

    @workflow.query
    def progress(self) -> Progress:
        return self._progress

    # -- the pipeline ----------------------------------------------------------------------
    @workflow.run
    async def run(self, inp: ItemInput) -> ItemResult:
        self._inp = inp
        self._opts = inp.options
        wid = workflow.info().workflow_id
        attrs = [PLATFORM.value_set(inp.platform)]
        if inp.crawl_id:
            attrs.append(CRAWL_ID.value_set(inp.crawl_id))
        self._ui_columns = workflow.patched(UI_COLUMNS)
        if not self._ui_columns or not _set_at_start(attrs):
            workflow.upsert_search_attributes(attrs)
        resolved: Resolved | None = None
        try:
            fetched = await self._fetch()
            resolved = fetched.resolved
            self._canonical_url = resolved.canonical_url
            self._title = resolved.title
            identity = [PLATFORM.value_set(resolved.platform), CANONICAL_KEY.value_set(resolved.canonical_key[:255])]
            if self._ui_columns and _keyword(resolved.title):
                identity.append(TITLE.value_set(_keyword(resolved.title)))
            workflow.upsert_search_attributes(identity)
            if workflow.patched(IDENTITY_MEMO):
                # A cancelled run has no result: its memo keeps what it was (CLI, API, Web UI).
                workflow.upsert_memo({"canonical_key": resolved.canonical_key, "title": (resolved.title or "")[:500],
                                      "platform": resolved.platform})
            if fetched.committed:
                return self._finish(ItemResult(wid, inp.url, "duplicate", resolved.canonical_key,
                                               resolved.platform, resolved.title, assets=fetched.stored,
                                               more=resolved.more))
            self._progress.bytes_total = _total(resolved.assets)
            self._totals_known = self._progress.bytes_total is not None
            if self._small(resolved) and workflow.patched(SMALL_ITEM_ONE_ACTIVITY):
                self._one_activity = True
                committed = await self._in_one_activity(resolved)
            elif workflow.patched(HOST_LOCAL_WORK):
                committed = await self._on_one_host(resolved)
            else:  # runs started before host-local work: every stage on the shared queue
                committed = await self._download_and_commit(resolved)
            return self._finish(ItemResult(wid, inp.url, committed.outcome, resolved.canonical_key,
                                           resolved.platform, resolved.title, assets=committed.assets,
                                           more=resolved.more))
        except ItemFailed as failed:
            # Partial files of a failed item are kept so a re-crawl resumes from them (the
            # workers remove them after download.keep_failed_partials), unless they are what
            # failed. Runs started before this change discarded them all here.
            if not workflow.patched(KEEP_FAILED_PARTIALS) or failed.error_class == "content_corrupt":
                await self._discard()
            result = self._finish(ItemResult(
                wid, inp.url, "failed", resolved.canonical_key if resolved else None,
                resolved.platform if resolved else inp.platform, resolved.title if resolved else None,
                error_class=failed.error_class, error=failed.message, more=resolved.more if resolved else []))
            if workflow.patched(FAILED_RUNS_FAIL):
                # A failed item is a Failed execution (the Web UI's Failures view, ExecutionStatus
                # queries); the result rides along in the failure's details for the CLI and API.
                # An expected class is told by its class and message alone; anything else (a bug)
                # keeps the activity failure behind it, with its stack trace.
                cause = None if failed.error_class in EXPECTED_FAILURES else failed.__cause__
                raise ApplicationError(f"{failed.error_class}: {' '.join(failed.message.split())[:500]}", result,
                                       type=failed.error_class, non_retryable=True) from cause
            return result
        except (asyncio.CancelledError, CancelledError):
            last_stage = self._progress.stage
            if self._ui_columns:
                self._progress.stage = "cancelled"
                self._stage_details("cancelled")
                workflow.upsert_search_attributes([STAGE.value_set("cancelled"), OUTCOME.value_set("cancelled")])
            else:
                self._stage("cancelled")
                workflow.upsert_search_attributes([OUTCOME.value_set("cancelled")])
            await self._discard()
            self._summary("cancelled", last_stage, resolved.platform if resolved else self._inp.platform,
                          resolved.canonical_key if resolved else None, None, 0)
            raise

    def _small(self, resolved: Resolved) -> bool:
        total = _total(resolved.assets)
        return self._opts.small_item_size > 0 and total is not None and total <= self._opts.small_item_size

    async def _in_one_activity(self, resolved: Resolved) -> CommitResult:
        """Download, verify and commit a small item in one activity (trawl.activities.small), on any host.

        The activity's failures are the stages' own: a corrupt file is downloaded again and
        expired URLs are fetched again, bounded as on the other paths; a pause stops it at its
        next heartbeat and runs it again on resume. The Stage attribute says download throughout.
        """
        redownloads = refetches = 0
        seen_generation = self._generation
        while True:
            await self._wait_unpaused()
            self._stage("download")
            task = workflow.start_activity_method(
                SmallItemActivities.small_item,
                SmallItemInput(workflow.info().workflow_id, self._inp.url, resolved, self._opts.quality,
                               self._opts.limit_rate, stage_attempts=self._opts.download.maximum_attempts),
                task_queue=self._opts.download_queue,
                start_to_close_timeout=self._opts.download.start_to_close,
                schedule_to_close_timeout=self._opts.download.schedule_to_close,
                heartbeat_timeout=self._heartbeat_timeout,
                retry_policy=self._opts.download.retry_policy(),
                cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            )
            self._running[SMALL_ITEM] = task
            try:
                committed = await task
            except ActivityError as err:
                error_class, message = _failure(err)
                if error_class == "cancelled":
                    self._paused_not_cancelled(SMALL_ITEM)
                    continue
                self._progress.last_error = f"{error_class}: {message}"
                if error_class == "url_expired" and refetches < self._opts.max_refetches:
                    refetches += 1
                    resolved = await self._refetch(seen_generation)
                    seen_generation = self._generation
                    continue
                if error_class == "content_corrupt" and redownloads < self._opts.max_redownloads:
                    redownloads += 1  # the activity removed the corrupt file
                    self._progress.attempt += 1
                    self._partial.clear()
                    self._refresh_bytes()
                    continue
                raise ItemFailed(error_class, message) from err
            finally:
                self._running.pop(SMALL_ITEM, None)
            self._pause_cancelled.discard(SMALL_ITEM)
            self._verified.update(asset.name for asset in resolved.assets)
            self._partial.clear()
            self._progress.bytes_finished = sum(asset.size for asset in committed.assets)
            self._refresh_bytes()
            return committed

    async def _on_one_host(self, resolved: Resolved) -> CommitResult:
        """Download, verify and commit on one host, the one holding the partial files.

        A host is claimed through the shared download queue (whichever worker has a free slot
        answers with its own host's queue). If that host stops taking work (a schedule-to-start
        timeout there), its files are gone with it: another host is claimed and the item's files
        are downloaded again, at most ``max_host_changes`` times.
        """
        changes = 0
        while True:
            self._local_queue = await self._claim_host()
            try:
                return await self._download_and_commit(resolved)
            except HostLost as lost:
                if changes >= self._opts.max_host_changes:
                    raise ItemFailed("host_lost", f"{lost}; gave up after {changes} host changes") from None
                changes += 1
                self._partial.clear()
                self._verified.clear()
                self._progress.bytes_finished = 0
                self._refresh_bytes()
                workflow.logger.warning(f"host lost ({lost}); downloading again on another host")

    async def _claim_host(self) -> str:
        return await workflow.execute_activity_method(
            HostActivities.claim_host,
            task_queue=self._opts.download_queue,
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=self._opts.download.retry_policy(),
        )

    def _local(self) -> dict[str, Any]:
        """Where host-local work goes: the claimed host's queue, bounded in how long it may wait."""
        if self._local_queue is None:
            return {"task_queue": self._opts.download_queue}
        return {"task_queue": self._local_queue,
                "schedule_to_start_timeout": timedelta(seconds=self._opts.local_schedule_to_start_s)}

    async def _download_and_commit(self, resolved: Resolved) -> CommitResult:
        wid = workflow.info().workflow_id
        if self._local_queue is None:
            results = await asyncio.gather(*(self._download_kept(resolved, i) for i in range(len(resolved.assets))))
        else:
            results = await _all_or_none([self._download_kept(resolved, i) for i in range(len(resolved.assets))])
        self._stage("commit")
        await self._wait_unpaused()
        files = [CommitFile(asset, dl, ver.mime) for asset, dl, ver in filter(None, results)]
        try:
            return await workflow.execute_activity_method(
                CommitActivities.commit,
                CommitInput(wid, self._inp.url, resolved, files, stage_attempts=self._opts.commit.maximum_attempts),
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

    async def _fetch(self, fresh_urls: bool = False) -> FetchResult:
        self._stage("fetch")
        try:
            return await workflow.execute_activity_method(
                FetchActivities.fetch,
                FetchInput(self._inp.url, workflow.info().workflow_id, self._inp.platform, fresh_urls,
                           self._opts.quality, stage_attempts=self._opts.fetch.maximum_attempts),
                task_queue=self._opts.fetch_queue(self._inp.platform),
                start_to_close_timeout=self._opts.fetch.start_to_close,
                schedule_to_close_timeout=self._opts.fetch.schedule_to_close,
                heartbeat_timeout=self._heartbeat_timeout,
                retry_policy=self._opts.fetch.retry_policy(),
            )
        except ActivityError as err:
            error_class, message = _failure(err)
            if error_class == "cancelled":
                raise asyncio.CancelledError from None
            self._progress.last_error = f"{error_class}: {message}"
            raise ItemFailed(error_class, message) from err

    async def _download_kept(self, resolved: Resolved, index: int) -> tuple[Asset, DownloadResult, VerifyResult] | None:
        """An asset downloaded and verified; None for an optional one (a thumbnail) that failed.

        A thumbnail's failure, after its own retries, leaves it out of the commit instead of
        failing the item. Runs recorded before this (no marker) failed the item, and still do.
        """
        asset = resolved.assets[index]
        if asset.kind not in OPTIONAL_KINDS:
            return await self._download_verified(resolved, index)
        try:
            return await self._download_verified(resolved, index)
        except ItemFailed as failed:
            if not workflow.patched(OPTIONAL_THUMBNAILS):
                raise
            workflow.logger.warning(f"{asset.name} left out: {failed.error_class}: {failed.message}")
            self._partial.pop(asset.name, None)
            self._refresh_bytes()
            return None

    async def _download_verified(self, resolved: Resolved, index: int) -> tuple[Asset, DownloadResult, VerifyResult]:
        """Download and verify one asset; re-download corrupt files and re-fetch expired URLs, bounded."""
        asset = resolved.assets[index]
        redownloads = refetches = 0
        seen_generation = self._generation
        while True:
            await self._wait_unpaused()
            self._stage("download")
            try:
                download = await self._download(asset, resolved)
            except ActivityError as err:
                if _host_lost(err):
                    raise HostLost(f"download of {asset.name} waited too long for its host") from None
                error_class, message = _failure(err)
                if error_class == "cancelled":
                    self._paused_not_cancelled(asset.name)
                    continue
                self._progress.last_error = f"{error_class}: {message}"
                if error_class == "url_expired" and refetches < self._opts.max_refetches:
                    refetches += 1
                    fresh = await self._refetch(seen_generation)
                    seen_generation = self._generation
                    asset = self._same_asset(fresh, asset)
                    continue
                raise ItemFailed(error_class, message) from err
            self._stage("verify")
            try:
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
            except ActivityError as err:
                if _host_lost(err):
                    raise HostLost(f"verify of {asset.name} waited too long for its host") from None
                error_class, message = _failure(err)
                self._progress.last_error = f"{error_class}: {message}"
                if error_class == "content_corrupt" and redownloads < self._opts.max_redownloads:
                    redownloads += 1
                    self._progress.attempt += 1
                    self._partial.pop(asset.name, None)
                    self._refresh_bytes()
                    await self._discard([asset.name])
                    continue
                raise ItemFailed(error_class, message) from err
            self._partial.pop(asset.name, None)
            self._verified.add(asset.name)
            self._progress.bytes_finished += download.size
            self._refresh_bytes()
            return asset, download, verified

    def _paused_not_cancelled(self, running: str) -> None:
        """A cancelled download (``running``: the asset, or the small item's one activity): a pause
        stopped it, and it runs again once resumed; otherwise the item itself is being cancelled.

        A pause is not a failure: no last_error. The bytes kept stay counted: the download's last
        progress report carries them (the SDK drops the details of a requested cancellation).
        """
        if running not in self._pause_cancelled:
            raise asyncio.CancelledError
        self._pause_cancelled.discard(running)
        self._stage_details(self._progress.stage)

    async def _download(self, asset: Asset, resolved: Resolved) -> DownloadResult:
        task = workflow.start_activity_method(
            DownloadActivities.download,
            DownloadInput(workflow.info().workflow_id, asset, resolved.platform, resolved.canonical_url,
                          self._opts.quality, self._opts.limit_rate, stage_attempts=self._opts.download.maximum_attempts),
            start_to_close_timeout=self._opts.download.start_to_close,
            schedule_to_close_timeout=self._opts.download.schedule_to_close,
            heartbeat_timeout=self._heartbeat_timeout,
            retry_policy=self._opts.download.retry_policy(),
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            **self._local(),
        )
        self._running[asset.name] = task
        try:
            result = await task
        finally:
            self._running.pop(asset.name, None)
        # A pause that came too late (the download finished first) must not make a later
        # cancellation of this asset look like a pause.
        self._pause_cancelled.discard(asset.name)
        # Downloads report no progress at completion: their result says it.
        self._partial[asset.name] = result.size
        self._refresh_bytes()
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

    @staticmethod
    def _same_asset(resolved: Resolved, old: Asset) -> Asset:
        for asset in resolved.assets:
            if asset.name == old.name:
                return asset
        raise ItemFailed("parse_error", f"re-fetch no longer lists asset {old.name}")

    async def _wait_unpaused(self) -> None:
        if self._paused:
            self._stage_details("paused")
            await workflow.wait_condition(lambda: not self._paused)
            self._stage_details(self._progress.stage)

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

    def _refresh_bytes(self) -> None:
        self._progress.bytes_done = self._progress.bytes_finished + sum(self._partial.values())

    def _stage(self, stage: str) -> None:
        if stage != self._progress.stage:
            self._progress.stage = stage
            workflow.upsert_search_attributes([STAGE.value_set(stage)])
        self._stage_details(stage)

    def _stage_details(self, stage: str) -> None:
        # The static summary is fixed at start (the URL); the title arrives with fetch, so the
        # Web UI's live details line carries it: "download 35% 14.2/40.0 MiB - <title>".
        progress = self._progress
        shown = "paused" if progress.paused and stage not in ("done", "cancelled") else stage
        total, done = progress.bytes_total, progress.bytes_done
        amount = ""
        if total:
            amount = f" {100 * done // total}% {done / MiB:.1f}/{total / MiB:.1f} MiB"
        elif done:
            amount = f" {done / MiB:.1f} MiB"
        kept = " kept" if shown == "paused" and done else ""
        title = f" - {self._title[:200]}" if self._title else ""
        workflow.set_current_details(f"{shown}{amount}{kept}{title}")

    def _finish(self, result: ItemResult) -> ItemResult:
        last_stage = self._progress.stage
        if self._ui_columns:  # Stage, Outcome and ErrorClass in the one upsert that ends the run
            self._progress.stage = "done"
            ended = [STAGE.value_set("done"), OUTCOME.value_set(result.outcome)]
            if result.error_class:
                ended.append(ERROR_CLASS.value_set(result.error_class[:255]))
            workflow.upsert_search_attributes(ended)
        elif self._one_activity:  # runs since small-item-one-activity: Stage and Outcome in one upsert
            self._progress.stage = "done"
            workflow.upsert_search_attributes([STAGE.value_set("done"), OUTCOME.value_set(result.outcome)])
        else:
            self._stage("done")
        error = f" {result.error_class}" if result.error_class else ""
        title = f" - {self._title[:200]}" if self._title else ""
        workflow.set_current_details(f"{result.outcome}{error}{title}")
        if not self._one_activity and not self._ui_columns:
            workflow.upsert_search_attributes([OUTCOME.value_set(result.outcome)])
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


def _set_at_start(attrs: list[Any]) -> bool:
    """The run started with these search attribute values (the starter set them): no upsert needed."""
    started = workflow.info().typed_search_attributes
    return all(started.get(update.key) == update.value for update in attrs)


def _keyword(text: str | None) -> str:
    """``text`` as a Keyword attribute value: one line, at most 255 characters ("" for none)."""
    return " ".join((text or "").split())[:255]


def _total(assets: list[Asset]) -> int | None:
    sizes = [a.expected_size for a in assets]
    return sum(sizes) if sizes and all(s is not None for s in sizes) else None  # type: ignore[misc]

