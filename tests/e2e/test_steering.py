"""Steering a running item from the command line: status, pause, resume, cancel."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from temporalio.client import Client, WorkflowHandle

from trawl.cli import progress_bar
from trawl.starter.client import item_result, start_item
from tests.e2e.test_cli import run, trawl_env
from tests.polling import until
from trawl.platforms.registry import default_registry
from trawl.settings import Settings
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.worker.main import running_worker

# At 1 MB/s, 30 s for the CLI round trips while it downloads, even on a loaded machine (under
# segment_min_size: one connection); the rest goes unthrottled after the resume.
SIZE = 30_000_000


def cli_env(settings: Settings, tmp_path: Path) -> dict[str, str]:
    return trawl_env(tmp_path, settings.temporal.address,
                     TRAWL_TEMPORAL__TASK_QUEUE_PREFIX=settings.temporal.task_queue_prefix,
                     TRAWL_CATALOG__URL=settings.catalog.url)


async def status(url: str, env: dict[str, str], tmp_path: Path) -> dict:
    done = await asyncio.to_thread(run, ["status", url, "--json"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def download_stopped(handle: WorkflowHandle) -> bool:
    """The item has no download activity scheduled or running (a paused one has finished stopping):
    a stage of its own, or download, verify and commit in one on the host it claimed."""
    pending = (await handle.describe()).raw_description.pending_activities
    return not any(a.activity_type.name in ("download", "small_item") for a in pending)


async def test_pause_status_resume_from_the_cli(temporal_client: Client, settings: Settings, sim: Simulator,
                                               tmp_path: Path) -> None:
    media = MediaFile("mp4", "steer", SIZE)
    throttled = FileBehaviour(throttle_bps=1_000_000)
    sim.add_file("/steer.mp4", media, throttled)
    url = sim.url("/steer.mp4")
    env = cli_env(settings, tmp_path)
    async with running_worker(temporal_client, settings):
        started = await start_item(temporal_client, settings, default_registry(), url)
        await until(lambda: sim.bytes_sent("/steer.mp4") >= 1_000_000, "1 MB downloaded")
        live = await status(url, env, tmp_path)
        assert live["status"] == "RUNNING" and live["progress"]["stage"] == "download"
        assert 0 < live["progress"]["bytes_done"] < SIZE and live["progress"]["bytes_total"] == SIZE

        paused = await asyncio.to_thread(run, ["pause", url], env, tmp_path)
        assert paused.returncode == 0 and started.workflow_id in paused.stdout
        # The download stops at its next heartbeat; once it has, what it kept is on disk.
        await until(lambda: download_stopped(started.handle), "the paused download stopped")
        [part] = settings.work_dir.rglob("*.part")
        held, requests = part.stat().st_size, sim.stats["/steer.mp4"].requests
        shown = await status(url, env, tmp_path)
        assert shown["progress"]["paused"] is True
        # Nothing moves while paused: no new request, the kept bytes untouched.
        assert (part.stat().st_size, sim.stats["/steer.mp4"].requests) == (held, requests)
        assert 0 < held < SIZE and sim.bytes_sent("/steer.mp4") < SIZE

        throttled.throttle_bps = None  # what is left comes at once
        assert (await asyncio.to_thread(run, ["resume", url], env, tmp_path)).returncode == 0
        result = await asyncio.wait_for(item_result(started.handle, url), 60)
        assert result.outcome == "committed" and result.assets[0].sha256 == media.sha256()
        final = await status(url, env, tmp_path)
        assert final["status"] == "COMPLETED" and final["result"]["outcome"] == "committed"


async def test_cancel_from_the_cli(temporal_client: Client, settings: Settings, sim: Simulator,
                                   tmp_path: Path) -> None:
    sim.add_file("/c.mp4", MediaFile("mp4", "cancel-cli", SIZE), FileBehaviour(throttle_bps=1_000_000))
    url = sim.url("/c.mp4")
    env = cli_env(settings, tmp_path)
    async with running_worker(temporal_client, settings):
        started = await start_item(temporal_client, settings, default_registry(), url)
        await until(lambda: sim.bytes_sent("/c.mp4") >= 500_000, "500 kB downloaded")
        assert (await asyncio.to_thread(run, ["cancel", url], env, tmp_path)).returncode == 0
        result = await asyncio.wait_for(item_result(started.handle, url), 60)
    assert result.outcome == "cancelled"
    assert not list(settings.work_dir.rglob("*.part"))
    shown = await status(url, env, tmp_path)
    assert shown["status"] == "CANCELLED" and shown["result"]["outcome"] == "cancelled"


def test_status_of_unknown_item_is_a_clear_error(settings: Settings, tmp_path: Path) -> None:
    done = run(["status", "url-doesnotexist"], cli_env(settings, tmp_path), tmp_path)
    assert done.returncode == 2 and "no item 'url-doesnotexist'" in done.stderr


def test_progress_bar_rendering() -> None:
    bar = progress_bar({"bytes_done": 512, "bytes_total": 1024, "stage": "download", "attempt": 2,
                        "last_error": "truncated: body ended\\n", "paused": False})
    assert bar.startswith("[" + "#" * 15 + "." * 15 + "]  50%")
    assert "download" in bar and "attempt 2" in bar and "truncated" in bar and "\n" not in bar
    assert "paused" in progress_bar({"bytes_done": 0, "bytes_total": None, "stage": "download", "attempt": 1,
                                     "last_error": None, "paused": True})
