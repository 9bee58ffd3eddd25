"""Issue 11, items 3 and 4: the API's rate limit cannot be dodged with made-up tokens, and every
input is bounded with a 4xx naming the real limit (never a 500, never a 503 for a permanent error).

Real uvicorn on loopback, real dev server; the only URLs ever fetched are the simulator's.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from trawl.starter.client import MAX_URLS_PER_REQUEST
from trawl.api.limits import RateLimit
from tests.conftest import make_settings
from tests.api.test_api import TOKEN, free_port, serving
from tests.polling import until
from trawl.settings import ApiSettings, Settings
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.worker.main import running_worker

# Never fetched: refused by the API before anything starts, or queued behind a slow item in a
# crawl of concurrency 1 that the test cancels. Loopback all the same.
UNUSED = "http://127.0.0.1:9/unused"


@contextlib.asynccontextmanager
async def api_at(temporal_client: Client, settings: Settings, *, worker: bool = False,
                 token: str | None = TOKEN) -> AsyncIterator[httpx.AsyncClient]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(serving(settings, temporal_client))
        if worker:
            await stack.enter_async_context(running_worker(temporal_client, settings))
        client = await stack.enter_async_context(httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{settings.api.port}", headers=headers, timeout=60))
        yield client


def api_settings(tmp_path: Path, temporal_address: str, **api: object) -> Settings:
    return make_settings(tmp_path, temporal_address, api=ApiSettings(port=free_port(), **api))


# -- item 3: the rate limit --------------------------------------------------------------------
PER_MINUTE = 12  # a burst of 2, then one request every 5 s


async def flood(send: Callable[[int], Awaitable[httpx.Response]], n: int) -> tuple[list[int], int]:
    """Status codes of ``n`` requests in a row, and how many a bucket may refill meanwhile."""
    started = time.monotonic()
    codes = [(await send(i)).status_code for i in range(n)]
    return codes, int((time.monotonic() - started) * PER_MINUTE / 60)


async def test_made_up_tokens_get_401_and_share_their_address_bucket(
        temporal_client: Client, tmp_path: Path, temporal_address: str) -> None:
    """Each request with a different bogus token used to get its own bucket (and reads a 200):
    now a wrong token is 401 on every endpoint, counted against the client address, so a flood
    of them is 429 once the address's burst is spent; the real token keeps its own bucket."""
    settings = api_settings(tmp_path, temporal_address, token=TOKEN, requests_per_minute=PER_MINUTE)
    async with api_at(temporal_client, settings) as api:
        async def bogus(i: int) -> httpx.Response:
            bearer = {"Authorization": f"Bearer bogus-{i}"}
            if i % 5 == 0:
                return await api.post("/api/v1/jobs", json={"url": UNUSED}, headers=bearer)
            if i % 5 == 3:  # not even a bearer token
                return await api.get("/healthz", headers={"Authorization": "Basic Ym9ndXM6Ym9ndXM="})
            if i % 5 == 4:  # no token at all, from the same address: the same bucket
                return await api.get("/healthz", headers={"Authorization": ""})
            return await api.get("/api/v1/items" if i % 5 == 1 else "/healthz", headers=bearer)
        codes, refilled = await flood(bogus, 30)
        assert codes[:2] == [401, 401] and len([c for c in codes if c != 429]) <= 2 + refilled, codes
        assert all(c in (401, 429) if i % 5 != 4 else c in (200, 429) for i, c in enumerate(codes)), codes
        # The holder of the real token is not locked out by a flood from its own address.
        assert (await api.get("/api/v1/items")).status_code == 200
        assert (await api.get("/healthz")).status_code == 200


async def test_without_a_token_any_authorization_header_is_keyed_by_address(
        temporal_client: Client, tmp_path: Path, temporal_address: str) -> None:
    settings = api_settings(tmp_path, temporal_address, token="", requests_per_minute=PER_MINUTE)
    async with api_at(temporal_client, settings, token=None) as api:
        codes, refilled = await flood(
            lambda i: api.get("/api/v1/items", headers={"Authorization": f"Bearer t{i}"} if i % 5 else {}), 15)
        assert codes[:2] == [200, 200] and codes.count(200) <= 2 + refilled and set(codes) == {200, 429}, codes


