"""Items end to end with blobs in a real S3 server (SeaweedFS on loopback): a real Temporal dev
server, a real worker, the simulator."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client

from trawl.starter.client import item_result, start_item
from tests.conftest import make_settings
from tests.s3server import SeaweedFS, s3_url
from trawl.platforms.registry import default_registry
from trawl.settings import Settings, StorageSettings
from trawl.simulator import MediaFile, Simulator
from trawl.storage.blobs import blob_key, hash_blob, open_blob_store
from trawl.storage.catalog import Catalog
from trawl.storage.s3 import S3BlobStore
from trawl.worker.main import running_worker
from trawl.workflows.media_item import ItemResult

FAST_RETRY = {stage: {"initial_interval": "100ms", "maximum_interval": "500ms"}
              for stage in ("fetch", "download", "verify", "commit")}
MiB = 1024 * 1024


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str, s3_server: SeaweedFS) -> Settings:
    storage = StorageSettings(url=s3_url(), s3_endpoint_url=s3_server.endpoint, s3_part_size=5 * MiB)
    return make_settings(tmp_path, temporal_address, retry=FAST_RETRY, storage=storage)


@pytest.fixture
async def worker(temporal_client: Client, settings: Settings) -> AsyncIterator[None]:
    async with running_worker(temporal_client, settings):
        yield


async def crawl(client: Client, settings: Settings, url: str) -> ItemResult:
    started = await start_item(client, settings, default_registry(), url)
    return await asyncio.wait_for(item_result(started.handle, url), 60)


async def test_an_item_is_committed_to_the_bucket_once(temporal_client: Client, settings: Settings, sim: Simulator,
                                                        worker) -> None:
    media = MediaFile("mp4", "s3-item", 12 * MiB)  # three parts of 5 MiB
    sim.add_file("/v/s3.mp4", media)
    first = await crawl(temporal_client, settings, sim.url("/v/s3.mp4"))
    assert first.outcome == "committed", first
    key = blob_key(media.sha256())
    assert [(a.key, a.size) for a in first.assets] == [(key, 12 * MiB)]
    store = open_blob_store(settings)
    assert isinstance(store, S3BlobStore)
    assert [s.key for s in store.iterate()] == [key] and hash_blob(store, key) == (media.sha256(), 12 * MiB)
    assert store.incomplete_uploads() == []
    again = await crawl(temporal_client, settings, sim.url("/v/s3.mp4?utm_source=again"))
    assert again.outcome == "duplicate" and [a.key for a in again.assets] == [key]
    assert sim.bytes_sent("/v/s3.mp4") == 12 * MiB + 1  # one probe, one download; the known URL form: nothing
    assert [a.key for a in Catalog(settings.catalog_url).get(first.canonical_key).assets] == [key]
    # Nothing of the item stays on the worker: no local blob store, no partial files.
    assert not settings.blobs_dir.exists()
    assert not [p for p in settings.work_dir.rglob("*") if p.is_file()]
    store.close()
