"""``GET /api/v1/items?q=`` over the extras, on a SQLite and a PostgreSQL catalog: an item found by
a line of its subtitles, danmaku or comments is in ``matched`` with that line, with the item's page at
that moment; any search text answers 200 or 422, never 500."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from temporalio.client import Client

from tests.api.test_api import free_port, serving
from tests.conftest import make_settings
from tests.web.test_search_extras_page import fill
from tests.web.test_search_page import HOSTILE
from trawl.settings import ApiSettings, Settings


@pytest.fixture
def extras_settings(tmp_path: Path, temporal_address: str, catalog_url: str) -> Settings:
    settings = make_settings(tmp_path, temporal_address, catalog_url=catalog_url, api=ApiSettings(port=free_port()))
    fill(settings)
    return settings


async def test_q_finds_an_item_by_its_extras_and_says_which_line(temporal_client: Client,
                                                                 extras_settings: Settings) -> None:
    async with serving(extras_settings, temporal_client), httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{extras_settings.api.port}", timeout=30) as api:
        answer = (await api.get("/api/v1/items", params={"q": "成都 火锅"})).json()
        assert [i["canonical_key"] for i in answer["items"]] == ["bili:plain", "bili:hotpot"]
        assert answer["matched"] == {"bili:hotpot": {"kind": "subtitles", "text": "今天我们去成都吃火锅", "seconds": 83.6,
                                                     "page": "/items/bili:hotpot?t=83.6"}}  # its title holds neither
        assert answer["total"] == 2
        answer = (await api.get("/api/v1/items", params={"q": "背景音乐"})).json()
        assert [i["canonical_key"] for i in answer["items"]] == ["bili:cat"]
        assert answer["matched"] == {"bili:cat": {"kind": "comments", "text": "请问这首背景音乐叫什么", "seconds": None,
                                                  "page": "/items/bili:cat"}}
        answer = (await api.get("/api/v1/items", params={"q": "可爱", "sort": "old"})).json()
        assert answer["matched"]["bili:cat"]["page"] == "/items/bili:cat?t=3725.2"
        assert (await api.get("/api/v1/items", params={"q": "成都"})).json()["matched"].keys() == {"bili:hotpot"}
        assert (await api.get("/api/v1/items", params={"q": "可爱", "platform": "web"})).json()["items"] == []


async def test_any_search_text_over_the_extras_answers_200_or_422(temporal_client: Client,
                                                                  extras_settings: Settings) -> None:
    async with serving(extras_settings, temporal_client), httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{extras_settings.api.port}", timeout=30) as api:
        for hostile in [*HOSTILE, '"高能" OR "猫"', "高能\x00", "NEAR(高能 预警)", "高能*", "x" * 10_000]:
            for sort in ("relevance", "new", "title"):
                answer = await api.get("/api/v1/items", params={"q": hostile, "sort": sort})
                assert answer.status_code in (200, 422), (hostile[:20], sort)
                assert answer.status_code == 200 or "at most 500 characters" in answer.text
