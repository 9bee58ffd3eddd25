"""Issue 13, items 15, 16 and 21 (API side) and the API's answers to mistakes: docs that work
offline, a typed OpenAPI schema that matches what the API answers, the crawl list, one rendering
of items and crawls shared with the CLI, 409 for steering what has finished, JSON range errors.

Real uvicorn on loopback, a real dev server and worker; the only URLs fetched are the simulator's
and the API's own.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client

from trawl.starter import views
from trawl.starter.client import start_crawl
from tests.api.test_api_bounds import api_at, api_settings
from tests.api.test_api import TOKEN
from tests.polling import until
from trawl.platforms.registry import default_registry
from trawl.settings import Settings
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.storage.catalog import Catalog
from trawl.workflows.crawl import CrawlWorkflow

ERRORS = ("401", "403", "404", "409", "413", "422", "429")


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str) -> Settings:
    return api_settings(tmp_path, temporal_address, token=TOKEN)


@pytest.fixture
async def api(temporal_client: Client, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with api_at(temporal_client, settings, worker=True) as client:
        yield client


async def committed_job(api: httpx.AsyncClient, sim: Simulator, name: str, size: int = 30_000) -> dict:
    sim.add_file(f"/{name}.mp4", MediaFile("mp4", f"contract-{name}", size))
    job_id = (await api.post("/api/v1/jobs", json={"url": sim.url(f"/{name}.mp4")})).json()["id"]

    async def done() -> dict | None:
        job = (await api.get(f"/api/v1/jobs/{job_id}")).json()
        assert job["status"] not in ("FAILED", "CANCELLED"), job
        return job if job["status"] == "COMPLETED" else None
    return await until(done, f"job {job_id}")


async def finished_crawl(api: httpx.AsyncClient, crawl_id: str) -> dict:
    async def done() -> dict | None:
        view = (await api.get(f"/api/v1/crawls/{crawl_id}")).json()
        return None if view["status"] == "RUNNING" else view
    return await until(done, f"crawl {crawl_id}")


class Schema:
    """The API's OpenAPI document, with ``$ref`` resolved."""

    def __init__(self, doc: dict) -> None:
        self.doc = doc
        self.paths: dict[str, dict] = doc["paths"]

    def resolve(self, schema: dict) -> dict:
        while "$ref" in schema:
            schema = self.doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
        return schema

    def json_body(self, path: str, method: str, code: str) -> dict:
        return self.resolve(self.paths[path][method]["responses"][code]["content"]["application/json"]["schema"])

    def untyped(self, schema: dict, seen: frozenset[str] = frozenset()) -> list[str]:
        """Where ``schema`` (and what it refers to) admits anything: ``additionalProperties: true``
        or an object without properties."""
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[1]
            return [] if name in seen else self.untyped(self.resolve(schema), seen | {name})
        found = []
        if schema.get("additionalProperties") is True or (schema.get("type") == "object" and not
                                                          schema.get("properties") and
                                                          "additionalProperties" not in schema):
            found.append(str(schema))
        for key in ("properties",):
            for sub in schema.get(key, {}).values():
                found += self.untyped(sub, seen)
        for key in ("items", "additionalProperties"):
            if isinstance(schema.get(key), dict):
                found += self.untyped(schema[key], seen)
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in schema.get(key, []):
                found += self.untyped(sub, seen)
        return found


async def schema_of(api: httpx.AsyncClient) -> Schema:
    answer = await api.get("/openapi.json")
    assert answer.status_code == 200
    return Schema(answer.json())


# -- item 15: /docs with no internet --------------------------------------------------------------
REFERENCE = re.compile(r"""(?:src|href|spec-url)\s*=\s*["']([^"']+)["']|\burl\s*:\s*["']([^"']+)["']""")


