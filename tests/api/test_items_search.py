"""``GET /api/v1/items?q=``: the library page's search over the API, on a SQLite and a PostgreSQL
catalog; any search text answers 200 or 422 quickly, never 500."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client

from tests.api.test_api import serving
from tests.web.test_search_page import HOSTILE, ITEMS, settings_with_items
from trawl.settings import Settings


@pytest.fixture
def search_settings(tmp_path: Path, temporal_address: str, catalog_url: str) -> Settings:
    return settings_with_items(tmp_path, temporal_address, catalog_url, tags=["旅行"])


def keys(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [item["canonical_key"] for item in answer.json()["items"]]


async def test_q_searches_as_the_library_page_does(temporal_client: Client, search_settings: Settings) -> None:
    async with serving(search_settings, temporal_client), httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{search_settings.api.port}", timeout=30) as api:
        for word, key in (("照片", "bili:spring"), ("胡同里", "bili:cat"), ("夜景", "nico:tokyo"),
                          ("브이로그", "kr:jeju"), ("GULLS", "web:gulls")):
            assert keys(await api.get("/api/v1/items", params={"q": word})) == [key], word
        answer = (await api.get("/api/v1/items", params={"q": "胡同"})).json()
        # the title holds it first, then the uploader's item
        assert [i["canonical_key"] for i in answer["items"]] == ["bili:cat"] and answer["total"] == 1
        assert answer["more_than_counted"] is False
        # a tag every item holds: all of them, newest first, counted; limit and offset page them
        everything = await api.get("/api/v1/items", params={"q": "旅行", "limit": 2, "offset": 1})
        assert keys(everything) == ["kr:jeju", "nico:tokyo"] and everything.json()["total"] == len(ITEMS)
        assert keys(await api.get("/api/v1/items", params={"q": "旅行", "platform": "bili", "sort": "title"})) == [
            "bili:cat", "bili:hotpot", "bili:spring"]  # by code point: 北, 周, 春
        # no filter: commit order, oldest first, as before, with no count
        plain = (await api.get("/api/v1/items")).json()
        assert [i["canonical_key"] for i in plain["items"]] == [k for k, *_ in ITEMS] and plain["total"] is None
        for params, said in (({"q": "x", "sort": "random"}, "sort must be one of"),
                             ({"kind": "film"}, "kind must be one of"),
                             ({"since": "2026-02-30"}, "since must be a day"),
                             ({"q": "x", "offset": 480_001}, "offset must be at most")):
            refused = await api.get("/api/v1/items", params=params)
            assert refused.status_code == 422 and said in refused.text, params


async def test_any_search_text_answers_200_or_422_quickly(temporal_client: Client,
                                                          search_settings: Settings) -> None:
    async with serving(search_settings, temporal_client), httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{search_settings.api.port}", timeout=30) as api:
        for hostile in [*HOSTILE, "x" * 10_000, "照片" * 600]:  # 10 KB; 10.8 KB as the URL carries it
            started = time.perf_counter()
            answer = await api.get("/api/v1/items", params={"q": hostile})
            assert answer.status_code in (200, 422) and time.perf_counter() - started < 5, hostile[:20]
            if len(hostile) <= 500:
                assert answer.status_code == 200, hostile[:20]
            else:
                assert "at most 500 characters" in answer.text
