"""/api/v1/watches through real HTTP against a real dev server and worker: create, list, steer,
delete, the mistakes, and a watch whose run outlasts its interval (later runs are skipped)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client

from tests.conftest import make_settings
from tests.api.test_api import TOKEN, free_port, serving
from tests.polling import until
from trawl.settings import ApiSettings, Settings, SourceSettings
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.simulator.feed import install_feed_site
from trawl.worker.main import running_worker


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str) -> Settings:
    (tmp_path / "list.txt").write_text("")
    return make_settings(tmp_path, temporal_address, api=ApiSettings(port=free_port(), token=TOKEN),
                         sources=[SourceSettings(name="empty", kind="url_file", path=str(tmp_path / "list.txt")),
                                  SourceSettings(name="lost", kind="url_file", path=str(tmp_path / "lost.txt"))])


@pytest.fixture
async def api(temporal_client: Client, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with serving(settings, temporal_client), running_worker(temporal_client, settings):
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{settings.api.port}",
                                     headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as client:
            yield client


async def wait_watch(api: httpx.AsyncClient, name: str, done, timeout: float = 60) -> dict:  # noqa: ANN001
    """The watch ``name`` once ``done`` holds for it."""
    async def watch() -> dict:
        return (await api.get(f"/api/v1/watches/{name}")).json()

    return await until(watch, f"the awaited state of watch {name}", timeout, every=0.3, holds=done)


async def test_create_list_steer_and_delete(api: httpx.AsyncClient, sim: Simulator) -> None:
    sim.add_file("/w/a.mp4", MediaFile("mp4", "api-watch-a", 20_000))
    created = await api.post("/api/v1/watches", json={"name": "list", "source": "empty", "every": "1h",
                                                      "paused": True})
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["paused"] is True and body["every"] == "1h" and body["source"] == "empty" and body["runs"] == 0
    assert body["source_description"].startswith("url_file ") and body["next_run"] is None
    urls = await api.post("/api/v1/watches", json={"name": "one-file", "urls": [sim.url("/w/a.mp4"), "ftp://x/y"],
                                                   "every": "1h", "jitter": "1m"})
    assert urls.status_code == 201 and urls.json()["urls"] == 1 and "ftp://x/y" in urls.json()["refused"][0]
    assert urls.json()["jitter"] == "1m" and urls.json()["next_run"]

    again = await api.post("/api/v1/watches", json={"name": "list", "source": "empty", "every": "1h"})
    assert again.status_code == 409 and "exists already" in again.json()["detail"]
    for bad, why in (({"name": "b", "source": "empty", "urls": [sim.url("/w/a.mp4")], "every": "1h"}, "not both"),
                     ({"name": "b", "source": "nope", "every": "1h"}, "no source named 'nope'"),
                     ({"name": "b", "source": "empty", "every": "0s"}, "shorter than watch.min_interval"),
                     ({"name": "b c", "source": "empty", "every": "1h"}, "invalid watch name")):
        answer = await api.post("/api/v1/watches", json=bad)
        assert answer.status_code == 422 and why in answer.json()["detail"], answer.text
    assert (await api.get("/api/v1/watches/none")).status_code == 404
    assert (await api.post("/api/v1/watches/none/pause")).status_code == 404
    assert (await api.post("/api/v1/watches", json={"name": "x", "source": "empty", "every": "1h"},
                           headers={"Authorization": ""})).status_code == 401

    triggered = await api.post("/api/v1/watches/one-file/trigger")
    assert triggered.status_code == 202, triggered.text
    done = await wait_watch(api, "one-file", lambda w: w["last_run"] and w["last_run"]["status"] == "COMPLETED")
    assert done["last_run"]["new"] == 1 and done["runs"] == 1
    crawl = (await api.get(f"/api/v1/crawls/{done['last_run']['crawl_id']}")).json()
    assert crawl["stats"]["outcomes"] == {"committed": 1}
    assert (await api.post("/api/v1/watches/one-file/pause")).json()["paused"] is True
    resumed = (await api.post("/api/v1/watches/one-file/resume")).json()
    assert resumed["paused"] is False and resumed["next_run"]

    async def names() -> list[str]:  # Temporal lists schedules from its visibility store
        return [w["name"] for w in (await api.get("/api/v1/watches")).json()["watches"]]

    await until(names, "both watches listed", 30, holds=lambda names: names == ["list", "one-file"])
    for name in ("list", "one-file"):
        assert (await api.delete(f"/api/v1/watches/{name}")).status_code == 200
        assert (await api.get(f"/api/v1/watches/{name}")).status_code == 404


async def test_a_run_that_outlasts_the_interval_makes_later_runs_skip(api: httpx.AsyncClient, sim: Simulator,
                                                                      temporal_client: Client) -> None:
    sim.add_file("/w/slow.mp4", MediaFile("mp4", "api-watch-slow", 3_000_000), FileBehaviour(throttle_bps=200_000))
    created = await api.post("/api/v1/watches", json={"name": "slow", "urls": [sim.url("/w/slow.mp4")],
                                                      "every": "1s"})
    assert created.status_code == 201, created.text
    watch = await wait_watch(api, "slow", lambda w: w["skipped_overlap"] >= 2)
    assert watch["runs"] == 1 and len(watch["running"]) == 1 and watch["last_run"]["status"] == "RUNNING"
    query = f"TemporalScheduledById = '{watch['schedule_id']}' AND ExecutionStatus = 'Running'"
    assert [e.id async for e in temporal_client.list_workflows(query)] == watch["running"]
    refused = await api.post("/api/v1/watches/slow/trigger")
    assert refused.status_code == 409 and "run going on" in refused.json()["detail"]
    assert (await api.delete("/api/v1/watches/slow")).status_code == 200
    crawl_id = watch["running"][0]
    assert (await api.post(f"/api/v1/crawls/{crawl_id}/cancel")).status_code == 200
    async def status() -> str:
        return (await api.get(f"/api/v1/crawls/{crawl_id}")).json()["status"]

    await until(status, "the cancelled crawl to end", 60, every=0.3, holds=lambda status: status != "RUNNING")


async def test_a_run_whose_source_cannot_be_expanded_is_failed_with_its_reason(api: httpx.AsyncClient) -> None:
    """Issue 24 (2): the run fails, and the watch, the crawl and the list of crawls say why."""
    created = await api.post("/api/v1/watches", json={"name": "lost", "source": "lost", "every": "1h",
                                                      "paused": True})
    assert created.status_code == 201, created.text
    assert created.json()["source_settings"]["path"].endswith("lost.txt")
    assert (await api.post("/api/v1/watches/lost/trigger")).status_code == 202
    watch = await wait_watch(api, "lost", lambda w: w["last_run"] and w["last_run"]["status"] != "RUNNING")
    run = watch["last_run"]
    assert run["status"] == "FAILED" and run["error"].startswith("source lost: cannot read URL file"), run
    crawl = (await api.get(f"/api/v1/crawls/{run['crawl_id']}")).json()
    assert crawl["status"] == "FAILED" and crawl["stats"]["error"] == run["error"], crawl
    async def listing() -> list[dict]:  # Temporal lists crawls from its visibility store, which may lag a moment
        return [c for c in (await api.get("/api/v1/crawls")).json()["crawls"] if c["id"] == run["crawl_id"]]

    listed = await until(listing, "the failed crawl listed as failed", 30, every=0.3,
                         holds=lambda listed: listed and listed[0]["status"] == "FAILED")
    assert len(listed) == 1 and listed[0]["stats"]["error"] == run["error"], listed
    assert (await api.delete("/api/v1/watches/lost")).status_code == 200


async def test_a_live_rooms_watch_polls_it_without_an_interval(api: httpx.AsyncClient) -> None:
    """A room's URL is recognised offline: its watch polls the room every watch.live_poll_interval
    (created paused: no run asks the real site); any other URL still needs ``every``."""
    created = await api.post("/api/v1/watches", json={"name": "room", "urls": ["https://live.bilibili.com/76"],
                                                      "paused": True})
    assert created.status_code == 201, created.text
    body = created.json()
    assert (body["every"], body["source"], body["source_description"], body["urls"]) == (
        "10s", "https://live.bilibili.com/76", "bilibili_live 76", 0)
    assert body["source_settings"]["kind"] == "bilibili_live"
    plain = await api.post("/api/v1/watches", json={"name": "plain", "urls": ["https://example.org/a.mp4"]})
    assert plain.status_code == 422 and "how often to crawl" in plain.json()["detail"]
    assert (await api.delete("/api/v1/watches/room")).status_code in (200, 204)


async def test_a_watch_with_a_recheck(api: httpx.AsyncClient, sim: Simulator) -> None:
    feed = install_feed_site(sim, 1)
    created = await api.post("/api/v1/watches", json={"name": "feed", "urls": [feed.url], "every": "1h",
                                                      "paused": True, "recheck": 5})
    assert created.status_code == 201, created.text
    assert created.json()["recheck"] == 5
    assert (await api.get("/api/v1/watches/feed")).json()["recheck"] == 5
    sim.add_file("/w/one.mp4", MediaFile("mp4", "api-recheck-one", 20_000))
    for bad, why in (({"urls": [sim.url("/w/one.mp4")], "recheck": 5}, "items of the listings"),  # no listing
                     ({"source": "empty", "recheck": 5}, "items of the listings"),  # a url_file: no listing kept
                     ({"urls": [feed.url], "recheck": 51}, "less than or equal to 50"),
                     ({"urls": [feed.url], "recheck": -1}, "greater than or equal to 0")):
        answer = await api.post("/api/v1/watches", json={"name": "b", "every": "1h", **bad})
        assert answer.status_code == 422 and why in answer.text, answer.text
    assert (await api.delete("/api/v1/watches/feed")).status_code == 200
