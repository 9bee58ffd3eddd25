"""Crawls of any size: the URLs live in the catalog's frontier, read page by page; known URLs start
nothing; the same URL twice is crawled once, across continue-as-new and additions."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

from temporalio.client import Client
from temporalio.worker import Replayer

from tests.workflows.test_crawl import files, settings  # noqa: F401 - fixtures
from trawl.contracts import CrawlEnded
from trawl.platforms.registry import default_registry
from trawl.settings import Settings
from trawl.simulator import MediaFile, Simulator
from trawl.simulator.feed import FeedSite
from trawl.starter.client import add_to_crawl, begin_crawl, start_crawl
from trawl.starter.views import crawl_failure
from trawl.storage.catalog import Catalog
from trawl.storage.records import CommittedAsset
from trawl.worker.cleanup import clean_frontiers
from trawl.worker.main import running_worker
from trawl.workflows.crawl import CrawlWorkflow


def known_to_the_catalog(catalog: Catalog, urls: list[str]) -> None:
    """Every URL a known form of one committed item (a crawl of them starts nothing), cheaply."""
    catalog.commit_item(canonical_key="web:known", platform="generic", canonical_url=urls[0], source_url=urls[0],
                        title="known", uploader=None, duration=None, published_at=None, metadata={},
                        workflow_id="wf-known",
                        assets=[CommittedAsset("video", "video", "a" * 64, 10, "video/mp4", "sha256/aa/aa/" + "a" * 64)])
    for start in range(0, len(urls), 2000):
        catalog.remember_urls(urls[start:start + 2000], "web:known")


async def test_twenty_thousand_urls_mostly_known_start_only_the_new_ones(
        temporal_client: Client, settings: Settings, sim: Simulator, worker: None) -> None:  # noqa: F811
    new = files(sim, 10, size=2_000, tag="big")
    known = [f"http://127.0.0.1:9/known/{i}" for i in range(19_990)]  # never fetched: known offline
    catalog = Catalog(settings.catalog_url)
    catalog.create_schema()
    known_to_the_catalog(catalog, known)
    handle, refused = await start_crawl(temporal_client, settings, default_registry(), [*known, *new], concurrency=8)
    stats = await asyncio.wait_for(handle.result(), 240)
    assert refused == [] and stats.frontier
    assert stats.outcomes == {"committed": 10, "duplicate": 19_990} and stats.queued == 0
    children = [w async for w in temporal_client.list_workflows(f"CrawlId = '{handle.id}' AND "
                                                                "WorkflowType = 'MediaItemWorkflow'")]
    assert len(children) == 10  # the known URLs started no item workflow
    history = await handle.fetch_history()
    assert len(history.events) < 1_000  # pages of the frontier, not one event per URL


async def test_each_url_once_across_additions_repeats_and_continue_as_new(
        temporal_client: Client, settings: Settings, sim: Simulator, worker: None) -> None:  # noqa: F811
    urls = files(sim, 30, size=3_000, tag="once")
    registry = default_registry()
    # A history this short continues as new several times while pages and children are in flight.
    handle, _ = await start_crawl(temporal_client, settings, registry, [*urls[:20], urls[0]], concurrency=3,
                                  history_limit=60)
    refused = await add_to_crawl(temporal_client, settings, registry, handle.id, [*urls[10:], "notaurl"])
    assert refused and "notaurl" in refused[0]
    stats = await asyncio.wait_for(handle.result(), 240)
    # 30 different items, each committed once; the 11 given again (once in the start, ten in the
    # addition) are the crawl's duplicates.
    assert stats.outcomes == {"committed": 30, "duplicate": 11}, stats
    assert stats.runs > 1 and stats.refused == 1 and "notaurl" in stats.refusals[0]
    assert Catalog(settings.catalog_url).count() == 30
    assert all(sim.stats[urlsplit(u).path].requests >= 1 for u in urls)


async def test_a_feed_too_big_for_one_payload_expands_into_the_frontier(
        temporal_client: Client, settings: Settings, sim: Simulator, tmp_path: Path) -> None:  # noqa: F811
    """4,000 entries with long enclosure URLs: 2.4 MB of URLs, over Temporal's 2 MiB payload limit as
    one expansion result. Known to the catalog, they are counted without an item workflow."""
    feed = FeedSite(sim, "/big/feed.xml")
    tail = "x" * 550
    urls = [feed.add_entry(f"e{i}-{tail}", MediaFile("mp4", f"big-{i}", 1_000), title=f"Entry {i}")
            for i in range(4_000)]
    assert sum(map(len, urls)) > 2 * 1024 * 1024
    catalog = Catalog(settings.catalog_url)
    catalog.create_schema()
    known_to_the_catalog(catalog, urls)
    settings.net.max_page_bytes = 16 * 1024 * 1024  # the feed itself is 7.7 MB
    async with running_worker(temporal_client, settings):
        handle, _ = await start_crawl(temporal_client, settings, default_registry(), [feed.url], concurrency=4)
        stats = await asyncio.wait_for(handle.result(), 240)
    assert stats.outcomes == {"duplicate": 4_000} and stats.refused == 0, stats


async def test_the_frontier_of_an_ended_crawl_is_removed_once_old(
        temporal_client: Client, settings: Settings, sim: Simulator, worker: None) -> None:  # noqa: F811
    done = files(sim, 2, size=2_000, tag="gone")
    slow = files(sim, 1, size=3_000_000, throttle=200_000, tag="slow")
    registry = default_registry()
    ended, _ = await start_crawl(temporal_client, settings, registry, done)
    await asyncio.wait_for(ended.result(), 60)
    running, _ = await start_crawl(temporal_client, settings, registry, slow)
    catalog = Catalog(settings.catalog_url)
    catalog.frontier_add("crawl-never-started", [("http://127.0.0.1:9/x", "generic", "url-x", None)])
    try:
        assert await clean_frontiers(temporal_client, catalog, timedelta(hours=1)) == []  # all too recent
        removed = await clean_frontiers(temporal_client, catalog, timedelta(0))
        assert sorted(removed) == sorted([ended.id, "crawl-never-started"])
        assert catalog.frontier_page(ended.id, 0, 10) == [] and len(catalog.frontier_page(running.id, 0, 10)) == 1
    finally:
        await running.cancel()


async def test_a_crawl_whose_frontier_is_in_another_catalog_fails_saying_so(
        temporal_client: Client, settings: Settings, sim: Simulator, worker: None, tmp_path: Path) -> None:  # noqa: F811
    urls = files(sim, 2, size=2_000, tag="elsewhere")
    starter = settings.model_copy(update={"catalog": settings.catalog.model_copy(
        update={"url": f"sqlite:///{tmp_path / 'another.db'}"})})
    handle, _ = await start_crawl(temporal_client, starter, default_registry(), urls)
    error, stats = await asyncio.wait_for(crawl_failure(handle), 60)
    assert error and "not in its workers' catalog" in error and "the same catalog.url" in error
    assert stats is not None and stats.outcomes == {"not_started": 2}


async def test_urls_in_the_frontier_of_a_crawl_whose_source_fails_count_as_not_started(
        temporal_client: Client, settings: Settings, sim: Simulator, worker: None) -> None:  # noqa: F811
    urls = files(sim, 2, size=2_000, tag="srcfail")
    handle, _ = await start_crawl(temporal_client, settings, default_registry(), urls, source="absent")
    error, stats = await asyncio.wait_for(crawl_failure(handle), 60)
    assert error and "absent" in error
    assert stats is not None and stats.outcomes == {"not_started": 2} and stats.queued == 0


async def _frontier_reads(handle: object) -> int:
    history = await handle.fetch_history()  # type: ignore[attr-defined]
    return sum(1 for event in history.events
               if event.HasField("activity_task_scheduled_event_attributes")
               and event.activity_task_scheduled_event_attributes.activity_type.name == "frontier_next")


async def test_a_followed_crawl_starts_with_its_first_page_read_by_its_command(
        temporal_client: Client, settings: Settings, sim: Simulator, worker: None) -> None:  # noqa: F811
    registry = default_registry()
    new = files(sim, 3, size=2_000, tag="first-page")
    # All new: the command read the page back from the catalog it wrote, so the crawl reads none.
    handle, _ = await begin_crawl(temporal_client, settings, registry, new, follow=True)
    ended = await asyncio.wait_for(handle.result(), 120)
    assert ended.outcomes == {"committed": 3} and ended.queued == 0
    assert await _frontier_reads(handle) == 0
    # Its history, started from the prefilled state, replays on today's code.
    await Replayer(workflows=[CrawlWorkflow]).replay_workflow(await handle.fetch_history())
    # A page with known items is the crawl's to read: it reports each known one's line.
    again, _ = await begin_crawl(temporal_client, settings, registry, [*new, *files(sim, 1, size=2_000, tag="fp2")],
                                 follow=True)
    ended = await asyncio.wait_for(temporal_client.get_workflow_handle(again.id, result_type=CrawlEnded).result(), 120)
    assert ended.outcomes == {"committed": 1, "duplicate": 3}
    assert sorted(r.outcome for r in ended.last_results) == ["committed", "duplicate", "duplicate", "duplicate"]
    assert await _frontier_reads(again) >= 1
    # A detached crawl reads its own (so a starter with another catalog is found out).
    detached, _ = await start_crawl(temporal_client, settings, registry, files(sim, 1, size=2_000, tag="fp3"))
    await asyncio.wait_for(detached.result(), 120)
    assert await _frontier_reads(detached) >= 1
