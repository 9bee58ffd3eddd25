"""Crawls from the command line: --detach, crawls, crawl-status, pause/resume/cancel by crawl id."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time
from pathlib import Path

from temporalio.client import Client
from temporalio.service import RPCError

from tests.e2e.test_cli import TRAWL, records, run, trawl_env
from tests.polling import until
from trawl.contracts import CRAWL_WORKFLOW, STATS, CrawlStats, workflow_queue
from trawl.platforms.registry import default_registry
from tests.tcpproxy import TcpProxy
from trawl.settings import Settings, SourceSettings
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.starter.client import crawl_handle
from trawl.worker.main import running_worker


def env_for(settings: Settings, tmp_path: Path, **extra: str) -> dict[str, str]:
    return trawl_env(tmp_path, settings.temporal.address,
                     TRAWL_TEMPORAL__TASK_QUEUE_PREFIX=settings.temporal.task_queue_prefix,
                     TRAWL_CATALOG__URL=settings.catalog.url, **extra)


async def cli(args: list[str], env: dict[str, str], cwd: Path):
    return await asyncio.to_thread(run, args, env, cwd)


async def wait_finished(crawl_id: str, env: dict[str, str], cwd: Path, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        done = await cli(["crawl-status", crawl_id, "--json"], env, cwd)
        assert done.returncode in (0, 1), done.stderr  # 1: items failed
        status = json.loads(done.stdout)
        if status["status"] != "RUNNING":
            return status
        assert time.monotonic() < deadline
        await asyncio.sleep(0.5)


async def test_detached_crawl_with_a_source_and_url_list(temporal_client: Client, settings: Settings,
                                                         sim: Simulator, tmp_path: Path) -> None:
    for i in range(4):
        sim.add_file(f"/d/{i}.mp4", MediaFile("mp4", f"d{i}", 30_000 + i))
    url_file = tmp_path / "list.txt"
    url_file.write_text("\n".join(sim.url(f"/d/{i}.mp4") for i in (2, 3)) + "\n")
    # The worker expands the source, so the worker's settings must name it.
    settings = settings.model_copy(update={"sources": [SourceSettings(name="list", kind="url_file",
                                                                      path=str(url_file))]})
    env = env_for(settings, tmp_path)
    async with running_worker(temporal_client, settings):
        started = await cli(["crawl", "--detach", "--json", "--source", "list", sim.url("/d/0.mp4"),
                             sim.url("/d/1.mp4"), "ftp://nope/x"], env, tmp_path)
        assert started.returncode == 0, started.stderr
        out = json.loads(started.stdout)
        crawl_id = out["crawl_id"]
        assert crawl_id.startswith("crawl-") and "ftp://nope/x" in out["refused"][0]
        status = await wait_finished(crawl_id, env, tmp_path)
    assert status["status"] == "COMPLETED" and status["stats"]["outcomes"] == {"committed": 4}
    listed = await cli(["crawls"], env, tmp_path)
    assert crawl_id in listed.stdout and "4 committed" in listed.stdout
    items = records((await cli(["items", "--json"], env, tmp_path)).stdout)
    assert len(items) == 4


async def test_pause_resume_cancel_a_crawl_by_id(temporal_client: Client, settings: Settings, sim: Simulator,
                                                 tmp_path: Path) -> None:
    # Slow enough that the crawl is still running after several CLI round trips on a loaded machine.
    for i in range(6):
        sim.add_file(f"/s/{i}.mp4", MediaFile("mp4", f"s{i}", 8_000_000), FileBehaviour(throttle_bps=500_000))
    env = env_for(settings, tmp_path)
    async with running_worker(temporal_client, settings):
        started = await cli(["crawl", "--detach", "--concurrency", "2",
                             *[sim.url(f"/s/{i}.mp4") for i in range(6)]], env, tmp_path)
        crawl_id = started.stdout.strip()
        assert (await cli(["pause", crawl_id], env, tmp_path)).returncode == 0
        shown = await cli(["crawl-status", crawl_id, "--json"], env, tmp_path)
        paused = json.loads(shown.stdout)
        assert paused["stats"] and paused["stats"]["paused"] is True, (shown.stdout, shown.stderr)
        assert (await cli(["resume", crawl_id], env, tmp_path)).returncode == 0
        assert (await cli(["cancel", crawl_id], env, tmp_path)).returncode == 0
        status = await wait_finished(crawl_id, env, tmp_path)
    assert status["status"] == "CANCELLED" and status["stats"], status
    assert status["stats"]["cancelled"] is True and status["stats"]["queued"] == 0
    assert not list(settings.work_dir.rglob("*.part"))


async def test_a_known_url_is_a_duplicate_at_once_without_an_item_workflow(
        temporal_client: Client, settings: Settings, sim: Simulator, tmp_path: Path) -> None:
    sim.add_file("/k/once.mp4", MediaFile("mp4", "known-once", 30_000))
    url = sim.url("/k/once.mp4")
    env = env_for(settings, tmp_path)
    first = await cli(["crawl", "--json", url], env, tmp_path)
    assert first.returncode == 0, first.stderr
    [committed] = records(first.stdout)
    again = await cli(["crawl", "--json", url, url], env, tmp_path)
    assert again.returncode == 0, again.stderr
    results = records(again.stdout)
    # One item given twice: a line for each, both duplicates.
    assert [(r["outcome"], r["canonical_key"], r["id"]) for r in results] == [
        ("duplicate", committed["canonical_key"], committed["id"])] * 2
    runs = [w async for w in temporal_client.list_workflows(f"WorkflowId = '{committed['id']}'")]
    assert len(runs) == 1  # the first crawl's run only: the known URL started nothing


async def test_crawl_status_waits_for_a_worker_that_answers_late(temporal_client: Client, temporal_address: str,
                                                                 settings: Settings, sim: Simulator,
                                                                 tmp_path: Path) -> None:
    """A loaded worker answers a query late: crawl-status waits for it (it said "no worker answered"
    after 10 s in 12 of 25 looks at load ~11 while workers were alive). The worker's link to the
    Temporal server is frozen for 15 s here, as a worker too busy to answer."""
    sim.add_file("/late/x.mp4", MediaFile("mp4", "late-x", 8_000_000), FileBehaviour(throttle_bps=100_000))
    env = env_for(settings, tmp_path)
    with TcpProxy(int(temporal_address.rsplit(":", 1)[1])) as link:
        through = await Client.connect(f"127.0.0.1:{link.port}", namespace=temporal_client.namespace)
        async with running_worker(through, settings):
            started = await cli(["crawl", "--detach", sim.url("/late/x.mp4")], env, tmp_path)
            assert started.returncode == 0, started.stderr
            crawl_id = started.stdout.strip()
            first = await cli(["crawl-status", crawl_id, "--json"], env, tmp_path)
            assert first.returncode == 0 and json.loads(first.stdout)["stats"], first.stderr
            link.freeze()
            look = asyncio.create_task(cli(["crawl-status", crawl_id, "--json"], env, tmp_path))
            await asyncio.sleep(15)
            link.thaw()
            late = await look
            assert late.returncode == 0, late.stderr
            assert json.loads(late.stdout)["stats"]["running"] == 1
            await crawl_handle(temporal_client, crawl_id).terminate()


async def test_crawl_status_json_says_running_unanswered_when_no_worker_answers(
        temporal_client: Client, settings: Settings, sim: Simulator, tmp_path: Path) -> None:
    """With nobody to answer a running crawl's query, `crawl-status --json` still prints one JSON
    object (running, no counts, why) beside its one line on stderr, and exits 1."""
    sim.add_file("/unanswered/x.mp4", MediaFile("mp4", "unanswered-x", 2_000))
    env = env_for(settings, tmp_path)
    started = await cli(["crawl", "--detach", sim.url("/unanswered/x.mp4")], env, tmp_path)
    assert started.returncode == 0, started.stderr  # no worker polls this test's queues
    crawl_id = started.stdout.strip()
    try:
        shown = await cli(["crawl-status", crawl_id, "--json"], env, tmp_path)
        assert shown.returncode == 1
        status = json.loads(shown.stdout)
        assert (status["id"], status["status"], status["stats"]) == (crawl_id, "RUNNING", None)
        assert "no worker answered" in status["unanswered"] and "no worker answered" in shown.stderr
    finally:
        await crawl_handle(temporal_client, crawl_id).terminate()


async def test_an_attached_crawl_is_a_crawl_like_any_other(temporal_client: Client, settings: Settings,
                                                           sim: Simulator, tmp_path: Path) -> None:
    """`trawl crawl URL...` starts a CrawlWorkflow and follows it: `crawls` lists it, `pause` and
    `resume` steer it, and the command prints each result and exits when the crawl ends."""
    urls = []
    for i in range(2):
        sim.add_file(f"/att/{i}.mp4", MediaFile("mp4", f"attached-{i}", 3_000_000 + i),
                     FileBehaviour(throttle_bps=300_000))  # about 10 s each, one at a time: time to steer
        urls.append(sim.url(f"/att/{i}.mp4"))
    env = env_for(settings, tmp_path)
    proc = subprocess.Popen([TRAWL, "crawl", "--concurrency", "1", *urls], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = default_registry().route(urls[0]).workflow_id

        async def crawl_of_first() -> str | None:
            try:
                desc = await temporal_client.get_workflow_handle(first).describe()
            except RPCError:
                return None
            found = (desc.search_attributes or {}).get("CrawlId")
            return str(found[0]) if found else None

        crawl_id = await until(crawl_of_first, "the attached crawl's first item", timeout=60)
        paused_it = await cli(["pause", crawl_id], env, tmp_path)
        assert paused_it.returncode == 0, paused_it.stderr
        handle = crawl_handle(temporal_client, crawl_id)

        async def paused() -> bool:
            return (await handle.query(STATS, result_type=CrawlStats)).paused

        await until(paused, "the crawl to say it is paused", timeout=30)
        # Listed while paused (a listing may take long on a loaded machine: the crawl waits).
        listed = await cli(["crawls", "--limit", "1000"], env, tmp_path)
        assert re.search(rf"^{crawl_id}\s.*running", listed.stdout, re.M), (listed.stdout, listed.stderr)
        assert proc.poll() is None  # the command waits while its crawl is paused
        resumed = await cli(["resume", crawl_id], env, tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        out, err = await asyncio.to_thread(proc.communicate, timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert sorted(line.split()[0] + " " + line.split()[-1] for line in out.splitlines()) == \
        sorted(f"committed {u}" for u in urls)
    stats = await handle.result()
    assert stats.outcomes == {"committed": 2} and not stats.paused


async def test_crawls_lists_this_deployments_crawls_only(temporal_client: Client, settings: Settings,
                                                         tmp_path: Path) -> None:
    """Two deployments on one Temporal server (two task queue prefixes): each one's `trawl crawls`
    lists its own crawls, not the other's (no worker needed: neither crawl is asked anything)."""
    env = env_for(settings, tmp_path)
    suffix = time.time_ns()
    ours = await temporal_client.start_workflow(CRAWL_WORKFLOW, None, id=f"crawl-ours-{suffix}",
                                                task_queue=workflow_queue(settings.temporal.task_queue_prefix))
    theirs = await temporal_client.start_workflow(CRAWL_WORKFLOW, None, id=f"crawl-theirs-{suffix}",
                                                  task_queue=workflow_queue(f"other-{suffix}"))
    try:
        async def both_visible() -> bool:
            query = f"WorkflowId = '{ours.id}' OR WorkflowId = '{theirs.id}'"
            return len([e async for e in temporal_client.list_workflows(query)]) == 2

        await until(both_visible, "both crawls in Temporal's visibility store", timeout=30)
        listed = await cli(["crawls", "--limit", "1000"], env, tmp_path)
        assert listed.returncode == 0, listed.stderr
        assert re.search(rf"^{ours.id}\s.*running", listed.stdout, re.M), listed.stdout
        assert theirs.id not in listed.stdout, listed.stdout
    finally:
        for handle in (ours, theirs):
            await handle.terminate("test over")
