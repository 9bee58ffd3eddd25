"""Crawls of any size: the cost of a URL must not grow with the crawl.

For each size, a crawl of SIZE URLs of which all but --new are already in the catalog (seeded
cheaply: URL forms remembered for one committed item, as a first crawl would leave them) and
--new tiny files from the local simulator. Reports the time to accept the crawl (route offline and
write the frontier), known URLs skipped per second, new items per second, the peak RSS of the
worker (a `trawl worker` process of its own, started for each size: VmHWM from /proc) and of the
starter (this process, which routes and writes the frontier as `trawl crawl --detach` or the API
do), and the largest run's history (events and bytes). The baseline is the same figures at the
smallest size, in the same run: a crawl of 1,000 URLs by default.

The worker's memory across the crawl: its resident set (VmRSS) sampled every 2 s beside the
items committed so far, reported every --sample-every items (``worker_rss_mib_by_items``): a
worker's memory stays flat once warm. With --tracemalloc DIR the worker counts its live objects by
type at each of --snapshots item counts, and traces its allocations (tracemalloc, 12 frames) from
the --trace-from-th snapshot on; the bench prints the types it held more of than at the first, and
the traced blocks still live at the last snapshot by traceback (what accumulates). Tracing makes
the worker slower and larger: its RSS is then not the figure to quote.

With --processes N the worker is `trawl worker --processes N` (a supervisor and N processes:
their resident sets are sampled each, their CPU counted together), and with --postgres URL (an
admin URL; a database is made for each size and dropped after) the catalog is on PostgreSQL. Every
--progress seconds a line on stderr tells the crawl so far and since the last line: items, items/s,
the CPU per item of the Temporal server, of the workers and of PostgreSQL (its server processes,
those that ended included), the workers' RSS, and the time of one read of the frontier's next
page at the crawl's position (what the crawl's frontier_next reads): a run stopped early still
says whether a URL costs more as the crawl grows. At the end, each frontier_next activity's time
(from the crawl's histories) by tenth of the crawl. The dev server keeps its state in a file as
trawl's embedded server does (--server-in-memory: in memory, as the bench did before 2026-12-06).

With --metrics each progress line also tells, per item committed since the last line, what the
workers asked of the server (the SDK's ``temporal_request``/``temporal_long_request`` by
operation, its sticky cache and workflow task counters, scraped from each worker process's
Prometheus port) and what the server did (its ``service_requests`` and ``persistence_requests`` by
operation, from the dev server's own metrics port): a cost that grows with the workers' age shows
as a count per item that grows, or as the same counts at a higher CPU per item.

Usage: .venv/bin/python bench/bigcrawl.py [--sizes 1000,10000,100000] [--new 200] [--sample-every 250]
       [--tracemalloc DIR --snapshots 200,1000,3000] [--processes 4] [--postgres URL] [--progress 60]
       [--metrics] [--no-search-attribute-cache]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import urllib.request
from pathlib import Path

from sqlalchemy import create_engine, text
from temporalio.testing import WorkflowEnvironment

from trawl.contracts import SEARCH_ATTRIBUTES
from trawl.platforms.registry import default_registry
from trawl.settings import CatalogSettings, NetSettings, Settings, TemporalSettings
from trawl.simulator import MediaFile, Simulator
from trawl.starter.client import start_crawl
from trawl.starter.embedded import DEV_SERVER_DYNAMIC_CONFIG, dynamic_config_arguments
from trawl.storage.catalog import Catalog
from trawl.storage.records import CommittedAsset

from common import free_port

TEMPORAL = str(Path(sys.executable).parent / "temporal")
TRAWL = str(Path(sys.executable).parent / "trawl")


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident set (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


CLK = os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    """The live children of a process."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


def tree_cpu_s(pid: int) -> float:
    """User + system CPU of a process, of its children it has reaped, and of its live descendants."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / CLK + sum(tree_cpu_s(child) for child in children(pid))


def server_pid(port: int) -> int | None:
    """The dev server listening on ``port`` (its command line names it)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"start-dev" in argv and str(port).encode() in argv:
                return int(entry.name)
    return None


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


