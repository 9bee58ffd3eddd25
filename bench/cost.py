"""What an item costs the Temporal server: history events, history bytes, heartbeats and billable actions.

Runs one item of each kind against its own dev server, a real worker and the simulator (the
scenarios of tests/workflows/record_histories.py where they exist, with trawl's default download
settings), one after another, and reads each run's history and the heartbeats the server received
meanwhile (its `service_requests{operation="RecordActivityTaskHeartbeat"}` counter). Beside them, in
the same run, the baseline: a trivial workflow of four no-op activities.

Billable actions follow Temporal Cloud's published definition (docs.temporal.io/cloud/actions,
read 2026-12): a workflow started 1; an activity started 1, and 1 more per retry (counted from the
attempt numbers on the started events); a heartbeat that reaches the server 1; a signal 1; a
search-attribute upsert 1 (those set at start are free); a timer 1; a child workflow started 2;
a continue-as-new 1; markers (local activities, side effects, version markers) 1 per workflow task
that records any. A memo change (WorkflowPropertiesModified) is counted as 1 too: it is a command
like an upsert; the definition does not name it. Queries are left out: they leave no event.

Usage: .venv/bin/python bench/cost.py [--only KIND ...] [--crawl-items 20]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import re
import sys
import tempfile
import urllib.request
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity, workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import free_port  # noqa: E402

from tests.workflows import record_histories as scenarios  # noqa: E402
from trawl.contracts import SEARCH_ATTRIBUTES  # noqa: E402
from trawl.platforms.bilibili.site import install_bilibili_site  # noqa: E402
from trawl.simulator import FileBehaviour, MediaFile, Simulator  # noqa: E402
from trawl.simulator.hls_site import install_hls_site  # noqa: E402
from trawl.starter.client import start_crawl  # noqa: E402
from trawl.worker.main import running_worker  # noqa: E402

MiB = 1024 * 1024
TEMPORAL = str(Path(sys.executable).parent / "temporal")
# Heartbeats as the frontend received them (the history service counts each again).
HEARTBEATS = re.compile(r'^service_requests\{(?=[^}]*service_name="frontend")[^}]*'
                        r'operation="RecordActivityTaskHeartbeat(?:ById)?"[^}]*\} (\S+)$', re.M)


# -- the baseline: four no-op activities ---------------------------------------------------------
@activity.defn(name="cost_noop")
async def noop(step: int) -> int:
    return step


@workflow.defn(name="CostTrivialWorkflow", sandboxed=False)
class TrivialWorkflow:
    @workflow.run
    async def run(self) -> int:
        total = 0
        for step in range(4):
            total += await workflow.execute_activity(noop, step, start_to_close_timeout=timedelta(seconds=30))
        return total


# -- counting --------------------------------------------------------------------------------------
@dataclass
class Cost:
    events: dict[str, int]
    history_bytes: int
    heartbeats: int
    actions: dict[str, int]

    @property
    def total_events(self) -> int:
        return sum(self.events.values())

    @property
    def total_actions(self) -> int:
        return sum(self.actions.values())

    def to_json(self) -> dict[str, Any]:
        return {"events": self.total_events, "events_by_type": self.events, "history_bytes": self.history_bytes,
                "heartbeats": self.heartbeats, "actions": self.total_actions, "actions_by_kind": self.actions}


def cost_of(events: list[Any], heartbeats: int) -> Cost:
    by_type: collections.Counter[str] = collections.Counter()
    actions: collections.Counter[str] = collections.Counter()
    size = 0
    marker_tasks: set[int] = set()
    for event in events:
        name = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_").lower()
        by_type[name] += 1
        size += len(event.SerializeToString())
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            actions["workflow started"] += 1
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            actions["activity started"] += 1
            actions["activity retries"] += max(0, event.activity_task_started_event_attributes.attempt - 1)
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            actions["signals"] += 1
        elif kind == EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
            actions["signals sent"] += 1
        elif kind == EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
            actions["search attribute upserts"] += 1
        elif kind == EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
            actions["memo changes"] += 1
        elif kind == EventType.EVENT_TYPE_TIMER_STARTED:
            actions["timers"] += 1
        elif kind == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
            actions["child workflows started (2 each)"] += 2
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            actions["continue-as-new"] += 1
        elif kind == EventType.EVENT_TYPE_MARKER_RECORDED:
            marker_tasks.add(event.marker_recorded_event_attributes.workflow_task_completed_event_id)
    if marker_tasks:
        actions["workflow tasks with markers"] = len(marker_tasks)
    if heartbeats:
        actions["heartbeats"] = heartbeats
    return Cost(dict(sorted(by_type.items())), size, heartbeats, dict(actions))


def heartbeats_so_far(metrics_port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as answer:
        return int(sum(float(v) for v in HEARTBEATS.findall(answer.read().decode())))


async def history(handle: WorkflowHandle) -> list[Any]:
    return [event async for event in handle.fetch_history_events()]


# -- the kinds ---------------------------------------------------------------------------------------
async def tiny(r: scenarios.Recorder) -> list[WorkflowHandle]:
    """4 kB: the one-activity small-item path."""
    r.sim.add_file("/cost/tiny.mp4", MediaFile("mp4", "cost-tiny", 4000))
    return [await r.finished(await r.item(r.sim.url("/cost/tiny.mp4")))]


async def large(r: scenarios.Recorder) -> list[WorkflowHandle]:
    """40 MiB served fast: over small_item_size, done on one connection before a split."""
    r.sim.add_file("/cost/large.mp4", MediaFile("mp4", "cost-large", 40 * MiB))
    return [await r.finished(await r.item(r.sim.url("/cost/large.mp4")))]


async def segmented(r: scenarios.Recorder) -> list[WorkflowHandle]:
    """32 MiB at 4 MB/s per connection: split into segments after download.split_after."""
    r.sim.add_file("/cost/seg.mp4", MediaFile("mp4", "cost-seg", 32 * MiB), FileBehaviour(throttle_bps=4_000_000))
    return [await r.finished(await r.item(r.sim.url("/cost/seg.mp4")))]


async def hour_like(r: scenarios.Recorder) -> list[WorkflowHandle]:
    """A 60 s download (30 MB at 500 kB/s, one connection): heartbeats per minute of download."""
    r.sim.add_file("/cost/slow.mp4", MediaFile("mp4", "cost-slow", 30_000_000), FileBehaviour(throttle_bps=500_000))
    return [await r.finished(await r.item(r.sim.url("/cost/slow.mp4")))]


async def crawl_items(r: scenarios.Recorder, count: int) -> tuple[WorkflowHandle, list[WorkflowHandle]]:
    """A crawl of ``count`` tiny files: the crawl's own history and its items'."""
    urls = []
    for i in range(count):
        r.sim.add_file(f"/cost/crawl/{i}.mp4", MediaFile("mp4", f"cost-crawl-{i}", 4000 + i))
        urls.append(r.sim.url(f"/cost/crawl/{i}.mp4"))
    handle, _ = await start_crawl(r.client, r.settings, r.registry, urls, concurrency=8)
    await asyncio.wait_for(handle.result(), 300)
    runs = [w async for w in r.client.list_workflows(f"WorkflowId='{handle.id}'")]
    items = [w async for w in r.client.list_workflows(f"CrawlId='{handle.id}' AND WorkflowType='MediaItemWorkflow'")]
    crawl_runs = [r.client.get_workflow_handle(handle.id, run_id=w.run_id) for w in runs]
    return crawl_runs, [r.client.get_workflow_handle(w.id, run_id=w.run_id) for w in items]  # type: ignore[return-value]


KINDS = {
    "tiny": tiny,
    "large, one connection": large,
    "segmented": segmented,
    "DASH (video + audio, merged)": scenarios.dash_two_assets,
    "HLS": scenarios.hls_committed,
    "failed: not_found": scenarios.failed_not_found,
    "url_expired, fetched again": scenarios.url_expired,
    "paused and resumed": scenarios.paused_resumed,
    "duplicate": scenarios.duplicate,
    "a 60 s download": hour_like,
}


async def measure(only: set[str], crawl_count: int) -> dict[str, Any]:
    metrics_port = free_port()
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=TEMPORAL,
                                                search_attributes=list(SEARCH_ATTRIBUTES),
                                                dev_server_log_level="error",
                                                dev_server_extra_args=["--metrics-port", str(metrics_port)])
    report: dict[str, Any] = {"kinds": {}}
    try:
        with tempfile.TemporaryDirectory() as tmp, Simulator() as sim, Simulator() as bili_sim:
            bili = install_bilibili_site(bili_sim)
            # Default download settings (tiny items committed by their first fetch,
            # fetch_and_store_tiny: download.with_fetch_size).
            settings = scenarios.recorder_settings(env, Path(tmp), bili, "cost")
            recorder = scenarios.Recorder(env.client, sim, settings)
            recorder.bilibili_url = bili.url("BV117411r7R1")  # type: ignore[attr-defined]
            recorder.hls = install_hls_site(sim)  # type: ignore[attr-defined]
            report["baseline"] = await trivial(env.client, metrics_port)
            async with running_worker(env.client, settings):
                for name, scenario in KINDS.items():
                    if only and name not in only:
                        continue
                    before = heartbeats_so_far(metrics_port)
                    handles = await scenario(recorder)
                    beats = heartbeats_so_far(metrics_port) - before
                    report["kinds"][name] = cost_of(await history(handles[-1]), beats).to_json()
                    print(f"{name}: {report['kinds'][name]['events']} events, "
                          f"{report['kinds'][name]['actions']} actions", file=sys.stderr)
                if crawl_count and (not only or "crawl" in only):
                    before = heartbeats_so_far(metrics_port)
                    crawl_runs, items = await crawl_items(recorder, crawl_count)
                    beats = heartbeats_so_far(metrics_port) - before
                    crawl = [cost_of(await history(h), 0) for h in crawl_runs]
                    item_costs = [cost_of(await history(h), 0) for h in items]
                    report["crawl"] = {
                        "items": len(items), "runs": len(crawl_runs),
                        "crawl_events": sum(c.total_events for c in crawl),
                        "crawl_history_bytes": sum(c.history_bytes for c in crawl),
                        "crawl_actions": sum(c.total_actions for c in crawl),
                        "crawl_actions_by_kind": dict(sum((collections.Counter(c.actions) for c in crawl),
                                                          collections.Counter())),
                        "crawl_events_by_type": dict(sum((collections.Counter(c.events) for c in crawl),
                                                         collections.Counter())),
                        "per_item": {
                            "crawl_events": round(sum(c.total_events for c in crawl) / max(1, len(items)), 1),
                            "crawl_actions": round(sum(c.total_actions for c in crawl) / max(1, len(items)), 1),
                            "item_events": round(sum(c.total_events for c in item_costs) / max(1, len(items)), 1),
                            "item_actions": round(sum(c.total_actions for c in item_costs) / max(1, len(items)), 1),
                            "heartbeats": round(beats / max(1, len(items)), 1),
                        },
                    }
    finally:
        await env.shutdown()
    base = report["baseline"]["actions"]
    for cost in report["kinds"].values():
        cost["x_trivial_actions"] = round(cost["actions"] / base, 2)
    return report


async def trivial(client: Client, metrics_port: int) -> dict[str, Any]:
    queue = f"cost-trivial-{uuid.uuid4().hex[:6]}"
    async with Worker(client, task_queue=queue, workflows=[TrivialWorkflow], activities=[noop]):
        before = heartbeats_so_far(metrics_port)
        handle = await client.start_workflow(TrivialWorkflow.run, id=f"cost-trivial-{uuid.uuid4().hex[:6]}",
                                             task_queue=queue)
        await handle.result()
        return cost_of(await history(handle), heartbeats_so_far(metrics_port) - before).to_json()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help=f"a kind: {', '.join(KINDS)}, or crawl")
    parser.add_argument("--crawl-items", type=int, default=20)
    args = parser.parse_args()
    # The dev server and the worker's logs write to standard output: to standard error while it
    # runs, so that standard output is the JSON alone.
    out = os.dup(1)
    os.dup2(2, 1)
    try:
        report = asyncio.run(measure(set(args.only), args.crawl_items))
    finally:
        sys.stdout.flush()
        os.dup2(out, 1)
    print(json.dumps(report, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
