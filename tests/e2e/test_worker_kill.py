"""Workers killed mid-download: the next worker resumes from the bytes on disk."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from temporalio.client import Client

from trawl.starter.client import item_result, start_item
from tests.conftest import make_settings
from tests.polling import until as wait_until
from trawl.platforms.registry import default_registry
from trawl.settings import Settings
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.storage.catalog import Catalog

TRAWL = str(Path(sys.executable).parent / "trawl")
SIZE = 6_000_000
RATE = 1_500_000


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str) -> Settings:
    return make_settings(tmp_path, temporal_address,
                         retry={"download": {"initial_interval": "200ms", "maximum_interval": "1s"}},
                         download={"heartbeat_timeout": "3s"}, worker={"graceful_shutdown_timeout": "5s"})


def start_worker(settings: Settings, tmp_path: Path, **extra: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
    env.update(
        TRAWL_DATA_DIR=str(settings.data_dir), TRAWL_NET__ALLOW_PRIVATE="true",
        TRAWL_TEMPORAL__ADDRESS=settings.temporal.address, TRAWL_TEMPORAL__EMBEDDED="false",
        TRAWL_TEMPORAL__TASK_QUEUE_PREFIX=settings.temporal.task_queue_prefix,
        TRAWL_CATALOG__URL=settings.catalog.url,
        TRAWL_WORKER__GRACEFUL_SHUTDOWN_TIMEOUT="5s",
    )
    env.update(extra)
    log = open(tmp_path / f"worker-{time.monotonic_ns()}.log", "wb")
    return subprocess.Popen([TRAWL, "worker"], env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
async def test_download_resumes_on_another_worker(how: signal.Signals, temporal_client: Client, settings: Settings,
                                                  sim: Simulator, tmp_path: Path) -> None:
    media = MediaFile("mp4", f"kill-{how.name}", SIZE)
    sim.add_file("/big.mp4", media, FileBehaviour(throttle_bps=RATE))
    first = start_worker(settings, tmp_path)
    second = None
    try:
        started = await start_item(temporal_client, settings, default_registry(), sim.url("/big.mp4"))
        await wait_until(lambda: sim.bytes_sent("/big.mp4") > SIZE * 0.45)
        first.send_signal(how)
        first.wait(timeout=30)
        if how == signal.SIGTERM:
            assert first.returncode == 0  # a graceful exit, within the shutdown timeout
        sent_before_restart = sim.bytes_sent("/big.mp4")
        parts = list(settings.work_dir.rglob("*.part"))
        assert parts and parts[0].stat().st_size > 0  # the bytes on disk outlive the worker
        second = start_worker(settings, tmp_path)
        result = await asyncio.wait_for(item_result(started.handle, ""), 120)
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    assert result.outcome == "committed", result
    assert result.assets[0].sha256 == media.sha256()
    resent = sim.bytes_sent("/big.mp4") - sent_before_restart
    assert resent < SIZE * 0.65, f"re-served {resent} of {SIZE} bytes: not resumed"
    assert sim.stats["/big.mp4"].ranges[-1] is not None  # the last request asked for a Range
    assert Catalog(settings.catalog_url).count() == 1
    assert list(settings.work_dir.rglob("*.part")) == []


def page_with_duration(title: str, video: str, seconds: float) -> str:
    return (f'<html><head><meta property="og:title" content="{title}" />'
            f'<meta property="og:video" content="{video}" /><meta property="og:video:type" content="video/mp4" />'
            f'<meta property="og:video:duration" content="{seconds}" /></head><body></body></html>')


@pytest.mark.slow
async def test_a_worker_killed_during_verify_hands_the_item_on_within_the_heartbeat_timeout(
        temporal_client: Client, settings: Settings, sim: Simulator, tmp_path: Path) -> None:
    """Verify hangs on the first worker (its ffprobe never answers); that worker is SIGKILLed.
    Verify's start-to-close is 30 minutes: only a heartbeat timeout brings the task to the next
    worker in seconds."""
    from trawl.worker.main import running_worker

    assert settings.retry.verify.start_to_close.total_seconds() >= 600  # the default, not shortened
    media = MediaFile("mp4", "verify-kill", 400_000)
    sim.add_file("/v.mp4", media)
    sim.add_page("/watch", page_with_duration("verify kill", "/v.mp4", 12.0))
    slow_bin = tmp_path / "slow-bin"
    slow_bin.mkdir()
    marker = tmp_path / "ffprobe-started"
    (slow_bin / "ffprobe").write_text(f"#!/bin/sh\ntouch {marker}\nsleep 300\necho 12.0\n")
    (slow_bin / "ffprobe").chmod(0o755)
    first = start_worker(settings, tmp_path, PATH=f"{slow_bin}:{os.environ['PATH']}")
    try:
        started = await start_item(temporal_client, settings, default_registry(), sim.url("/watch"))
        await wait_until(marker.exists, timeout=60)
        os.killpg(first.pid, signal.SIGKILL)  # the worker and the ffprobe it started
        first.wait(timeout=30)
        async with running_worker(temporal_client, settings):
            result = await asyncio.wait_for(item_result(started.handle, ""), 90)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
    assert result.outcome == "committed", result
    assert result.assets[0].sha256 == media.sha256()
    assert Catalog(settings.catalog_url).count() == 1