def start_worker(settings: Settings, log: Path, traced: Path | None = None, trace_from: int = 2,
                 processes: int = 1, metrics_port: int = 0) -> subprocess.Popen[bytes]:
    """``trawl worker``; with ``metrics_port``, its processes serve metrics from that port on (one each)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
    env.update(TRAWL_DATA_DIR=str(settings.data_dir), TRAWL_TEMPORAL__ADDRESS=settings.temporal.address,
               TRAWL_TEMPORAL__EMBEDDED="false", TRAWL_TEMPORAL__TASK_QUEUE_PREFIX=settings.temporal.task_queue_prefix,
               TRAWL_NET__ALLOW_PRIVATE="true", TRAWL_WORKER__METRICS_PORT=str(metrics_port),
               TRAWL_CATALOG__URL=settings.catalog.url)
    command = [TRAWL, "worker"] + (["--processes", str(processes)] if processes > 1 else [])
    if traced is not None:
        # Tracing slows the worker's workflow tasks past the SDK's 2 s deadlock detector on a loaded
        # machine: its debug mode turns the detector off and keeps the sandbox.
        env.update(BENCH_TRACEMALLOC_DIR=str(traced), TEMPORAL_DEBUG="1", BENCH_TRACE_FROM=str(trace_from))
        command = [sys.executable, "-c", TRACED_WORKER]
    with open(log, "ab") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)


class MemorySampler(threading.Thread):
    """Samples the worker's VmRSS and the items committed so far, every 2 s (the count reads the
    whole items table: at 58,000 items on PostgreSQL, 29 ms a count, twice a second was about 4 ms
    of PostgreSQL's CPU an item at 15 items/s, half of what the crawl itself cost it); with a
    tracemalloc directory, asks the worker for a snapshot as the items pass each count of
    ``snapshots``."""

    def __init__(self, pid: int, catalog: Catalog, snapshots: list[int], traced: Path | None,
                 supervised: bool = False) -> None:
        super().__init__(daemon=True)
        self.supervised = supervised
        self.pid, self.catalog, self.traced = pid, catalog, traced
        self.snapshots = sorted(snapshots) if traced is not None else []
        self.samples: list[tuple[float, int, float]] = []  # (seconds, items committed, RSS MiB: the largest worker's)
        self.processes_rss: list[float] = []  # the last sample's, each worker process
        self.stop = threading.Event()

    def committed(self) -> int:
        with self.catalog.engine.connect() as conn:
            return conn.execute(text("SELECT count(*) FROM items WHERE status = 'committed'")).scalar_one()

    def run(self) -> None:
        began = time.monotonic()
        taken = 0
        while not self.stop.wait(2.0):
            items = self.committed()
            self.processes_rss = [rss_mib(pid) for pid in (children(self.pid) if self.supervised else [self.pid])]
            self.samples.append((time.monotonic() - began, items, max(self.processes_rss, default=0.0)))
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


def postgres_database(admin_url: str, name: str, drop: bool = False) -> str:
    """Make (or drop) database ``name`` beside the admin URL's; returns its URL."""
    engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)' if drop else f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return admin_url.rsplit("/", 1)[0] + "/" + name


def postmaster_pid(admin_url: str) -> int | None:
    """PostgreSQL's server process on this machine (a backend's parent), for its CPU."""
    engine = create_engine(admin_url)
    try:
        with engine.connect() as conn:  # read while the backend lives: it ends with its connection
            backend = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
            return int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None  # not on this machine
    finally:
        engine.dispose()


# What a progress line tells per item with --metrics: the workers' SDK counters (summed over the
# processes, by operation where they have one) and the server's requests by operation.
WORKER_COUNTERS = ("temporal_request_total", "temporal_long_request_total", "temporal_request_failure_total",
                   "temporal_request_latency_sum", "temporal_sticky_cache_hit_total", "temporal_sticky_cache_miss_total",
                   "temporal_sticky_cache_total_forced_eviction_total", "temporal_workflow_completed_total",
                   "temporal_workflow_task_execution_latency_count", "temporal_workflow_task_execution_latency_sum",
                   "temporal_workflow_task_replay_latency_count", "temporal_workflow_task_replay_latency_sum",
                   "temporal_workflow_task_schedule_to_start_latency_sum",
                   "temporal_activity_execution_latency_count", "temporal_activity_execution_latency_sum")
SERVER_COUNTERS = ("service_requests", "persistence_requests", "service_latency_sum", "persistence_latency_sum")


