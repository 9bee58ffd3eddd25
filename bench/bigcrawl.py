"""Crawls of any size: the cost of a URL must not grow with the crawl.

For each size, a crawl of SIZE URLs of which all but --new are already in the catalog (seeded
cheaply: URL forms remembered for one committed item, as a first crawl would leave them) and
--new tiny files from the local simulator. Reports the time to accept the crawl (route offline and
write the frontier), known URLs skipped per second, new items per second, the worker's peak RSS
(this process: the worker and the starter run in it) and the largest run's history (events and
bytes). The baseline is the same figures at the smaller size, in the same run.

Usage: .venv/bin/python bench/bigcrawl.py [--sizes 10000,100000] [--new 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
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
from trawl.worker.main import running_worker

TEMPORAL = str(Path(sys.executable).parent / "temporal")


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
    async with running_worker(env.client, settings):
        began = time.monotonic()
        handle, _ = await start_crawl(env.client, settings, default_registry(), [*known, *fresh], concurrency=16)
        accepted = time.monotonic() - began
        stats = await handle.result()
        wall = time.monotonic() - began
    runs = [w async for w in env.client.list_workflows(f"WorkflowId='{handle.id}'")]
    histories = [await env.client.get_workflow_handle(handle.id, run_id=w.run_id).fetch_history() for w in runs]
    assert stats.outcomes == {"duplicate": len(known), "committed": new}, stats.outcomes
    return {"urls": size, "new": new, "accept_s": round(accepted, 2), "wall_s": round(wall, 2),
            "urls_per_s_accepted": round(size / accepted), "new_items_per_s": round(new / (wall - accepted), 1),
            "known_urls_per_s": round(len(known) / (wall - accepted)), "runs": len(runs),
            "largest_run_events": max(len(h.events) for h in histories),
            "largest_run_bytes": max(len(h.to_json()) for h in histories),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
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
         "peak_rss": round(r["peak_rss_mib"] / base["peak_rss_mib"], 2)} for r in results]}, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
