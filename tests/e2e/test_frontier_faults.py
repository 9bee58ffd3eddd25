"""A crawl's frontier under faults: worker processes SIGKILLed every few seconds (the supervisor
restarts them) while a paged feed expands into the frontier and while the crawl reads it page by
page, the Temporal dev server stopped and restarted during the expansion, and the same URLs given
twice (in the file, in the feed, and added again while the crawl runs). Every URL must be counted
once, every new item committed by exactly one item workflow, and no known URL start a workflow."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import time
from collections import Counter
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.conftest import postgres_mode
from tests.e2e.test_chaos import cluster_env, start_server, start_workers, stop, trawl
from tests.worker.test_supervisor import restartable_ports, started_pids
from tests.workflows.test_frontier import known_to_the_catalog
from trawl.download import file_sha256
from trawl.platforms.registry import default_registry
from trawl.settings import CatalogSettings, Settings, TemporalSettings
from trawl.simulator import MediaFile, Simulator
from trawl.simulator.faults import stall
from trawl.simulator.feed import FeedSite
from trawl.starter.client import add_to_crawl
from trawl.storage.catalog import Catalog

FEED_ENTRIES = 1500
FEED_NEW_EVERY = 15  # one new entry in fifteen: every page of 100 holds new ones, so all are read
FILE_KNOWN = 1900
FILE_NEW = 50
SHARED = 2  # every second new feed entry is given in the file too


def alive(pids: list[int]) -> list[int]:
    return [pid for pid in pids if Path(f"/proc/{pid}").exists()
            and "zombie" not in Path(f"/proc/{pid}/status").read_text()]


@pytest.mark.slow
@pytest.mark.timeout(420)
# Once per CI run (80 s): the frontier's statements on PostgreSQL are in the workflow tests'
# PostgreSQL pass (tests/workflows/test_frontier.py); what this adds is the faults.
@pytest.mark.skipif(postgres_mode(), reason="run in the SQLite pass only")
def test_the_frontier_loses_and_repeats_nothing_under_kills_and_a_server_restart(tmp_path: Path) -> None:
    rng = random.Random(20261202)
    port = restartable_ports(2)
    db = tmp_path / "temporal.db"
    server = start_server(db, port, tmp_path / "temporal.log")
    sim = Simulator().start()
    supervisor = None
    try:
        feed = FeedSite(sim, "/ff/feed.xml", page_size=100)
        feed_known, feed_new = [], []
        for i in range(FEED_ENTRIES):  # added oldest first: the feed lists the newest on top
            fresh = i % FEED_NEW_EVERY == 0
            url = feed.add_entry(f"f{i}", MediaFile("mp4", f"ff-{i}", 2_000 + i if fresh else 100))
            (feed_new if fresh else feed_known).append(url)
        file_new = []
        for i in range(FILE_NEW):
            sim.add_file(f"/fn/{i}.mp4", MediaFile("mp4", f"fn-{i}", 3_000 + i))
            file_new.append(sim.url(f"/fn/{i}.mp4"))
        file_known = [sim.url(f"/fk/{i}.mp4") for i in range(FILE_KNOWN)]  # never served
        # Each feed page answers two seconds late, fifteen times: the expansion spans several kills.
        sim.faults.add(r"/ff/feed\.xml", stall(2.0, times=15))

        catalog_url = f"sqlite:///{tmp_path / 'data' / 'catalog.db'}"
        (tmp_path / "data").mkdir()
        catalog = Catalog(catalog_url)
        catalog.create_schema()
        known_to_the_catalog(catalog, feed_known + file_known)

        env = cluster_env(tmp_path, port, catalog_url, TRAWL_RETRY__FETCH__MAXIMUM_ATTEMPTS="30",
                          TRAWL_RETRY__FETCH__MAXIMUM_INTERVAL="2s", TRAWL_RETRY__DOWNLOAD__MAXIMUM_INTERVAL="2s",
                          TRAWL_RETRY__COMMIT__MAXIMUM_INTERVAL="2s")
        # A listing page stops the expansion when all its items are known, even those this crawl has
        # just committed: every page must keep new entries that the file does not give.
        lines = [*file_known[:1000], *file_new, *feed_new[::SHARED], feed.url, *file_known[1000:]]
        url_file = tmp_path / "urls.txt"
        url_file.write_text("\n".join(lines) + "\n")
        supervisor, supervisor_log = start_workers(env, tmp_path)
        started = trawl(["crawl", "--detach", "--file", str(url_file), "--concurrency", "8"], env, tmp_path)
        assert started.returncode == 0, started.stderr
        crawl_id = started.stdout.strip()

        # The same URLs once more while the crawl runs: one entry each, each repeat a duplicate.
        settings = Settings(data_dir=tmp_path / "data", catalog=CatalogSettings(url=catalog_url),
                            temporal=TemporalSettings(address=f"127.0.0.1:{port}", embedded=False))

        async def add_again() -> None:
            client = await Client.connect(f"127.0.0.1:{port}")
            await add_to_crawl(client, settings, default_registry(), crawl_id, lines[:1200], catalog=catalog)

        asyncio.run(add_again())

        began = time.monotonic()
        restarted = False
        kills = 0
        status = None
        while time.monotonic() - began < 300:
            time.sleep(2)
            if time.monotonic() - began < 40:
                running = alive(started_pids(supervisor_log))
                if running:
                    os.kill(rng.choice(running), signal.SIGKILL)
                    kills += 1
            if not restarted and time.monotonic() - began > 7:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=30)
                time.sleep(1)
                server = start_server(db, port, tmp_path / "temporal.log")
                restarted = True
            if time.monotonic() - began < 30:
                continue
            shown = trawl(["crawl-status", crawl_id, "--json"], env, tmp_path)
            if shown.returncode in (0, 1):  # 1: items failed
                status = json.loads(shown.stdout)
                if status["status"] != "RUNNING":
                    break
        assert restarted and kills >= 8, (restarted, kills)
        assert status is not None and status["status"] == "COMPLETED", status

        new = set(file_new) | set(feed_new)
        given = len(lines) - 1 + 1200 - 1  # the feed's URL (a listing, not an item), once in each
        listed = FEED_ENTRIES + 1  # the feed given twice: its second entry one duplicate
        assert status["stats"]["outcomes"] == {"committed": len(new), "duplicate": given + listed - len(new)}, status
        assert status["stats"]["refused"] == 0

        async def item_runs() -> Counter[str]:
            client = await Client.connect(f"127.0.0.1:{port}")
            return Counter([w.id async for w in client.list_workflows(
                f"CrawlId = '{crawl_id}' AND WorkflowType = 'MediaItemWorkflow'")])

        runs = asyncio.run(item_runs())
        assert len(runs) == len(new) and set(runs.values()) == {1}, runs.most_common(3)
        assert not any(sim.stats[f"/fk/{i}.mp4"].requests for i in range(FILE_KNOWN))

        items = catalog.list(limit=10_000)
        assert len(items) == len(new) + 1 == len({i.canonical_key for i in items})  # + the seeded one
        blobs = [p for p in (tmp_path / "data" / "blobs").rglob("*") if p.is_file()]
        assert len(blobs) == len(new) and all(file_sha256(p) == p.name for p in blobs)
        assert not [p for p in (tmp_path / "data" / "work").rglob("*.part")]
        catalog.close()
    finally:
        if supervisor is not None:
            stop(supervisor)
        sim.stop()
        stop(server)