async def test_the_docs_pages_load_every_asset_from_the_api_itself(
        temporal_client: Client, settings: Settings) -> None:
    """Swagger UI's and ReDoc's JS and CSS came from a CDN: with no internet /docs was blank.
    Every asset the pages reference is now served by the API and answers 200."""
    async with api_at(temporal_client, settings, token=None) as api:
        base = api.base_url
        scripts = []
        for page in ("/docs", "/redoc"):
            html = await api.get(page)
            assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
            references = [a or b for a, b in REFERENCE.findall(html.text)]
            assert len(references) >= 2, html.text  # at least the script and the schema
            for reference in references:
                url = base.join(reference)
                assert (url.scheme, url.host, url.port) == (base.scheme, base.host, base.port), reference
                asset = await api.get(url)
                assert asset.status_code == 200 and asset.content, (page, reference, asset.status_code)
                if reference.endswith(".js"):
                    scripts.append(asset.text)
        assert any("SwaggerUIBundle" in s for s in scripts) and any("Redoc" in s for s in scripts)


# -- item 16: typed OpenAPI -----------------------------------------------------------------------
async def test_items_have_typed_response_models_that_match_the_answers(
        api: httpx.AsyncClient, sim: Simulator, settings: Settings) -> None:
    """/items and /items/{key} were ``additionalProperties: true``; now each field is declared,
    and an answer has exactly the declared fields."""
    schema = await schema_of(api)
    page = schema.json_body("/api/v1/items", "get", "200")
    assert set(page["properties"]) == {"items", "limit", "offset", "total", "more_than_counted", "matched"}
    item = schema.resolve(page["properties"]["items"]["items"])
    assert schema.json_body("/api/v1/items/{key}", "get", "200") == item
    asset = schema.resolve(item["properties"]["assets"]["items"])
    assert set(asset["properties"]) == {"kind", "name", "sha256", "size", "key", "path", "mime"}
    assert schema.untyped(page) == [] and schema.untyped(item) == []

    job = await committed_job(api, sim, "typed")
    listed = (await api.get("/api/v1/items")).json()
    assert set(listed) == set(page["properties"]) and len(listed["items"]) == 1
    one = (await api.get(f"/api/v1/items/{job['canonical_key']}")).json()
    assert one == listed["items"][0]
    assert set(one) == set(item["properties"]) and set(item["required"]) <= set(one)
    assert set(one["assets"][0]) == set(asset["properties"])


async def test_the_asset_route_is_declared_binary_with_its_range_answers(
        api: httpx.AsyncClient, sim: Simulator) -> None:
    schema = await schema_of(api)
    responses = schema.paths["/api/v1/items/{key}/assets/{kind}"]["get"]["responses"]
    for code in ("200", "206"):
        content = responses[code]["content"]
        assert content and all(c["schema"] == {"type": "string", "format": "binary"} for c in content.values()), code
        assert "application/json" not in content
    assert "detail" in schema.json_body("/api/v1/items/{key}/assets/{kind}", "get", "416")["properties"]

    job = await committed_job(api, sim, "ranged", size=40_000)
    url = f"/api/v1/items/{job['canonical_key']}/assets/video"
    part = await api.get(url, headers={"Range": "bytes=4-11"})
    assert part.status_code == 206 and part.content == b"ftypisom"
    # The 416 body was plain text; it is JSON like every other error, and says what was asked.
    beyond = await api.get(url, headers={"Range": "bytes=50000-"})
    assert beyond.status_code == 416 and beyond.headers["content-range"] == "bytes */40000"
    assert beyond.headers["content-type"] == "application/json" and "40000" in beyond.json()["detail"]
    malformed = await api.get(url, headers={"Range": "lines=1-2"})
    assert malformed.status_code == 400 and "detail" in malformed.json()
    # An unknown key used to be "no video asset for ...", as if the item existed.
    unknown = await api.get("/api/v1/items/web:nothing-here/assets/video")
    assert unknown.status_code == 404 and unknown.json()["detail"].startswith("no such item")
    no_kind = await api.get(f"/api/v1/items/{job['canonical_key']}/assets/subtitles")
    assert no_kind.status_code == 404 and "video" in no_kind.json()["detail"]


