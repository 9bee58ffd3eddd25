"""Crawl histories under many groupings of child completions, each replayed.

A crawl's decisions must come from what its own run recorded, in its own order, never from when a
callback ran relative to the loop's wake-up: otherwise a replay that sees the same events grouped
in other workflow tasks (a sticky-queue timeout, a worker restart, tiny items finishing together)
issues other commands and the crawl fails for ever with NON_DETERMINISTIC_ERROR.

These tests make such groupings happen, on a dev server of their own that hands out histories in
pages of a few events: dozens of tiny items finishing together, workers that cache no workflow
(every workflow task replays the whole history), workflow workers stopped and started mid-crawl,
worker processes frozen past the sticky queue's timeout and thawed with a stale cache, and
multi-part videos whose parts are both in the URL list and announced by part 1's ``more``. Every
history they produced must replay, and no workflow task may have failed to.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer, Worker

from temporalio.testing import WorkflowEnvironment

from tests.conftest import TEMPORAL_BIN, make_settings, postgres_mode, test_catalog_url
from tests.e2e.test_chaos import cluster_env, start_workers, stop, trawl
from tests.e2e.test_platforms import platform_env
from tests.polling import until
from tests.worker.test_supervisor import started_pids
from trawl.contracts import SEARCH_ATTRIBUTES, workflow_queue
from trawl.platforms.bilibili.site import TEN_PARTS, install_bilibili_site
from trawl.platforms.registry import build_registry
from trawl.settings import PlatformsSettings, Settings
from trawl.simulator import MediaFile, Simulator
from trawl.starter.client import start_crawl
from trawl.worker.main import running_worker, with_trawl_failures
from trawl.workflows.crawl import CrawlStats, CrawlWorkflow
from trawl.workflows.media_item import MediaItemWorkflow

TINY = 48  # tiny items per crawl: finished inside their fetch, many completions per workflow task
PAGE = 7  # history events per page
FROZEN_ITEMS = 80
FREEZE_S = 13  # past the sticky queue's schedule-to-start timeout (10 s)
TWO_PARTS = "BV1GJ411x7h7"


@contextlib.asynccontextmanager
async def workflow_worker(client: Client, settings: Settings) -> AsyncIterator[None]:
    """A worker of the workflows only that caches none: each workflow task replays the history."""
    worker = Worker(with_trawl_failures(client), task_queue=workflow_queue(settings.temporal.task_queue_prefix),
                    workflows=[MediaItemWorkflow, CrawlWorkflow], max_cached_workflows=0)
    task = asyncio.create_task(worker.run())
    try:
        yield
    finally:
        await worker.shutdown()
        await asyncio.gather(task, return_exceptions=True)


def nondeterminism(history: WorkflowHistory) -> list[str]:
    """The workflow tasks of this run that failed to replay (an UnhandledCommand failure is the
    server refusing a close while events arrived: the task runs again, nothing is wrong)."""
    failed = (event.workflow_task_failed_event_attributes for event in history.events
              if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED)
    return [f.failure.message for f in failed
            if f.cause == WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR]


async def assert_replayed(histories: list[WorkflowHistory]) -> None:
    """No workflow task of these runs failed to replay, and each replays on today's code."""
    failures = [f"{h.workflow_id}: {message}" for h in histories for message in nondeterminism(h)]
    assert not failures, failures
    replayer = Replayer(workflows=[MediaItemWorkflow, CrawlWorkflow])
    replayed = []
    for history in histories:
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        if result.replay_failure is not None:
            replayed.append(f"{history.workflow_id}: {result.replay_failure}")
    assert not replayed, replayed


async def runs(client: Client, crawl_id: str) -> list[WorkflowHistory]:
    found = [w async for w in client.list_workflows(f"WorkflowId = '{crawl_id}'")]
    return [await client.get_workflow_handle(crawl_id, run_id=w.run_id).fetch_history() for w in found]


