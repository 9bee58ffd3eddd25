"""Items per second with blobs in SeaweedFS (S3) vs in a local directory, N worker processes.

The latency-bound items of bench/scale.py (400 kB files, ~300 ms to the first byte, 1 MB/s per
connection; --slots activities per process) crawled by ``trawl worker --processes N`` (4 by
default), once with the local blob backend and once with ``storage.url = s3://<bucket>/<prefix>``
on a SeaweedFS ``weed server -s3`` (tests/s3server.py) on loopback. Same machine, same Temporal dev
server, same simulator and the same run; each backend run has its own task queue, data directory
(catalog) and fresh URLs. With --rounds 2 (default) the order alternates (local, s3 then s3,
local) so a drift in the machine's load falls on both backends.

Prints JSON: per run items/s, CPU seconds of the Temporal server, the workers and weed over the
items, mean activity milliseconds per item by stage (from the workers' logs) and, for S3, the
objects found under the run's prefix; then items/s per backend over all its runs
(items / seconds) and their ratio, per round and overall.

Usage: .venv/bin/python bench/scale_s3.py [--items N] [--processes N] [--slots N] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from common import connect_when_ready, wait_port  # puts the repository on sys.path
from s3 import stage_ms
from scale import crawl_rate, start_simulator, start_temporal, worker_env
from tests.s3server import BUCKET, seaweedfs


def count_objects(weed, prefix: str) -> int:  # noqa: ANN001 - a tests.s3server.SeaweedFS
    client = weed.client()
    try:
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=f"{prefix}/")
        return sum(len(page.get("Contents", [])) for page in pages)
    finally:
        client.close()


async def run(args: argparse.Namespace, tmp: Path, weed) -> dict:  # noqa: ANN001
    load_before = os.getloadavg()
    server, port = start_temporal(tmp)
    sim, sim_port = start_simulator(args.items * 2 * args.rounds)
    try:
        wait_port(port)
        wait_port(sim_port)
        client = await connect_when_ready(f"127.0.0.1:{port}")
        env = worker_env(port, args.slots)
        runs = []
        offset = 0
        for round_ in range(args.rounds):
            order = ("local", "s3") if round_ % 2 == 0 else ("s3", "local")
            for backend in order:
                urls = [f"http://127.0.0.1:{sim_port}/slow/{i}.mp4" for i in range(offset, offset + args.items)]
                offset += args.items
                label = f"{backend}-r{round_}"
                extra: dict[str, str] = {}
                if backend == "s3":
                    extra = {"TRAWL_STORAGE__URL": f"s3://{BUCKET}/scale/{label}",
                             "TRAWL_STORAGE__S3_ENDPOINT_URL": weed.endpoint, **weed.env()}
                log = tmp / f"{label}.log"
                result = await crawl_rate(client, env, urls, args.processes, tmp, server.pid, label=label,
                                          extra_env=extra, log=log, other_pids={"weed": weed.process.pid})
                per_item = max(result["committed"], 1)
                result = {"backend": backend, "round": round_, **result,
                          "stage_ms_per_item": {k: round(v / per_item) for k, v in sorted(stage_ms([log]).items())}}
                if backend == "s3":
                    result["objects_in_bucket"] = count_objects(weed, f"scale/{label}")
                runs.append(result)
        totals = {}
        for backend in ("local", "s3"):
            mine = [r for r in runs if r["backend"] == backend]
            totals[backend] = sum(r["items"] for r in mine) / sum(r["seconds"] for r in mine)
        rate = {(r["backend"], r["round"]): r["items_per_s"] for r in runs}
        return {
            "benchmark": "scale_s3",
            "processes": args.processes,
            "slots_per_process": args.slots,
            "items_per_run": args.items,
            "rounds": args.rounds,
            "cpus": os.cpu_count(),
            "loadavg_1m_before": round(load_before[0], 1),
            "loadavg_1m_after": round(os.getloadavg()[0], 1),
            "runs": runs,
            "local_items_per_s": round(totals["local"], 2),
            "s3_items_per_s": round(totals["s3"], 2),
            "s3_over_local": round(totals["s3"] / totals["local"], 2),
            "s3_over_local_per_round": [round(rate["s3", i] / rate["local", i], 2) for i in range(args.rounds)],
            "all_committed": all(r["committed"] == r["items"] for r in runs),
            "s3_objects_match": all(r["objects_in_bucket"] == r["committed"] for r in runs if r["backend"] == "s3"),
        }
    finally:
        sim.kill()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=80, help="items per backend per round")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--slots", type=int, default=4, help="download/verify/commit slots per process")
    parser.add_argument("--rounds", type=int, default=2, help="local and s3 once each per round")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="trawl-scale-s3-"))
    try:
        with seaweedfs(tmp / "weed") as weed:
            print(json.dumps(asyncio.run(run(args, tmp, weed))))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
