"""Small items: download, verify and commit in one activity (``small_item``).

The orchestration half runs on the time-skipping test server with the fakes of
test_orchestration.py plus a fake ``small_item``; the real half runs a `trawl worker` process
against the dev server and the simulator and reads its JSON log lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections import deque
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker

from trawl.contracts import CommitResult, DownloadInput, FetchInput, FetchResult, ItemOptions, StoredAsset
from trawl.models import Asset, Resolved
from trawl.activities.small import SmallItemInput
from trawl.starter.client import item_result, start_item as submit
from tests.conftest import make_settings
from tests.workflows.test_orchestration import (
    BEAT,
    SHA,
    SIZE,
    Fakes,
    env,  # noqa: F401 - the module's time-skipping server
    fakes,  # noqa: F401 - reset before and wound down after each test, over this module's running_fakes
    failed_run,
    failure,
    outcome,
    progress,
    start_item,
    until,
)
from trawl.platforms.registry import default_registry
from trawl.simulator import MediaFile, Response, Simulator
from trawl.storage.catalog import Catalog
from trawl.worker.main import running_worker
from trawl.workflows.media_item import MediaItemWorkflow
from trawl.contracts import download_queue, fetch_queue, workflow_queue

TRAWL = str(Path(sys.executable).parent / "trawl")
SMALL = {"small_item_size": SIZE}  # every fake asset is SIZE bytes: small


class SmallFakes(Fakes):
    """With small_item, and hosts: claim_host answers the queues in ``claims`` first, then the one
    host's (``host``), whose worker takes every host-local activity; ``older_host``'s worker (a
    trawl from before small_item ran on a host's queue) takes the stages only."""

    def reset(self, assets: tuple[str, ...] = ("video",)) -> None:
        super().reset(assets)
        self.host = f"{self.prefix}-host"
        self.older_host = f"{self.prefix}-older-host"
        self.claims: deque[str] = deque()
        self.small_queues: list[str] = []  # where each small_item ran
        self.fetch_claims: str = ""  # the host's queue the first fetch answers it claimed ("": none)
        self.claim_over: list[int] = []  # each fetch's FetchInput.claim_host_over

    @activity.defn(name="fetch")
    async def fetch(self, inp: FetchInput) -> FetchResult:
        fetched = await super().fetch(inp)
        self.claim_over.append(inp.claim_host_over)
        if inp.claim_host_over >= 0:
            fetched.host_queue = self.fetch_claims
        return fetched

    @activity.defn(name="claim_host")
    async def claim_host(self) -> str:
        return self.claims.popleft() if self.claims else self.host

    @activity.defn(name="small_item")
    async def small_item(self, inp: SmallItemInput) -> CommitResult:
        assets = inp.resolved.assets
        self.calls.append(("small_item", inp.workflow_id, [a.urls[0] for a in assets], activity.info().attempt))
        self.small_queues.append(activity.info().task_queue)
        self._scripted("small_item")
        if self.gate is not None:
            await self._hold(DownloadInput(inp.workflow_id, assets[0]))
        self.active.discard(inp.workflow_id)
        return CommitResult("committed", [StoredAsset(a.name, a.kind, SHA, SIZE) for a in assets])


@pytest.fixture(scope="module")
async def running_fakes(env: WorkflowEnvironment) -> AsyncIterator[SmallFakes]:  # noqa: F811
    """The fakes with small_item and their workers (test_orchestration's ``fakes`` resets them per test)."""
    fakes = SmallFakes(env.client)
    p = fakes.prefix
    async with contextlib.AsyncExitStack() as stack:
        for worker in (
            Worker(env.client, task_queue=workflow_queue(p), workflows=[MediaItemWorkflow]),
            Worker(env.client, task_queue=fetch_queue(p, "generic"), activities=[fakes.fetch], **BEAT),
            Worker(env.client, task_queue=download_queue(p), **BEAT,
                   activities=[fakes.small_item, fakes.download, fakes.verify, fakes.commit, fakes.discard,
                               fakes.claim_host]),
            Worker(env.client, task_queue=fakes.host, **BEAT,
                   activities=[fakes.small_item, fakes.download, fakes.verify, fakes.commit, fakes.discard]),
            Worker(env.client, task_queue=fakes.older_host, **BEAT,
                   activities=[fakes.download, fakes.verify, fakes.commit, fakes.discard]),
        ):
            await stack.enter_async_context(worker)
        yield fakes


def stages(fakes: Fakes) -> list[str]:
    return [c[0] for c in fakes.calls]


# -- orchestration -----------------------------------------------------------------------------

async def test_a_small_item_is_one_activity_after_its_fetch(env: WorkflowEnvironment,  # noqa: F811
                                                            fakes: SmallFakes) -> None:  # noqa: F811
    handle = await start_item(env, fakes, **SMALL)
    result = await outcome(handle)
    assert (result.outcome, [a.size for a in result.assets]) == ("committed", [SIZE])
    assert stages(fakes) == ["fetch", "small_item"]
    shown = await progress(handle)
    assert (shown.stage, shown.bytes_done, shown.bytes_total) == ("done", SIZE, SIZE)


async def test_an_item_over_the_size_takes_the_host_local_path(env: WorkflowEnvironment,  # noqa: F811
                                                                fakes: SmallFakes) -> None:
    result = await outcome(await start_item(env, fakes, small_item_size=SIZE - 1))
    assert result.outcome == "committed"
    assert stages(fakes) == ["fetch", "download", "verify", "commit"]


LARGER = {"small_item_size": SIZE - 1, "one_activity_on_host": True}  # every fake asset is over the size


async def scheduled(handle: WorkflowHandle) -> list[str]:
    """The activity types the run scheduled, in order."""
    return [event.activity_task_scheduled_event_attributes.activity_type.name
            async for event in handle.fetch_history_events()
            if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED]


async def test_a_larger_item_is_one_activity_on_the_host_it_claimed(env: WorkflowEnvironment,  # noqa: F811
                                                                     fakes: SmallFakes) -> None:
    handle = await start_item(env, fakes, **LARGER)
    result = await outcome(handle)
    assert (result.outcome, [a.size for a in result.assets]) == ("committed", [SIZE])
    assert await scheduled(handle) == ["fetch", "claim_host", "small_item"]
    assert fakes.small_queues == [fakes.host]  # where its retries resume from its partial files
    shown = await progress(handle)
    assert (shown.stage, shown.bytes_done, shown.bytes_total) == ("done", SIZE, SIZE)


async def test_a_larger_item_goes_to_the_host_its_first_fetch_claimed(env: WorkflowEnvironment,  # noqa: F811
                                                                      fakes: SmallFakes) -> None:
    fakes.fetch_claims = fakes.host
    handle = await start_item(env, fakes, **LARGER)
    assert (await outcome(handle)).outcome == "committed"
    assert await scheduled(handle) == ["fetch", "small_item"]  # no claim_host
    assert fakes.small_queues == [fakes.host]
    assert fakes.claim_over == [SIZE - 1]  # asked of the first fetch: items over small_item_size claim a host


async def test_a_host_its_fetch_claimed_that_is_gone_is_claimed_anew(env: WorkflowEnvironment,  # noqa: F811
                                                                     fakes: SmallFakes) -> None:
    fakes.fetch_claims = f"{fakes.prefix}-gone-host"  # nobody polls it: the host died after the fetch
    handle = await start_item(env, fakes, local_schedule_to_start_s=5, **LARGER)
    assert (await outcome(handle)).outcome == "committed"
    assert await scheduled(handle) == ["fetch", "small_item", "claim_host", "small_item"]
    assert fakes.small_queues == [fakes.host]


async def test_a_larger_item_retried_stays_on_its_host(env: WorkflowEnvironment, fakes: SmallFakes) -> None:  # noqa: F811
    fakes.script["small_item"].extend([failure("truncated", final=False), failure("storage_error", final=False)])
    handle = await start_item(env, fakes, **LARGER)
    assert (await outcome(handle)).outcome == "committed"
    assert [call[-1] for call in fakes.of("small_item")] == [1, 2, 3]
    assert fakes.small_queues == [fakes.host] * 3


async def test_two_larger_files_download_side_by_side_an_activity_each(env: WorkflowEnvironment,  # noqa: F811
                                                                       fakes: SmallFakes) -> None:
    fakes.reset(assets=("video", "audio"))  # DASH: two files, neither small
    handle = await start_item(env, fakes, **LARGER)
    assert (await outcome(handle)).outcome == "committed"
    assert sorted(stages(fakes)) == ["commit", "download", "download", "fetch", "verify", "verify"]
    assert fakes.small_queues == []


def asset(name: str, kind: str = "video", size: int | None = 10_000, protocol: str = "http") -> Asset:
    return Asset(name, kind, [f"http://127.0.0.1:9/{name}"], expected_size=size, protocol=protocol)


@pytest.mark.parametrize(("assets", "on_host"), [
    ([asset("video")], True),
    ([asset("video", size=None)], True),  # a size the platform does not give: still one file
    ([asset("video"), asset("cover", "thumbnail", size=None)], True),  # a cover counts as small
    ([asset("video"), asset("audio", "audio")], False),  # DASH: side by side, an activity each
    ([asset("video"), asset("audio", "audio", size=None)], False),
    ([asset("video"), asset("audio", "audio", size=100)], False),  # however small the audio
    ([asset("video", protocol="hls-live")], False),  # a recording commits in parts as it records
    ([asset("image-1", "image", size=400)], True),
    ([asset(f"image-{i}", "image", size=400) for i in range(3)], False),  # a gallery: side by side
])
def test_which_items_go_in_one_activity_on_their_host(assets: list[Asset], on_host: bool) -> None:
    run = MediaItemWorkflow()
    run._opts = ItemOptions(small_item_size=1_000, one_activity_on_host=True)
    resolved = Resolved("web:x", "http://127.0.0.1:9/x", "generic", assets)
    assert run._one_activity_on_host(resolved) is on_host
    run._opts = ItemOptions(small_item_size=1_000)  # a run started before the option
    assert run._one_activity_on_host(resolved) is False


async def test_a_host_of_an_older_trawl_takes_the_stages_one_by_one(env: WorkflowEnvironment,  # noqa: F811
                                                                     fakes: SmallFakes) -> None:
    # A rolling upgrade: the host claimed runs a worker without small_item on its own queue. The
    # SDK fails the task there at once; the run goes on with an activity per stage on that host.
    fakes.host = fakes.older_host
    handle = await start_item(env, fakes, **LARGER)
    assert (await outcome(handle)).outcome == "committed"
    assert stages(fakes) == ["fetch", "download", "verify", "commit"]
    assert await scheduled(handle) == ["fetch", "claim_host", "small_item", "download", "verify", "commit"]
    assert (await progress(handle)).last_error is None


async def test_a_larger_item_whose_host_is_gone_claims_another(env: WorkflowEnvironment,  # noqa: F811
                                                                fakes: SmallFakes) -> None:
    fakes.claims.append(f"{fakes.prefix}-gone-host")  # nobody polls it: the host died after its claim
    handle = await start_item(env, fakes, local_schedule_to_start_s=5, **LARGER)
    assert (await outcome(handle)).outcome == "committed"
    assert await scheduled(handle) == ["fetch", "claim_host", "small_item", "claim_host", "small_item"]
    assert fakes.small_queues == [fakes.host]


async def test_retryable_failures_run_the_whole_activity_again(env: WorkflowEnvironment,  # noqa: F811
                                                               fakes: SmallFakes) -> None:
    fakes.script["small_item"].extend([failure("http_5xx", final=False), failure("storage_error", final=False)])
    result = await outcome(await start_item(env, fakes, **SMALL))
    assert result.outcome == "committed"
    assert [call[-1] for call in fakes.of("small_item")] == [1, 2, 3]  # attempts of one activity


async def test_a_final_class_fails_the_item_at_once(env: WorkflowEnvironment, fakes: SmallFakes) -> None:  # noqa: F811
    fakes.script["small_item"].append(failure("not_found"))
    handle = await start_item(env, fakes, **SMALL)
    assert (await failed_run(handle)).type == "not_found"
    assert len(fakes.of("small_item")) == 1


async def test_a_corrupt_file_is_downloaded_again_in_a_new_activity(env: WorkflowEnvironment,  # noqa: F811
                                                                    fakes: SmallFakes) -> None:
    fakes.script["small_item"].append(failure("content_corrupt"))
    handle = await start_item(env, fakes, **SMALL)
    assert (await outcome(handle)).outcome == "committed"
    # The activity removed the corrupt file itself: no discard round trip.
    assert stages(fakes) == ["fetch", "small_item", "small_item"]
    assert [call[-1] for call in fakes.of("small_item")] == [1, 1]
    assert (await progress(handle)).attempt == 2


async def test_redownloads_of_a_corrupt_small_item_are_bounded(env: WorkflowEnvironment,  # noqa: F811
                                                               fakes: SmallFakes) -> None:
    fakes.always["small_item"] = failure("content_corrupt")
    handle = await start_item(env, fakes, max_redownloads=2, **SMALL)
    assert (await failed_run(handle)).type == "content_corrupt"
    assert len(fakes.of("small_item")) == 1 + 2
    assert fakes.of("discard") == [(handle.id, [])]  # what failed is removed at the end


async def test_expired_urls_are_fetched_again_for_the_next_activity(env: WorkflowEnvironment,  # noqa: F811
                                                                    fakes: SmallFakes) -> None:
    fakes.script["small_item"].append(failure("url_expired"))
    result = await outcome(await start_item(env, fakes, **SMALL))
    assert result.outcome == "committed"
    urls = [call[1] for call in fakes.of("small_item")]
    assert [u[0].rsplit("=", 1)[1] for u in urls] == ["1", "2"]  # the second with the fresh URLs


async def test_pause_stops_the_activity_and_resume_runs_it_again(env: WorkflowEnvironment,  # noqa: F811
                                                                 fakes: SmallFakes) -> None:
    fakes.gate = asyncio.Semaphore(0)
    handle = await start_item(env, fakes, **SMALL)
    await until(lambda: fakes.holding, "the activity is running")
    await handle.signal(MediaItemWorkflow.pause)
    await until(lambda: fakes.of("download_cancelled"), "the pause cancelled the activity")
    (_, _, kept), = fakes.of("download_cancelled")

    async def shown_paused() -> bool:
        p = await progress(handle)
        return p.paused and not (await handle.describe()).raw_description.pending_activities

    await until(shown_paused, "the paused item has no running activity")
    shown = await progress(handle)
    assert (shown.last_error, shown.bytes_done) == (None, kept)  # a pause, with the bytes it kept
    await env.sleep(timedelta(hours=1))
    assert len(fakes.of("small_item")) == 1
    await handle.signal(MediaItemWorkflow.resume)
    await until(lambda: fakes.holding, "the activity runs again")
    fakes.gate.release()
    assert (await outcome(handle)).outcome == "committed"
    assert len(fakes.of("small_item")) == 2 and fakes.of("discard") == []


async def test_cancel_stops_the_activity_and_discards_its_files(env: WorkflowEnvironment,  # noqa: F811
                                                               fakes: SmallFakes) -> None:
    fakes.gate = asyncio.Semaphore(0)
    handle = await start_item(env, fakes, **SMALL)
    await until(lambda: fakes.holding, "the activity is running")
    await handle.cancel()
    assert (await outcome(handle)).outcome == "cancelled"
    assert len(fakes.of("download_cancelled")) == 1
    assert fakes.of("discard") == [(handle.id, [])]
    assert (await handle.describe()).status == WorkflowExecutionStatus.CANCELED


# -- end to end: a real worker process ---------------------------------------------------------

@pytest.mark.timeout(180)
async def test_a_tiny_item_commits_in_its_fetch_a_small_one_in_one_activity_and_a_large_one_on_the_fetch_s_host(
        temporal_client: Client, temporal_address: str, sim: Simulator, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, temporal_address, download={"small_item_size": 100_000,
                                                                   "with_fetch_size": 30_000})
    tiny = MediaFile("mp4", "tiny-one", 20_000)
    small, large = MediaFile("mp4", "small-one", 50_000), MediaFile("mp4", "large-one", 200_000)
    staged = MediaFile("mp4", "large-staged", 200_000)
    sim.add_file("/tiny.mp4", tiny)
    sim.add_file("/small.mp4", small)
    sim.add_file("/large.mp4", large)
    sim.add_file("/staged.mp4", staged)
    # A starter with download.one_activity_on_host off: an activity per stage on the claimed host.
    by_stage = settings.model_copy(update={"download": settings.download.model_copy(
        update={"one_activity_on_host": False})})
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
    env.update(TRAWL_DATA_DIR=str(settings.data_dir), TRAWL_NET__ALLOW_PRIVATE="true",
               TRAWL_TEMPORAL__ADDRESS=temporal_address, TRAWL_TEMPORAL__EMBEDDED="false",
               TRAWL_TEMPORAL__TASK_QUEUE_PREFIX=settings.temporal.task_queue_prefix,
               TRAWL_CATALOG__URL=settings.catalog.url, TRAWL_WORKER__METRICS_PORT="0",
               TRAWL_DOWNLOAD__SMALL_ITEM_SIZE="100000", TRAWL_DOWNLOAD__WITH_FETCH_SIZE="30000")
    log_path = tmp_path / "worker.log"
    with open(log_path, "wb") as log:
        worker = subprocess.Popen([TRAWL, "worker"], env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
        try:
            handles = [(await submit(temporal_client, settings, default_registry(), sim.url(p))).handle
                       for p in ("/tiny.mp4", "/small.mp4", "/large.mp4")]
            handles.append((await submit(temporal_client, by_stage, default_registry(), sim.url("/staged.mp4"))).handle)
            results = await asyncio.wait_for(asyncio.gather(*(item_result(h, "") for h in handles)), 120)
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    assert [(r.outcome, r.assets[0].sha256) for r in results] == [
        ("committed", tiny.sha256()), ("committed", small.sha256()), ("committed", large.sha256()),
        ("committed", staged.sha256())]
    assert Catalog(settings.catalog_url).count() == 4
    assert not any(settings.work_dir.rglob("*.part"))
    events = [json.loads(line) for line in log_path.read_text().splitlines()]
    activity_lines = [e for e in events if e["event"] == "activity" and e["outcome"] == "ok"]

    def lines_of(result: object) -> list[tuple[str, str | None]]:
        return [(e["stage"], e.get("activity")) for e in activity_lines if e["task_id"] == result.workflow_id]

    # The tiny item's first fetch is fetch_and_store_tiny; its own line (the fetch stage) comes
    # last: it is written when the whole activity ends.
    tiny_one = "fetch_and_store_tiny"
    assert lines_of(results[0]) == [("download", tiny_one), ("verify", tiny_one), ("commit", tiny_one),
                                    ("fetch", tiny_one)]
    # Every item's first fetch is that activity (it is told the sizes only by the platform): the
    # others are only resolved by it and go on through their stages.
    one = "small_item"
    assert lines_of(results[1]) == [("fetch", tiny_one), ("download", one), ("verify", one), ("commit", one)]
    # A larger one goes to the host its fetch claimed (the worker had room: no claim_host) and
    # runs the three there in one activity, or, with the option off, an activity each.
    assert lines_of(results[2]) == [("fetch", tiny_one), ("download", one), ("verify", one), ("commit", one)]
    assert lines_of(results[3]) == [("fetch", tiny_one), ("download", None), ("verify", None), ("commit", None)]
    host = f"{settings.temporal.task_queue_prefix}-host-"
    for result, after_fetch in zip(results[2:], (["small_item"], ["download", "verify", "commit"])):
        history = await temporal_client.get_workflow_handle(result.workflow_id).fetch_history()
        scheduled = [e.activity_task_scheduled_event_attributes for e in history.events
                     if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED]
        assert [(a.activity_type.name, a.task_queue.name.startswith(host)) for a in scheduled] == [
            ("fetch_and_store_tiny", False), *((name, True) for name in after_fetch)]
    small_download = next(e for e in activity_lines if e["task_id"] == results[1].workflow_id
                          and e["stage"] == "download")
    assert (small_download["bytes"], small_download["platform"]) == (50_000, "generic")
    assert sum(e["event"] == "item" and e["outcome"] == "committed" for e in events) == 4  # the summary lines
    # What the tiny item cost the server: one activity, its identity and outcome in one upsert
    # (and the SDK's for the patch), no memo.
    history = await temporal_client.get_workflow_handle(results[0].workflow_id).fetch_history()
    kinds = [EventType.Name(event.event_type) for event in history.events]
    assert len(kinds) <= 14, kinds
    assert kinds.count("EVENT_TYPE_ACTIVITY_TASK_SCHEDULED") == 1
    assert kinds.count("EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES") <= 2
    assert "EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED" not in kinds
    query = f"CanonicalKey = '{results[0].canonical_key}' AND Outcome = 'committed' AND Platform = 'generic'"
    async def listed() -> list[str]:
        return [e.id async for e in temporal_client.list_workflows(query)]

    found = await until(listed, "the item listed by its key and outcome", 10, every=0.2)  # visibility lags a moment
    assert found == [results[0].workflow_id]
    for result in results:
        await replays(temporal_client, result.workflow_id)


async def replays(client: Client, workflow_id: str) -> None:
    """The run's history replays with this code (no recorded history of this path exists yet)."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    await Replayer(workflows=[MediaItemWorkflow]).replay_workflow(history)


@pytest.mark.timeout(180)
async def test_a_corrupt_small_file_is_downloaded_again_then_fails_and_a_flaky_one_commits(
        temporal_client: Client, temporal_address: str, sim: Simulator, tmp_path: Path) -> None:
    """The real small_item activity: verify's content_corrupt re-runs it (bounded), a 5xx retries it.
    Both files are tiny: their fetch tried them first and left them to small_item."""
    settings = make_settings(tmp_path, temporal_address, download={"max_redownloads": 1, "with_fetch_size": 1 << 20},
                             retry={"download": {"initial_interval": "100ms", "maximum_interval": "200ms"}})
    page = b"<!DOCTYPE html><html><body>Please log in</body></html>"
    sim.add_exact("/fake.mp4", lambda req: Response(200, {"Content-Type": "video/mp4"}, page))
    media = MediaFile("mp4", "flaky-small", 30_000)
    answers = deque([None, Response(503, {"Content-Type": "text/plain"}, b"busy")])  # the probe, then a 503
    sim.add_exact("/flaky.mp4", lambda req: (answers.popleft() if answers else None) or sim.serve_media(req, media))
    async with running_worker(temporal_client, settings):
        corrupt = await submit(temporal_client, settings, default_registry(), sim.url("/fake.mp4"))
        flaky = await submit(temporal_client, settings, default_registry(), sim.url("/flaky.mp4"))
        results = await asyncio.wait_for(asyncio.gather(item_result(corrupt.handle, ""), item_result(flaky.handle, "")),
                                         60)
        for started in (corrupt, flaky):
            await replays(temporal_client, started.workflow_id)
    assert (results[0].outcome, results[0].error_class) == ("failed", "content_corrupt")
    # The probe, the tiny item's try in its fetch, then small_item's download and one re-download.
    assert sim.stats["/fake.mp4"].requests == 1 + 1 + 2
    assert (results[1].outcome, results[1].assets[0].sha256) == ("committed", media.sha256())
    assert sim.stats["/flaky.mp4"].requests == 1 + 2  # the 503 met the fetch's try: small_item took it from there
    for started in (corrupt, flaky):
        history = await started.handle.fetch_history()
        scheduled = [e.activity_task_scheduled_event_attributes.activity_type.name for e in history.events
                     if e.HasField("activity_task_scheduled_event_attributes")]
        assert set(scheduled) <= {"fetch_and_store_tiny", "fetch", "small_item", "discard"} and "small_item" in scheduled
        assert scheduled[0] == "fetch_and_store_tiny"  # the first fetch may store a tiny item: its name says so
    assert not any(settings.work_dir.rglob("*.part"))
    assert [p.name for p in settings.blobs_dir.rglob("*") if p.is_file()] == [media.sha256()]