async def test_every_error_an_endpoint_can_answer_is_declared_with_its_json_body(api: httpx.AsyncClient) -> None:
    schema = await schema_of(api)
    operations = [(path, method, op) for path, methods in schema.paths.items() for method, op in methods.items()]
    assert len(operations) >= 12
    for path, method, op in operations:
        expected = {"401", "429"}  # a wrong token anywhere; the rate limit counts every request
        if "requestBody" in op:
            expected.add("413")
        if op.get("parameters") or "requestBody" in op:
            expected.add("422")
        if re.search(r"\{(job_id|crawl_id|key)\}", path):
            expected.add("404")
        if re.search(r"/(\{action\}|pause|resume|cancel)$", path):
            expected.add("409")
        if method != "get":
            expected.add("403")  # a read-only token (api.read_token) changes nothing
        assert expected <= set(op["responses"]), (method, path, sorted(op["responses"]))
        for code in expected & set(ERRORS):
            body = schema.json_body(path, method, code)
            assert "detail" in body["properties"] and "detail" in body["required"], (method, path, code)
    # The validation errors keep their shape: a list of {loc, msg, type}, or one sentence.
    detail = schema.json_body("/api/v1/jobs", "post", "422")["properties"]["detail"]
    assert {"array", "string"} <= {schema.resolve(s).get("type") for s in detail["anyOf"]}


# -- item 16: the crawl list ------------------------------------------------------------------------
async def test_crawls_are_listed_newest_first_and_paginated(
        api: httpx.AsyncClient, sim: Simulator, settings: Settings, temporal_client: Client) -> None:
    for i in range(8):
        sim.add_file(f"/l/{i}.mp4", MediaFile("mp4", f"contract-list-{i}", 5_000 + i))
    sim.add_file("/l/slow.mp4", MediaFile("mp4", "contract-list-slow", 4_000_000), FileBehaviour(throttle_bps=200_000))
    # The oldest continues as new (one workflow id, several executions): it is listed once.
    handle, _ = await start_crawl(temporal_client, settings, default_registry(),
                                  [sim.url(f"/l/{i}.mp4") for i in range(2, 8)], concurrency=2, history_limit=40)
    ids = [handle.id]
    assert (await finished_crawl(api, handle.id))["stats"]["runs"] >= 2
    for i in range(2):
        created = await api.post("/api/v1/crawls", json={"urls": [sim.url(f"/l/{i}.mp4")]})
        ids.append(created.json()["id"])
        await finished_crawl(api, ids[-1])
    running = (await api.post("/api/v1/crawls", json={"urls": [sim.url("/l/slow.mp4")]})).json()["id"]
    ids.append(running)
    newest_first = ids[::-1]
    try:
        async def listed() -> dict | None:
            answer = await api.get("/api/v1/crawls", params={"limit": 100})
            assert answer.status_code == 200, answer.text
            body = answer.json()
            return body if [c["id"] for c in body["crawls"]] == newest_first else None
        body = await until(listed, f"the list to show {newest_first}")
        assert body["limit"] == 100 and body["offset"] == 0
        first = body["crawls"][0]
        assert first["status"] == "RUNNING" and first["stats"]["queued"] + first["stats"]["running"] == 1
        assert [c["status"] for c in body["crawls"][1:]] == ["COMPLETED"] * 3
        assert body["crawls"][1]["stats"]["outcomes"] == {"committed": 1}
        assert body["crawls"][3]["stats"]["outcomes"] == {"committed": 6}

        pages = [(await api.get("/api/v1/crawls", params={"limit": 3, "offset": offset})).json()
                 for offset in (0, 3, 6)]
        assert [[c["id"] for c in p["crawls"]] for p in pages] == [newest_first[:3], newest_first[3:], []]
    finally:
        await api.post(f"/api/v1/crawls/{running}/cancel")

    for params in ({"limit": 0}, {"limit": 101}, {"limit": "9" * 30}, {"offset": -1}, {"offset": 10_001},
                   {"offset": "1e3"}):
        answer = await api.get("/api/v1/crawls", params=params)
        assert answer.status_code == 422, (params, answer.text)
        assert answer.json()["detail"][0]["loc"] == ["query", next(iter(params))]
    schema = await schema_of(api)
    page = schema.json_body("/api/v1/crawls", "get", "200")
    assert set(page["properties"]) == {"crawls", "limit", "offset"} and schema.untyped(page) == []