@pytest.fixture(scope="module")
async def paged_env() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server of its own that hands out histories in pages of a few events, so every
    workflow task a worker replays in full reads its history in many pages."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=TEMPORAL_BIN, search_attributes=list(SEARCH_ATTRIBUTES),
        dev_server_log_level="error",
        dev_server_extra_args=["--dynamic-config-value", f"frontend.historyMaxPageSize={PAGE}"])
    yield env
    await env.shutdown()


@pytest.mark.slow
@pytest.mark.skipif(postgres_mode(), reason="run in the SQLite pass only: the catalog plays no part in replay")
async def test_crawl_histories_replay_under_every_grouping(paged_env: WorkflowEnvironment, tmp_path: Path) -> None:
    temporal_client = paged_env.client
    temporal_address = temporal_client.service_client.config.target_host
    with Simulator() as sim, Simulator() as bili_sim:
        bili = install_bilibili_site(bili_sim)
        settings = make_settings(tmp_path, temporal_address, platforms=PlatformsSettings(bilibili=bili.settings()),
                                 download={"with_fetch_size": "1MiB"},
                                 retry={stage: {"initial_interval": "100ms", "maximum_interval": "300ms"}
                                        for stage in ("fetch", "download", "verify", "commit")})
        registry = build_registry(settings.platforms)
        parts = [bili.url(TEN_PARTS), *(bili.url(TEN_PARTS, p) for p in range(2, 11)),
                 bili.url(TWO_PARTS), bili.url(TWO_PARTS, 2)]
        crawls = []
        async with running_worker(temporal_client, settings, workflows=()):
            # Three crawls, each its own window: a narrow one, one as wide as its items, and one in
            # between whose parts come before the videos that announce them.
            for crawl, concurrency in enumerate((4, 64, 16)):
                urls = []
                for i in range(TINY):
                    sim.add_file(f"/g{crawl}/{i}.mp4", MediaFile("mp4", f"g{crawl}-{i}", 2_000 + i))
                    urls.append(sim.url(f"/g{crawl}/{i}.mp4"))
                listed = parts if crawl != 2 else parts[::-1]
                urls[TINY // 2:TINY // 2] = listed
                crawls.append((urls, concurrency))
            handles = []
            async with workflow_worker(temporal_client, settings):
                for urls, concurrency in crawls:
                    handle, _ = await start_crawl(temporal_client, settings, registry, urls,
                                                  concurrency=concurrency, history_limit=300)
                    handles.append(handle)
                await asyncio.sleep(1.5)
            # The workflows' worker is gone for a while: completions pile up, then arrive together.
            for pause in (2.0, 0.5, 1.0):
                await asyncio.sleep(pause)
                async with workflow_worker(temporal_client, settings):
                    await asyncio.sleep(1.0)
            async with workflow_worker(temporal_client, settings):
                results = await asyncio.gather(*(asyncio.wait_for(h.result(), 240) for h in handles),
                                               return_exceptions=True)
        histories = [history for handle in handles for history in await runs(temporal_client, handle.id)]
        assert len(histories) >= len(handles)
        await assert_replayed(histories)
        for result, (urls, _) in zip(results, crawls):
            assert isinstance(result, CrawlStats), result
            # Every URL given, and every part a video announced, ends committed or duplicate.
            assert set(result.outcomes) <= {"committed", "duplicate"}, result
            assert sum(result.outcomes.values()) >= len(urls), result


@pytest.mark.slow
@pytest.mark.timeout(420)
@pytest.mark.skipif(postgres_mode(), reason="run in the SQLite pass only: the catalog plays no part in replay")
async def test_crawl_histories_replay_after_workers_froze(paged_env: WorkflowEnvironment, tmp_path: Path) -> None:
    """Worker processes with their caches on, frozen (SIGSTOP) longer than the sticky queue's
    schedule-to-start timeout while their crawls' children finish: the crawls' tasks move to the
    other process, then the frozen one thaws with a cache that is behind the history."""
    client = paged_env.client
    port = int(client.service_client.config.target_host.rsplit(":", 1)[1])
    with Simulator() as sim, Simulator() as bili_sim:
        bili = install_bilibili_site(bili_sim)
        urls = []
        for i in range(FROZEN_ITEMS):
            sim.add_file(f"/f/{i}.mp4", MediaFile("mp4", f"f-{i}", 2_000 + i))
            urls.append(sim.url(f"/f/{i}.mp4"))
        for at in range(0, FROZEN_ITEMS, FROZEN_ITEMS // 4):
            urls[at:at] = [bili.url(TEN_PARTS, p) for p in range(10, 0, -1)] + [bili.url(TWO_PARTS)]
        url_file = tmp_path / "urls.txt"
        url_file.write_text("\n".join(urls) + "\n")
        env = cluster_env(tmp_path, port, test_catalog_url(), TRAWL_DOWNLOAD__WITH_FETCH_SIZE="1MiB",
                          TRAWL_TEMPORAL__TASK_QUEUE_PREFIX=f"frozen-{uuid.uuid4().hex[:8]}",
                          **platform_env("bilibili", bili.settings()))
        supervisor, log = start_workers(env, tmp_path, processes=2)
        crawl_ids = []
        try:
            for concurrency in (8, 48):
                started = await asyncio.to_thread(
                    trawl, ["crawl", "--detach", "--file", str(url_file), "--concurrency", str(concurrency)],
                    env, tmp_path)
                assert started.returncode == 0, started.stderr
                crawl_ids.append(started.stdout.strip())
            handles = [client.get_workflow_handle(crawl_id, result_type=CrawlStats) for crawl_id in crawl_ids]
            done = asyncio.gather(*(h.result() for h in handles), return_exceptions=True)
            froze = 0
            while not done.done() and froze < 4:
                pids = [pid for pid in started_pids(log) if Path(f"/proc/{pid}").exists()]
                if pids:
                    pid = pids[froze % len(pids)]
                    os.kill(pid, signal.SIGSTOP)
                    await asyncio.sleep(FREEZE_S)
                    os.kill(pid, signal.SIGCONT)
                    froze += 1
                await asyncio.sleep(1)
            results = await asyncio.wait_for(done, 240)
        finally:
            for pid in started_pids(log):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
            stop(supervisor)
        await assert_replayed([history for crawl_id in crawl_ids for history in await runs(client, crawl_id)])
        assert froze >= 1
        for result in results:
            assert isinstance(result, CrawlStats), result
            assert set(result.outcomes) <= {"committed", "duplicate"}, result


async def test_a_part_this_run_already_finished_is_not_started_again(temporal_client: Client, tmp_path: Path,
                                                                     temporal_address: str) -> None:
    """Part 2 given before part 1, one item at a time: part 2 has finished when part 1 names it in
    ``more``. The crawl counts it as a duplicate from its own record of what it started, whatever
    its window holds then (before, it started part 2's workflow a second time)."""
    with Simulator() as bili_sim:
        bili = install_bilibili_site(bili_sim)
        settings = make_settings(tmp_path, temporal_address, platforms=PlatformsSettings(bilibili=bili.settings()))
        async with running_worker(temporal_client, settings):
            handle, _ = await start_crawl(temporal_client, settings, build_registry(settings.platforms),
                                          [bili.url(TWO_PARTS, 2), bili.url(TWO_PARTS)], concurrency=1)
            stats: CrawlStats = await asyncio.wait_for(handle.result(), 120)
    assert stats.outcomes == {"committed": 2, "duplicate": 1}, stats.outcomes
    # Runs of this crawl only: other tests on this server crawl the same video.
    query = f"WorkflowId = 'item-bilibili:{TWO_PARTS}_p2' AND CrawlId = '{handle.id}'"

    async def part2_runs() -> list[str]:
        return [w.run_id async for w in temporal_client.list_workflows(query)]
    assert len(await until(part2_runs, "part 2's run listed", 20)) == 1, await part2_runs()
