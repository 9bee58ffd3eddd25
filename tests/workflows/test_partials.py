"""Partial files of failed items: kept so a re-crawl resumes, removed by the workers' clean-up later."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import Client

from trawl.starter.client import item_result, start_item
from tests.conftest import make_settings
from tests.polling import until
from trawl.logs import configure_logging
from trawl.platforms.registry import default_registry
from trawl.settings import Settings
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.workdirs import OWNER_FILE
from trawl.worker.cleanup import clean_work_dir
from trawl.workflows.media_item import MediaItemWorkflow

SIZE = 3_000_000
CUT = 1_000_000


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str) -> Settings:
    # One download attempt: a cut body fails the item (truncated) with its bytes on disk.
    return make_settings(tmp_path, temporal_address,
                         retry={"download": {"maximum_attempts": 1, "initial_interval": "100ms"}})


def parts(settings: Settings) -> list[Path]:
    return sorted(settings.work_dir.rglob("*.part"))


async def test_a_failed_item_keeps_its_bytes_and_a_recrawl_resumes(temporal_client: Client, settings: Settings,
                                                                   sim: Simulator, worker) -> None:
    media = MediaFile("mp4", "failed-then-resumed", SIZE)
    sim.add_file("/cut.mp4", media, FileBehaviour(cut_at=CUT))
    url = sim.url("/cut.mp4")
    first = await start_item(temporal_client, settings, default_registry(), url)
    failed = await asyncio.wait_for(item_result(first.handle, url), 60)
    assert (failed.outcome, failed.error_class) == ("failed", "truncated"), failed
    kept = parts(settings)
    assert len(kept) == 1 and kept[0].stat().st_size == CUT
    again = await start_item(temporal_client, settings, default_registry(), url)
    done = await asyncio.wait_for(item_result(again.handle, url), 60)
    assert done.outcome == "committed" and done.assets[0].sha256 == media.sha256()
    downloads = [r for r in sim.stats["/cut.mp4"].ranges if r != "bytes=0-0"]  # not the resolver's probes
    assert downloads == [None, f"bytes={CUT}-"]  # resumed from the kept bytes
    assert parts(settings) == []


async def test_cleanup_removes_only_what_ended_items_left(temporal_client: Client, settings: Settings,
                                                          sim: Simulator, worker) -> None:
    sim.add_file("/cut.mp4", MediaFile("mp4", "cleanup-failed", SIZE), FileBehaviour(cut_at=CUT))
    sim.add_file("/slow.mp4", MediaFile("mp4", "cleanup-paused", 8_000_000), FileBehaviour(throttle_bps=1_000_000))
    failed = await start_item(temporal_client, settings, default_registry(), sim.url("/cut.mp4"))
    assert (await asyncio.wait_for(item_result(failed.handle, ""), 60)).outcome == "failed"
    paused = await start_item(temporal_client, settings, default_registry(), sim.url("/slow.mp4"))
    await until(lambda: sim.bytes_sent("/slow.mp4") > 300_000, "300 KB of the download served", 30, every=0.05)
    await paused.handle.signal(MediaItemWorkflow.pause)
    legacy = settings.work_dir / "made-before-owners"
    legacy.mkdir()
    (legacy / "video.part").write_bytes(b"x" * 100)
    await until(lambda: parts(settings), "three partial files", 30, every=0.05, holds=lambda found: len(found) == 3)

    assert await clean_work_dir(temporal_client, settings.work_dir, timedelta(hours=1)) == []  # nothing idle yet
    old = time.time() - 7200
    for path in settings.work_dir.rglob("*"):
        os.utime(path, (old, old))
    removed = await clean_work_dir(temporal_client, settings.work_dir, timedelta(hours=1))
    assert removed == [failed.workflow_id]
    owners = {p.parent.joinpath(OWNER_FILE).read_text() for p in parts(settings) if p.parent != legacy}
    assert owners == {paused.workflow_id}  # a paused item keeps its bytes however long it waits
    assert (legacy / "video.part").exists()
    await paused.handle.cancel()


async def test_discard_logs_its_own_stage(temporal_client: Client, settings: Settings, sim: Simulator, worker,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    sim.add_file("/slow.mp4", MediaFile("mp4", "discarded", 8_000_000), FileBehaviour(throttle_bps=1_000_000))
    configure_logging(json=True)
    try:
        started = await start_item(temporal_client, settings, default_registry(), sim.url("/slow.mp4"))
        await until(lambda: sim.bytes_sent("/slow.mp4") > 300_000, "300 KB of the download served", 30, every=0.05)
        await started.handle.cancel()
        assert (await asyncio.wait_for(item_result(started.handle, ""), 60)).outcome == "cancelled"
    finally:
        logging.getLogger().handlers.clear()
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    stages = {line["stage"] for line in lines if line.get("event") == "activity" and line.get("task_id") == started.workflow_id}
    assert "discard" in stages and parts(settings) == []