def free_ports_in_a_row(count: int, avoid: int = 0) -> int:
    """The first of ``count`` consecutive free ports (the workers' processes take base + index;
    one taken would move a process elsewhere and the bench would read another's counters)."""
    for _ in range(100):
        base = free_port()
        if avoid not in range(base, base + count) and all(port_free(base + i) for i in range(1, count)):
            return base
    raise SystemExit(f"no {count} free ports in a row for the workers' metrics")


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def scrape(url: str, names: tuple[str, ...]) -> dict[str, float]:
    """The named counters of a Prometheus endpoint, summed by name and ``operation`` label; {} when
    it does not answer (a worker process restarting)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            body = answer.read().decode()
    except OSError:
        return {}
    found: dict[str, float] = {}
    for line in body.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        head, _, value = line.rpartition(" ")
        name, _, labels = head.partition("{")
        if name not in names:
            continue
        operation = next((part.split("=", 1)[1].strip('"') for part in labels.rstrip("}").split(",")
                          if part.startswith("operation=")), "")
        key = f"{name}[{operation}]" if operation else name
        try:
            found[key] = found.get(key, 0.0) + float(value)
        except ValueError:
            continue
    return found


class Metrics:
    """The workers' and the server's counters, read together."""

    def __init__(self, worker_ports: list[int], server_port: int) -> None:
        self.worker_ports, self.server_port = worker_ports, server_port

    def read(self) -> dict[str, dict[str, float]] | None:
        """The counters now; None when a process did not answer (a sum without it would read as a fall)."""
        workers: dict[str, float] = {}
        for port in self.worker_ports:
            answered = scrape(f"http://127.0.0.1:{port}/metrics", WORKER_COUNTERS)
            if not answered:
                return None
            for key, value in answered.items():
                workers[key] = workers.get(key, 0.0) + value
        server = scrape(f"http://127.0.0.1:{self.server_port}/metrics", SERVER_COUNTERS)
        return {"workers": workers, "server": server} if server else None

    def read_when_up(self, wait_s: float = 60.0) -> dict[str, dict[str, float]] | None:
        """The counters once every process answers, waiting at most ``wait_s``; None if one never did."""
        deadline = time.monotonic() + wait_s
        while True:
            counted = self.read()
            if counted is not None or time.monotonic() >= deadline:
                return counted
            time.sleep(0.25)


def per_item(before: dict[str, dict[str, float]], after: dict[str, dict[str, float]], items: int) -> dict:
    """Each counter's growth per item, those of at least 0.01 an item (latencies' sums in ms an item)."""
    out: dict[str, dict[str, float]] = {}
    for side in after:
        grown = {}
        for key, value in sorted(after[side].items()):
            delta = (value - before.get(side, {}).get(key, 0.0)) / items
            if key.split("[")[0].endswith("_sum"):
                delta *= 1000  # both sides' latencies are in seconds
            if abs(delta) >= 0.01:
                grown[key] = round(delta, 3)
        out[side] = grown
    return out


class Progress:
    """What the crawl has cost so far, told on stderr every ``every`` seconds: since the start and
    since the last line (a URL that costs more as the crawl grows shows as a rate that falls and a
    CPU per item that rises)."""

    def __init__(self, sampler: MemorySampler, pids: dict[str, int | None], catalog: Catalog, every: float,
                 metrics: Metrics | None = None) -> None:
        self.sampler, self.pids, self.catalog, self.every, self.metrics = sampler, pids, catalog, every, metrics
        self.lines: list[dict] = []
        self.crawl_id: str | None = None
        self.first_entry: int | None = None

    def cpu(self) -> dict[str, float]:
        return {name: tree_cpu_s(pid) for name, pid in self.pids.items() if pid}

    def frontier_read_ms(self, position: int) -> float | None:
        """One read of the frontier's next page at ``position`` entries in, as frontier_next reads it."""
        if self.crawl_id is None:
            return None
        if self.first_entry is None:
            first = self.catalog.frontier_page(self.crawl_id, 0, 1)
            if not first:
                return None
            self.first_entry = first[0].seq
        began = time.perf_counter()
        self.catalog.frontier_page(self.crawl_id, self.first_entry + position - 1, 500)
        return round(1000 * (time.perf_counter() - began), 2)

    async def run(self) -> None:
        began, last_t, last_items, last_cpu = time.monotonic(), time.monotonic(), 0, self.cpu()
        first_cpu = dict(last_cpu)
        # The first counters once every process answers (its port comes up with it): a baseline
        # read before that would leave the first line without counts.
        last_metrics = await asyncio.to_thread(self.metrics.read_when_up) if self.metrics else None
        metrics_items = self.sampler.samples[-1][1] if self.sampler.samples else 0
        while True:
            await asyncio.sleep(self.every)
            now, cpu = time.monotonic(), self.cpu()
            items = self.sampler.samples[-1][1] if self.sampler.samples else 0
            done = items - last_items
            line = {"s": round(now - began), "items": items,
                    "items_per_s": round(done / (now - last_t), 2),
                    "cpu_ms_per_item": {k: round(1000 * (cpu[k] - last_cpu[k]) / done, 1) for k in cpu} if done else None,
                    "cpu_ms_per_item_so_far": ({k: round(1000 * (cpu[k] - first_cpu[k]) / items, 1) for k in cpu}
                                               if items else None),
                    "workers_rss_mib": [round(r, 1) for r in self.sampler.processes_rss],
                    "frontier_read_ms": await asyncio.to_thread(self.frontier_read_ms, items),
                    "load": round(os.getloadavg()[0], 1)}
            if self.metrics is not None:
                # Counted from the last line that had items and every process's counters; a line
                # without either has none (a process restarted in between counts from zero: the
                # line after shows less of what it counts).
                counted = await asyncio.to_thread(self.metrics.read)
                if counted is not None and last_metrics is not None and items > metrics_items:
                    line["per_item"] = per_item(last_metrics, counted, items - metrics_items)
                if counted is not None and (last_metrics is None or items > metrics_items):
                    last_metrics, metrics_items = counted, items
            self.lines.append(line)
            print(json.dumps(line), file=sys.stderr, flush=True)
            last_t, last_items, last_cpu = now, items, cpu


