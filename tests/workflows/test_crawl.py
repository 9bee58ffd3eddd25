"""CrawlWorkflow against a real dev server, a real worker and the simulator."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.service import RPCError, RPCStatusCode

from trawl.activities.crawl import route_items
from trawl.starter.client import item_options, start_crawl
from tests.conftest import make_settings
from tests.polling import until
from trawl.platforms.registry import default_registry
from trawl.settings import Settings, SourceSettings
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.sources import source_definition
from trawl.storage.catalog import Catalog
from trawl.worker.main import running_worker
from trawl.starter.views import crawl_failure
from trawl.workflows.crawl import CrawlInput, CrawlStats, CrawlWorkflow
from trawl.workflows.media_item import MediaItemWorkflow, Progress
from trawl.contracts import workflow_queue


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str) -> Settings:
    return make_settings(tmp_path, temporal_address, retry={
        stage: {"initial_interval": "100ms", "maximum_interval": "500ms"} for stage in ("fetch", "download")})


def files(sim: Simulator, count: int, size: int = 20_000, throttle: int | None = None, tag: str = "c") -> list[str]:
    urls = []
    for i in range(count):
        sim.add_file(f"/{tag}/{i}.mp4", MediaFile("mp4", f"{tag}-{i}", size + i), FileBehaviour(throttle_bps=throttle))
        urls.append(sim.url(f"/{tag}/{i}.mp4"))
    return urls


async def not_yet_paused(client: Client, urls: list[str]) -> list[str]:
    """The running items (of these URLs) not paused yet, or paused with their download still stopping."""
    moving = []
    for item in route_items(default_registry(), urls)[0]:
        handle = client.get_workflow_handle(item.workflow_id)
        try:
            description = await handle.describe()
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                continue  # not started
            raise
        if description.status != WorkflowExecutionStatus.RUNNING:
            continue
        # A small item's download is its one activity (small_item), which a pause stops as it stops a
        # download: until it has stopped (or finished first), its bytes may still grow.
        downloading = any(a.activity_type.name in ("download", "small_item")
                          for a in description.raw_description.pending_activities)
        if downloading or not (await handle.query(MediaItemWorkflow.progress, result_type=Progress)).paused:
            moving.append(item.workflow_id)
    return moving


def part_sizes(settings: Settings) -> dict[Path, int]:
    return {p: p.stat().st_size for p in settings.work_dir.rglob("*.part")}


async def test_crawl_commits_every_item_once_and_dedups(temporal_client: Client, settings: Settings,
                                                        sim: Simulator, worker) -> None:
    urls = files(sim, 6)
    handle, refused = await start_crawl(temporal_client, settings, default_registry(),
                                        [*urls, urls[0] + "?utm_source=again", "notaurl"], concurrency=3)
    assert refused and "notaurl" in refused[0]
    stats: CrawlStats = await asyncio.wait_for(handle.result(), 60)
    assert stats.outcomes.get("committed") == 6 and stats.queued == stats.running == 0
    assert stats.outcomes.get("duplicate", 0) == 1 and stats.bytes >= 6 * 20_000
    assert Catalog(settings.catalog_url).count() == 6
    query = f"CrawlId = '{handle.id}' AND Outcome = 'committed' AND WorkflowType = 'MediaItemWorkflow'"

    async def listed() -> bool:
        return len([w async for w in temporal_client.list_workflows(query)]) == 6
    await until(listed, "the crawl's items listed", 20)


async def test_pause_stops_new_work_and_resume_finishes(temporal_client: Client, settings: Settings,
                                                        sim: Simulator, worker) -> None:
    urls = files(sim, 30, size=400_000, throttle=2_000_000, tag="p")
    # A tiny item's fetch downloads it too and is not stopped by a pause (it lasts a moment): these
    # items take the paths a pause stops, so that nothing moves while paused.
    settings.download.with_fetch_size = 0
    handle, _ = await start_crawl(temporal_client, settings, default_registry(), urls, concurrency=4)

    async def some_done() -> bool:
        return (await handle.query(CrawlWorkflow.stats)).finished >= 4
    await until(some_done)
    await handle.signal(CrawlWorkflow.pause)

    async def all_paused() -> bool:
        """Every running item got the pause; their downloads stop at their next heartbeat."""
        return not await not_yet_paused(temporal_client, urls)
    await until(all_paused)
    kept = part_sizes(settings)
    requests = sum(s.requests for s in sim.stats.values())
    paused = await handle.query(CrawlWorkflow.stats)
    assert paused.paused and paused.queued > 0
    assert not await not_yet_paused(temporal_client, urls)  # nothing moves while paused
    assert part_sizes(settings) == kept  # the paused items' bytes stay as they were
    assert sum(s.requests for s in sim.stats.values()) == requests  # and nothing new starts
    await handle.signal(CrawlWorkflow.resume)
    stats = await asyncio.wait_for(handle.result(), 120)
    assert stats.outcomes == {"committed": 30}
    assert Catalog(settings.catalog_url).count() == 30


async def test_cancel_cancels_children_and_removes_partial_files(temporal_client: Client, settings: Settings,
                                                                 sim: Simulator, worker) -> None:
    urls = files(sim, 10, size=3_000_000, throttle=1_000_000, tag="x")
    handle, _ = await start_crawl(temporal_client, settings, default_registry(), urls, concurrency=3)

    async def downloading() -> bool:
        return any(p.suffix == ".part" for p in settings.work_dir.rglob("*"))
    await until(downloading)
    await handle.signal(CrawlWorkflow.cancel)
    stats = await asyncio.wait_for(handle.result(), 60)
    assert stats.cancelled and stats.outcomes.get("cancelled") == 3 and stats.queued == 0
    assert not list(settings.work_dir.rglob("*.part"))
    assert Catalog(settings.catalog_url).count() == 0


async def test_add_urls_to_a_running_crawl(temporal_client: Client, settings: Settings, sim: Simulator,
                                           worker) -> None:
    first = files(sim, 2, size=500_000, throttle=500_000, tag="a")
    more = files(sim, 3, tag="b")
    handle, _ = await start_crawl(temporal_client, settings, default_registry(), first, concurrency=2)
    items, _ = route_items(default_registry(), more)
    await handle.signal(CrawlWorkflow.add_urls, items)
    stats = await asyncio.wait_for(handle.result(), 60)
    assert stats.outcomes == {"committed": 5}


async def test_continue_as_new_keeps_going(temporal_client: Client, settings: Settings, sim: Simulator,
                                           worker) -> None:
    urls = files(sim, 24, size=5_000, tag="n")
    handle, _ = await start_crawl(temporal_client, settings, default_registry(), urls, concurrency=4,
                                  history_limit=60)
    stats = await asyncio.wait_for(handle.result(), 180)
    assert stats.runs >= 3, stats
    assert stats.outcomes == {"committed": 24}
    assert Catalog(settings.catalog_url).count() == 24


async def test_temporal_cancellation_cancels_the_items(temporal_client: Client, settings: Settings,
                                                       sim: Simulator, worker) -> None:
    urls = files(sim, 6, size=3_000_000, throttle=1_000_000, tag="t")
    handle, _ = await start_crawl(temporal_client, settings, default_registry(), urls, concurrency=2)

    async def downloading() -> bool:
        return any(p.suffix == ".part" for p in settings.work_dir.rglob("*"))
    await until(downloading)
    await handle.cancel()
    with pytest.raises(Exception):
        await asyncio.wait_for(handle.result(), 60)

    async def none_running() -> bool:  # visibility catches up with the children's cancellation
        return not [w async for w in temporal_client.list_workflows(
            f"CrawlId = '{handle.id}' AND ExecutionStatus = 'Running'")]
    await until(none_running, "no item running", 30)
    assert not list(settings.work_dir.rglob("*.part"))


async def test_an_in_flight_item_that_never_started_is_started_again(temporal_client: Client, settings: Settings,
                                                                     sim: Simulator, worker) -> None:
    """A child start still in flight when a run continued as new may never have happened: the
    next run finds no such workflow and starts the item itself."""
    from trawl.starter.client import item_options
    from trawl.workflows.crawl import CrawlInput, CrawlState
    from trawl.contracts import workflow_queue

    urls = files(sim, 2, tag="lost")
    items, _ = route_items(default_registry(), urls)
    state = CrawlState(pending=[items[1]], in_flight=[items[0]], started_at="2026-11-30T00:00:00")
    handle = await temporal_client.start_workflow(
        CrawlWorkflow.run, CrawlInput(options=item_options(settings), state=state),
        id=f"crawl-lost-{time.monotonic_ns()}", task_queue=workflow_queue(settings.temporal.task_queue_prefix))
    stats = await asyncio.wait_for(handle.result(), 60)
    assert stats.outcomes == {"committed": 2} and stats.runs == 2


@pytest.mark.slow
async def test_two_crawls_of_the_same_urls_cannot_starve_the_download_slots(
        temporal_client: Client, tmp_path: Path, temporal_address: str, sim: Simulator) -> None:
    """Four download slots, two crawls of the same 20 throttled URLs, eight at a time each: the
    second crawl joins the first's items; its waiting must not take the slots they need."""
    settings = make_settings(tmp_path, temporal_address, worker={"max_concurrent_activities": 4},
                             retry={stage: {"initial_interval": "100ms", "maximum_interval": "500ms"}
                                    for stage in ("fetch", "download")})
    urls = files(sim, 20, size=300_000, throttle=600_000, tag="starve")
    async with running_worker(temporal_client, settings):
        first, _ = await start_crawl(temporal_client, settings, default_registry(), urls, concurrency=8)

        async def first_window_started() -> bool:
            stats = await first.query(CrawlWorkflow.stats)
            return stats.running + stats.finished >= 8
        await until(first_window_started)
        second, _ = await start_crawl(temporal_client, settings, default_registry(), urls, concurrency=8)
        stats = await asyncio.wait_for(asyncio.gather(first.result(), second.result()), 240)
    assert [sum(s.outcomes.values()) for s in stats] == [20, 20]
    assert {o for s in stats for o in s.outcomes} <= {"committed", "duplicate"}
    assert Catalog(settings.catalog_url).count() == 20  # every item once
    assert len({p.name for p in settings.blobs_dir.rglob("*") if p.is_file()}) == 20


