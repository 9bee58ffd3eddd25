"""Crawls of any size: the cost of a URL must not grow with the crawl.

For each size, a crawl of SIZE URLs of which all but --new are already in the catalog (seeded
cheaply: URL forms remembered for one committed item, as a first crawl would leave them) and
--new tiny files from the local simulator. Reports the time to accept the crawl (route offline and
write the frontier), known URLs skipped per second, new items per second, the peak RSS of the
worker (a `trawl worker` process of its own, started for each size: VmHWM from /proc) and of the
starter (this process, which routes and writes the frontier as `trawl crawl --detach` or the API
do), and the largest run's history (events and bytes). The baseline is the same figures at the
smallest size, in the same run: a crawl of 1,000 URLs by default.

The worker's memory across the crawl: its resident set (VmRSS) sampled twice a second beside the
items committed so far, reported every --sample-every items (``worker_rss_mib_by_items``): a
worker's memory stays flat once warm. With --tracemalloc DIR the worker counts its live objects by
type at each of --snapshots item counts, and traces its allocations (tracemalloc, 12 frames) from
the --trace-from-th snapshot on; the bench prints the types it held more of than at the first, and
the traced blocks still live at the last snapshot by traceback (what accumulates). Tracing makes
the worker slower and larger: its RSS is then not the figure to quote.

Usage: .venv/bin/python bench/bigcrawl.py [--sizes 1000,10000,100000] [--new 200] [--sample-every 250]
       [--tracemalloc DIR --snapshots 200,1000,3000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

from sqlalchemy import text
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


def rss_mib(pid: int) -> float:
    """The process's resident set now (VmRSS), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# `trawl worker` that tells what it holds: each SIGUSR1 writes snap-N.json (the live objects by
# type after a collection) and, once tracing, snap-N.pickle (tracemalloc); tracing starts at the
# BENCH_TRACE_FROM-th signal. Traced from the start, a worker on two loaded cores took minutes to
# start and its crawl's workflow tasks ran past their timeout; traced from a warm point on, every
# block the last snapshot holds was allocated since and outlived its item: what accumulates.
TRACED_WORKER = """
import collections, gc, json, os, pickle, signal, sys, threading, tracemalloc
_open = open  # the workflow sandbox restricts builtins.open while it runs
asked = threading.Event()
def dump(n):
    path = os.path.join(os.environ["BENCH_TRACEMALLOC_DIR"], f"snap-{n}")
    gc.collect()
    counts = collections.Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())
    with _open(path + ".json", "w") as out:
        json.dump(dict(counts), out)
    if tracemalloc.is_tracing():
        with _open(path + ".pickle", "wb") as out:
            pickle.dump(tracemalloc.take_snapshot(), out, pickle.HIGHEST_PROTOCOL)
    elif n >= int(os.environ["BENCH_TRACE_FROM"]):
        tracemalloc.start(12)
    _open(path + ".done", "w").close()
def dumper():
    n = 0
    while asked.wait():
        asked.clear()
        n += 1
        dump(n)
threading.Thread(target=dumper, daemon=True).start()
signal.signal(signal.SIGUSR1, lambda *_: asked.set())
sys.argv = ["trawl", "worker"]
from trawl.cli import console_main
sys.exit(console_main())
"""


def start_worker(settings: Settings, log: Path, traced: Path | None = None, trace_from: int = 2) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
    env.update(TRAWL_DATA_DIR=str(settings.data_dir), TRAWL_TEMPORAL__ADDRESS=settings.temporal.address,
               TRAWL_TEMPORAL__EMBEDDED="false", TRAWL_TEMPORAL__TASK_QUEUE_PREFIX=settings.temporal.task_queue_prefix,
               TRAWL_NET__ALLOW_PRIVATE="true", TRAWL_WORKER__METRICS_PORT="0")
    command = [TRAWL, "worker"]
    if traced is not None:
        # Tracing slows the worker's workflow tasks past the SDK's 2 s deadlock detector on a loaded
        # machine: its debug mode turns the detector off and keeps the sandbox.
        env.update(BENCH_TRACEMALLOC_DIR=str(traced), TEMPORAL_DEBUG="1", BENCH_TRACE_FROM=str(trace_from))
        command = [sys.executable, "-c", TRACED_WORKER]
    with open(log, "ab") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)


