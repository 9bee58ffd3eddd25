"""How long items sit idle after an outage of the blob store (S3) or of the catalog (PostgreSQL) ends.

Runs, all on 127.0.0.1: a Temporal dev server, SeaweedFS (``weed server -s3``, tests/s3server.py),
the simulator serving ``--items`` media files (2-24 MB, throttled so that downloads take seconds;
those over 5 MiB are uploaded in parts) and a trawl worker in this process. The worker reaches
SeaweedFS's S3 API and the local PostgreSQL (a fresh database, dropped at the end) each through a
TCP proxy (tests/tcpproxy.py), which can fail like its server: ``refuse`` closes the listening socket and
resets every connection (a crashed server), ``freeze`` stops forwarding but keeps the connections
and takes new ones (a stopped server). With ``--target s3`` two more modes fail SeaweedFS itself,
reached then without a proxy: ``stop`` SIGSTOPs its process (then SIGCONT), ``kill`` SIGKILLs it
(then starts it again on its ports and data). One crawl of every file is started; once some
items are committed and others are mid-download, the target fails for ``--outage`` seconds, then
serves again, and every item is waited for. ``--load N`` keeps N busy-looping processes running
throughout (a loaded machine: the 1-minute load average at the restore is reported).

Times are measured from the moment the store answers a new request again (a fresh client's
HEAD of the bucket, asked every 50 ms from the restore on: ``answered_after_restore_s``).

From the worker's log (one line per stage attempt) and the items' workflows: when each item
committed and ended, relative to the restore, how long it waited for its first attempt after the
restore, and the delays between its failed attempts and the next (the retry policy at work).
Prints one JSON object on stdout (progress on stderr; the worker's log kept in ``--log``). The
goal: every item moving again within 10 s of the restore.

Usage: .venv/bin/python bench/recovery.py [--target s3|catalog] [--mode refuse|freeze|stop|kill] [--outage 60]
                                         [--items 12] [--load 0]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import io
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from temporalio.client import Client  # noqa: E402
from temporalio.service import RPCError  # noqa: E402
from temporalio.testing import WorkflowEnvironment  # noqa: E402

from tests.s3server import BUCKET, SeaweedFS, seaweedfs  # noqa: E402
from tests.tcpproxy import TcpProxy  # noqa: E402
from trawl.contracts import SEARCH_ATTRIBUTES, ItemResult  # noqa: E402
from trawl.errors import StorageError  # noqa: E402
from trawl.logs import configure_logging  # noqa: E402
from trawl.platforms.registry import build_registry  # noqa: E402
from trawl.settings import (  # noqa: E402
    CatalogSettings, NetSettings, Settings, StageRetry, StorageSettings, TemporalSettings)
from trawl.simulator import FileBehaviour, MediaFile, Simulator  # noqa: E402
from trawl.starter.client import item_handle, item_result, start_crawl  # noqa: E402
from trawl.worker.main import code_build_id, running_worker  # noqa: E402

MiB = 1024 * 1024
LOOPBACK = "127.0.0.1"
TEMPORAL = str(Path(sys.executable).parent / "temporal")
POSTGRES_PORT = 5432
POSTGRES_ADMIN = f"host={LOOPBACK} port={POSTGRES_PORT} dbname=test user=root"
GOAL_S = 10.0


def say(message: str) -> None:
    print(f"recovery: {message}", file=sys.stderr, flush=True)


# -- the worker's record -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Attempt:
    """One stage attempt, from its ``event: activity`` log line (times: epoch seconds)."""

    task_id: str
    stage: str
    activity: str | None
    outcome: str
    error_class: str | None
    error: str | None
    started: float
    ended: float


class WorkerLog(io.TextIOBase):
    """The stream the worker logs to: every line into the log file, the stage attempts kept."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed with this stream
        self._pending = ""
        self._lock = threading.Lock()
        self.attempts: list[Attempt] = []

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        with self._lock:
            self._file.write(text)
            self._pending += text
            *lines, self._pending = self._pending.split("\n")
            for line in lines:
                self._take(line)
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()
        super().close()

    def _take(self, line: str) -> None:
        if '"event": "activity"' not in line:
            return
        try:
            entry = json.loads(line)
            ended = datetime.fromisoformat(entry["ts"]).timestamp()
        except (ValueError, KeyError, TypeError):
            return
        if not entry.get("task_id") or not entry.get("outcome"):
            return
        self.attempts.append(Attempt(entry["task_id"], entry.get("stage") or "", entry.get("activity"),
                                     entry["outcome"], entry.get("error_class"), entry.get("error"),
                                     ended - (entry.get("duration_ms") or 0) / 1000, ended))

    def snapshot(self) -> list[Attempt]:
        with self._lock:
            return list(self.attempts)

    def commit_times(self) -> dict[str, float]:
        """When each item's commit succeeded, by workflow id."""
        times: dict[str, float] = {}
        for attempt in self.snapshot():
            if attempt.stage == "commit" and attempt.outcome == "ok":
                times.setdefault(attempt.task_id, attempt.ended)
        return times


