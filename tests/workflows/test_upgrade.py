"""Upgrading workers while items and a crawl run: version N starts them, is stopped mid-download,
version N+1 (a change behind workflow.patched) finishes them, and every history replays."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.worker import Replayer

from trawl.starter.client import item_result, start_crawl, start_item
from tests.conftest import make_settings
from tests.polling import until
from tests.workflows.upgraded import UpgradedMediaItemWorkflow
from trawl.platforms.registry import default_registry
from trawl.settings import Settings
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.storage.catalog import Catalog
from trawl.worker.main import running_worker
from trawl.workflows.crawl import CrawlWorkflow

SIZE = 3_000_000


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str) -> Settings:
    return make_settings(tmp_path, temporal_address, download={"heartbeat_timeout": "3s"},
                         worker={"graceful_shutdown_timeout": "3s"},
                         retry={s: {"initial_interval": "100ms", "maximum_interval": "500ms"}
                                for s in ("fetch", "download", "verify", "commit")})


@pytest.mark.slow
async def test_workers_of_the_next_version_finish_what_the_last_one_started(
        temporal_client: Client, settings: Settings, sim: Simulator) -> None:
    paths = [f"/up/{i}.mp4" for i in range(6)]
    for i, path in enumerate(paths):
        sim.add_file(path, MediaFile("mp4", f"upgrade-{i}", SIZE), FileBehaviour(throttle_bps=600_000))
    registry = default_registry()
    async with running_worker(temporal_client, settings):  # version N
        items = [await start_item(temporal_client, settings, registry, sim.url(p)) for p in paths[:3]]
        crawl, _ = await start_crawl(temporal_client, settings, registry, [sim.url(p) for p in paths[3:]],
                                     concurrency=3)
        await until(lambda: all(sim.bytes_sent(p) > 300_000 for p in paths), "every download to get going", 60)
    # Version N is gone mid-download (graceful stop: the downloads kept their bytes).
    assert all(sim.bytes_sent(p) < SIZE for p in paths)
    async with running_worker(temporal_client, settings, workflows=(UpgradedMediaItemWorkflow, CrawlWorkflow)):
        results = [await asyncio.wait_for(item_result(s.handle, s.url), 120) for s in items]
        stats = await asyncio.wait_for(crawl.result(), 120)
    assert [r.outcome for r in results] == ["committed"] * 3
    assert stats.outcomes == {"committed": 3}
    assert Catalog(settings.catalog_url).count() == 6
    for started in items:
        memo = await (await started.handle.describe()).memo()
        assert memo.get("finished_by") == "N+1"  # the new code ran for items the old one started
    assert all(sim.bytes_sent(p) < 2 * SIZE for p in paths)  # resumed, not restarted
    replayer = Replayer(workflows=[UpgradedMediaItemWorkflow, CrawlWorkflow])
    for started in items:
        await replayer.replay_workflow(await started.handle.fetch_history())
    await replayer.replay_workflow(await crawl.fetch_history())
