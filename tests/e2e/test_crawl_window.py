"""An attached crawl of a long file: one CrawlWorkflow whose URLs wait in its frontier and start
as its window has room; known ones are duplicates without a workflow, each with its line, and the
command reads every result although the known ones come faster than it asks."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from temporalio.client import Client

from tests.conftest import make_settings
from trawl.cli.crawl import Awaited, crawl_urls, read_urls
from trawl.contracts import STATS, CrawlStats, ItemResult
from trawl.platforms.registry import build_registry
from trawl.simulator import MediaFile, Simulator
from trawl.storage.catalog import Catalog
from trawl.storage.records import CommittedAsset
from trawl.worker.main import running_worker

KNOWN = 3000
NEW = 12
WINDOW = 4


async def test_a_long_file_is_crawled_through_a_bounded_window(temporal_client: Client, sim: Simulator,
                                                               tmp_path: Path, temporal_address: str) -> None:
    settings = make_settings(tmp_path, temporal_address)
    registry = build_registry(settings.platforms)
    catalog = Catalog(settings.catalog_url)
    catalog.create_schema()
    known = [sim.url(f"/known/{i}.mp4") for i in range(KNOWN)]  # never served: the catalog answers
    catalog.commit_item(canonical_key="web:window-known", platform="generic", canonical_url=known[0],
                        source_url=known[0], title="known", uploader=None, duration=None, published_at=None,
                        metadata={}, workflow_id="seed",
                        assets=[CommittedAsset("video", "video", "b" * 64, 10, "video/mp4", "sha256/bb/bb/" + "b" * 64)])
    catalog.remember_urls(known, "web:window-known")
    fresh = []
    for i in range(NEW):
        sim.add_file(f"/new/{i}.mp4", MediaFile("mp4", f"window-{i}", 3_000 + i))
        fresh.append(sim.url(f"/new/{i}.mp4"))
    listing = tmp_path / "urls.txt"
    # New items among the known ones, and one given twice.
    lines = ["# a comment", *known[:1000], *fresh[:6], *known[1000:], *fresh[6:], fresh[0]]
    listing.write_text("\n".join(lines) + "\n")
    urls = read_urls([], str(listing))
    assert len(urls) == KNOWN + NEW + 1  # counted up front, for the progress line's total

    awaited = Awaited()
    outcomes: Counter[str] = Counter()
    most_awaited = 0

    def seen(result: ItemResult) -> None:
        nonlocal most_awaited
        outcomes[result.outcome] += 1
        most_awaited = max(most_awaited, len(awaited.waiting))  # the running items the crawl named last

    async with running_worker(temporal_client, settings, registry):
        kept = await asyncio.wait_for(crawl_urls(temporal_client, settings, registry, urls, seen, awaited=awaited,
                                                 keep=False, window=WINDOW), 240)
        assert awaited.crawl_id is not None
        stats = await temporal_client.get_workflow_handle(awaited.crawl_id).query(STATS, result_type=CrawlStats)
    assert kept == []  # nothing held: each result went to the callback
    # A line per URL: the new one given twice is one item, its second line a duplicate.
    assert outcomes == {"duplicate": KNOWN + 1, "committed": NEW}
    assert stats.outcomes == {"duplicate": KNOWN + 1, "committed": NEW}
    assert most_awaited <= WINDOW
    assert not any(sim.stats[f"/known/{i}.mp4"].requests for i in (0, 1500, KNOWN - 1))
    assert catalog.count() == NEW + 1
