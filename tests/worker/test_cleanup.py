"""The workers' clean-up reads into search's lines the extras stored before search read them
(migration 0009's pending pairs), in the background: the worker polls without waiting for it; and
on a PostgreSQL without autovacuum, the workers read its tables' statistics themselves."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import text
from temporalio.client import Client

from tests.polling import until
from tests.trawl.storage.test_statistics import analyzed, without_autovacuum
from tests.trawl.storage.test_blobs import write
from tests.trawl.storage.test_extras_search import DANMAKU
from trawl.settings import Settings
from trawl.storage.blobs import open_blob_store
from trawl.storage.catalog import Catalog, CommittedAsset
from trawl.storage.library import LibraryQuery
from trawl.worker.cleanup import keep_statistics
from trawl.worker.main import running_worker


async def test_a_running_worker_reads_the_extras_stored_before_search_into_lines(
        temporal_client: Client, settings: Settings, tmp_path: Path) -> None:
    catalog = Catalog(settings.catalog_url)
    catalog.create_schema()
    blobs = open_blob_store(settings)
    try:
        source, sha = write(tmp_path / "danmaku.part", DANMAKU)
        key = blobs.put(source, sha, len(DANMAKU))
        assert catalog.commit_item(canonical_key="bili:old", platform="bili", canonical_url="https://e.com/old",
                                   source_url="https://e.com/old", title="旧视频", uploader=None, duration=None,
                                   published_at=None, metadata={}, workflow_id=None,
                                   assets=[CommittedAsset("video", "video", "v" * 64, 1, None, "k/v"),
                                           CommittedAsset("danmaku", "danmaku", sha, len(DANMAKU), None, key)])
        with catalog.engine.begin() as connection:  # as migration 0009 leaves an extra stored before it
            connection.execute(text("INSERT INTO extras_lines_pending (item_id, kind) "
                                    "SELECT item_id, kind FROM assets WHERE kind = 'danmaku'"))

        def found() -> list[str]:
            return [item.canonical_key for item in catalog.library(LibraryQuery(text="高能")).items]

        assert found() == []
        async with running_worker(temporal_client, settings):
            assert await until(found, "the worker's clean-up to read the stored danmaku into lines", 30) == ["bili:old"]
        with catalog.engine.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM extras_lines_pending")).scalar() == 0
    finally:
        blobs.close()
        catalog.close()


async def test_a_worker_reads_the_statistics_autovacuum_does_not_and_stops_looking_on_sqlite(
        catalog: Catalog) -> None:
    keeping = asyncio.create_task(keep_statistics(catalog, interval=0.05))
    if not without_autovacuum(catalog):
        await asyncio.wait_for(keeping, 10)  # SQLite: nothing for it to do, it ends
        return
    try:
        catalog.remember_urls([f"http://127.0.0.1:9/{i}" for i in range(200)], "web:many")
        await until(lambda: analyzed(catalog), "url_aliases analyzed by the worker's round", timeout=30)
        assert not keeping.done()
    finally:
        keeping.cancel()