async def test_anonymous_requests_are_limited(temporal_client: Client, tmp_path: Path,
                                             temporal_address: str) -> None:
    """Without the token only the health check and the docs answer (the rest is 401, issue 23),
    and every anonymous request counts, refused ones too."""
    settings = api_settings(tmp_path, temporal_address, token=TOKEN, requests_per_minute=PER_MINUTE)
    async with api_at(temporal_client, settings, token=None) as api:
        paths = ["/api/v1/items", "/healthz", "/api/v1/items/web:nothing", "/docs"]
        codes, refilled = await flood(lambda i: api.get(paths[i % len(paths)]), 15)
        assert codes[:2] == [401, 200] and len([c for c in codes if c != 429]) <= 2 + refilled, codes
        assert all(c in ((401, 429) if i % 2 == 0 else (200, 429)) for i, c in enumerate(codes)), codes
        assert 429 in codes


def test_bucket_keys() -> None:
    app = lambda *_: None  # noqa: E731 - never called: only the keys are under test
    limit = RateLimit(app, per_minute=60, token="tok", read_token="ro")  # type: ignore[arg-type]

    def scope(client: str, auth: bytes | None = None) -> dict:
        return {"type": "http", "client": (client, 1234),
                "headers": [(b"authorization", auth)] if auth is not None else []}
    assert limit.identify(scope("10.1.2.3", b"Bearer tok")) == ("token:all", "all")
    assert limit.identify(scope("10.1.2.3", b"bearer   tok")) == ("token:all", "all")
    assert limit.identify(scope("10.1.2.3", b"Bearer ro")) == ("token:read", "read")
    assert limit.identify(scope("10.1.2.3", b"Bearer nope")) == ("a:10.1.2.3", "wrong")
    assert limit.identify(scope("10.1.2.3", b"Bearer tok2")) == ("a:10.1.2.3", "wrong")
    assert limit.identify(scope("10.1.2.3", b"Basic tok")) == ("a:10.1.2.3", "wrong")
    assert limit.identify(scope("10.1.2.3")) == ("a:10.1.2.3", "anonymous")
    # One IPv6 client holds a whole /64: it cannot get fresh buckets by changing addresses.
    assert limit.identify(scope("2001:db8:1:2::1"))[0] == limit.identify(scope("2001:db8:1:2:ffff::9"))[0]
    assert limit.identify(scope("2001:db8:1:2::1"))[0] != limit.identify(scope("2001:db8:1:3::1"))[0]


# -- item 4: input bounds ------------------------------------------------------------------------
async def test_numeric_parameters_are_bounded(temporal_client: Client, tmp_path: Path,
                                              temporal_address: str) -> None:
    settings = api_settings(tmp_path, temporal_address, token=TOKEN)
    async with api_at(temporal_client, settings) as api:
        for params in ({"offset": "9" * 30}, {"offset": -1}, {"limit": "9" * 30}, {"limit": 0}, {"limit": 1001},
                       {"limit": -5}, {"offset": "1e3"}):
            answer = await api.get("/api/v1/items", params=params)
            assert answer.status_code == 422, (params, answer.text)
            assert answer.json()["detail"][0]["loc"] == ["query", next(iter(params))]
        fine = await api.get("/api/v1/items", params={"limit": 1000, "offset": 10**9})
        assert fine.status_code == 200 and fine.json() == {"items": [], "limit": 1000, "offset": 10**9,
                                                        "total": None, "more_than_counted": False, "matched": {}}
        for body in ({"urls": [UNUSED], "concurrency": 10**30}, {"urls": [UNUSED], "concurrency": 0}):
            assert (await api.post("/api/v1/crawls", json=body)).status_code == 422
        # An id Temporal refuses as malformed is the client's mistake, not a retryable 503.
        answer = await api.get("/api/v1/jobs/" + "x" * 2000)
        assert answer.status_code in (404, 422), answer.text


