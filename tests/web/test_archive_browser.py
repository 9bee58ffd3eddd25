"""What an archive is browsed by, in a real browser (headless chromium): the library's "gone
upstream" filter, an item gone upstream whose copy still plays, its uploader's page, the
favourites folder it is in, in the folder's order with its dead entry in place, the live recordings."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.api.test_api import free_port, serving
from tests.conftest import make_settings
from tests.web.test_browser import until
from tests.web.test_pages import PICTURE, stored
from trawl.settings import ApiSettings, Settings
from trawl.simulator import MediaFile
from trawl.storage.catalog import Catalog
from trawl.storage.records import ListingEntry

VIDEO = MediaFile("mp4", "archive-browser", 400_000, playable=True).read(0, 400_000)


def bv(n: int) -> str:
    return f"https://www.bilibili.com/video/BV{n}"


@pytest.fixture
def archive_settings(tmp_path: Path, temporal_address: str) -> Settings:
    settings = make_settings(tmp_path, temporal_address, api=ApiSettings(port=free_port()))
    for n, title, uploader, day in ((1, "第一集 海边", "老番茄", "2026-01-01"), (2, "第二集 山里", "老番茄", "2026-02-01"),
                                    (3, "别人的视频", "someone", "2026-03-01")):
        stored(settings, f"bilibili:BV{n}", title, {"video": ("video/mp4", VIDEO), "thumbnail": ("image/jpeg", PICTURE)},
               platform="bilibili", uploader=uploader, published_at=f"{day}T00:00:00Z")
    stored(settings, "bilibili:live-1", "直播回放", {"video": ("video/mp4", VIDEO)}, platform="bilibili",
           uploader="老番茄", metadata={"live": {"seconds": 30, "ended": "endlist"}})
    catalog = Catalog(settings.catalog_url)
    for n in (1, 2):
        catalog.remember_urls([bv(n)], f"bilibili:BV{n}")
    catalog.record_listing("bilibili_favorites", "1103407912", [
        ListingEntry(bv(2)), ListingEntry(bv(9), "已失效视频", "已失效视频: deleted by its uploader (attr 9)"),
        ListingEntry(bv(1))], title="公开收藏夹")
    catalog.record_check("bilibili:BV1", "not_found: bilibili -404: 啥都木有", datetime(2026, 12, 5, 9, tzinfo=UTC))
    catalog.close()
    return settings


async def test_a_gone_item_plays_and_leads_to_its_uploader_and_folder(browser: Any, temporal_client: Client,
                                                                      archive_settings: Settings) -> None:
    import asyncio

    from selenium.webdriver.common.by import By

    base = f"http://127.0.0.1:{archive_settings.api.port}"
    async with serving(archive_settings, temporal_client):
        await asyncio.to_thread(browser.get, base + "/")
        await until(lambda: len(browser.find_elements(By.CSS_SELECTOR, "li.card")) == 4, "the library's cards")
        # the filter, as a person ticks it
        await asyncio.to_thread(browser.find_element(By.NAME, "gone").click)
        await asyncio.to_thread(browser.find_element(By.CSS_SELECTOR, "form.filters button").click)
        await until(lambda: "Gone upstream" in browser.find_element(By.TAG_NAME, "h1").text, "the filtered page")
        assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, "a.title")] == ["第一集 海边"]

        await asyncio.to_thread(browser.find_element(By.CSS_SELECTOR, "a.title").click)
        note = await until(lambda: browser.find_element(By.ID, "gone").text, "the gone note")
        assert note.startswith("Gone upstream since 2026-12-05 09:00:00 UTC: not_found: bilibili -404")
        played = await asyncio.to_thread(browser.execute_async_script,
                                         "const done = arguments[0]; const v = document.getElementById('media');"
                                         "v.muted = true; v.play().then(() => setTimeout(() => done(v.currentTime),"
                                         " 700)).catch(e => done(String(e)));")
        assert isinstance(played, (int, float)) and played > 0, played  # its copy plays

        await asyncio.to_thread(browser.find_element(By.LINK_TEXT, "老番茄").click)
        await until(lambda: browser.find_element(By.TAG_NAME, "h1").text == "老番茄", "the uploader's page")
        assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, "a.title")] == [
            "直播回放", "第二集 山里", "第一集 海边"]  # newest committed first
        assert browser.find_element(By.ID, "uploader-items").text.startswith("3 (")

        await asyncio.to_thread(browser.find_element(By.LINK_TEXT, "第一集 海边").click)
        await asyncio.to_thread((await until(lambda: browser.find_element(By.CSS_SELECTOR, "#in-listings a"),
                                             "the folder's link")).click)
        await until(lambda: "公开收藏夹" in browser.find_element(By.TAG_NAME, "h1").text, "the folder's page")
        entries = [li.find_element(By.CLASS_NAME, "title").text
                   for li in browser.find_elements(By.CSS_SELECTOR, "#entries li")]
        assert entries == ["第二集 山里", "已失效视频", "第一集 海边"]  # the folder's order, the dead entry in place
        assert "dead upstream: 已失效视频" in browser.find_elements(By.CSS_SELECTOR, "#entries li")[1].text

        await asyncio.to_thread(browser.find_element(By.LINK_TEXT, "Live recordings").click)
        await until(lambda: browser.find_element(By.TAG_NAME, "h1").text == "Live recordings", "the live recordings")
        assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, "a.title")] == ["直播回放"]
