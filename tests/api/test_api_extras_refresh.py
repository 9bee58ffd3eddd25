"""``POST /api/v1/items/{key}/extras/refresh`` (issue 41, point 6): an item's extras fetched again as a
dated snapshot beside the earlier files, through real HTTP against a real dev server and worker and
the simulated Bilibili."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from temporalio.client import Client

from tests.api.test_api import TOKEN, api, free_port  # noqa: F401 - api: the fixture, on this module's settings
from tests.conftest import make_settings
from tests.polling import until
from tests.workflows.test_extras import FAST_RETRY, VIDEO, crawl
from trawl.platforms.bilibili.site import BilibiliSite, install_bilibili_site
from trawl.settings import ApiSettings, PlatformsSettings, Settings
from trawl.simulator import Simulator

KEY = f"bilibili:{VIDEO}"


@pytest.fixture
def bili(sim: Simulator) -> BilibiliSite:
    return install_bilibili_site(sim)


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str, bili: BilibiliSite) -> Settings:
    return make_settings(tmp_path, temporal_address, retry=FAST_RETRY, api=ApiSettings(port=free_port(), token=TOKEN),
                         platforms=PlatformsSettings(bilibili=bili.settings(extras=["danmaku", "comments"])))


async def test_a_refresh_stores_a_dated_snapshot_beside_the_first_files(api: httpx.AsyncClient, settings: Settings,
                                                                        temporal_client: Client,
                                                                        bili: BilibiliSite) -> None:
    assert (await api.get(f"/api/v1/items/{KEY}/extras/refresh")).status_code == 404  # none yet, nor the item
    assert (await api.post(f"/api/v1/items/{KEY}/extras/refresh")).status_code == 404  # no body: every extra
    result = await crawl(temporal_client, settings, bili.url(VIDEO))
    assert result.outcome == "committed", result
    refused = await api.post(f"/api/v1/items/{KEY}/extras/refresh", json={"extras": ["subtitles"]})
    assert refused.status_code == 422 and "offers no extra 'subtitles' here" in refused.json()["detail"]

    started = await api.post(f"/api/v1/items/{KEY}/extras/refresh", json={"extras": ["comments"]})
    assert started.status_code == 202, started.text
    assert started.json() == {"canonical_key": KEY, "id": f"extras-{KEY}", "status": "RUNNING", "snapshot": None,
                              "extras": []}

    async def refresh() -> dict:
        return (await api.get(f"/api/v1/items/{KEY}/extras/refresh")).json()

    done = await until(refresh, "the refresh to complete", 90, every=0.2, holds=lambda r: r["status"] == "COMPLETED")
    [comments] = done["extras"]
    assert comments["name"] == f"comments@{done['snapshot']}" and comments["missing"] is None and comments["size"] > 0
    names = {a["name"] for a in (await api.get(f"/api/v1/items/{KEY}")).json()["assets"]}
    assert {"danmaku", "comments", f"comments@{done['snapshot']}"} <= names
    assert not any(n.startswith("danmaku@") for n in names)  # only the extras asked for


async def test_a_watch_refreshes_the_extras_of_its_young_items_each_run(api: httpx.AsyncClient,
                                                                        bili: BilibiliSite) -> None:
    # The simulated video was published in January 2020: 3650 days take it, 1 day would not.
    created = await api.post("/api/v1/watches", json={"name": "bili", "urls": [bili.url(VIDEO)], "every": "1h",
                                                      "paused": True, "refresh_extras_days": 3650})
    assert created.status_code == 201, created.text
    assert created.json()["refresh_extras_days"] == 3650
    bad = await api.post("/api/v1/watches", json={"name": "b2", "urls": [bili.url(VIDEO)], "every": "1h",
                                                  "refresh_extras_days": -1})
    assert bad.status_code == 422

    async def run_once(number: int) -> dict:
        assert (await api.post("/api/v1/watches/bili/trigger")).status_code == 202

        async def watch() -> dict:
            return (await api.get("/api/v1/watches/bili")).json()

        return await until(watch, f"run {number} of the watch", 90, every=0.3,
                           holds=lambda w: w["runs"] >= number and not w["running"]
                           and (w["last_run"] or {}).get("status") == "COMPLETED")

    first = await run_once(1)
    assert first["last_run"]["new"] == 1
    names = {a["name"] for a in (await api.get(f"/api/v1/items/{KEY}")).json()["assets"]}
    assert not any("@" in name for name in names)  # the first run brought it: nothing to refresh yet

    await run_once(2)  # the item is a duplicate now; its extras are refreshed all the same

    async def refreshed() -> set[str]:
        return {a["name"] for a in (await api.get(f"/api/v1/items/{KEY}")).json()["assets"]}

    names = await until(refreshed, "a dated snapshot of the item's extras", 90, every=0.3,
                        holds=lambda names: any(n.startswith("comments@") for n in names)
                        and any(n.startswith("danmaku@") for n in names))
    assert {"comments", "danmaku"} <= names
    done = (await api.get(f"/api/v1/items/{KEY}/extras/refresh")).json()
    assert done["id"] == f"extras-{KEY}"