async def test_a_crawl_of_refused_urls_is_refused_with_a_reason_per_url(
        temporal_client: Client, tmp_path: Path, temporal_address: str, sim: Simulator) -> None:
    settings = api_settings(tmp_path, temporal_address, token=TOKEN)
    sim.add_file("/ok.mp4", MediaFile("mp4", "bounds-ok", 20_000))
    async with api_at(temporal_client, settings, worker=True) as api:
        refused = await api.post("/api/v1/crawls", json={"urls": ["ftp://x/y", "notaurl"]})
        assert refused.status_code == 422, refused.text
        detail = refused.json()["detail"]
        assert [d["loc"] for d in detail] == [["body", "urls", 0], ["body", "urls", 1]]
        assert [d["input"] for d in detail] == ["ftp://x/y", "notaurl"]
        assert "unsupported scheme 'ftp'" in detail[0]["msg"] and detail[0]["type"] == "unsupported_url"
        assert detail[1]["msg"]

        mixed = await api.post("/api/v1/crawls", json={"urls": ["ftp://x/y", sim.url("/ok.mp4")]})
        assert mixed.status_code == 202, mixed.text
        crawl = mixed.json()
        assert len(crawl["refused"]) == 1 and crawl["refused"][0].startswith("ftp://x/y: unsupported_url")
        assert crawl["stats"]["refused"] == 1
        async def read() -> dict:
            return (await api.get(f"/api/v1/crawls/{crawl['id']}")).json()

        view = await until(read, "the crawl to end", 60, every=0.2, holds=lambda view: view["status"] != "RUNNING")
        assert view["status"] == "COMPLETED" and view["stats"]["refused"] == 1
        assert view["stats"]["outcomes"] == {"committed": 1} and view["stats"]["runs"] == 1

        added = await api.post(f"/api/v1/crawls/{crawl['id']}/urls", json={"urls": ["gopher://x/"]})
        assert added.status_code == 422 and added.json()["detail"][0]["input"] == "gopher://x/"


async def test_a_list_too_long_for_one_request_is_413_saying_how_to_send_it_in_parts(
        temporal_client: Client, tmp_path: Path, temporal_address: str) -> None:
    """A crawl holds any number of URLs; one request carries at most MAX_URLS_PER_REQUEST, and
    api.max_body_bytes: beyond either, 413 saying how to send the rest."""
    settings = api_settings(tmp_path, temporal_address, token=TOKEN, max_body_bytes=4 * 1024 * 1024)
    async with api_at(temporal_client, settings) as api:
        schema = (await api.get("/openapi.json")).json()["components"]["schemas"]
        assert f"At most {MAX_URLS_PER_REQUEST} URLs per request" in schema["CrawlCreate"]["properties"]["urls"][
            "description"]
        many = await api.post("/api/v1/crawls", json={"urls": [f"http://127.0.0.1:9/{i}" for i in range(30_000)]})
        assert many.status_code == 413, many.text
        assert "then POST the rest to /api/v1/crawls/{id}/urls" in many.json()["detail"]
        long = [f"http://127.0.0.1:9/{i}/" + "a" * 8000 for i in range(600)]  # 4.8 MB of body
        big = await api.post("/api/v1/crawls", json={"urls": long})
        assert big.status_code == 413, big.text
        assert "send a long list of URLs in parts" in big.json()["detail"]


async def test_a_crawl_takes_more_urls_than_any_payload_could_carry_in_parts(
        temporal_client: Client, tmp_path: Path, temporal_address: str, sim: Simulator) -> None:
    """What used to be refused (over 2,000 URLs, over 1 MiB of them) goes to the crawl's frontier."""
    settings = api_settings(tmp_path, temporal_address, token=TOKEN, max_body_bytes=4 * 1024 * 1024)
    sim.add_file("/slow.mp4", MediaFile("mp4", "bounds-slow", 4_000_000), FileBehaviour(throttle_bps=100_000))
    async with api_at(temporal_client, settings, worker=True) as api:
        urls = [sim.url("/slow.mp4")] + [f"{UNUSED}/{i}" for i in range(MAX_URLS_PER_REQUEST - 1)]
        created = await api.post("/api/v1/crawls", json={"urls": urls, "concurrency": 1})
        assert created.status_code == 202, created.text
        crawl_id = created.json()["id"]
        try:
            long = [f"{UNUSED}/{i}/" + "b" * 4000 for i in range(400)]  # 1.6 MB more
            added = await api.post(f"/api/v1/crawls/{crawl_id}/urls", json={"urls": long})
            assert added.status_code == 202, added.text
            stats = (await api.get(f"/api/v1/crawls/{crawl_id}")).json()["stats"]
            assert stats["queued"] + stats["running"] == MAX_URLS_PER_REQUEST + len(long), stats
        finally:
            await api.post(f"/api/v1/crawls/{crawl_id}/cancel")


