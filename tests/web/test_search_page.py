"""The library's search through real HTTP (uvicorn on loopback) on a SQLite and a PostgreSQL
catalog: words from the middle of Chinese, Japanese and Korean titles find their items and only
those, marked where the card shows them (and never read as HTML); any search text answers 200 or
422 quickly, never 500."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client

from tests.api.test_api import free_port, serving
from tests.conftest import make_settings
from trawl.settings import ApiSettings, Settings
from trawl.storage.catalog import Catalog

HTML = {"Accept": "text/html"}
ITEMS = [
    # key, title, uploader, description
    ("bili:spring", "春天的<b>两张</b>照片", "小明同学", ""),
    ("bili:cat", "北京胡同里的老猫晒太阳", "胡同日记", ""),
    ("bili:hotpot", "周末在成都吃火锅的视频记录", "吃货阿强", ""),
    ("nico:tokyo", "東京の夜景をドローンで撮影してみた", "空撮チャンネル", ""),
    ("kr:jeju", "제주도여행브이로그 둘째날", "여행하는곰", ""),
    ("web:gulls", "Field recording", "birder", "Wind and <i>distant</i> gulls over the harbour, all morning"),
]


def settings_with_items(tmp_path: Path, temporal_address: str, catalog_url: str, **metadata: object) -> Settings:
    """A test's settings (the API on a free port) whose catalog holds :data:`ITEMS`, each with its
    description and ``metadata``."""
    settings = make_settings(tmp_path, temporal_address, catalog_url=catalog_url, api=ApiSettings(port=free_port()))
    catalog = Catalog(settings.catalog_url)
    catalog.create_schema()
    for key, title, uploader, description in ITEMS:
        catalog.commit_item(canonical_key=key, platform=key.split(":")[0], canonical_url=f"https://e.com/{key}",
                            source_url=f"https://e.com/{key}", title=title, uploader=uploader, duration=None,
                            published_at=None, metadata={"description": description, **metadata}, workflow_id=None,
                            assets=[])
    catalog.close()
    return settings


@pytest.fixture
def search_settings(tmp_path: Path, temporal_address: str, catalog_url: str) -> Settings:
    return settings_with_items(tmp_path, temporal_address, catalog_url)


def cards(page: str) -> list[str]:
    return re.findall(r'<a class="title" href="/items/([^"]+)"', page)


async def test_words_from_the_middle_of_titles_find_their_items_marked(temporal_client: Client,
                                                                      search_settings: Settings) -> None:
    async with serving(search_settings, temporal_client), httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{search_settings.api.port}", headers=HTML, timeout=30) as web:
        for word, key in (("照片", "bili:spring"), ("两张", "bili:spring"), ("胡同里", "bili:cat"),
                          ("晒太阳", "bili:cat"), ("火锅", "bili:hotpot"), ("夜景", "nico:tokyo"),
                          ("브이로그", "kr:jeju"), ("recording", "web:gulls"), ("GULLS", "web:gulls")):
            page = await web.get("/", params={"q": word})
            assert page.status_code == 200 and cards(page.text) == [key], word
        page = (await web.get("/", params={"q": "两张"})).text
        # The title's own markup is text, the word found in it is marked.
        assert "春天的&lt;b&gt;<mark>两张</mark>&lt;/b&gt;照片" in page
        page = (await web.get("/", params={"q": "胡同"})).text
        assert "北京<mark>胡同</mark>里的老猫晒太阳" in page and "<mark>胡同</mark>日记" in page  # the uploader too
        page = (await web.get("/", params={"q": "distant"})).text  # found in a description: its words around it
        assert '<div class="snippet">Wind and &lt;i&gt;<mark>distant</mark>&lt;/i&gt; gulls' in page
        assert (await web.get("/", params={"q": "照片", "sort": "new"})).status_code == 200


HOSTILE = ['"', "'", "NEAR(a b)", "a:* & !b", "title:x OR", "*", "^", "\\", "'; drop table items; --",
           "照片\x00", "\x00", "%", "_", "{}", "x" * 500, "照" * 500, " ".join(["w"] * 250)]


async def test_any_search_text_answers_200_or_422_quickly(temporal_client: Client,
                                                          search_settings: Settings) -> None:
    async with serving(search_settings, temporal_client), httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{search_settings.api.port}", headers=HTML, timeout=30) as web:
        for hostile in HOSTILE:
            started = time.perf_counter()
            answer = await web.get("/", params={"q": hostile})
            assert answer.status_code == 200 and time.perf_counter() - started < 5, hostile[:20]
        assert cards((await web.get("/", params={"q": '"照片"'})).text) == ["bili:spring"]
        assert cards((await web.get("/", params={"q": "照片\x00"})).text) == ["bili:spring"]
        # Bytes that are no UTF-8 (a lone surrogate's), raw in the query string.
        for raw in ("/?q=%ED%A0%80", "/?q=%FF%FE", "/?q=%E7%85%A7", "/?q=%00%00", "/?q=a%ED%A0%80b"):
            answer = await web.get(raw)
            assert answer.status_code in (200, 422), raw
        assert (await web.get("/", params={"q": "x" * 501})).status_code == 422  # the page's bound
        assert (await web.get("/", params={"q": "照" * 5_000})).status_code in (414, 422, 431)