async def test_known_items_of_a_source_start_no_item_workflow(temporal_client: Client, tmp_path: Path,
                                                              temporal_address: str, sim: Simulator) -> None:
    """A source listed again (a watch's next run) counts its committed items as duplicates at
    expansion: no item workflow, no fetch-queue slot, no request; only the new ones run."""
    urls = files(sim, 3, tag="known")
    listing = tmp_path / "urls.txt"
    listing.write_text("\n".join(urls[:2]) + "\n")
    settings = make_settings(tmp_path, temporal_address,
                             sources=[{"name": "list", "kind": "url_file", "path": str(listing)}])
    registry = default_registry()

    def requests() -> list[int]:
        return [sim.stats[urlsplit(url).path].requests for url in urls[:2]]

    async with running_worker(temporal_client, settings):
        first, _ = await start_crawl(temporal_client, settings, registry, [], source="list")
        stats: CrawlStats = await asyncio.wait_for(first.result(), 60)
        assert stats.outcomes == {"committed": 2}
        listing.write_text("\n".join(urls) + "\n")  # the source gained one
        before = requests()
        second, _ = await start_crawl(temporal_client, settings, registry, [], source="list")
        stats = await asyncio.wait_for(second.result(), 60)
    assert stats.outcomes == {"committed": 1, "duplicate": 2}
    assert Catalog(settings.catalog_url).count() == 3 and requests() == before
    new_item = route_items(registry, urls[2:])[0][0].workflow_id
    query = f"CrawlId = '{second.id}' AND WorkflowType = 'MediaItemWorkflow'"

    async def started() -> list[str]:
        return [w.id async for w in temporal_client.list_workflows(query)]

    async def new_item_listed() -> bool:
        return new_item in await started()
    await until(new_item_listed, "the new item listed", 20)
    assert await started() == [new_item]  # the two known URLs ran nothing