async def test_the_shared_start_helper_refuses_before_starting(temporal_client: Client, tmp_path: Path,
                                                               temporal_address: str) -> None:
    """``trawl crawl --detach`` shares start_crawl with the API: the same refusals, as
    UnsupportedUrl (which the CLI prints, exit code 2), and no crawl started."""
    from trawl.starter.client import CrawlRefused, start_crawl
    from trawl.errors import UnsupportedUrl
    from trawl.platforms.registry import default_registry

    settings = api_settings(tmp_path, temporal_address)
    crawl_id = f"crawl-refused-{tmp_path.name}"
    with pytest.raises(CrawlRefused, match="every URL was refused: ftp://x/y: unsupported_url") as raised:
        await start_crawl(temporal_client, settings, default_registry(), ["ftp://x/y", "notaurl"], crawl_id=crawl_id)
    assert isinstance(raised.value, UnsupportedUrl)
    with pytest.raises(RPCError) as missing:
        await temporal_client.get_workflow_handle(crawl_id).describe()
    assert missing.value.status == RPCStatusCode.NOT_FOUND


async def test_refused_input_is_shown_escaped_and_cut(temporal_client: Client, tmp_path: Path,
                                                      temporal_address: str, sim: Simulator) -> None:
    """Issue 38, item 14: a 422 echoed a 900 KB URL whole, and control characters as they came.
    Refused input is now shown escaped (``\\x1b``, ``\\u202e``) and cut, with its length."""
    settings = api_settings(tmp_path, temporal_address, token=TOKEN)
    sim.add_file("/ok.mp4", MediaFile("mp4", "bounds-shown", 20_000))
    huge = "ftp://x/" + "a" * 900_000
    hostile = "ftp://x/\x1b[2J\x07\u202eevil"
    async with api_at(temporal_client, settings, worker=True) as api:
        refused = await api.post("/api/v1/crawls", json={"urls": [huge, hostile]})
        assert refused.status_code == 422 and len(refused.content) < 2_000, len(refused.content)
        first, second = refused.json()["detail"]
        assert first["input"].startswith("ftp://x/aaa") and first["input"].endswith(f"… ({len(huge)} chars)")
        assert len(first["input"]) < 300 and len(first["msg"]) < 400
        assert second["input"] == "ftp://x/\\x1b[2J\\x07\\u202eevil"
        assert not any(ch in refused.text for ch in "\x1b\x07\u202e")
        # In the schema's own refusals too (a string where a list belongs), and a job's.
        for path, body in (("/api/v1/crawls", {"urls": huge}), ("/api/v1/jobs", {"url": huge}),
                           ("/api/v1/jobs", {"url": hostile}), ("/api/v1/jobs", {"url": "x" * 3000})):
            answer = await api.post(path, json=body)
            assert answer.status_code == 422 and len(answer.content) < 2_000, (path, len(answer.content))
            assert not any(ch in answer.text for ch in "\x1b\x07\u202e"), answer.text
        # A crawl that takes some URLs names the ones it refused the same way.
        mixed = await api.post("/api/v1/crawls", json={"urls": [huge, sim.url("/ok.mp4")]})
        assert mixed.status_code == 202 and len(mixed.content) < 2_000, len(mixed.content)
        # And its stats, once its worker has counted the refusal.
        view = await until(lambda: api.get(f"/api/v1/crawls/{mixed.json()['id']}"),
                           lambda view: f"the worker to count the refusal: {view.text}", 10,
                           holds=lambda view: (view.json()["stats"] or {}).get("refusals"))
        assert len(view.content) < 4_000 and view.json()["stats"]["refusals"][0].startswith("ftp://x/aaa"), view.text
        await api.post(f"/api/v1/crawls/{mixed.json()['id']}/cancel")
