"""The library's search over the extras through real HTTP (uvicorn on loopback) on a SQLite and a
PostgreSQL catalog: a subtitle line, a danmaku and a comment find their video, the card says which
kind of line matched, shows it marked (never read as HTML) and links a timed line to that moment of
the item's page; any search text answers 200 or 422, never 500."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from tests.api.test_api import free_port, serving
from tests.conftest import make_settings
from tests.web.test_search_page import HOSTILE, HTML, cards
from trawl.extras_text import ExtraLine
from trawl.settings import ApiSettings, Settings
from trawl.storage.catalog import Catalog

ITEMS = [  # key, title, lines of its extras
    ("bili:hotpot", "周末的视频记录", [ExtraLine("subtitles", 83.6, "今天我们去成都吃火锅"),
                                      ExtraLine("danmaku", 12.0, "前方<b>高能</b>预警")]),
    ("bili:cat", "北京胡同", [ExtraLine("comments", None, "请问这首背景音乐叫什么"),
                              ExtraLine("danmaku", 3725.2, "猫猫太可爱了")]),
    ("bili:plain", "成都的火锅", []),
]


def fill(settings: Settings) -> None:
    catalog = Catalog(settings.catalog_url)
    catalog.create_schema()
    for key, title, lines in ITEMS:
        catalog.commit_item(canonical_key=key, platform="bili", canonical_url=f"https://e.com/{key}",
                            source_url=f"https://e.com/{key}", title=title, uploader="up", duration=4000.0,
                            published_at=None, metadata={}, workflow_id=None, assets=[])
        by_kind: dict[str, list[ExtraLine]] = {}
        for line in lines:
            by_kind.setdefault(line.kind, []).append(line)
        assert catalog.add_extras(key, [], [], by_kind)
    catalog.close()


@pytest.fixture
def extras_settings(tmp_path: Path, temporal_address: str, catalog_url: str) -> Settings:
    settings = make_settings(tmp_path, temporal_address, catalog_url=catalog_url, api=ApiSettings(port=free_port()))
    fill(settings)
    return settings


def hits(page: str) -> list[str]:
    return re.findall(r'<div class="snippet hit">(.*?)</div>', page, re.S)


async def test_a_subtitle_a_danmaku_and_a_comment_find_their_video(temporal_client: Client,
                                                                   extras_settings: Settings) -> None:
    async with serving(extras_settings, temporal_client), httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{extras_settings.api.port}", headers=HTML, timeout=30) as web:
        page = (await web.get("/", params={"q": "背景音乐"})).text
        assert cards(page) == ["bili:cat"]
        assert hits(page) == ['<a href="/items/bili:cat"><span class="hit-kind">comment</span> '
                              '请问这首<mark>背景音乐</mark>叫什么</a>']
        page = (await web.get("/", params={"q": "太可"})).text  # the middle of a danmaku, past an hour
        assert cards(page) == ["bili:cat"]
        assert hits(page) == ['<a href="/items/bili:cat?t=3725.2"><span class="hit-kind">danmaku 1:02:05</span> '
                              '猫猫<mark>太可</mark>爱了</a>']
        page = (await web.get("/", params={"q": "高能"})).text  # the line's markup is text
        assert hits(page) == ['<a href="/items/bili:hotpot?t=12"><span class="hit-kind">danmaku 0:12</span> '
                              '前方&lt;b&gt;<mark>高能</mark>&lt;/b&gt;预警</a>']
        # The title that holds the word first, then the item whose subtitle does, linked to its moment.
        page = (await web.get("/", params={"q": "火锅"})).text
        assert cards(page) == ["bili:plain", "bili:hotpot"]
        assert hits(page) == ['<a href="/items/bili:hotpot?t=83.6"><span class="hit-kind">subtitle 1:23</span> '
                              '今天我们去成都吃<mark>火锅</mark></a>']
        assert "2 items" in page
        assert cards((await web.get("/", params={"q": "火锅", "sort": "title"})).text) == ["bili:hotpot", "bili:plain"]


async def test_any_search_text_answers_200_or_422_with_extras(temporal_client: Client,
                                                              extras_settings: Settings) -> None:
    async with serving(extras_settings, temporal_client), httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{extras_settings.api.port}", headers=HTML, timeout=30) as web:
        for hostile in [*HOSTILE, '"高能" OR "猫"', "高能\x00", "NEAR(高能 预警)", "高能*", "背景 OR 音乐"]:
            for sort in ("relevance", "new", "old"):
                answer = await web.get("/", params={"q": hostile, "sort": sort})
                assert answer.status_code == 200, (hostile[:20], sort)
        assert cards((await web.get("/", params={"q": '"高能"'})).text) == ["bili:hotpot"]
        assert cards((await web.get("/", params={"q": "高能\x00"})).text) == ["bili:hotpot"]
        for raw in ("/?q=%ED%A0%80", "/?q=%FF%FE", "/?q=%00%00"):
            assert (await web.get(raw)).status_code in (200, 422), raw
        assert (await web.get("/", params={"q": "高" * 501})).status_code == 422


async def test_in_a_browser_a_danmaku_and_a_comment_find_their_video(browser: Any, temporal_client: Client,
                                                                     extras_settings: Settings) -> None:
    import asyncio

    from selenium.webdriver.common.by import By

    from tests.web.test_browser import until

    base = f"http://127.0.0.1:{extras_settings.api.port}"
    async with serving(extras_settings, temporal_client):
        await asyncio.to_thread(browser.get, base + "/")
        await until(lambda: len(browser.find_elements(By.CSS_SELECTOR, "li.card")) == 3, "the library's cards")
        for words, title, said in (("可爱", "北京胡同", "danmaku 1:02:05 猫猫太可爱了"),
                                   ("背景音乐", "北京胡同", "comment 请问这首背景音乐叫什么")):
            box = browser.find_element(By.NAME, "q")
            await asyncio.to_thread(box.clear)
            await asyncio.to_thread(box.send_keys, words)  # as a person types it
            await asyncio.to_thread(browser.find_element(By.CSS_SELECTOR, "form.filters button").click)
            await until(lambda: [a.text for a in browser.find_elements(By.CSS_SELECTOR, "a.title")] == [title],
                        f"the search for {words}")
            hit = browser.find_element(By.CSS_SELECTOR, ".snippet.hit")
            assert hit.text == said
            assert hit.find_element(By.TAG_NAME, "mark").text == words
        await asyncio.to_thread(browser.get, base + "/?q=" + "可爱")
        link = await until(lambda: browser.find_element(By.CSS_SELECTOR, ".snippet.hit a"), "the danmaku's link")
        await asyncio.to_thread(link.click)  # to the item's page, at that moment
        await until(lambda: browser.current_url == base + "/items/bili:cat?t=3725.2", "the item's page at 1:02:05")