async def test_a_crawl_steers_only_the_items_it_started(temporal_client: Client, settings: Settings,
                                                        sim: Simulator, worker) -> None:
    """Crawl B joins crawl A's running items; pausing and cancelling B leaves them to A."""
    urls = files(sim, 3, size=2_000_000, throttle=1_000_000, tag="own")
    first, _ = await start_crawl(temporal_client, settings, default_registry(), urls, concurrency=3)

    async def all_running(handle) -> bool:  # noqa: ANN001
        return (await handle.query(CrawlWorkflow.stats)).running == 3
    await until(lambda: all_running(first))
    second, _ = await start_crawl(temporal_client, settings, default_registry(), urls, concurrency=3)
    await until(lambda: all_running(second))
    await second.signal(CrawlWorkflow.pause)
    await second.signal(CrawlWorkflow.cancel)
    stopped: CrawlStats = await asyncio.wait_for(second.result(), 60)
    assert stopped.cancelled and stopped.outcomes == {"cancelled": 3}
    # Had B paused or cancelled them, A's items would never commit (or end cancelled).
    stats: CrawlStats = await asyncio.wait_for(first.result(), 120)
    assert stats.outcomes == {"committed": 3}
    assert Catalog(settings.catalog_url).count() == 3


async def test_a_source_that_cannot_be_expanded_fails_the_crawl(temporal_client: Client, settings: Settings,
                                                                worker) -> None:
    """Issue 24 (2): a source the worker cannot expand ends the crawl failed, saying why (it used
    to complete, its reason only in the worker's log and one line of ``refused``)."""
    handle, _ = await start_crawl(temporal_client, settings, default_registry(), [], source="mylist")
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), 60)
    assert "source mylist: no source named 'mylist' in the settings" in str(failed.value.cause)
    assert (await handle.describe()).status == WorkflowExecutionStatus.FAILED
    error, stats = await crawl_failure(handle)
    assert error == failed.value.cause.message and stats is not None
    assert stats.error == error and stats.finished_at and stats.outcomes == {} and stats.refused == 0


async def test_a_crawl_carries_its_source_definition(temporal_client: Client, settings: Settings, sim: Simulator,
                                                     tmp_path: Path, worker) -> None:
    """A crawl given its source's definition (as a watch's runs are) expands that, on a worker
    whose settings have no such source."""
    urls = files(sim, 2, tag="carried")
    listing = tmp_path / "carried.txt"
    listing.write_text("\n".join(urls) + "\n")
    assert not settings.sources
    source = SourceSettings(name="elsewhere", kind="url_file", path=str(listing))
    inp = CrawlInput(source="elsewhere", source_definition=source_definition(source), options=item_options(settings))
    handle = await temporal_client.start_workflow(CrawlWorkflow.run, inp, id=f"crawl-{uuid.uuid4().hex[:12]}",
                                                  task_queue=workflow_queue(settings.temporal.task_queue_prefix))
    stats: CrawlStats = await asyncio.wait_for(handle.result(), 60)
    assert stats.outcomes == {"committed": 2} and stats.error is None
