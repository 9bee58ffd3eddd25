"""Crawls of any size: the cost of a URL must not grow with the crawl.

For each size, a crawl of SIZE URLs of which all but --new are already in the catalog (seeded
cheaply: URL forms remembered for one committed item, as a first crawl would leave them) and
--new tiny files from the local simulator. Reports the time to accept the crawl (route offline and
write the frontier), known URLs skipped per second, new items per second, the peak RSS of the
worker (a `trawl worker` process of its own, started for each size: VmHWM from /proc) and of the
starter (this process, which routes and writes the frontier as `trawl crawl --detach` or the API
do), and the largest run's history (events and bytes). The baseline is the same figures at the
smallest size, in the same run: a crawl of 1,000 URLs by default.

Usage: .venv/bin/python bench/bigcrawl.py [--sizes 1000,10000,100000] [--new 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from trawl.contracts import SEARCH_ATTRIBUTES
from trawl.platforms.registry import default_registry
from trawl.settings import CatalogSettings, NetSettings, Settings, TemporalSettings
from trawl.simulator import MediaFile, Simulator
from trawl.starter.client import start_crawl
from trawl.storage.catalog import Catalog
from trawl.storage.records import CommittedAsset

TEMPORAL = str(Path(sys.executable).parent / "temporal")
TRAWL = str(Path(sys.executable).parent / "trawl")


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident set (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def start_worker(settings: Settings, log: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
    env.update(TRAWL_DATA_DIR=str(settings.data_dir), TRAWL_TEMPORAL__ADDRESS=settings.temporal.address,
               TRAWL_TEMPORAL__EMBEDDED="false", TRAWL_TEMPORAL__TASK_QUEUE_PREFIX=settings.temporal.task_queue_prefix,
               TRAWL_NET__ALLOW_PRIVATE="true", TRAWL_WORKER__METRICS_PORT="0")
    with open(log, "ab") as out:
        return subprocess.Popen([TRAWL, "worker"], env=env, stdout=out, stderr=subprocess.STDOUT)


def seed_known(catalog: Catalog, urls: list[str]) -> None:
    catalog.commit_item(canonical_key="web:bench-known", platform="generic", canonical_url=urls[0],
                        source_url=urls[0], title="known", uploader=None, duration=None, published_at=None,
                        metadata={}, workflow_id="bench",
                        assets=[CommittedAsset("video", "video", "a" * 64, 10, "video/mp4", "sha256/aa/aa/" + "a" * 64)])
    for start in range(0, len(urls), 2000):
        catalog.remember_urls(urls[start:start + 2000], "web:bench-known")


async def one(env: WorkflowEnvironment, sim: Simulator, size: int, new: int, work: Path) -> dict:
    settings = Settings(data_dir=work / f"data-{size}", catalog=CatalogSettings(url=""),
                        net=NetSettings(allow_private=True),
                        temporal=TemporalSettings(address=env.client.service_client.config.target_host,
                                                  embedded=False, task_queue_prefix=f"big{size}"))
    catalog = Catalog(settings.catalog_url)
    catalog.create_schema()
    known = [f"http://127.0.0.1:9/known/{size}/{i}" for i in range(size - new)]
    seed_known(catalog, known)
    fresh = []
    for i in range(new):
        path = f"/big/{size}/{i}.mp4"
        sim.add_file(path, MediaFile("mp4", f"big-{size}-{i}", 2_000 + i))
        fresh.append(sim.url(path))
    worker = start_worker(settings, work / f"worker-{size}.log")
    try:
        began = time.monotonic()
        handle, _ = await start_crawl(env.client, settings, default_registry(), [*known, *fresh], concurrency=16)
        accepted = time.monotonic() - began
        stats = await handle.result()
        wall = time.monotonic() - began
        worker_rss = peak_rss_mib(worker.pid)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    # The known URLs come first in the frontier, the new ones last: the known are skipped from the
    # crawl's start to the first item workflow's start, the new run from there to the last close.
    query = f"CrawlId = '{handle.id}' AND WorkflowType = 'MediaItemWorkflow' AND ExecutionStatus = 'Completed'"
    for _ in range(100):
        items = [w async for w in env.client.list_workflows(query)]
        if len(items) >= new:
            break
        await asyncio.sleep(0.2)
    crawl = await handle.describe()
    first_item = min(w.start_time for w in items)
    new_phase = (max(w.close_time for w in items if w.close_time) - first_item).total_seconds()
    known_phase = (first_item - crawl.start_time).total_seconds()
    runs = [w async for w in env.client.list_workflows(f"WorkflowId='{handle.id}'")]
    histories = [await env.client.get_workflow_handle(handle.id, run_id=w.run_id).fetch_history() for w in runs]
    assert stats.outcomes == {"duplicate": len(known), "committed": new}, stats.outcomes
    return {"urls": size, "new": new, "accept_s": round(accepted, 2), "wall_s": round(wall, 2),
            "urls_per_s_accepted": round(size / accepted), "new_items_per_s": round(new / new_phase, 1),
            "known_urls_per_s": round(len(known) / known_phase), "runs": len(runs),
            "largest_run_events": max(len(h.events) for h in histories),
            "largest_run_bytes": max(len(h.to_json()) for h in histories),
            "worker_peak_rss_mib": round(worker_rss, 1),
            "starter_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--new", type=int, default=200)
    args = parser.parse_args()
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=TEMPORAL,
                                                search_attributes=list(SEARCH_ATTRIBUTES), dev_server_log_level="error")
    results = []
    try:
        with tempfile.TemporaryDirectory() as tmp, Simulator() as sim:
            for size in (int(s) for s in args.sizes.split(",")):
                results.append(await one(env, sim, size, args.new, Path(tmp)))
    finally:
        await env.shutdown()
    base = results[0]
    print(json.dumps({"results": results, "vs_smallest": [
        {"urls": r["urls"], "accept_s_per_url": round(r["accept_s"] / r["urls"] / (base["accept_s"] / base["urls"]), 2),
         "new_items_per_s": round(r["new_items_per_s"] / base["new_items_per_s"], 2),
         "worker_peak_rss": round(r["worker_peak_rss_mib"] / base["worker_peak_rss_mib"], 2),
         "starter_peak_rss": round(r["starter_peak_rss_mib"] / base["starter_peak_rss_mib"], 2)}
        for r in results]}, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
