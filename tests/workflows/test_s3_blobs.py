"""Items end to end with blobs in a real S3 server (SeaweedFS on loopback): a real Temporal dev
server, a real worker, the simulator."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from temporalio.client import Client

from trawl.starter.client import item_result, start_crawl, start_item
from trawl.starter.waiting import running_items
from trawl.contracts import ITEM_WORKFLOW
from tests.conftest import make_settings
from tests.s3server import SeaweedFS, s3_url
from tests.polling import until
from tests.tcpproxy import TcpProxy
from trawl.platforms.registry import default_registry
from trawl.settings import Settings, StorageSettings
from trawl.simulator import MediaFile, Simulator
from trawl.storage.blobs import blob_key, hash_blob, open_blob_store
from trawl.storage.catalog import Catalog
from trawl.storage.s3 import S3BlobStore
from trawl.worker.main import running_worker
from trawl.workflows.media_item import ItemResult, MediaItemWorkflow

FAST_RETRY = {stage: {"initial_interval": "100ms", "maximum_interval": "500ms"}
              for stage in ("fetch", "download", "verify", "commit")}
MiB = 1024 * 1024
TRAWL = str(Path(sys.executable).parent / "trawl")


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str, s3_server: SeaweedFS) -> Settings:
    storage = StorageSettings(url=s3_url(), s3_endpoint_url=s3_server.endpoint, s3_part_size=5 * MiB)
    return make_settings(tmp_path, temporal_address, retry=FAST_RETRY, storage=storage)


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


@pytest.mark.timeout(240)
async def test_an_upload_left_by_a_killed_worker_is_reported_then_reclaimed_and_the_item_committed_once(
        temporal_client: Client, settings: Settings, sim: Simulator, s3_server: SeaweedFS, tmp_path: Path) -> None:
    """A worker killed mid-upload leaves an incomplete multipart upload: `trawl fsck` reports it
    once it is older than storage.abandon_uploads_after, `fsck --repair` aborts it, and the
    item, retried by another worker, is committed once."""
    media = MediaFile("mp4", "s3-killed", 24 * MiB)  # five parts of 5 MiB
    sim.add_file("/v/killed.mp4", media)
    store = open_blob_store(settings)
    assert isinstance(store, S3BlobStore)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
    env.update(TRAWL_DATA_DIR=str(settings.data_dir), TRAWL_NET__ALLOW_PRIVATE="true",
               TRAWL_TEMPORAL__ADDRESS=settings.temporal.address, TRAWL_TEMPORAL__EMBEDDED="false",
               TRAWL_TEMPORAL__TASK_QUEUE_PREFIX=settings.temporal.task_queue_prefix,
               TRAWL_CATALOG__URL=settings.catalog_url, TRAWL_WORKER__METRICS_PORT="0",
               TRAWL_STORAGE__URL=settings.storage.url, TRAWL_STORAGE__S3_PART_SIZE=str(5 * MiB),
               TRAWL_STORAGE__S3_CONCURRENCY="1", TRAWL_DOWNLOAD__SMALL_ITEM_SIZE="0", **s3_server.env())
    # The killed worker reaches the store through a slow link (2 MB/s), so its upload is caught midway.
    with TcpProxy(s3_server.s3, rate=2_000_000) as slow, open(tmp_path / "killed.log", "wb") as log:
        killed = subprocess.Popen([TRAWL, "worker"], env={**env, "TRAWL_STORAGE__S3_ENDPOINT_URL": slow.endpoint},
                                  cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
        try:
            started = await start_item(temporal_client, settings, default_registry(), sim.url("/v/killed.mp4"))
            def part_uploaded() -> bool:
                uploaded = any(u.parts for u in store.incomplete_uploads())
                assert uploaded or killed.poll() is None, (tmp_path / "killed.log").read_text()[-3000:]
                return uploaded

            await until(part_uploaded, lambda _: "a part of the upload to be stored: "
                        + (tmp_path / "killed.log").read_text()[-3000:], 120)
        finally:
            killed.kill()
            killed.wait(timeout=30)
    [left] = store.incomplete_uploads()
    assert left.key == blob_key(media.sha256()) and left.size >= 5 * MiB
    await asyncio.sleep(1.5)
    fsck_env = {**env, "TRAWL_STORAGE__S3_ENDPOINT_URL": s3_server.endpoint, "TRAWL_STORAGE__ABANDON_UPLOADS_AFTER": "1s"}
    report = subprocess.run([TRAWL, "fsck"], env=fsck_env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert report.returncode != 0 and "abandoned_upload" in report.stdout, report.stdout + report.stderr
    assert f"{left.parts} part(s)" in report.stdout and "1 incomplete upload(s)" in report.stderr
    repair = subprocess.run([TRAWL, "fsck", "--repair", "--json"], env=fsck_env, cwd=tmp_path, capture_output=True,
                            text=True, timeout=60)
    summary = json.loads(repair.stdout)
    assert repair.returncode == 0 and summary["repair"]["aborted_uploads"] == 1, repair.stdout + repair.stderr
    assert [u["upload_id"] for u in summary["incomplete_uploads"]] == [left.upload_id]
    assert store.incomplete_uploads() == []
    # Another worker takes the commit over (its heartbeat timed out) and uploads anew, once.
    async with running_worker(temporal_client, settings):
        result = await asyncio.wait_for(item_result(started.handle, ""), 120)
    assert result.outcome == "committed", result
    assert [s.key for s in store.iterate()] == [blob_key(media.sha256())]
    assert hash_blob(store, blob_key(media.sha256())) == (media.sha256(), 24 * MiB)
    assert store.incomplete_uploads() == []
    store.close()


@pytest.mark.timeout(180)
async def test_items_waiting_out_a_store_outage_say_so_retry_within_seconds_and_commit_when_it_is_back(
        temporal_client: Client, settings: Settings, sim: Simulator, s3_server: SeaweedFS, tmp_path: Path) -> None:
    """The object store down (its port refuses connections): the crawl's items wait on
    storage_error, and crawl-status (and the API, through the same reader) says so, with the
    failure and since when; each item says its commit is what waits; their retries stay at most
    5 s apart under the default policy (whose backoff would reach minutes); the store back, they
    commit."""
    with TcpProxy(s3_server.s3) as store_link:
        store_link.down()
        # The default retry policies (the test settings' are quick): their backoff must not decide.
        # No outage wait inside a request (storage.s3_outage_wait): every attempt fails at once,
        # as an outage longer than that wait does.
        down = settings.model_copy(update={"retry": Settings().retry, "storage": StorageSettings(
            url=settings.storage.url, s3_endpoint_url=store_link.endpoint, s3_part_size=5 * MiB,
            s3_outage_wait=timedelta(0))})
        names = ("a", "b")
        for name in names:
            sim.add_file(f"/v/down-{name}.mp4", MediaFile("mp4", f"down-{name}", 40_000))
        registry = default_registry()
        async with running_worker(temporal_client, down):
            handle, _ = await start_crawl(temporal_client, down, registry, [sim.url(f"/v/down-{n}.mp4") for n in names])
            query = f"WorkflowType = '{ITEM_WORKFLOW}' AND CrawlId = '{handle.id}' AND ExecutionStatus = 'Running'"
            async def running_and_pending() -> tuple[list[str], list]:
                running = [e.id async for e in temporal_client.list_workflows(query)]
                return running, [a for i in running for a in
                                 (await temporal_client.get_workflow_handle(i).describe()).raw_description.pending_activities]

            # Until both items failed three times: past the policy's 2, 4 and 8 s.
            running, pending = await until(
                running_and_pending, "both items' fourth attempt", 90, every=0.5,
                holds=lambda answer: len(answer[1]) == 2 and all(a.attempt >= 4 for a in answer[1]))
            # 5 s (and the server's microseconds), where the policy alone would now wait 8 s.
            assert all(a.current_retry_interval.ToTimedelta() < timedelta(seconds=6) for a in pending), pending
            items = await running_items(temporal_client, handle.id)
            [waiting] = items.waiting
            assert (waiting.error_class, waiting.count) == ("storage_error", 2), items
            assert "object store" in waiting.message and waiting.since <= datetime.now(UTC)
            progress = [await temporal_client.get_workflow_handle(i).query(MediaItemWorkflow.progress) for i in running]
            assert [p.stage for p in progress] == ["commit", "commit"], progress
            env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
            env.update(TRAWL_DATA_DIR=str(down.data_dir), TRAWL_TEMPORAL__ADDRESS=down.temporal.address,
                       TRAWL_TEMPORAL__EMBEDDED="false",
                       TRAWL_TEMPORAL__TASK_QUEUE_PREFIX=down.temporal.task_queue_prefix,
                       TRAWL_CATALOG__URL=down.catalog_url)
            # In a thread: the worker answering its query runs on this event loop.
            shown = await asyncio.to_thread(subprocess.run, [TRAWL, "crawl-status", handle.id], env=env,
                                            cwd=tmp_path, capture_output=True, text=True, timeout=60)
            assert shown.returncode == 0, shown.stderr
            assert re.search(r"^waiting   2 waiting: storage_error \(object store: .*\) since \d\d:\d\d:\d\d$",
                             shown.stdout, re.M), shown.stdout
            store_link.up()
            stats = await asyncio.wait_for(handle.result(), 60)
    assert stats.outcomes == {"committed": 2}, stats