# -- the Also line: steering what has finished -----------------------------------------------------
async def test_steering_a_finished_job_or_crawl_answers_409(api: httpx.AsyncClient, sim: Simulator) -> None:
    """Pausing or resuming a finished job was a 404 (Temporal's "already completed"), cancelling
    it a 200 that changed nothing: each is a 409 saying the job has finished."""
    job = await committed_job(api, sim, "closed")
    crawl = (await api.post("/api/v1/crawls", json={"urls": [sim.url("/closed.mp4")]})).json()
    await finished_crawl(api, crawl["id"])
    for kind, target in (("jobs", job["id"]), ("crawls", crawl["id"])):
        for action in ("pause", "resume", "cancel"):
            answer = await api.post(f"/api/v1/{kind}/{target}/{action}")
            assert answer.status_code == 409, (kind, action, answer.text)
            assert answer.json()["detail"] == f"{kind[:-1]} {target} has finished (COMPLETED): nothing to {action}"
    added = await api.post(f"/api/v1/crawls/{crawl['id']}/urls", json={"urls": [sim.url("/closed.mp4")]})
    assert added.status_code == 409, added.text
    assert added.json()["detail"] == f"crawl {crawl['id']} has finished (COMPLETED): nothing to add URLs to"
    assert (await api.get(f"/api/v1/jobs/{job['id']}")).json()["status"] == "COMPLETED"
    assert (await api.post("/api/v1/jobs/url-no-such-job/pause")).status_code == 404
    assert (await api.post("/api/v1/crawls/crawl-no-such-crawl/cancel")).status_code == 404


# -- item 21: one rendering, routers per resource ---------------------------------------------------
async def test_the_api_renders_items_and_crawls_as_the_cli_does(
        api: httpx.AsyncClient, sim: Simulator, settings: Settings, temporal_client: Client) -> None:
    job = await committed_job(api, sim, "shared")
    catalog = Catalog(settings.catalog_url)
    try:
        stored = catalog.get(job["canonical_key"])
    finally:
        catalog.close()
    assert stored is not None
    rendered = views.item_dict(stored)  # by key: the API names no file of the server's
    assert (await api.get(f"/api/v1/items/{job['canonical_key']}")).json() == rendered
    assert (await api.get("/api/v1/items")).json()["items"] == [rendered]

    created = (await api.post("/api/v1/crawls", json={"urls": [sim.url("/shared.mp4")]})).json()
    view = await finished_crawl(api, created["id"])
    assert view["stats"]["outcomes"] == {"duplicate": 1}
    handle = temporal_client.get_workflow_handle_for(CrawlWorkflow.run, created["id"])
    assert {k: v for k, v in view.items() if k not in ("refused", "items")} == views.crawl_dict(
        created["id"], *await views.crawl_state(handle))
    assert view["items"] is None  # a finished crawl has no running items to read


def test_the_app_is_assembled_from_one_router_per_resource(settings: Settings) -> None:
    """Every operation the app serves comes from the router of its resource."""
    from trawl import api as package
    from trawl.api import crawls, health, items, jobs, watches

    served = {(path, method.upper()) for path, methods in package.create_app(settings).openapi()["paths"].items()
              for method in methods}
    routed: set[tuple[str, str]] = set()
    for module in (jobs, crawls, items, watches, health):
        routes = {(r.path_format, m) for r in module.router.routes for m in r.methods}
        assert routes, module.__name__
        routed |= routes
    assert routed == served
