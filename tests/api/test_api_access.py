"""Issue 23, items 2 and 14: with a token set, reads need it too (only the health check and the
docs are open); and a catalog that never answers stalls neither the API's event loop (shared
with the worker under ``trawl up``) nor ``/healthz``.

Real uvicorn on loopback, a real dev server, a real catalog; the catalog that never answers is a
loopback TCP listener that accepts connections and never speaks, given as the PostgreSQL URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from temporalio.client import Client

from trawl.api import OPEN_PATHS, create_app, serve_api
from trawl.starter.binding import ApiConfigError
from trawl.api.limits import RateLimit
from tests.conftest import make_settings
from tests.api.test_api import TOKEN, free_port, serving
from tests.polling import until
from trawl.settings import ApiSettings, Settings
from trawl.storage.blobs import open_blob_store
from trawl.storage.catalog import Catalog, CommittedAsset

READ_TOKEN = "read-only-token"
DATA = b"\x00\x00\x00\x18ftypisom" + b"m" * 4000
PUBLIC = ["/healthz", "/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect", "/docs/assets/swagger-ui.css"]


def committed(settings: Settings, key: str = "web:secret") -> str:
    """An item and its file, written directly: what is under test is who may read them."""
    store = open_blob_store(settings)
    catalog = Catalog(settings.catalog_url)
    try:
        catalog.create_schema()
        sha = hashlib.sha256(DATA).hexdigest()
        source = settings.data_dir / "blob.part"
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_bytes(DATA)
        blob = store.put(source, sha, len(DATA))
        catalog.commit_item(canonical_key=key, platform="generic", canonical_url="u", source_url="u", title="t",
                            uploader=None, duration=None, published_at=None, metadata={}, workflow_id=None,
                            assets=[CommittedAsset("video", "video", sha, len(DATA), "video/mp4", blob)])
    finally:
        catalog.close()
        store.close()
    return key


# -- item 2: the token guards reads too -----------------------------------------------------------
async def test_with_a_token_every_endpoint_but_health_and_docs_needs_it(
        temporal_client: Client, tmp_path: Path, temporal_address: str) -> None:
    """The items, their bytes, the watches (source descriptions) and the crawls answered 200 to
    anyone; now everything but the health check and the docs is 401 without the token."""
    settings = make_settings(tmp_path, temporal_address, api=ApiSettings(port=free_port(), token=TOKEN))
    key = committed(settings)
    guarded = ["/api/v1/items", f"/api/v1/items/{key}", f"/api/v1/items/{key}/assets/video", "/api/v1/watches",
               "/api/v1/watches/any", "/api/v1/crawls", "/api/v1/crawls/crawl-any", "/api/v1/jobs/url-any",
               "/no/such/path"]
    base = f"http://127.0.0.1:{settings.api.port}"
    async with serving(settings, temporal_client), httpx.AsyncClient(base_url=base, timeout=30) as anonymous:
        for path in guarded:
            answer = await anonymous.get(path)
            assert answer.status_code == 401, (path, answer.status_code, answer.text)
            assert answer.json() == {"detail": "missing or wrong bearer token"}
            assert answer.headers["www-authenticate"] == "Bearer"
        # Every operation the schema lists, whatever its method: none answers without the token.
        operations = (await anonymous.get("/openapi.json")).json()["paths"]
        for template, methods in operations.items():
            path = re.sub(r"\{[^}]+\}", "x", template)
            for method in methods:
                if path != "/healthz":
                    answer = await anonymous.request(method.upper(), path, json={})
                    assert answer.status_code == 401, (method, path, answer.status_code, answer.text)
        for path in PUBLIC:
            assert (await anonymous.get(path)).status_code == 200, path
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert (await anonymous.get("/api/v1/items", headers=bearer)).json()["items"][0]["canonical_key"] == key
        assert (await anonymous.get(f"/api/v1/items/{key}/assets/video", headers=bearer)).content == DATA
        assert (await anonymous.get("/api/v1/watches", headers=bearer)).status_code == 200
        assert (await anonymous.get("/api/v1/crawls", headers=bearer)).status_code == 200


def test_the_open_paths_are_exactly_the_health_check_and_the_docs() -> None:
    app = lambda *_: None  # noqa: E731 - never called: only the path check is under test
    limit = RateLimit(app, per_minute=0, token="t", open_paths=OPEN_PATHS)  # type: ignore[arg-type]

    def is_open(path: str, root_path: str = "") -> bool:
        return limit.is_open({"type": "http", "path": path, "root_path": root_path})
    assert all(is_open(p) for p in PUBLIC)
    assert is_open("/trawl/healthz", root_path="/trawl") and not is_open("/trawl/api/v1/items", root_path="/trawl")
    for guarded in ("/healthz/x", "/docsx", "/docs/other", "/docs/assets", "/openapi.jsonx", "/", "/api/v1/items"):
        assert not is_open(guarded), guarded


async def test_a_read_token_reads_and_may_change_nothing(
        temporal_client: Client, tmp_path: Path, temporal_address: str) -> None:
    settings = make_settings(tmp_path, temporal_address,
                             api=ApiSettings(port=free_port(), token=TOKEN, read_token=READ_TOKEN))
    key = committed(settings)
    base = f"http://127.0.0.1:{settings.api.port}"
    async with serving(settings, temporal_client), httpx.AsyncClient(
            base_url=base, timeout=30, headers={"Authorization": f"Bearer {READ_TOKEN}"}) as reader:
        assert (await reader.get(f"/api/v1/items/{key}/assets/video")).content == DATA
        assert (await reader.get("/api/v1/watches")).status_code == 200
        assert (await reader.get("/api/v1/crawls")).status_code == 200
        for method, path, body in (("POST", "/api/v1/jobs", {"url": "http://127.0.0.1:9/x.mp4"}),
                                   ("POST", "/api/v1/crawls", {"urls": ["http://127.0.0.1:9/x.mp4"]}),
                                   ("POST", "/api/v1/crawls/crawl-any/cancel", None),
                                   ("POST", "/api/v1/watches", {"name": "w", "urls": ["http://127.0.0.1:9/"],
                                                                "every": "1h"}),
                                   ("DELETE", "/api/v1/watches/w", None)):
            answer = await reader.request(method, path, json=body)
            assert answer.status_code == 403, (method, path, answer.text)
            assert "read-only" in answer.json()["detail"]
        # Nothing was started on its behalf.
        listed = await reader.get("/api/v1/crawls")
        assert listed.json()["crawls"] == [] and (await reader.get("/api/v1/watches")).json() == {"watches": []}
        # The full token still may.
        full = {"Authorization": f"Bearer {TOKEN}"}
        assert (await reader.post("/api/v1/crawls/crawl-any/cancel", headers=full)).status_code == 404


async def test_serve_api_itself_refuses_a_public_address_without_a_token(tmp_path: Path,
                                                                         temporal_client: Client) -> None:
    """``trawl up`` and ``trawl api`` refuse it before anything starts (tests/e2e/test_cli_mistakes);
    the server refuses it too, whoever calls it."""
    settings = Settings(data_dir=tmp_path, api=ApiSettings(host="0.0.0.0", port=free_port()))
    with pytest.raises(ApiConfigError, match="without api.token"):
        await serve_api(settings, temporal_client, asyncio.Event())


# -- item 14: a catalog that never answers -------------------------------------------------------
@contextlib.contextmanager
def silent_listener() -> Iterator[tuple[int, threading.Event]]:
    """A loopback port that accepts connections and never says a word; the event is set once a
    connection has come. Closing it (at the end) lets anything still waiting on it fail."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    accepted: list[socket.socket] = []
    came = threading.Event()

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                accepted.append(server.accept()[0])
                came.set()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], came
    finally:
        server.close()
        for conn in accepted:
            conn.close()
        thread.join(5)