@contextlib.contextmanager
def worker_logging(path: Path) -> Iterator[WorkerLog]:
    """The worker's JSON lines into ``path`` (and read back); afterwards warnings to stderr only."""
    record = WorkerLog(path)
    configure_logging(stream=record, json=True, worker="recovery-bench")
    try:
        yield record
    finally:
        root = logging.getLogger()
        for handler in list(root.handlers):
            root.removeHandler(handler)
        root.addHandler(logging.StreamHandler(sys.stderr))
        root.setLevel(logging.WARNING)
        record.close()


# -- the catalog's database --------------------------------------------------------------------------
@contextlib.contextmanager
def fresh_database(run_id: str) -> Iterator[str]:
    """A database of its own on the local PostgreSQL (the catalog's tables have fixed names in the
    default schema), dropped at the end."""
    import psycopg

    name = f"trawl_bench_{run_id}"
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def catalog_rows(database: str) -> int:
    """Items in the catalog, read past the proxy."""
    import psycopg

    with psycopg.connect(f"host={LOOPBACK} port={POSTGRES_PORT} dbname={database} user=root") as conn:
        row = conn.execute("SELECT count(*) FROM items WHERE status = 'committed'").fetchone()
    return int(row[0]) if row else 0


# -- the measures ------------------------------------------------------------------------------------
def longest_idle(restored: float, commits: list[float], open_until: float) -> float:
    """The longest stretch after ``restored`` in which nothing committed while some item was open
    (until ``open_until``: the last item's end, or when the wait gave up)."""
    marks = sorted(t for t in commits if restored < t < open_until)
    points = [restored, *marks, max(open_until, restored)]
    return max(later - earlier for earlier, later in zip(points, points[1:]))


def retry_delays(attempts: list[Attempt]) -> list[float]:
    """Seconds from each failed attempt to the item's next one: the backoff it waited."""
    ordered = sorted(attempts, key=lambda a: a.started)
    delays = []
    for index, failed in enumerate(ordered):
        if failed.outcome != "retry":
            continue
        following = [a.started for a in ordered[index + 1:] if a.started >= failed.ended - 0.01]
        if following:
            delays.append(round(min(following) - failed.ended, 1))
    return delays


def policy(stage: StageRetry) -> dict[str, float]:
    return {"initial_interval_s": stage.initial_interval.total_seconds(),
            "backoff_coefficient": stage.backoff_coefficient,
            "maximum_interval_s": stage.maximum_interval.total_seconds()}


def since(moment: float | None, origin: float) -> float | None:
    return None if moment is None else round(moment - origin, 2)


@dataclass
class ItemEnd:
    outcome: str
    error_class: str | None
    ended: float | None  # epoch seconds; None: still open when the wait gave up


async def item_ends(client: Client, urls: dict[str, str], timeout: float) -> dict[str, ItemEnd]:
    """Each item's outcome and the server's close time, waiting at most ``timeout`` seconds."""
    async def one(workflow_id: str, url: str) -> ItemResult:
        return await item_result(item_handle(client, workflow_id), url)

    tasks = {wid: asyncio.create_task(one(wid, url)) for wid, url in urls.items()}
    await asyncio.wait(tasks.values(), timeout=timeout)
    ends: dict[str, ItemEnd] = {}
    for workflow_id, task in tasks.items():
        if not task.done():
            task.cancel()
            ends[workflow_id] = ItemEnd("open", None, None)
            continue
        result = task.result()
        described = await item_handle(client, workflow_id).describe()
        closed = described.close_time.timestamp() if described.close_time else None
        ends[workflow_id] = ItemEnd(result.outcome, result.error_class, closed)
    await asyncio.gather(*tasks.values(), return_exceptions=True)
    return ends


