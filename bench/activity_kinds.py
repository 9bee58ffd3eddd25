"""What an activity costs the Temporal server and a worker: workflows of one activity, of one local
activity, and the trivial four-activity workflow (bench/scale.py's yardstick), alternated in rounds
on one dev server started as trawl's embedded one is. CPU milliseconds per workflow of the server
and of this process (its worker and client), medians over the rounds. A tiny item is one activity
today; this says what running it as a local activity would save, before anyone builds it.

Usage: .venv/bin/python bench/activity_kinds.py [--workflows 300] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from common import connect_when_ready, cpu_seconds, wait_port
from scale import start_temporal
from temporalio.client import Client
from temporalio.worker import Worker
from trivial import OneActivityWorkflow, OneLocalActivityWorkflow, TrivialWorkflow, noop

KINDS = {"one_activity": OneActivityWorkflow, "one_local_activity": OneLocalActivityWorkflow,
         "trivial_four_activities": TrivialWorkflow}


async def cost(client: Client, workflow: type, count: int, server_pid: int) -> dict:
    queue = f"kinds-{uuid.uuid4().hex[:6]}"
    async with Worker(client, task_queue=queue, workflows=[workflow], activities=[noop],
                      max_concurrent_activities=64):
        server, own = cpu_seconds(server_pid), time.process_time()
        started = time.perf_counter()
        handles = [await client.start_workflow(workflow.run, id=f"{queue}-{i}", task_queue=queue)
                   for i in range(count)]
        await asyncio.gather(*(h.result() for h in handles))
        elapsed = time.perf_counter() - started
        return {"per_s": count / elapsed, "server_cpu_ms": 1000 * (cpu_seconds(server_pid) - server) / count,
                "worker_cpu_ms": 1000 * (time.process_time() - own) / count}


async def run(args: argparse.Namespace) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="trawl-kinds-"))
    server, port = start_temporal(tmp)
    try:
        wait_port(port)
        client = await connect_when_ready(f"127.0.0.1:{port}")
        for workflow in KINDS.values():  # warm-up: the server and this process
            await cost(client, workflow, 20, server.pid)
        rounds: dict[str, list[dict]] = {name: [] for name in KINDS}
        for _ in range(args.rounds):
            for name, workflow in KINDS.items():
                rounds[name].append(await cost(client, workflow, args.workflows, server.pid))
        median = statistics.median
        out = {name: {"server_cpu_ms": round(median(r["server_cpu_ms"] for r in runs), 2),
                      "worker_cpu_ms": round(median(r["worker_cpu_ms"] for r in runs), 2),
                      "per_s": round(median(r["per_s"] for r in runs), 1)}
               for name, runs in rounds.items()}
        for figures in out.values():
            figures["cpu_ms"] = round(figures["server_cpu_ms"] + figures["worker_cpu_ms"], 2)
        return {"benchmark": "activity_kinds", "workflows": args.workflows, "rounds": args.rounds,
                "load": round(os.getloadavg()[0], 1), "medians": out,
                "local_over_activity_cpu": round(out["one_local_activity"]["cpu_ms"] / out["one_activity"]["cpu_ms"], 2)}
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        subprocess.run(["rm", "-rf", str(tmp)], check=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workflows", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    print(json.dumps(asyncio.run(run(parser.parse_args()))))


if __name__ == "__main__":
    main()
