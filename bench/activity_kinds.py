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
from pathlib import Path

from common import connect_when_ready, wait_port
from scale import ceiling, start_temporal
from trivial import OneActivityWorkflow, OneLocalActivityWorkflow, TrivialWorkflow
from trawl.starter.embedded import DEV_SERVER_DYNAMIC_CONFIG

KINDS = {"one_activity": OneActivityWorkflow, "one_local_activity": OneLocalActivityWorkflow,
         "trivial_four_activities": TrivialWorkflow}


async def run(args: argparse.Namespace) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="trawl-kinds-"))
    server, port = start_temporal(tmp)
    try:
        wait_port(port)
        client = await connect_when_ready(f"127.0.0.1:{port}")
        for workflow in KINDS.values():  # warm-up: the server and this process
            await ceiling(client, 20, server.pid, workflow=workflow)
        rounds: dict[str, list[dict]] = {name: [] for name in KINDS}
        for _ in range(args.rounds):
            for name, workflow in KINDS.items():
                rounds[name].append(await ceiling(client, args.workflows, server.pid, workflow=workflow))
        median = statistics.median
        out = {name: {"server_cpu_ms": round(median(r["server_cpu_ms"] for r in runs), 2),
                      "worker_cpu_ms": round(median(r["worker_cpu_ms"] for r in runs), 2),
                      "per_s": round(median(r["per_s"] for r in runs), 1)}
               for name, runs in rounds.items()}
        for figures in out.values():
            figures["cpu_ms"] = round(figures["server_cpu_ms"] + figures["worker_cpu_ms"], 2)
        return {"benchmark": "activity_kinds", "workflows": args.workflows, "rounds": args.rounds,
                "server_dynamic_config": dict(DEV_SERVER_DYNAMIC_CONFIG),
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