async def all_started(client: Client, workflow_ids: list[str], timeout: float = 60) -> None:
    """Until the crawl has started every item workflow (a wait on one not started yet fails)."""
    deadline = time.monotonic() + timeout
    for workflow_id in workflow_ids:
        while True:
            try:
                await item_handle(client, workflow_id).describe()
                break
            except RPCError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the crawl did not start {workflow_id}") from None
                await asyncio.sleep(0.2)


@contextlib.contextmanager
def busy_load(count: int) -> Iterator[None]:
    """``count`` processes that keep a core busy each, for the duration of the block."""
    spinning = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for process in spinning:
            process.kill()
            process.wait()


class Outage:
    """What fails and comes back: a proxy in front of the target (refuse, freeze) or SeaweedFS's
    own process (stop: SIGSTOP then SIGCONT; kill: SIGKILL, then started again)."""

    def __init__(self, mode: str, proxy: TcpProxy | None, weed: SeaweedFS | None) -> None:
        self.mode = mode
        self.proxy = proxy
        self.weed = weed

    @property
    def connections(self) -> int | None:
        return self.proxy.connections if self.proxy is not None else None

    def begin(self) -> None:
        if self.mode == "refuse":
            self.proxy.down()
        elif self.mode == "freeze":
            self.proxy.freeze()
        elif self.mode == "stop":
            self.weed.freeze()
        else:
            self.weed.stop()

    def end(self) -> None:
        if self.mode == "refuse":
            self.proxy.up()
        elif self.mode == "freeze":
            self.proxy.thaw()
        elif self.mode == "stop":
            self.weed.thaw()
        else:
            self.weed.restart()

    def answered(self) -> float:
        """When the store answers a new request again (now, for a proxy: the server behind it never stopped)."""
        while self.weed is not None and self.proxy is None and not self.weed.answers(timeout=1.0):
            time.sleep(0.05)
        return time.time()


@dataclass
class MediaPlan:
    path: str
    size: int


