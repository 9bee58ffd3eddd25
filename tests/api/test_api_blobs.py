"""The API's asset endpoint streams from either blob store, through real HTTP (uvicorn on loopback):
a local directory, or a real S3 server (SeaweedFS on loopback). The blob and its catalog row are
written directly: what is under test is reading them back."""

from __future__ import annotations

import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client

from tests.conftest import make_settings
from tests.s3server import SeaweedFS, s3_url
from tests.api.test_api import TOKEN, free_port, serving
from trawl.settings import ApiSettings, Settings, StorageSettings
from trawl.storage.blobs import blob_key, open_blob_store
from trawl.storage.catalog import Catalog, CommittedAsset

MiB = 1024 * 1024
SIZE = 11 * MiB + 123  # three parts on S3 (5 MiB each)
DATA = os.urandom(SIZE)
SHA = hashlib.sha256(DATA).hexdigest()


@pytest.fixture(params=["local", "s3"])
def settings(request: pytest.FixtureRequest, tmp_path: Path, temporal_address: str) -> Settings:
    storage = StorageSettings()
    if request.param == "s3":
        server: SeaweedFS = request.getfixturevalue("s3_server")
        storage = StorageSettings(url=s3_url(), s3_endpoint_url=server.endpoint, s3_part_size=5 * MiB)
    settings = make_settings(tmp_path, temporal_address, api=ApiSettings(port=free_port(), token=TOKEN),
                             storage=storage)
    source = tmp_path / "blob.part"
    source.write_bytes(DATA)
    store = open_blob_store(settings)
    key = store.put(source, SHA, SIZE)
    store.close()
    catalog = Catalog(settings.catalog_url)
    catalog.create_schema()
    for name, sha in (("kept", SHA), ("lost", "0" * 64)):
        catalog.commit_item(canonical_key=f"web:{name}", platform="generic", canonical_url="u", source_url="u",
                            title=name, uploader=None, duration=None, published_at=None, metadata={},
                            workflow_id=f"wf-{name}",
                            assets=[CommittedAsset("video", "video", sha, SIZE, "video/mp4", blob_key(sha))])
    catalog.close()
    assert key == blob_key(SHA)
    return settings


@pytest.fixture
async def api(temporal_client: Client, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with serving(settings, temporal_client):
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{settings.api.port}", timeout=60,
                                     headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            yield client


URL = "/api/v1/items/web:kept/assets/video"


async def test_the_whole_blob_streams_with_a_strong_etag(api: httpx.AsyncClient) -> None:
    whole = await api.get(URL)
    assert whole.status_code == 200 and whole.content == DATA
    assert whole.headers["content-length"] == str(SIZE) and whole.headers["accept-ranges"] == "bytes"
    assert whole.headers["etag"] == f'"{SHA}"' and whole.headers["content-type"] == "video/mp4"


async def test_ranges_are_served_from_the_store(api: httpx.AsyncClient) -> None:
    boundary = 5 * MiB  # an S3 part boundary: the range spans two parts
    part = await api.get(URL, headers={"Range": f"bytes={boundary - 100}-{boundary + 99}"})
    assert part.status_code == 206 and part.content == DATA[boundary - 100:boundary + 100]
    assert part.headers["content-range"] == f"bytes {boundary - 100}-{boundary + 99}/{SIZE}"
    tail = await api.get(URL, headers={"Range": "bytes=-10"})
    assert tail.status_code == 206 and tail.content == DATA[-10:]
    both = await api.get(URL, headers={"Range": "bytes=0-3,100-103"})
    assert both.status_code == 206 and both.headers["content-type"].startswith("multipart/byteranges; boundary=")
    assert int(both.headers["content-length"]) == len(both.content)
    boundary_token = both.headers["content-type"].split("boundary=")[1].encode()
    sections = [s for s in both.content.split(b"--" + boundary_token) if s.strip(b"\r\n-")]
    # Each body ends with the CRLF before the next delimiter; the bytes themselves may end in one too.
    assert [s.split(b"\r\n\r\n", 1)[1].removesuffix(b"\r\n") for s in sections] == [DATA[0:4], DATA[100:104]]
    assert [b"Content-Range: bytes 0-3/" in s for s in sections] == [True, False]


async def test_range_errors_and_if_range(api: httpx.AsyncClient) -> None:
    beyond = await api.get(URL, headers={"Range": f"bytes={SIZE}-"})
    assert beyond.status_code == 416 and beyond.headers["content-range"] == f"bytes */{SIZE}"
    assert str(SIZE) in beyond.json()["detail"]
    assert (await api.get(URL, headers={"Range": "lines=1-2"})).status_code == 400
    still = await api.get(URL, headers={"Range": "bytes=0-9", "If-Range": f'"{SHA}"'})
    assert still.status_code == 206 and still.content == DATA[:10]
    changed = await api.get(URL, headers={"Range": "bytes=0-9", "If-Range": '"something-else"'})
    assert changed.status_code == 200 and len(changed.content) == SIZE


async def test_a_blob_missing_from_the_store_is_404(api: httpx.AsyncClient) -> None:
    lost = await api.get("/api/v1/items/web:lost/assets/video")
    assert lost.status_code == 404 and "missing from the store" in lost.json()["detail"]


async def test_api_answers_carry_keys_and_no_blob_paths(api: httpx.AsyncClient, settings: Settings) -> None:
    item = (await api.get("/api/v1/items/web:kept")).json()
    assert [a["key"] for a in item["assets"]] == [blob_key(SHA)]
    assert str(settings.data_dir) not in str(item) and not any(a.get("path") for a in item["assets"])
