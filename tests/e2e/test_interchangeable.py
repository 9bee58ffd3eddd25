"""Workers on one task queue are interchangeable: a one-shot command does not add a worker of its
own settings beside the deployment's running workers."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from temporalio.client import Client

from trawl.starter.client import live_workers
from tests.e2e.test_cli import records, run, trawl_env
from tests.e2e.test_worker_kill import start_worker
from tests.polling import until
from trawl.settings import Settings
from trawl.simulator import MediaFile, Simulator


async def wait_for_workers(client: Client, settings: Settings, timeout: float = 60) -> list[str]:
    return await until(lambda: live_workers(client, settings), "the worker to poll", timeout, every=0.2)


async def test_a_one_shot_crawl_leaves_the_work_to_running_workers_and_their_policy(
        temporal_client: Client, settings: Settings, sim: Simulator, tmp_path: Path) -> None:
    """The running worker refuses loopback; the client's TRAWL_NET__ALLOW_PRIVATE=true must not
    let any item through, on any stage: every item is blocked, the same way, every time."""
    for i in range(3):
        sim.add_file(f"/m/{i}.mp4", MediaFile("mp4", f"interchangeable-{i}", 300_000))
    urls = [sim.url(f"/m/{i}.mp4") for i in range(3)]
    worker = start_worker(settings, tmp_path, TRAWL_NET__ALLOW_PRIVATE="false")
    try:
        identities = await wait_for_workers(temporal_client, settings)
        assert all("one-shot" not in identity for identity in identities)
        env = trawl_env(tmp_path, settings.temporal.address,
                        TRAWL_TEMPORAL__TASK_QUEUE_PREFIX=settings.temporal.task_queue_prefix,
                        TRAWL_CATALOG__URL=settings.catalog.url, TRAWL_NET__ALLOW_PRIVATE="true")
        for _ in range(2):
            done = await asyncio.to_thread(run, ["crawl", "--json", *urls], env, tmp_path)
            assert done.returncode == 1, done.stderr
            got = records(done.stdout)
            assert sorted((r["outcome"], r["error_class"]) for r in got) == [("failed", "blocked_address")] * 3
            notices = [line for line in done.stderr.splitlines() if "no worker started here" in line]
            assert len(notices) == 1, done.stderr
        assert sum(sim.stats[f"/m/{i}.mp4"].requests for i in range(3)) == 0
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)


async def test_with_no_worker_polling_a_one_shot_crawl_runs_its_own(temporal_client: Client, settings: Settings,
                                                                    sim: Simulator, tmp_path: Path) -> None:
    sim.add_file("/alone.mp4", MediaFile("mp4", "alone", 200_000))
    assert await live_workers(temporal_client, settings) == []
    env = trawl_env(tmp_path, settings.temporal.address,
                    TRAWL_TEMPORAL__TASK_QUEUE_PREFIX=settings.temporal.task_queue_prefix,
                    TRAWL_CATALOG__URL=settings.catalog.url)
    done = await asyncio.to_thread(run, ["crawl", "--json", sim.url("/alone.mp4")], env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert [r["outcome"] for r in records(done.stdout)] == ["committed"]
    assert "no worker started here" not in done.stderr
    # Its own worker was marked one-shot, so a later command does not wait on it.
    assert await live_workers(temporal_client, settings) == []