def frontier_next_ms(histories: list) -> list[dict]:
    """Each frontier_next activity's time from start to completion, by tenth of the crawl (its
    runs in order): median and largest."""
    times: list[float] = []
    for history in histories:
        scheduled, started = {}, {}
        for event in history.events:
            if event.HasField("activity_task_scheduled_event_attributes"):
                scheduled[event.event_id] = event.activity_task_scheduled_event_attributes.activity_type.name
            elif event.HasField("activity_task_started_event_attributes"):
                attrs = event.activity_task_started_event_attributes
                started[attrs.scheduled_event_id] = event.event_time.ToDatetime()
            elif event.HasField("activity_task_completed_event_attributes"):
                attrs = event.activity_task_completed_event_attributes
                if scheduled.get(attrs.scheduled_event_id) == "frontier_next" and attrs.scheduled_event_id in started:
                    times.append((event.event_time.ToDatetime() - started[attrs.scheduled_event_id]).total_seconds())
    out = []
    for tenth in range(10):
        part = times[len(times) * tenth // 10:len(times) * (tenth + 1) // 10]
        if part:
            out.append({"tenth": tenth + 1, "calls": len(part), "median_ms": round(1000 * statistics.median(part), 1),
                        "max_ms": round(1000 * max(part), 1)})
    return out


async def one(env: WorkflowEnvironment, sim: Simulator, size: int, new: int, work: Path,
              args: argparse.Namespace) -> dict:
    database = f"trawl_bigcrawl_{size}_{os.getpid()}"
    catalog_url = postgres_database(args.postgres, database) if args.postgres else ""
    settings = Settings(data_dir=work / f"data-{size}", catalog=CatalogSettings(url=catalog_url),
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
    worker_port = free_ports_in_a_row(args.processes, avoid=args.server_metrics_port) if args.metrics else 0
    worker = start_worker(settings, work / f"worker-{size}.log", traced, args.trace_from, args.processes, worker_port)
    sampler = MemorySampler(worker.pid, catalog, [int(n) for n in args.snapshots.split(",")], traced,
                            supervised=args.processes > 1)
    sampler.start()
    port = int(settings.temporal.address.rsplit(":", 1)[1])
    progress = Progress(sampler, {"server": server_pid(port), "workers": worker.pid,
                                  "postgres": postmaster_pid(args.postgres) if args.postgres else None},
                        catalog, args.progress,
                        Metrics([worker_port + i for i in range(args.processes)], args.server_metrics_port)
                        if args.metrics else None)
    cpu_before = progress.cpu()
    telling = asyncio.create_task(progress.run())
    try:
        began = time.monotonic()
        handle, _ = await start_crawl(env.client, settings, default_registry(), [*known, *fresh],
                                      concurrency=args.concurrency)
        progress.crawl_id = handle.id
        accepted = time.monotonic() - began
        stats = await handle.result()
        wall = time.monotonic() - began
        cpu_after = progress.cpu()
        await asyncio.sleep(1)  # the last sample
        worker_rss = max(peak_rss_mib(pid) for pid in (children(worker.pid) if args.processes > 1 else [worker.pid]))
    finally:
        telling.cancel()
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
    catalog.close()
    if args.postgres:
        postgres_database(args.postgres, database, drop=True)
    return {"urls": size, "new": new, "processes": args.processes, "catalog": "postgresql" if args.postgres else "sqlite",
            "accept_s": round(accepted, 2), "wall_s": round(wall, 2),
            "cpu_ms_per_url": {k: round(1000 * (cpu_after[k] - cpu_before[k]) / size, 1) for k in cpu_after},
            "frontier_next_ms_by_tenth": frontier_next_ms(histories),
            "progress": progress.lines,
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
    parser.add_argument("--processes", type=int, default=1, help="worker processes (trawl worker --processes)")
    parser.add_argument("--postgres", default="", help="an admin URL: the catalog on PostgreSQL")
    parser.add_argument("--concurrency", type=int, default=16, help="the crawl's items in flight")
    parser.add_argument("--server-in-memory", action="store_true",
                        help="the dev server's state in memory (before 2026-12-06 the bench's only way)")
    parser.add_argument("--progress", type=float, default=60, help="seconds between progress lines on stderr")
    parser.add_argument("--no-search-attribute-cache", dest="search_attribute_cache", action="store_false",
                        help="the dev server reads search attributes from its database every time (its default)")
    parser.add_argument("--metrics", action="store_true",
                        help="progress lines tell the workers' and the server's counters per item")
    args = parser.parse_args()
    args.server_metrics_port = free_port() if args.metrics else 0
    results = []
    with tempfile.TemporaryDirectory() as tmp, Simulator() as sim:
        server_config = dict(DEV_SERVER_DYNAMIC_CONFIG)
        if not args.search_attribute_cache:  # the CLI's default, as before 2026-12-07
            server_config["system.forceSearchAttributesCacheRefreshOnRead"] = "true"
        # As trawl's embedded server keeps it (trawl/starter/embedded.py): a file, not memory.
        server_args = dynamic_config_arguments(server_config) + ([] if args.server_in_memory else [
            "--db-filename", str(Path(tmp) / "temporal.db"), "--sqlite-pragma", "journal_mode=wal",
            "--sqlite-pragma", "synchronous=normal"])
        if args.metrics:
            server_args += ["--metrics-port", str(args.server_metrics_port)]
        # The server prints its banner to the standard output it inherits: give it stderr, so
        # the bench's own output stays JSON.
        stdout = os.dup(1)
        os.dup2(2, 1)
        try:
            env = await WorkflowEnvironment.start_local(dev_server_existing_path=TEMPORAL,
                                                        dev_server_extra_args=server_args,
                                                        search_attributes=list(SEARCH_ATTRIBUTES),
                                                        dev_server_log_level="error")
        finally:
            os.dup2(stdout, 1)
            os.close(stdout)
        try:
            for size in (int(s) for s in args.sizes.split(",")):
                results.append(await one(env, sim, size, args.new, Path(tmp), args))
        finally:
            await env.shutdown()
    base = results[0]
    print(json.dumps({"results": results, "server_dynamic_config": server_config, "vs_smallest": [
        {"urls": r["urls"], "accept_s_per_url": round(r["accept_s"] / r["urls"] / (base["accept_s"] / base["urls"]), 2),
         "new_items_per_s": round(r["new_items_per_s"] / base["new_items_per_s"], 2),
         "worker_peak_rss": round(r["worker_peak_rss_mib"] / base["worker_peak_rss_mib"], 2),
         "starter_peak_rss": round(r["starter_peak_rss_mib"] / base["starter_peak_rss_mib"], 2)}
        for r in results]}, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
