"""The HTTP API through real HTTP (uvicorn on loopback) against a real dev server and worker."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from temporalio.client import Client

from trawl.api import create_app
from trawl.starter import views
from trawl.starter.client import crawl_handle
from trawl.starter.binding import ApiConfigError, require_safe_binding
from tests.conftest import make_settings
from tests.polling import until
from tests.ports import free_port  # noqa: F401 - also the API tests' importers'
from trawl.settings import ApiSettings, Settings, SourceSettings
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.worker.main import running_worker

TOKEN = "s3cret-token"


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str) -> Settings:
    (tmp_path / "list.txt").write_text("")
    return make_settings(tmp_path, temporal_address, api=ApiSettings(port=free_port(), token=TOKEN),
                         sources=[SourceSettings(name="empty", kind="url_file", path=str(tmp_path / "list.txt"))])


@contextlib.asynccontextmanager
async def serving(settings: Settings, client: Client) -> AsyncIterator[None]:
    """The API app on a real uvicorn server on loopback, for the duration of the block."""
    server = uvicorn.Server(uvicorn.Config(create_app(settings, client), host="127.0.0.1",
                                           port=settings.api.port, log_config=None, access_log=False))
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    task = asyncio.create_task(server.serve())
    await until(lambda: server.started, "the API server to start", every=0.02)
    try:
        yield
    finally:
        server.should_exit = True
        await task


@pytest.fixture
async def api(temporal_client: Client, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with serving(settings, temporal_client), running_worker(temporal_client, settings):
        # httpx's default 5 s read timeout was missed once by a request that asks Temporal, in a
        # full-suite run on two cores: the tests check answers, not their speed.
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{settings.api.port}",
                                     headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as client:
            yield client


async def wait_job(api: httpx.AsyncClient, job_id: str, done: set[str], timeout: float = 60) -> dict:
    async def job() -> dict:
        return (await api.get(f"/api/v1/jobs/{job_id}")).json()

    return await until(job, f"job {job_id} to be {' or '.join(sorted(done))}", timeout, every=0.2,
                       holds=lambda job: job["status"] in done)


async def test_job_lifecycle_and_idempotent_creation(api: httpx.AsyncClient, sim: Simulator) -> None:
    sim.add_file("/v/a.mp4", MediaFile("mp4", "api-a", 3_000_000), FileBehaviour(throttle_bps=1_500_000))
    created = await api.post("/api/v1/jobs", json={"url": sim.url("/v/a.mp4")})
    assert created.status_code == 202
    job = created.json()
    assert job["status"] in ("PENDING", "PROCESSING") and job["retry_count"] == 0
    again = await api.post("/api/v1/jobs", json={"url": sim.url("/v/a.mp4?utm_source=x")})
    assert again.json()["id"] == job["id"]
    processing = await wait_job(api, job["id"], {"PROCESSING"})
    assert processing["stage"] in ("fetch", "download", "verify", "commit")
    done = await wait_job(api, job["id"], {"COMPLETED"})
    assert done["outcome"] == "committed" and done["assets"][0]["size"] == 3_000_000
    assert done["scraped_title"] == "a.mp4" and done["error_log"] is None and done["progress"]["percent"] == 100

    key = done["canonical_key"]
    items = (await api.get("/api/v1/items", params={"platform": "generic"})).json()["items"]
    assert [i["canonical_key"] for i in items] == [key]
    assert (await api.get(f"/api/v1/items/{key}")).json()["assets"][0]["sha256"] == done["assets"][0]["sha256"]
    part = await api.get(f"/api/v1/items/{key}/assets/video", headers={"Range": "bytes=4-11"})
    assert part.status_code == 206 and part.content == b"ftypisom"
    assert (await api.get(f"/api/v1/items/{key}/assets/audio")).status_code == 404


async def test_failed_job_reports_retries_and_error(api: httpx.AsyncClient, sim: Simulator) -> None:
    created = await api.post("/api/v1/jobs", json={"url": sim.url("/missing")})
    failed = await wait_job(api, created.json()["id"], {"FAILED"})
    assert failed["retry_count"] == 1 and failed["error_log"].startswith("not_found:")
    sim.add_file("/flaky.mp4", MediaFile("mp4", "flaky", 10_000))
    sim.faults.outage(r"/flaky\.mp4", 1.0, status_code=503)
    created = await api.post("/api/v1/jobs", json={"url": sim.url("/flaky.mp4")})
    done = await wait_job(api, created.json()["id"], {"COMPLETED", "FAILED"})
    assert done["status"] == "COMPLETED" and done["retry_count"] >= 1


async def test_auth_and_malformed_bodies(api: httpx.AsyncClient, settings: Settings) -> None:
    anonymous = httpx.AsyncClient(base_url=str(api.base_url))
    refused = await anonymous.post("/api/v1/jobs", json={"url": "https://example.com/x.mp4"})
    assert refused.status_code == 401 and refused.json()["detail"] == "missing or wrong bearer token"
    wrong = await anonymous.post("/api/v1/jobs", json={"url": "https://example.com/x.mp4"},
                                 headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert (await anonymous.get("/healthz")).json() == {"status": "ok", "temporal": "ok", "catalog": "ok"}
    await anonymous.aclose()
    for body, message in (({"url": "ftp://x/y"}, "unsupported scheme"), ({"nope": 1}, "Field required"),
                          ({"url": "https://e.com/" + "a" * 9000}, "at most")):
        answer = await api.post("/api/v1/jobs", json=body)
        assert answer.status_code == 422 and message in answer.text
    broken = await api.post("/api/v1/jobs", content=b"{not json", headers={"Content-Type": "application/json"})
    assert broken.status_code == 422 and "JSON" in broken.text
    missing = await api.get("/api/v1/jobs/url-nothing-here")
    assert missing.status_code == 404 and missing.json()["detail"] == "no such job: 'url-nothing-here'"
    no_crawl = await api.get("/api/v1/crawls/crawl-nothing-here")
    assert no_crawl.status_code == 404 and no_crawl.json()["detail"] == "no such crawl: 'crawl-nothing-here'"
    assert (await api.get("/docs")).status_code == 200


async def test_crawls_through_the_api(api: httpx.AsyncClient, sim: Simulator) -> None:
    for i in range(4):
        sim.add_file(f"/c/{i}.mp4", MediaFile("mp4", f"api-c{i}", 20_000 + i))
    created = await api.post("/api/v1/crawls", json={"urls": [sim.url("/c/0.mp4"), sim.url("/c/1.mp4"), "bad"],
                                                     "concurrency": 2})
    assert created.status_code == 202
    crawl = created.json()
    assert crawl["id"].startswith("crawl-") and "bad" in crawl["refused"][0]
    added = await api.post(f"/api/v1/crawls/{crawl['id']}/urls", json={"urls": [sim.url("/c/2.mp4")]})
    assert added.status_code in (202, 409)  # 409 only if the crawl already finished
    async def read() -> dict:
        return (await api.get(f"/api/v1/crawls/{crawl['id']}")).json()

    view = await until(read, "the crawl to end", 60, every=0.2, holds=lambda view: view["status"] != "RUNNING")
    assert view["status"] == "COMPLETED" and view["stats"]["outcomes"]["committed"] >= 2
    assert (await api.post("/api/v1/crawls", json={})).status_code == 422
    assert (await api.post("/api/v1/crawls", json={"source": "nope"})).status_code == 422
    assert (await api.post("/api/v1/crawls", json={"source": "empty"})).status_code == 202


async def test_a_cancelled_crawl_item_keeps_its_url(api: httpx.AsyncClient, sim: Simulator) -> None:
    """The items a crawl starts carry no memo: a cancelled one's URL comes from its input."""
    sim.add_file("/slow/x.mp4", MediaFile("mp4", "api-cancel", 5_000_000), FileBehaviour(throttle_bps=200_000))
    url = sim.url("/slow/x.mp4")
    crawl = (await api.post("/api/v1/crawls", json={"urls": [url]})).json()
    await until(lambda: sim.bytes_sent("/slow/x.mp4") >= 100_000, "100 KB of the download served")
    assert (await api.post(f"/api/v1/crawls/{crawl['id']}/cancel")).status_code == 200
    from trawl.platforms.registry import default_registry

    job = await wait_job(api, default_registry().route(url).workflow_id, {"CANCELLED"})
    assert job["url"] == url and job["outcome"] == "cancelled"
    finished = await api.post(f"/api/v1/jobs/{job['id']}/pause")
    assert finished.status_code == 409 and "(CANCELLED)" in finished.json()["detail"]


