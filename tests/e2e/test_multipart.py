"""Every part of a multi-part video, end to end: a real dev server, a real worker, the simulator.

The ten-part video is the derived view answer (``bilibili_view_10pages_derived.json``): a bare
URL crawls ten items, ``?p=N`` one, whoever starts it (a crawl workflow, ``trawl crawl``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporalio.client import Client

from trawl.cli.crawl import crawl_urls
from trawl.models import ASSET_KINDS
from trawl.starter.client import start_crawl
from tests.conftest import make_settings
from trawl.platforms.registry import build_registry
from trawl.settings import PlatformsSettings
from trawl.simulator import MediaFile, Simulator
from trawl.platforms.bilibili.site import TEN_PARTS, install_bilibili_site
from trawl.simulator.demo import og_page
from trawl.storage.blobs import open_blob_store
from trawl.storage.catalog import Catalog
from trawl.worker.main import running_worker

ALL_PARTS = {f"bilibili:{TEN_PARTS}"} | {f"bilibili:{TEN_PARTS}_p{n}" for n in range(2, 11)}


async def test_ten_part_video_crawls_ten_items_and_a_part_url_one(temporal_client: Client, sim: Simulator,
                                                                   tmp_path: Path, temporal_address: str) -> None:
    site = install_bilibili_site(sim)
    settings = make_settings(tmp_path, temporal_address, platforms=PlatformsSettings(bilibili=site.settings()))
    registry = build_registry(settings.platforms)
    catalog = Catalog(settings.catalog_url)
    async with running_worker(temporal_client, settings, registry):
        # ?p=3 is one part: one item, nothing more.
        [third] = await crawl_urls(temporal_client, settings, registry, [site.url(TEN_PARTS, page=3)])
        assert (third.outcome, third.canonical_key, third.more) == ("committed", f"bilibili:{TEN_PARTS}_p3", [])
        assert catalog.count() == 1

        # The bare URL in a crawl workflow: part 1 names parts 2..10 and the crawl queues them.
        handle, refused = await start_crawl(temporal_client, settings, registry, [site.url(TEN_PARTS)])
        stats = await asyncio.wait_for(handle.result(), 240)
        assert not refused and stats.outcomes == {"committed": 9, "duplicate": 1}  # part 3 was there
        assert {item.canonical_key for item in catalog.list()} == ALL_PARTS

        # Attached, as `trawl crawl URL` does: all ten again, each a duplicate, and the parts come
        # from the stored metadata: the platform is not asked again.
        views = sim.stats["/x/web-interface/view"].requests
        again = await crawl_urls(temporal_client, settings, registry, [site.url(TEN_PARTS)])
        assert sorted(r.canonical_key or "" for r in again) == sorted(ALL_PARTS)
        assert {r.outcome for r in again} == {"duplicate"}
        assert sim.stats["/x/web-interface/view"].requests == views

    # Each part has its own streams (its own cid) and the cover beside them; every blob verifies.
    blobs = open_blob_store(settings)
    items = catalog.list()
    videos = {a.sha256 for i in items for a in i.assets if a.kind == "video"}
    assert len(videos) == 10
    # (beside them the extras: danmaku, subtitles, chapters, comments)
    assert all(sorted(a.kind for a in i.assets if a.kind in ASSET_KINDS) == ["thumbnail", "video"] for i in items)
    assert len({a.sha256 for i in items for a in i.assets if a.kind == "thumbnail"}) == 1  # one cover, stored once
    assert all(blobs.exists(a.key) for i in items for a in i.assets)
    blobs.close()

    # The catalog keeps the full metadata: yt-dlp's fields, the parts, the files, the crawl time.
    meta = catalog.get(f"bilibili:{TEN_PARTS}_p7").metadata
    assert (meta["id"], meta["part"], meta["part_title"]) == (f"{TEN_PARTS}_p7", 7, "第7集")
    assert [p["page"] for p in meta["parts"]] == list(range(1, 11))
    assert (meta["uploader_id"], meta["upload_date"], meta["view_count"]) == ("20261130", "20200130", 2404179)
    assert meta["webpage_url"] == f"https://www.bilibili.com/video/{TEN_PARTS}?p=7"
    stored = {a.name: a for a in catalog.get(f"bilibili:{TEN_PARTS}_p7").assets}
    # The item's record names the media committed with it; its extras came after (their own rows).
    assert {a["name"]: (a["size"], a["sha256"]) for a in meta["assets"]} == {
        name: (a.size, a.sha256) for name, a in stored.items() if a.kind in ASSET_KINDS}
    assert meta["crawled_at"].startswith("20") and meta["original_url"] == site.url(TEN_PARTS, page=7)
    catalog.close()


async def test_a_cover_that_cannot_be_downloaded_does_not_lose_the_video(temporal_client: Client, sim: Simulator,
                                                                        tmp_path: Path,
                                                                        temporal_address: str) -> None:
    sim.add_file("/v/clip.mp4", MediaFile("mp4", "clip-with-lost-cover", 200_000))
    sim.add_page("/watch/clip", og_page("A clip whose cover is gone", "/v/clip.mp4", image="/img/gone.jpg"))
    settings = make_settings(tmp_path, temporal_address)
    registry = build_registry(settings.platforms)
    async with running_worker(temporal_client, settings, registry):
        [result] = await crawl_urls(temporal_client, settings, registry, [sim.url("/watch/clip")])
    assert result.outcome == "committed", result.error
    assert [a.kind for a in result.assets] == ["video"]
    assert sim.stats["/img/gone.jpg"].requests >= 1  # it was tried (404: not retried)
    catalog = Catalog(settings.catalog_url)
    assert [a.kind for a in catalog.get(result.canonical_key or "").assets] == ["video"]
    catalog.close()


def test_resolve_lists_the_parts(sim: Simulator, tmp_path: Path, temporal_address: str, capsys) -> None:
    import argparse
    import json

    from trawl.cli.resolve import cmd_resolve

    site = install_bilibili_site(sim)
    settings = make_settings(tmp_path, temporal_address, platforms=PlatformsSettings(bilibili=site.settings()))
    assert cmd_resolve(argparse.Namespace(urls=[site.url(TEN_PARTS)], json=False), settings) == 0
    shown = capsys.readouterr().out
    assert f"bilibili:{TEN_PARTS}" in shown and "part 1 of 10:" in shown
    assert all(f"P{n}" in shown and f"第{n}集" in shown for n in range(1, 11))
    assert all(f"more       {site.url(TEN_PARTS, page=n)}" in shown for n in range(2, 11))
    assert cmd_resolve(argparse.Namespace(urls=[site.url(TEN_PARTS, page=4)], json=True), settings) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["canonical_key"] == f"bilibili:{TEN_PARTS}_p4" and record["more"] == []
    assert record["metadata"]["part"] == 4 and len(record["metadata"]["parts"]) == 10


async def test_a_crawl_still_takes_the_other_parts_when_part_one_fails(temporal_client: Client, sim: Simulator,
                                                                     tmp_path: Path, temporal_address: str) -> None:
    import collections

    site = install_bilibili_site(sim)
    durl = site.videos["BV1GJ411x7h7"].playurl[1001]["data"]["durl"][0]
    for url in (durl["url"], *durl["backup_url"]):  # part 1's stream is gone (404, not retried)
        site.behaviour(url).statuses = collections.deque([404] * 50)
    settings = make_settings(tmp_path, temporal_address, platforms=PlatformsSettings(bilibili=site.settings()))
    registry = build_registry(settings.platforms)
    async with running_worker(temporal_client, settings, registry):
        handle, _ = await start_crawl(temporal_client, settings, registry, [site.url("BV1GJ411x7h7")])
        stats = await asyncio.wait_for(handle.result(), 120)
    # The failed part 1's result (in its failure's details) still named part 2.
    assert stats.outcomes == {"failed": 1, "committed": 1}
    catalog = Catalog(settings.catalog_url)
    assert [i.canonical_key for i in catalog.list()] == ["bilibili:BV1GJ411x7h7_p2"]
    catalog.close()
