"""Issue 38, item 15: HEAD and OPTIONS answered 405 on every GET route, file downloads included
(the read token is documented to allow them). HEAD now answers as GET without the body, and
OPTIONS with the methods the path allows.

Real uvicorn on loopback, a real dev server, catalog and blob store.
"""

from __future__ import annotations

from pathlib import Path

import httpx
from temporalio.client import Client

from tests.conftest import make_settings
from tests.api.test_api import TOKEN, free_port, serving
from tests.api.test_api_access import DATA, READ_TOKEN, committed
from trawl.settings import ApiSettings

# Headers that may differ between two answers to the same request.
# set-cookie: the first page a client opens gives it a viewer id (its watched state), the next one not.
CHANGING = {"date", "x-request-id", "set-cookie"}


async def test_head_answers_as_get_without_the_body_and_options_says_what_is_allowed(
        temporal_client: Client, tmp_path: Path, temporal_address: str) -> None:
    settings = make_settings(tmp_path, temporal_address,
                             api=ApiSettings(port=free_port(), token=TOKEN, read_token=READ_TOKEN))
    key = committed(settings, "web:heads")
    asset = f"/api/v1/items/{key}/assets/video"
    paths = ["/", "/activity", "/activity/live", f"/items/{key}", "/login", "/static/trawl.css", "/api/v1/items",
             f"/api/v1/items/{key}", asset, "/api/v1/crawls", "/api/v1/watches", "/healthz", "/docs", "/redoc",
             "/openapi.json", "/docs/assets/swagger-ui.css"]
    async with serving(settings, temporal_client), httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{settings.api.port}", timeout=30,
            headers={"Authorization": f"Bearer {READ_TOKEN}"}) as reader:
        for path in paths:
            got = await reader.get(path)
            head = await reader.head(path)
            assert head.status_code == got.status_code == 200, (path, head.status_code, got.status_code)
            assert head.content == b"", path
            assert head.headers["content-length"] == got.headers["content-length"], path
            if path not in ("/activity", "/activity/live", "/healthz"):  # their answers change by the second
                assert {k: v for k, v in head.headers.items() if k not in CHANGING} == \
                    {k: v for k, v in got.headers.items() if k not in CHANGING}, path
            options = await reader.options(path)
            assert options.status_code in (200, 204), (path, options.status_code, options.text)
            allowed = {m.strip() for m in options.headers["allow"].split(",")}
            assert {"GET", "HEAD", "OPTIONS"} <= allowed and "DELETE" not in allowed, (path, allowed)
        # A file's HEAD says what a GET would send, a range's too, and reads none of it.
        whole = await reader.head(asset)
        assert whole.headers["content-length"] == str(len(DATA)) and whole.headers["etag"]
        part = await reader.head(asset, headers={"Range": "bytes=0-99"})
        assert part.status_code == 206 and part.headers["content-length"] == "100" and part.content == b""
        assert (await reader.get(asset)).content == DATA  # the connection is still good for the next
        # What changes something says so; no path is no path; no token is no answer.
        steer = await reader.options("/api/v1/crawls/crawl-any/pause")
        assert {m.strip() for m in steer.headers["allow"].split(",")} == {"POST", "OPTIONS"}
        assert (await reader.options("/no/such/path")).status_code == 404
        assert (await reader.head("/no/such/path")).status_code == 404
        anonymous = await reader.head(asset, headers={"Authorization": ""})
        assert anonymous.status_code == 401 and anonymous.content == b""
        assert (await reader.options(asset, headers={"Authorization": ""})).status_code == 401
