"""Watches end to end: `trawl watch` as a user runs it, Temporal Schedules on a real dev server, a
worker, and a simulated site whose feed and URL list grow between runs.

Intervals are a few seconds; every wait is on a condition with a deadline.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import signal
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleDescription,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
)
from temporalio.service import RPCError

from trawl.starter.client import connect, item_options
from trawl.starter.watches import Watch, WatchRun, get_watch, run_of, schedule_id, trigger_watch
from tests.e2e.test_chaos import start_server
from tests.e2e.test_cli import run, trawl_env
from tests.e2e.test_crawl_cli import cli, env_for
from tests.polling import until
from tests.worker.test_supervisor import restartable_ports
from trawl.settings import Settings, SourceSettings, TemporalSettings, WatchSettings
from trawl.simulator import MediaFile, Response, Simulator
from trawl.simulator.feed import install_feed_site
from trawl.sources import FILTER_FIELDS
from trawl.storage.catalog import Catalog
from trawl.worker.main import running_worker
from trawl.workflows.crawl import CrawlInput, CrawlWorkflow
from trawl.contracts import workflow_queue

EVERY_S = 2


async def wait_run(client: Client, settings: Settings, name: str, done: Callable[[WatchRun], bool],
                   timeout: float = 90, runs: int = 0) -> tuple[Watch, WatchRun]:
    """The watch once its last run satisfies ``done`` (and it ran at least ``runs`` times)."""
    watch = await until(lambda: get_watch(client, settings, name), f"a run of {name}", timeout, every=0.3,
                        holds=lambda watch: watch.last_run is not None and watch.runs >= runs and done(watch.last_run))
    return watch, watch.last_run


async def runs_since(client: Client, settings: Settings, name: str, moment: float,
                     timeout: float = 90) -> list[WatchRun]:
    """The completed runs of the watch started after ``moment``, once the first of them completed."""
    async def runs_after() -> list[WatchRun]:
        desc = await client.get_schedule_handle(schedule_id(settings, name)).describe()
        return [await run_of(client, a) for a in desc.info.recent_actions if a.started_at.timestamp() > moment]

    runs = await until(runs_after, f"the runs of {name}", timeout, every=0.3,
                       holds=lambda runs: runs and runs[0].status == "COMPLETED")
    return [r for r in runs if r.status == "COMPLETED"]


async def idle(client: Client, settings: Settings, name: str, paused: bool = False, timeout: float = 90) -> Watch:
    """The watch once no run of it goes on (and, with ``paused``, once its schedule says it is
    paused: no run starts after that)."""
    return await until(lambda: get_watch(client, settings, name), f"{name} to be idle", timeout, every=0.3,
                       holds=lambda watch: not (watch.running or (paused and not watch.paused)))


async def triggered_run(client: Client, settings: Settings, name: str, env: dict[str, str], cwd: Path) -> WatchRun:
    """`trawl watch trigger NAME` on a paused, idle watch, then that run once it finished."""
    runs = (await idle(client, settings, name, paused=True)).runs
    done = await cli(["watch", "trigger", name], env, cwd)
    assert done.returncode == 0, done.stderr
    watch, run = await wait_run(client, settings, name, lambda r: r.status != "RUNNING", runs=runs + 1)
    assert run.status == "COMPLETED", run
    return run


def requests(sim: Simulator, path: str) -> int:
    return sim.stats_snapshot().get(path, {}).get("requests", 0)


async def test_watches_download_only_what_is_new(temporal_client: Client, settings: Settings, sim: Simulator,
                                                 tmp_path: Path) -> None:
    feed = install_feed_site(sim, 2)  # RSS with enclosures: each entry is a media file
    for i in range(3):
        sim.add_file(f"/l/{i}.mp4", MediaFile("mp4", f"watched-{i}", 30_000 + i))
    url_file = tmp_path / "list.txt"
    url_file.write_text(f"{sim.url('/l/0.mp4')}\n{sim.url('/l/1.mp4')}\n")
    sources = [SourceSettings(name="news", kind="feed", url=feed.url),
               SourceSettings(name="list", kind="url_file", path=str(url_file))]
    settings = settings.model_copy(update={"sources": sources})
    env = env_for(settings, tmp_path, TRAWL_SOURCES=json.dumps([s.model_dump() for s in sources]))
    async with running_worker(temporal_client, settings):
        for name, source in (("podcast", "news"), ("files", "list")):
            added = await cli(["watch", "add", name, "--source", source, "--every", f"{EVERY_S}s", "--json"], env,
                              tmp_path)
            assert added.returncode == 0, added.stderr
            assert json.loads(added.stdout)["source"] == source
        for name in ("podcast", "files"):  # the first run downloads both; any later one nothing
            first, *later = await runs_since(temporal_client, settings, name, 0)
            assert (first.new, first.duplicate, first.failed) == (2, 0, 0), first
            assert all((r.new, r.duplicate, r.failed) == (0, 2, 0) for r in later), later

        # The feed and the list gain an entry each, while the watches are paused and no run goes on
        # (a run going on as they grew could read either list: which run downloads the new entry
        # would depend on timing); the next run downloads that one only, later runs nothing.
        for name in ("podcast", "files"):
            assert (await cli(["watch", "pause", name], env, tmp_path)).returncode == 0
        for name in ("podcast", "files"):
            await idle(temporal_client, settings, name, paused=True)
        known = [feed.entries[0].media_path, feed.entries[1].media_path, "/l/0.mp4", "/l/1.mp4"]
        before = {path: requests(sim, path) for path in [*known, feed.path]}
        feed.add_entry("e2", MediaFile("mp4", "feed-e2", 41_000))
        url_file.write_text(url_file.read_text() + sim.url("/l/2.mp4") + "\n")
        for name in ("podcast", "files"):
            grown = await triggered_run(temporal_client, settings, name, env, tmp_path)
            assert (grown.new, grown.duplicate, grown.failed) == (1, 2, 0), grown
            again = await triggered_run(temporal_client, settings, name, env, tmp_path)
            assert (again.new, again.duplicate, again.failed) == (0, 3, 0), again
        for name in ("podcast", "files"):
            assert (await cli(["watch", "resume", name], env, tmp_path)).returncode == 0
        runs = await runs_since(temporal_client, settings, "podcast", time.time())
        assert [(r.new, r.duplicate) for r in runs] == [(0, 3)] * len(runs)
        # Known items made no request at all (no resolve, no probe), runs after runs; the feed
        # itself was read by every run, and each new entry was fetched.
        assert {path: requests(sim, path) for path in known} == {path: before[path] for path in known}
        assert requests(sim, feed.path) >= before[feed.path] + 3
        assert requests(sim, "/feeds/media/e2.mp4") > 0 and requests(sim, "/l/2.mp4") > 0

        # Pause stops runs; trigger runs one now (paused or not); list shows it all.
        paused = await cli(["watch", "pause", "podcast"], env, tmp_path)
        assert paused.returncode == 0 and "paused" in paused.stdout, paused.stderr
        watch = await idle(temporal_client, settings, "podcast", paused=True)
        runs = watch.runs
        quiet_until = time.monotonic() + 3 * EVERY_S
        while time.monotonic() < quiet_until:  # three intervals without a run
            assert (await get_watch(temporal_client, settings, "podcast")).runs == runs
            await asyncio.sleep(0.5)
        listed = await cli(["watch", "list"], env, tmp_path)
        assert listed.returncode == 0, listed.stderr
        row = next(line for line in listed.stdout.splitlines() if line.startswith("podcast"))
        assert re.search(r"news \(feed\)\s+2s\s+yes\s+.*completed: \d new, \d duplicate, 0 failed\s+-$",
                         row), listed.stdout
        assert re.search(r"^files\s+list \(url_file\)\s+2s\s+no\s+", listed.stdout, re.M), listed.stdout
        run_now = await triggered_run(temporal_client, settings, "podcast", env, tmp_path)
        watch = await get_watch(temporal_client, settings, "podcast")
        assert watch.runs == runs + 1 and (run_now.new, run_now.duplicate) == (0, 3)
        as_json = [json.loads(line) for line in (await cli(["watch", "list", "--json"], env, tmp_path)).stdout.splitlines()]
        podcast = next(w for w in as_json if w["name"] == "podcast")
        assert podcast["paused"] is True and podcast["next_run"] is None and podcast["last_run"]["duplicate"] == 3

        for name in ("podcast", "files"):
            removed = await cli(["watch", "remove", name], env, tmp_path)
            assert removed.returncode == 0 and "removed" in removed.stdout, removed.stderr
        gone = await cli(["watch", "pause", "podcast"], env, tmp_path)
        assert gone.returncode == 2 and gone.stderr.strip() == (
            "trawl watch: no watch named 'podcast' (trawl watch list shows them)"), gone.stderr
        handle = temporal_client.get_schedule_handle(watch.schedule_id)
        with pytest.raises(RPCError, match="not found"):
            await handle.describe()
    # Over all those runs, each of the six files was stored once.
    assert len([p for p in settings.blobs_dir.rglob("*") if p.is_file()]) == 6


async def test_watch_mistakes_get_one_line(settings: Settings, tmp_path: Path) -> None:
    env = env_for(settings, tmp_path)
    cases = [
        (["watch", "add", "x y", "--every", "1m", "http://127.0.0.1:9/a.mp4"], "invalid watch name 'x y'"),
        (["watch", "add", "w", "--every", "soon", "http://127.0.0.1:9/a.mp4"], "every: not a duration: 'soon'"),
        (["watch", "add", "w", "--every", "1m"], "nothing to watch"),
        (["watch", "add", "w", "--source", "nope", "--every", "1m"], "no source named 'nope'"),
        (["watch", "add", "w", "--every", "1m", "ftp://x/y"], "every URL was refused"),
        (["watch", "trigger", "nothing-here"], "no watch named 'nothing-here'"),
    ]
    for args, message in cases:
        done = await cli(args, env, tmp_path)
        assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


async def test_a_watch_carries_its_source(temporal_client: Client, settings: Settings, sim: Simulator,
                                          tmp_path: Path) -> None:
    """The schedule carries the source's definition: a worker whose settings lack the source runs
    the watch all the same (issue 24, 2). A url_file is read by that worker on its host, so a
    watch refuses one whose path is relative."""
    for i in range(2):
        sim.add_file(f"/carried/{i}.mp4", MediaFile("mp4", f"carried-{i}", 25_000 + i))
    listing = tmp_path / "carried.txt"
    listing.write_text(f"{sim.url('/carried/0.mp4')}\n{sim.url('/carried/1.mp4')}\n")
    sources = [SourceSettings(name="elsewhere", kind="url_file", path=str(listing)),
               SourceSettings(name="near", kind="url_file", path="carried.txt")]
    env = env_for(settings, tmp_path, TRAWL_SOURCES=json.dumps([s.model_dump() for s in sources]))
    assert not settings.sources  # the worker's
    async with running_worker(temporal_client, settings):
        added = await cli(["watch", "add", "far", "--source", "elsewhere", "--every", "1h", "--paused", "--json"],
                          env, tmp_path)
        assert added.returncode == 0, added.stderr
        # its table as it is, the filters that are not set left out (a worker of before reads it)
        assert json.loads(added.stdout)["source_settings"] == {
            k: v for k, v in sources[0].model_dump(mode="json").items() if k not in FILTER_FIELDS}
        run = await triggered_run(temporal_client, settings, "far", env, tmp_path)
        assert (run.new, run.duplicate, run.failed, run.error) == (2, 0, 0, None), run
        relative = await cli(["watch", "add", "near", "--source", "near", "--every", "1h"], env, tmp_path)
        assert relative.returncode == 2 and "absolute path" in relative.stderr, relative.stderr
        await temporal_client.get_schedule_handle(schedule_id(settings, "far")).delete()


async def add_watch_as_before(client: Client, settings: Settings, name: str, source: str) -> None:
    """A paused watch as trawl added them before watches carried their source: its schedule's
    action names the source only (the crawl input of that version, field for field)."""
    inp = dataclasses.asdict(CrawlInput(source=source, options=item_options(settings)))
    del inp["source_definition"]
    sid = schedule_id(settings, name)
    await client.create_schedule(sid, Schedule(
        action=ScheduleActionStartWorkflow("CrawlWorkflow", inp, id=f"crawl-{sid}",
                                           task_queue=workflow_queue(settings.temporal.task_queue_prefix),
                                           memo={"watch": name}),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(hours=1))]),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP), state=ScheduleState(paused=True)),
        memo={"watch": name, "source": source, "source_description": "url_file old.txt", "urls": 0,
              "concurrency": 8})


async def test_a_run_whose_source_cannot_be_expanded_fails_and_says_why(
        temporal_client: Client, settings: Settings, sim: Simulator, tmp_path: Path) -> None:
    """Issue 24 (2): a watch of a source the worker's settings do not have ran every interval and
    looked successful (0 new, 0 duplicate, 0 failed). Now its run fails, and the reason is in
    `trawl watch list` and its JSON. A watch added before watches carried their source still
    runs on a worker whose settings have it."""
    sim.add_file("/old/0.mp4", MediaFile("mp4", "old-0", 22_000))
    listing = tmp_path / "old.txt"
    listing.write_text(sim.url("/old/0.mp4") + "\n")
    settings = settings.model_copy(update={"sources": [SourceSettings(name="old", kind="url_file",
                                                                      path=str(listing))]})
    env = env_for(settings, tmp_path)
    async with running_worker(temporal_client, settings):
        await add_watch_as_before(temporal_client, settings, "mine", "mylist")
        await add_watch_as_before(temporal_client, settings, "kept", "old")
        assert (await cli(["watch", "trigger", "mine"], env, tmp_path)).returncode == 0
        watch, run = await wait_run(temporal_client, settings, "mine", lambda r: r.status != "RUNNING", runs=1)
        assert run.status == "FAILED", run
        assert run.error and run.error.startswith("source mylist: no source named 'mylist' in the settings"), run
        listed = await cli(["watch", "list"], env, tmp_path)
        row = next(line for line in listed.stdout.splitlines() if line.startswith("mine"))
        assert "failed: source mylist: no source named 'mylist'" in row, listed.stdout
        listed = await cli(["watch", "list", "--json"], env, tmp_path)
        mine = next(w for w in map(json.loads, listed.stdout.splitlines()) if w["name"] == "mine")
        assert mine["last_run"]["status"] == "FAILED" and mine["last_run"]["error"] == run.error
        assert mine["source_settings"] is None  # added before: the worker's settings name it

        kept = await triggered_run(temporal_client, settings, "kept", env, tmp_path)
        assert (kept.new, kept.failed, kept.error) == (1, 0, None), kept
        for name in ("mine", "kept"):
            await temporal_client.get_schedule_handle(schedule_id(settings, name)).delete()


async def test_every_run_of_a_watch_has_its_own_crawl_id(temporal_client: Client, settings: Settings,
                                                         sim: Simulator, tmp_path: Path) -> None:
    """Issue 24 (7): Temporal names a schedule's run after the schedule's workflow id and the
    second the run was due, and a trigger is due when asked: a trigger in the same second as a run
    that had ended made a second run with that run's id (two rows, one crawl id). Here every
    second of the next half minute is such a second: a run of that name ended already."""
    sim.add_file("/dup/0.mp4", MediaFile("mp4", "dup-0", 21_000))
    env = env_for(settings, tmp_path)
    async with running_worker(temporal_client, settings):
        added = await cli(["watch", "add", "dup", sim.url("/dup/0.mp4"), "--every", "1h", "--paused"], env, tmp_path)
        assert added.returncode == 0, added.stderr
        base = f"crawl-{schedule_id(settings, 'dup')}"
        taken: list[str] = []
        second = datetime.now(timezone.utc).replace(microsecond=0)
        while second < datetime.now(timezone.utc) + timedelta(seconds=30):  # ended runs of those names
            taken.append(f"{base}-{second.strftime('%Y-%m-%dT%H:%M:%SZ')}")
            ended = await temporal_client.start_workflow(CrawlWorkflow.run, CrawlInput(), id=taken[-1],
                                                         task_queue=f"{settings.temporal.task_queue_prefix}-none")
            await ended.terminate("an earlier run of this name")  # (no worker polls that queue)
            second += timedelta(seconds=1)
        watch, started = await trigger_watch(temporal_client, settings, "dup")
        assert started and datetime.now(timezone.utc) < second, "the trigger came after the seconds taken"
        watch, run = await wait_run(temporal_client, settings, "dup", lambda r: r.status == "COMPLETED", runs=1)
        assert run.crawl_id.startswith(base) and run.crawl_id not in taken and run.new == 1, run
        same_id = [e async for e in temporal_client.list_workflows(f"WorkflowId = '{run.crawl_id}'")]
        assert len(same_id) <= 1, same_id
        await temporal_client.get_schedule_handle(watch.schedule_id).delete()

async def connected(settings: Settings, timeout: float = 60) -> Client:
    async def attempt() -> Client | None:
        try:
            return await connect(settings)
        except RuntimeError:  # refused: the server is still starting
            return None

    return await until(attempt, "the Temporal server to start", timeout, every=0.2,
                       holds=lambda client: client is not None)


@pytest.mark.slow
@pytest.mark.timeout(240)
async def test_a_server_outage_ends_in_at_most_one_catch_up_run(sim: Simulator, tmp_path: Path) -> None:
    sim.add_file("/tiny.mp4", MediaFile("mp4", "tiny", 10_000))
    port = restartable_ports(2)
    db = tmp_path / "temporal.db"
    server = start_server(db, port, tmp_path / "temporal.log")
    env = trawl_env(tmp_path, f"127.0.0.1:{port}")
    settings = Settings(data_dir=tmp_path / "data", watch=WatchSettings(catchup_window="10s"),
                        temporal=TemporalSettings(address=f"127.0.0.1:{port}", embedded=False,
                                                  task_queue_prefix=env["TRAWL_TEMPORAL__TASK_QUEUE_PREFIX"]),
                        catalog={"url": env.get("TRAWL_CATALOG__URL", "")}, net={"allow_private": True})
    env["TRAWL_WATCH__CATCHUP_WINDOW"] = "10s"
    try:
        client = await connected(settings)
        async with running_worker(client, settings):
            added = await asyncio.to_thread(run, ["watch", "add", "tiny", sim.url("/tiny.mp4"), "--every",
                                                  f"{EVERY_S}s"], env, tmp_path)
            assert added.returncode == 0, added.stderr
            await wait_run(client, settings, "tiny", lambda r: r.status == "COMPLETED")
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
            stopped = time.time()
            await asyncio.sleep(7 * EVERY_S)  # the outage: seven intervals, longer than the catch-up window
            restarted = time.time()
            server = start_server(db, port, tmp_path / "temporal.log")
            # Wait for a run due after the restart: every catch-up run was decided before it.
            async def since_restart() -> tuple[Watch, ScheduleDescription] | None:
                try:
                    watch = await get_watch(client, settings, "tiny")
                    desc = await client.get_schedule_handle(watch.schedule_id).describe()
                except Exception:  # noqa: BLE001 - the server is still starting
                    return None
                due = any(a.scheduled_at.timestamp() > restarted + EVERY_S for a in desc.info.recent_actions)
                return (watch, desc) if due else None

            watch, desc = await until(since_restart, "a run after the restart", 120, every=0.5)
        missed = [a for a in desc.info.recent_actions if stopped < a.scheduled_at.timestamp() < restarted + EVERY_S]
        assert len(missed) <= 1, [(a.scheduled_at, a.started_at) for a in desc.info.recent_actions]
        # Runs missed longer ago than the window were dropped, the others skipped: the one
        # catch-up run was still going when they were considered.
        assert desc.info.num_actions_missed_catchup_window >= 1
        assert desc.info.num_actions_skipped_overlap >= 1
        await client.get_schedule_handle(watch.schedule_id).delete()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


async def test_each_run_of_a_watch_rechecks_its_oldest_checked_items(temporal_client: Client, settings: Settings,
                                                                     sim: Simulator, tmp_path: Path) -> None:
    """``--recheck N``: each run asks the platform again about N items of the listing it reads, the
    never-checked first, and records the one that vanished upstream (issue 42, 4); its copy stays."""
    feed = install_feed_site(sim, 2)
    sources = [SourceSettings(name="news", kind="feed", url=feed.url)]
    settings = settings.model_copy(update={"sources": sources})
    env = env_for(settings, tmp_path, TRAWL_SOURCES=json.dumps([s.model_dump() for s in sources]))
    catalog = Catalog(settings.catalog_url)
    async with running_worker(temporal_client, settings):
        added = await cli(["watch", "add", "news", "--source", "news", "--every", "1h", "--paused", "--recheck", "1",
                           "--json"], env, tmp_path)
        assert added.returncode == 0, added.stderr
        assert json.loads(added.stdout)["recheck"] == 1 and "recheck" not in json.loads(added.stdout)["source_settings"]
        first = await triggered_run(temporal_client, settings, "news", env, tmp_path)
        assert first.new == 2, first  # read before anything was committed: nothing to re-check yet
        assert [item.checked_at for item in catalog.committed()] == [None, None]
        deleted = feed.entries[0].media_path
        sim.add_exact(deleted, lambda req: Response(404, {"Content-Type": "text/plain"}, b"deleted"))
        await triggered_run(temporal_client, settings, "news", env, tmp_path)
        assert sum(item.checked_at is not None for item in catalog.committed()) == 1  # one per run
        await triggered_run(temporal_client, settings, "news", env, tmp_path)
        items = {item.canonical_url: item for item in catalog.committed()}
        assert all(item.checked_at for item in items.values())
        gone, there = items.pop(sim.url(deleted)), items.popitem()[1]
        assert gone.gone_at and "not_found" in (gone.gone_reason or "") and gone.assets  # kept
        assert there.gone_at is None
        too_many = await cli(["watch", "add", "more", "--source", "news", "--every", "1h", "--recheck", "51"],
                             env, tmp_path)
        assert too_many.returncode == 2 and "recheck must be 0 to 50" in too_many.stderr, too_many.stderr
        await temporal_client.get_schedule_handle(schedule_id(settings, "news")).delete()
    catalog.close()