def test_non_loopback_binding_needs_a_token(tmp_path: Path) -> None:
    with pytest.raises(ApiConfigError, match="without api.token"):
        require_safe_binding(Settings(data_dir=tmp_path, api=ApiSettings(host="0.0.0.0")))
    require_safe_binding(Settings(data_dir=tmp_path, api=ApiSettings(host="0.0.0.0", token="t")))
    require_safe_binding(Settings(data_dir=tmp_path, api=ApiSettings(host="127.0.0.1")))


async def test_body_size_and_rate_limits(temporal_client: Client, tmp_path: Path, temporal_address: str) -> None:
    settings = make_settings(tmp_path, temporal_address,
                             api=ApiSettings(port=free_port(), token=TOKEN, max_body_bytes=2048, requests_per_minute=60))
    base = f"http://127.0.0.1:{settings.api.port}"
    async with serving(settings, temporal_client):
        async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}) as api:
            big = await api.post("/api/v1/crawls", json={"urls": ["https://e.com/" + "a" * 100] * 50})
            assert big.status_code == 413 and "over 2048 bytes" in big.json()["detail"]

            async def chunks():
                for _ in range(10):
                    yield b"x" * 1000
            streamed = await api.post("/api/v1/jobs", content=chunks(), headers={"Content-Type": "application/json"})
            assert streamed.status_code == 413
            # At once: the bucket counts requests as they arrive, and a health check that takes its
            # time (the catalog, Temporal) must not let the bucket refill between them.
            answers = await asyncio.gather(*(api.get("/healthz") for _ in range(15)))
            codes = [a.status_code for a in answers]
            assert codes.count(200) >= 8 and 429 in codes and set(codes) <= {200, 429}, codes
            limited = next(a for a in answers if a.status_code == 429)
            assert int(limited.headers["retry-after"]) >= 1
        async with httpx.AsyncClient(base_url=base, headers={"Authorization": "Bearer other"}) as other:
            # A made-up token is no identity of its own: 401, counted against the client address
            # (test_api_bounds floods with them); the token's spent bucket is not the address's.
            assert (await other.get("/healthz")).status_code == 401
        async with httpx.AsyncClient(base_url=base) as anonymous:
            assert (await anonymous.get("/healthz")).status_code == 200


async def test_a_crawl_no_worker_answers_is_a_503_saying_to_start_one(
        temporal_client: Client, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a worker, a running crawl's query would hang ~30 s and read as "server unreachable"."""
    monkeypatch.setattr(views, "RUNNING_QUERY_PATIENCE_S", 1.0)
    async with serving(settings, temporal_client):  # and no worker
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{settings.api.port}",
                                     headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as client:
            created = await client.post("/api/v1/crawls", json={"urls": ["http://127.0.0.1:9/a.mp4"]})
            assert created.status_code == 202, created.text  # started: its counts come with a worker
            crawl_id = created.json()["id"]
            assert (created.json()["status"], created.json()["stats"]) == ("RUNNING", None)
            shown = await client.get(f"/api/v1/crawls/{crawl_id}")
    assert shown.status_code == 503
    assert "no worker answered it within 1 s: start one (`trawl worker`" in shown.json()["detail"]
    with pytest.raises(views.Unanswered):
        await views.crawl_state(crawl_handle(temporal_client, crawl_id))
    await crawl_handle(temporal_client, crawl_id).terminate()
