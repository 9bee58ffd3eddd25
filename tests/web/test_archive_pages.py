"""The pages an archive is browsed by, through real HTTP (uvicorn on loopback) on a SQLite and a
PostgreSQL catalog: an uploader's page, a listing's page in its order (its dead entries in their
place), the live recordings, an item gone upstream whose copy still plays."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from sqlalchemy import update
from temporalio.client import Client

from tests.api.test_api import free_port, serving
from tests.conftest import make_settings
from tests.web.test_pages import HTML, PICTURE, VIDEO, stored
from trawl.settings import ApiSettings, Settings
from trawl.storage.catalog import Catalog, Item
from trawl.storage.records import ListingEntry

LISTING = "bilibili_favorites:1103407912"


def bv(n: int) -> str:
    return f"https://www.bilibili.com/video/BV{n}"


@pytest.fixture
def archive_settings(tmp_path: Path, temporal_address: str, catalog_url: str) -> Settings:
    settings = make_settings(tmp_path, temporal_address, catalog_url=catalog_url, api=ApiSettings(port=free_port()))
    for n, title, uploader, day in ((1, "第一集", "老番茄", "2026-01-01"), (2, "第二集", "老番茄", "2026-02-01"),
                                    (3, "别人的视频", "someone", "2026-03-01")):
        stored(settings, f"bilibili:BV{n}", title, {"video": ("video/mp4", VIDEO), "thumbnail": ("image/jpeg", PICTURE)},
               platform="bilibili", uploader=uploader, published_at=f"{day}T00:00:00Z",
               metadata={"uploader_id": "546195"})
    stored(settings, "bilibili:live-room-1", "直播回放", {"video": ("video/mp4", VIDEO)}, platform="bilibili",
           uploader="老番茄", metadata={"live": {"seconds": 30, "ended": "endlist"}, "live_status": "was_live"})
    catalog = Catalog(settings.catalog_url)
    catalog.remember_urls([bv(1)], "bilibili:BV1")
    catalog.remember_urls([bv(2)], "bilibili:BV2")
    catalog.record_listing("bilibili_favorites", "1103407912", [
        ListingEntry(bv(2), "第二集"), ListingEntry(bv(9), "已失效视频", "已失效视频: deleted by its uploader (attr 9)"),
        ListingEntry(bv(1), "第一集"), ListingEntry(bv(8), "还没下载")], title="公开收藏夹")
    with catalog.engine.begin() as connection:
        connection.execute(update(Item).where(Item.canonical_key == "bilibili:BV1").values(
            gone_at=datetime(2026, 12, 5, 9, 0, tzinfo=UTC), gone_reason="bilibili -404: 啥都木有 (deleted)",
            checked_at=datetime(2026, 12, 5, 9, 0, tzinfo=UTC)))
    catalog.close()
    return settings


def titles(page: str) -> list[str]:
    return [re.sub(r"</?mark>", "", t) for t in re.findall(r'<a class="title" href="[^"]+">(.*?)</a>', page)]


async def test_uploader_listing_live_and_gone_pages(temporal_client: Client, archive_settings: Settings) -> None:
    async with serving(archive_settings, temporal_client), httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{archive_settings.api.port}", headers=HTML, timeout=30) as web:
        item = (await web.get("/items/bilibili:BV1")).text
        # the item page links to its uploader's page and the listing that holds it, says it is gone
        assert '<a href="/uploaders/%E8%80%81%E7%95%AA%E8%8C%84">老番茄</a>' in item
        assert f'<a href="/listings/{LISTING}">公开收藏夹 (bilibili favourites)</a>' in item
        assert "Gone upstream since 2026-12-05 09:00:00 UTC: bilibili -404: 啥都木有 (deleted)" in item
        assert '<video id="media"' in item  # its copy still plays
        video = await web.get("/api/v1/items/bilibili:BV1/assets/video", headers={"Range": "bytes=0-9"})
        assert video.status_code == 206 and video.content == VIDEO[:10]

        uploader = await web.get("/uploaders/老番茄")
        assert uploader.status_code == 200
        assert titles(uploader.text) == ["直播回放", "第二集", "第一集"]  # newest committed first
        assert '<dd id="uploader-items">3 (' in uploader.text and "<code>546195</code>" in uploader.text
        # the first and last day (the live recording has no publication day: the day it was committed)
        assert f"2026-01-01 to {datetime.now(UTC).date().isoformat()}" in uploader.text
        assert (await web.get("/uploaders/nobody")).status_code == 404

        listing = (await web.get(f"/listings/{LISTING}")).text
        entries = re.findall(r'<li class="entry[^"]*">\s*(?:<a class="title"[^>]*>|<span class="title">)([^<]*)<',
                             listing)
        assert entries == ["第二集", "已失效视频", "第一集", "还没下载"]  # the listing's order
        assert "dead upstream: 已失效视频: deleted by its uploader (attr 9)" in listing
        assert "not in the catalog" in listing and "gone upstream" in listing
        reversed_ = (await web.get(f"/listings/{LISTING}", params={"order": "reversed"})).text
        assert re.findall(r'<li class="entry[^"]*">\s*(?:<a class="title"[^>]*>|<span class="title">)([^<]*)<',
                          reversed_) == entries[::-1]
        assert (await web.get(f"/listings/{LISTING}", params={"order": "random"})).status_code == 422
        assert (await web.get("/listings/nothing:1")).status_code == 404
        assert LISTING in (await web.get("/listings")).text

        live = await web.get("/", params={"live": 1})
        assert titles(live.text) == ["直播回放"] and "<h1>Live recordings</h1>" in live.text
        gone = await web.get("/", params={"gone": 1})
        assert titles(gone.text) == ["第一集"] and "gone upstream</span>" in gone.text
        assert titles((await web.get("/", params={"gone": 1, "q": "第一"})).text) == ["第一集"]
        assert titles((await web.get("/", params={"live": 1, "q": "第一"})).text) == []
