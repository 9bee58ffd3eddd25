"""Two hosts on one machine: one Temporal server, one catalog database, SeaweedFS for blobs, and two
worker groups with their own host id, data and scratch directories and no directory in common.
Host A dies for good mid-crawl (or between download and verify); host B finishes everything."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

import pytest
from temporalio.client import Client

from trawl.starter.client import item_result, start_crawl, start_item
from tests.conftest import make_settings, test_catalog_url
from tests.e2e.test_cli import TRAWL
from tests.s3server import SeaweedFS, s3_url
from tests.polling import until as wait_until
from trawl.platforms.registry import default_registry
from trawl.settings import Settings, StorageSettings
from trawl.storage.blobs import hash_blob, key_sha256, open_blob_store
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.storage.catalog import Catalog

ITEMS = 40
SIZE = 2_000_000


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str, s3_server: SeaweedFS) -> Settings:
    # The starter's view: short host-loss detection, so a dead host is noticed in seconds. The
    # catalog must be one both hosts reach: a file in the starter's directory stands in for the
    # database server when the suite runs on SQLite.
    catalog = test_catalog_url() or f"sqlite:///{tmp_path / 'shared-catalog.db'}"
    return make_settings(tmp_path, temporal_address, catalog_url=catalog, download={"heartbeat_timeout": "3s"},
                         worker={"local_schedule_to_start": "6s"},
                         storage=StorageSettings(url=s3_url(), s3_endpoint_url=s3_server.endpoint),
                         retry={s: {"initial_interval": "200ms", "maximum_interval": "1s"}
                                for s in ("fetch", "download", "verify", "commit")})


def start_host(settings: Settings, tmp_path: Path, host: str, processes: int = 1,
               **extra: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
    env.update(
        TRAWL_DATA_DIR=str(tmp_path / f"{host}-data"), TRAWL_NET__ALLOW_PRIVATE="true",
        TRAWL_STORAGE__URL=settings.storage.url, TRAWL_STORAGE__S3_ENDPOINT_URL=settings.storage.s3_endpoint_url,
        TRAWL_TEMPORAL__ADDRESS=settings.temporal.address, TRAWL_TEMPORAL__EMBEDDED="false",
        TRAWL_TEMPORAL__TASK_QUEUE_PREFIX=settings.temporal.task_queue_prefix,
        TRAWL_CATALOG__URL=settings.catalog_url, TRAWL_WORKER__METRICS_PORT="0",
        TRAWL_WORKER__HOST_ID=host, TRAWL_WORKER__WORK_DIR=str(tmp_path / f"{host}-scratch"),
        TRAWL_WORKER__PROCESSES=str(processes), TRAWL_WORKER__GRACEFUL_SHUTDOWN_TIMEOUT="2s",
    )
    env.update(extra)
    log = open(tmp_path / f"{host}.log", "ab")
    return subprocess.Popen([TRAWL, "worker"], env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def parts(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*.part")] if directory.exists() else []


def kill_host(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def assert_store_consistent(settings: Settings, tmp_path: Path, expected_items: int) -> None:
    catalog = Catalog(settings.catalog_url)
    items = catalog.list(limit=1000)
    catalog.close()
    assert len(items) == expected_items == len({i.canonical_key for i in items})
    store = open_blob_store(settings)
    try:
        objects = list(store.iterate())
        assert len(objects) == expected_items
        assert all(hash_blob(store, o.key)[0] == key_sha256(o.key) for o in objects)  # every object hashes to its key
        assert {a.sha256 for i in items for a in i.assets} == {key_sha256(o.key) for o in objects}
    finally:
        store.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
    env.update(TRAWL_DATA_DIR=str(tmp_path / "fsck-data"), TRAWL_CATALOG__URL=settings.catalog_url,
               TRAWL_STORAGE__URL=settings.storage.url,
               TRAWL_STORAGE__S3_ENDPOINT_URL=settings.storage.s3_endpoint_url)
    fsck = subprocess.run([TRAWL, "fsck"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr


@pytest.mark.slow
@pytest.mark.timeout(400)
async def test_a_host_dies_for_good_mid_crawl_and_the_other_finishes(temporal_client: Client, settings: Settings,
                                                                      sim: Simulator, tmp_path: Path) -> None:
    urls = []
    for i in range(ITEMS):
        sim.add_file(f"/h/{i}.mp4", MediaFile("mp4", f"two-hosts-{i}", SIZE + i), FileBehaviour(throttle_bps=1_000_000))
        urls.append(sim.url(f"/h/{i}.mp4"))
    host_a = start_host(settings, tmp_path, "host-a")
    host_b = start_host(settings, tmp_path, "host-b")
    try:
        crawl, _ = await start_crawl(temporal_client, settings, default_registry(), urls, concurrency=16)
        await wait_until(lambda: len(parts(tmp_path / "host-a-scratch")) >= 2, "partial files on A", 120)  # A holds them
        kill_host(host_a)  # every process of host A, never restarted
        stats = await asyncio.wait_for(crawl.result(), 300)
    finally:
        for process in (host_a, host_b):
            if process.poll() is None:
                kill_host(process)
    assert stats.outcomes == {"committed": ITEMS}, stats.outcomes
    assert_store_consistent(settings, tmp_path, ITEMS)
    assert parts(tmp_path / "host-b-scratch") == []
    assert any((tmp_path / "host-a-scratch").rglob("*.part"))  # what A held died with it


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_a_host_killed_between_download_and_verify_loses_its_bytes_and_another_downloads_again(
        temporal_client: Client, settings: Settings, sim: Simulator, tmp_path: Path) -> None:
    media = MediaFile("mp4", "between", 600_000)
    sim.add_file("/between.mp4", media)
    slow_bin = tmp_path / "slow-bin"
    slow_bin.mkdir()
    marker = tmp_path / "verify-started-on-a"
    (slow_bin / "ffprobe").write_text(f"#!/bin/sh\ntouch {marker}\nsleep 300\n")
    (slow_bin / "ffprobe").chmod(0o755)
    sim.add_page("/watch/between", '<html><head><meta property="og:title" content="Between" />'
                 '<meta property="og:video" content="/between.mp4" /><meta property="og:video:type" '
                 'content="video/mp4" /><meta property="video:duration" content="10" /></head></html>')
    host_a = start_host(settings, tmp_path, "host-a", PATH=f"{slow_bin}:{os.environ['PATH']}")
    host_b = None
    try:
        started = await start_item(temporal_client, settings, default_registry(), sim.url("/watch/between"))
        await wait_until(marker.exists, timeout=60)  # downloaded on A, verify running there
        kill_host(host_a)
        host_b = start_host(settings, tmp_path, "host-b")
        result = await asyncio.wait_for(item_result(started.handle, ""), 120)
    finally:
        for process in (host_a, host_b):
            if process is not None and process.poll() is None:
                kill_host(process)
    assert result.outcome == "committed", result
    assert result.assets[0].sha256 == media.sha256()
    assert sim.stats["/between.mp4"].bytes_sent >= 2 * 600_000  # downloaded again on B
    assert_store_consistent(settings, tmp_path, 1)
    assert parts(tmp_path / "host-b-scratch") == []