def media_plan(items: int) -> list[MediaPlan]:
    """2 to 24 MB, evenly spread: small items (one activity) and host-local ones (over
    download.small_item_size, 16 MiB), most of them uploaded in 5 MiB parts."""
    sizes = [2_000_000 + (22_000_000 * i) // max(1, items - 1) for i in range(items)]
    return [MediaPlan(f"/recovery/{i:02d}.mp4", size) for i, size in enumerate(sizes)]


async def mixed_state(sim: Simulator, plan: list[MediaPlan], log: WorkerLog, timeout: float) -> tuple[int, int]:
    """Until some items are committed and others mid-download; after ``timeout``, once one is
    committed; after twice that, as things are. Returns (committed, downloading)."""
    wanted = max(1, len(plan) // 4)
    deadline = time.monotonic() + timeout
    while True:
        committed = len(log.commit_times())
        downloading = sum(1 for media in plan if 0 < sim.bytes_sent(media.path) < media.size)
        if committed >= wanted and downloading >= min(2, len(plan) - committed):
            return committed, downloading
        late = time.monotonic() - deadline
        if (late > 0 and committed) or late > timeout:
            return committed, downloading
        await asyncio.sleep(0.1)


async def measure(args: argparse.Namespace, log_path: Path) -> dict[str, Any]:
    # SIGTERM cancels this task alone, as asyncio does for Ctrl-C: the teardown below then runs in
    # order (the worker before the servers it uses). A KeyboardInterrupt raised into the loop
    # instead has asyncio cancel every task at once, the worker's own among them, and the
    # worker's shutdown then waits for ever.
    this = asyncio.current_task()
    assert this is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, this.cancel)
    run_id = uuid.uuid4().hex[:8]
    plan = media_plan(args.items)
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="trawl-recovery-")))
        # The code's defaults, not a trawl.toml that happens to lie in the working directory.
        os.environ["TRAWL_CONFIG"] = str(tmp / "absent.toml")
        for name in [n for n in os.environ if n.startswith("TRAWL_") and n != "TRAWL_CONFIG"]:
            del os.environ[name]
        database = stack.enter_context(fresh_database(run_id))
        if args.load:
            say(f"{args.load} busy processes for load")
            stack.enter_context(busy_load(args.load))
        say("starting SeaweedFS")
        weed = stack.enter_context(seaweedfs(tmp / "weed", restartable=args.mode == "kill"))
        os.environ.update(weed.env())
        sim = stack.enter_context(Simulator())
        for index, media in enumerate(plan):
            sim.add_file(media.path, MediaFile("mp4", f"recovery-{run_id}-{index}", media.size),
                         FileBehaviour(throttle_bps=args.rate))
        # Threaded, apart from this loop: the worker's loop, busy with workflow tasks, does not
        # hold up their bytes.
        s3_proxy = stack.enter_context(TcpProxy(weed.s3))
        catalog_proxy = stack.enter_context(TcpProxy(POSTGRES_PORT))
        own_process = args.mode in ("stop", "kill")
        s3_endpoint = weed.endpoint if own_process else f"http://{LOOPBACK}:{s3_proxy.port}"
        target = Outage(args.mode, None if own_process else s3_proxy if args.target == "s3" else catalog_proxy,
                        weed if args.target == "s3" else None)
        log = stack.enter_context(worker_logging(log_path))
        say("starting the Temporal dev server")
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=TEMPORAL, search_attributes=list(SEARCH_ATTRIBUTES),
            dev_server_log_level="error",
            dev_server_extra_args=["--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal"])
        try:
            settings = Settings(
                data_dir=tmp / "data",
                temporal=TemporalSettings(address=env.client.service_client.config.target_host, embedded=False,
                                          task_queue_prefix=f"recovery-{run_id}"),
                catalog=CatalogSettings(url=f"postgresql+psycopg://root@{LOOPBACK}:{catalog_proxy.port}/{database}"),
                storage=StorageSettings(url=f"s3://{BUCKET}/recovery-{run_id}",
                                        s3_endpoint_url=s3_endpoint, s3_part_size=5 * MiB),
                net=NetSettings(allow_private=True),
            )
            timeline = await crawl_through_outage(args, env.client, settings, sim, plan, log, target)
            report = summarize(args, settings, timeline, log)
            report["catalog_rows"] = catalog_rows(database)
        finally:
            await env.shutdown()
    report["worker_log"] = str(log_path)
    return report


@dataclass
class Timeline:
    """What one run saw (times: epoch seconds)."""

    sizes: dict[str, int]  # workflow id -> bytes
    started: float
    began: float  # the outage
    restored: float
    answered: float  # the store answered a new request again
    load_1m: float  # the load average at the restore
    gave_up: float  # the wait for the items ended
    committed_before: int
    downloading: int
    connections: int | None  # open through the proxy when the outage began
    open_at_restore: int
    ends: dict[str, ItemEnd]
    crawl_closed: float | None