class MemorySampler(threading.Thread):
    """Samples the worker's VmRSS and the items committed so far, twice a second; with a
    tracemalloc directory, asks the worker for a snapshot as the items pass each count of
    ``snapshots``."""

    def __init__(self, pid: int, catalog: Catalog, snapshots: list[int], traced: Path | None) -> None:
        super().__init__(daemon=True)
        self.pid, self.catalog, self.traced = pid, catalog, traced
        self.snapshots = sorted(snapshots) if traced is not None else []
        self.samples: list[tuple[float, int, float]] = []  # (seconds, items committed, RSS MiB)
        self.stop = threading.Event()

    def committed(self) -> int:
        with self.catalog.engine.connect() as conn:
            return conn.execute(text("SELECT count(*) FROM items WHERE status = 'committed'")).scalar_one()

    def run(self) -> None:
        began = time.monotonic()
        taken = 0
        while not self.stop.wait(0.5):
            items = self.committed()
            self.samples.append((time.monotonic() - began, items, rss_mib(self.pid)))
            if taken < len(self.snapshots) and items >= self.snapshots[taken]:
                taken += 1
                os.kill(self.pid, signal.SIGUSR1)
                done = self.traced / f"snap-{taken}.done"  # type: ignore[operator]
                while not done.exists() and not self.stop.is_set():
                    time.sleep(0.2)

    def by_items(self, every: int) -> list[dict]:
        """The first sample at or past each multiple of ``every`` items (and the last one)."""
        out, mark = [], 0
        for seconds, items, rss in self.samples:
            if items >= mark:
                out.append({"items": items, "s": round(seconds, 1), "rss_mib": round(rss, 1)})
                mark = (items // every + 1) * every
        if self.samples and out[-1]["items"] != self.samples[-1][1]:
            seconds, items, rss = self.samples[-1]
            out.append({"items": items, "s": round(seconds, 1), "rss_mib": round(rss, 1)})
        return out


def growth(traced: Path, count: int, top: int = 15) -> dict:
    """What the worker held more of at each snapshot than at the first (live objects by type), and
    the traced blocks still live at the last snapshot, by traceback (innermost frame first)."""
    first = json.loads((traced / "snap-1.json").read_text())
    out: dict = {"objects_grown": []}
    for n in range(2, count + 1):
        later = json.loads((traced / f"snap-{n}.json").read_text())
        grown = sorted(((later[k] - first.get(k, 0), k) for k in later), reverse=True)[:top]
        out["objects_grown"].append({"snapshot": n, "total": sum(later.values()) - sum(first.values()),
                                     "top": {k: d for d, k in grown if d > 0}})
    last = sorted(traced.glob("snap-*.pickle"))
    if last:
        snapshot = tracemalloc.Snapshot.load(str(last[-1])).filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<unknown>")])
        stats = snapshot.statistics("traceback")
        out["traced_live_kib"] = round(sum(s.size for s in stats) / 1024)
        out["traced_top"] = [{"kib": round(s.size / 1024, 1), "blocks": s.count,
                              "where": [f"{f.filename.split('site-packages/')[-1]}:{f.lineno}"
                                        for f in reversed(s.traceback)][:12]} for s in stats[:top]]
    return out


def seed_known(catalog: Catalog, urls: list[str]) -> None:
    if not urls:
        return
    catalog.commit_item(canonical_key="web:bench-known", platform="generic", canonical_url=urls[0],
                        source_url=urls[0], title="known", uploader=None, duration=None, published_at=None,
                        metadata={}, workflow_id="bench",
                        assets=[CommittedAsset("video", "video", "a" * 64, 10, "video/mp4", "sha256/aa/aa/" + "a" * 64)])
    for start in range(0, len(urls), 2000):
        catalog.remember_urls(urls[start:start + 2000], "web:bench-known")


async def one(env: WorkflowEnvironment, sim: Simulator, size: int, new: int, work: Path,
              args: argparse.Namespace) -> dict:
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
    traced = Path(args.tracemalloc) / f"size-{size}" if args.tracemalloc else None
    if traced is not None:
        traced.mkdir(parents=True, exist_ok=True)
    worker = start_worker(settings, work / f"worker-{size}.log", traced, args.trace_from)
    sampler = MemorySampler(worker.pid, catalog, [int(n) for n in args.snapshots.split(",")], traced)
    sampler.start()
    try:
        began = time.monotonic()
        handle, _ = await start_crawl(env.client, settings, default_registry(), [*known, *fresh], concurrency=16)
        accepted = time.monotonic() - began
        stats = await handle.result()
        wall = time.monotonic() - began
        await asyncio.sleep(1)  # the last sample
        worker_rss = peak_rss_mib(worker.pid)
    finally:
        sampler.stop.set()
        sampler.join()
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
    wanted = {"duplicate": len(known), "committed": new}
    assert stats.outcomes == {k: n for k, n in wanted.items() if n}, stats.outcomes
    return {"urls": size, "new": new, "accept_s": round(accepted, 2), "wall_s": round(wall, 2),
            "urls_per_s_accepted": round(size / accepted), "new_items_per_s": round(new / new_phase, 1),
            "known_urls_per_s": round(len(known) / known_phase) if known_phase > 0 else None, "runs": len(runs),
            "largest_run_events": max(len(h.events) for h in histories),
            "largest_run_bytes": max(len(h.to_json()) for h in histories),
            "worker_peak_rss_mib": round(worker_rss, 1),
            "worker_rss_mib_by_items": sampler.by_items(args.sample_every),
            **({"tracemalloc_growth": growth(traced, len(list(traced.glob("snap-*.done"))))}
               if traced is not None and (traced / "snap-2.done").exists() else {}),
            "starter_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--new", type=int, default=200)
    parser.add_argument("--sample-every", type=int, default=250, help="report the worker's RSS every N items")
    parser.add_argument("--tracemalloc", default="", help="a directory for the worker's tracemalloc snapshots")
    parser.add_argument("--snapshots", default="200,1000,3000", help="item counts at which to take them")
    parser.add_argument("--trace-from", type=int, default=2, help="the snapshot from which tracemalloc traces")
    args = parser.parse_args()
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=TEMPORAL,
                                                search_attributes=list(SEARCH_ATTRIBUTES), dev_server_log_level="error")
    results = []
    try:
        with tempfile.TemporaryDirectory() as tmp, Simulator() as sim:
            for size in (int(s) for s in args.sizes.split(",")):
                results.append(await one(env, sim, size, args.new, Path(tmp), args))
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