@contextlib.asynccontextmanager
async def served_apart(settings: Settings, release: contextlib.ExitStack) -> AsyncIterator[FastAPI]:
    """The API on its own thread and event loop (as under ``trawl up``, where it shares one with
    the worker), so that a stalled loop stalls the server and not the test that watches it.
    ``release`` is closed before the server is asked to stop: it frees whatever stalls it."""
    app = create_app(settings)  # it connects its own Temporal client, on its own loop
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=settings.api.port, log_config=None,
                                           access_log=False))
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    try:
        await until(lambda: server.started or not thread.is_alive(), "the API to start", 30, every=0.02)
        assert server.started, "the API did not start: its thread ended"
        yield app
    finally:
        release.close()
        server.should_exit = True
        await asyncio.to_thread(thread.join, 60)


async def test_a_catalog_that_never_answers_stalls_nothing_else(tmp_path: Path, temporal_address: str) -> None:
    """Catalog calls ran on the event loop, and PostgreSQL had no connect timeout: one request
    to a catalog that never answered froze every other request (and, under ``trawl up``, the
    worker's pollers and heartbeats) for good. Now the call waits in a thread, bounded by the
    connect timeout; meanwhile the rest answers, and /healthz says the catalog is down."""
    settings = make_settings(tmp_path, temporal_address, api=ApiSettings(port=free_port(), token=TOKEN))
    release = contextlib.ExitStack()
    port, came = release.enter_context(silent_listener())
    base = f"http://127.0.0.1:{settings.api.port}"
    # Generous bounds: a stalled loop never answers at all, and the connect timeout is 10 s.
    async with served_apart(settings, release) as app, httpx.AsyncClient(
            base_url=base, timeout=45, headers={"Authorization": f"Bearer {TOKEN}"}) as api:
        state = app.state.trawl
        started_with, state.catalog = state.catalog, Catalog(f"postgresql+psycopg://trawl@127.0.0.1:{port}/trawl")
        release.callback(started_with.close)
        release.callback(state.catalog.close)

        listing = asyncio.create_task(api.get("/api/v1/items"))
        assert await asyncio.to_thread(came.wait, 30), "the catalog was never asked"
        assert not listing.done()
        health = await api.get("/healthz")
        assert health.status_code == 503, health.text
        assert health.json()["temporal"] == "ok" and health.json()["catalog"].startswith("unreachable"), health.text
        assert (await api.get("/api/v1/jobs/url-none")).status_code == 404  # Temporal alone
        assert (await api.get("/openapi.json")).status_code == 200
        answer = await listing
        assert answer.status_code == 503, answer.text
        assert answer.json()["detail"].startswith("catalog read failed"), answer.text