async def crawl_through_outage(args: argparse.Namespace, client: Client, settings: Settings, sim: Simulator,
                               plan: list[MediaPlan], log: WorkerLog, target: Outage) -> Timeline:
    registry = build_registry(settings.platforms)
    urls = {registry.route(sim.url(m.path)).workflow_id: sim.url(m.path) for m in plan}
    sizes = {registry.route(sim.url(m.path)).workflow_id: m.size for m in plan}
    async with running_worker(client, settings):
        started = time.time()
        crawl, refused = await start_crawl(client, settings, registry, list(urls.values()), concurrency=len(plan))
        if refused:
            raise RuntimeError(f"the crawl refused {refused}")
        say(f"crawl {crawl.id} of {len(plan)} files started")
        await all_started(client, list(urls))
        committed_before, downloading = await mixed_state(sim, plan, log, timeout=60)
        say(f"{committed_before} committed, {downloading} downloading: {args.target} {args.mode} "
            f"for {args.outage:g} s")
        began = time.time()
        connections = target.connections
        target.begin()
        try:
            for _ in range(int(args.outage // 10)):
                await asyncio.sleep(10)
                failures = sum(1 for a in log.snapshot() if a.outcome != "ok" and a.ended >= began)
                say(f"  outage +{time.time() - began:.0f} s: {len(log.commit_times())} committed, "
                    f"{failures} failed attempts so far")
            await asyncio.sleep(max(0.0, began + args.outage - time.time()))
        finally:
            restored = time.time()
            await asyncio.to_thread(target.end)
        answered = await asyncio.to_thread(target.answered)
        load_1m = os.getloadavg()[0]
        open_at_restore = len(plan) - sum(1 for wid in urls if wid in log.commit_times())
        say(f"restored after {restored - began:.1f} s, answering {answered - restored:.2f} s later (load "
            f"{load_1m:.1f}); waiting up to {args.wait:g} s for the items")
        ends = await item_ends(client, urls, timeout=max(1.0, restored + args.wait - time.time()))
        gave_up = time.time()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(crawl.result(), max(1.0, restored + args.wait - time.time()))
        crawl_closed = (await crawl.describe()).close_time
    return Timeline(sizes, started, began, restored, answered, load_1m, gave_up, committed_before, downloading,
                    connections,
                    open_at_restore, ends, crawl_closed.timestamp() if crawl_closed else None)


def summarize(args: argparse.Namespace, settings: Settings, run: Timeline, log: WorkerLog) -> dict[str, Any]:
    commits = log.commit_times()
    attempts = log.snapshot()
    by_item: dict[str, list[Attempt]] = collections.defaultdict(list)
    for attempt in attempts:
        by_item[attempt.task_id].append(attempt)
    ended = [end.ended for end in run.ends.values() if end.ended is not None]
    all_ended = len(ended) == len(run.ends)
    open_until = max(ended, default=run.restored) if all_ended else run.gave_up
    after = [t - run.restored for t in commits.values() if t >= run.restored]
    idle = longest_idle(run.restored, list(commits.values()), open_until)
    errors_seen: dict[str, str] = {}
    failures: collections.Counter[str] = collections.Counter()
    for attempt in attempts:
        if attempt.outcome != "ok" and attempt.error_class:
            failures[f"{attempt.stage}:{attempt.error_class}"] += 1
            errors_seen.setdefault(f"{attempt.stage}:{attempt.error_class}", (attempt.error or "")[:300])
    details = []
    retry_waits = []  # restore -> first attempt, of items open then with no attempt under way
    for workflow_id, end in sorted(run.ends.items(), key=lambda kv: run.sizes[kv[0]]):
        own = by_item.get(workflow_id, [])
        resumed = [a.started for a in own if a.started >= run.restored]
        under_way = any(a.started < run.restored < a.ended for a in own)
        if resumed and not under_way and commits.get(workflow_id, run.restored) >= run.restored:
            retry_waits.append(min(resumed) - run.restored)
        committing = [a for a in own if a.stage == "commit" and a.outcome == "ok"]
        details.append({
            "mb": round(run.sizes[workflow_id] / 1e6, 1),
            "path": "small_item" if any(a.activity == "small_item" for a in own) else "host",
            "outcome": end.outcome,
            "error_class": end.error_class,
            "committed_s": since(commits.get(workflow_id), run.restored),
            "commit_took_s": round(committing[0].ended - committing[0].started, 2) if committing else None,
            "ended_s": since(end.ended, run.restored),
            "failed_attempts": sum(1 for a in own if a.outcome != "ok"),
            "retry_delays_s": retry_delays(own),
            "first_attempt_after_restore_s": since(min(resumed), run.restored) if resumed else None,
        })
    return {
        "benchmark": "recovery",
        "target": args.target,
        "mode": args.mode,
        "outage_s": round(run.restored - run.began, 2),
        "items": len(run.ends),
        "committed": sum(1 for end in run.ends.values() if end.outcome in ("committed", "duplicate")),
        "failed": sum(1 for end in run.ends.values() if end.outcome == "failed"),
        "still_open": sum(1 for end in run.ends.values() if end.ended is None),
        "first_commit_after_restore_s": round(min(after), 2) if after else None,
        "all_done_after_restore_s": round(max(ended) - run.restored, 2) if all_ended and ended else None,
        "answered_after_restore_s": round(run.answered - run.restored, 2),
        "first_commit_after_answer_s": round(min(after) - (run.answered - run.restored), 2) if after else None,
        "all_done_after_answer_s": round(max(ended) - run.answered, 2) if all_ended and ended else None,
        "load_processes": args.load,
        "load_1m_at_restore": round(run.load_1m, 1),
        "idle_after_restore_s": round(idle, 2),
        # Of that, the part spent waiting for a retry timer (the rest is the attempts' own work).
        "longest_wait_for_retry_after_restore_s": round(max(retry_waits), 2) if retry_waits else None,
        "goal_s": GOAL_S,
        "idle_under_goal": idle < GOAL_S and all_ended,
        "crawl_done_after_restore_s": since(run.crawl_closed, run.restored),
        "outage_began_after_start_s": round(run.began - run.started, 2),
        "committed_before_outage": run.committed_before,
        "downloading_at_outage": run.downloading,
        "connections_cut" if args.mode == "refuse" else "connections_frozen": run.connections,
        "outage_of": "proxy" if args.mode in ("refuse", "freeze") else "process",
        "open_at_restore": run.open_at_restore,
        "retry": {"download": policy(settings.retry.download), "commit": policy(settings.retry.commit),
                  "fetch": policy(settings.retry.fetch), "verify": policy(settings.retry.verify)},
        # getattr: the benchmark also runs on code from before the class's retry cap and the
        # store's own timeout existed, to compare.
        "storage_error_max_retry_interval_s": getattr(StorageError, "max_retry_interval", None),
        "s3_timeout_s": _seconds(getattr(settings.storage, "s3_timeout", None)),
        "small_item_size": settings.download.small_item_size,
        "s3_part_size": settings.storage.s3_part_size,
        "throttle_bps": args.rate,
        "failed_attempts": dict(failures),
        "errors_seen": errors_seen,
        "per_item": details,
        "build_id": code_build_id(),
    }


def _seconds(value: object) -> float | None:
    return value.total_seconds() if isinstance(value, timedelta) else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=("s3", "catalog"), default="s3",
                        help="what fails: the blob store's S3 API or the catalog's PostgreSQL (default s3)")
    parser.add_argument("--mode", choices=("refuse", "freeze", "stop", "kill"), default="refuse",
                        help="refuse: the proxy resets and refuses connections (a crashed server); freeze: the "
                             "proxy takes connections but never answers (a stopped server); stop: SIGSTOP of "
                             "SeaweedFS itself, then SIGCONT; kill: SIGKILL of SeaweedFS, then started again "
                             "(stop and kill: --target s3 only) (default refuse)")
    parser.add_argument("--outage", type=float, default=60.0, help="seconds the target is down (default 60)")
    parser.add_argument("--items", type=int, default=12, help="media files crawled, 2-24 MB (default 12)")
    parser.add_argument("--rate", type=int, default=2_000_000,
                        help="bytes/s the simulator serves each download at (default 2000000)")
    parser.add_argument("--wait", type=float, default=150.0,
                        help="seconds after the restore to wait for the items (default 150)")
    parser.add_argument("--load", type=int, default=0,
                        help="busy-looping processes kept running throughout, to load the machine (default 0)")
    parser.add_argument("--log", type=Path, default=None,
                        help="the worker's JSON log (default: a new file under the temporary directory)")
    args = parser.parse_args()
    if args.items < 2 or args.outage <= 0:
        parser.error("--items must be at least 2 and --outage positive")
    if args.mode in ("stop", "kill") and args.target != "s3":
        parser.error("--mode stop and kill fail SeaweedFS's process: --target s3 only")
    log_path = args.log or Path(tempfile.gettempdir()) / (
        f"trawl-recovery-{args.target}-{args.mode}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl")
    # The dev server writes to standard output: to standard error while it runs, so that standard
    # output is the JSON alone.
    out = os.dup(1)
    os.dup2(2, 1)
    try:
        report = asyncio.run(measure(args, log_path))
    except (asyncio.CancelledError, KeyboardInterrupt):
        say("interrupted; everything it started is stopped")
        sys.exit(130)
    finally:
        sys.stdout.flush()
        os.dup2(out, 1)
    print(render(report))


def render(report: dict[str, Any]) -> str:
    """The report as JSON, a line per field and per item: a person reads it too."""
    fields = []
    for key, value in report.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            rows = ",\n".join(f"  {json.dumps(row)}" for row in value)
            fields.append(f" {json.dumps(key)}: [\n{rows}\n ]")
        else:
            fields.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(fields) + "\n}"


if __name__ == "__main__":
    main()
