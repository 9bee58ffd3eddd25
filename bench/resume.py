"""A throttled large download, its worker killed with SIGKILL near the middle, a new worker
started: how much of the file is served again after the restart (target: at most 0.55).

Prints JSON: file size, the fraction served before the kill, the fraction served after the
restart, seconds from kill to commit, and whether the committed sha256 matches the file's.

Usage: .venv/bin/python bench/resume.py [--size BYTES] [--rate BYTES_PER_S]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import time

from common import Stack

from trawl.simulator import MediaFile


async def run(stack: Stack) -> dict:
    from trawl.starter.client import connect, item_result, start_item
    from trawl.platforms.registry import default_registry

    settings = stack.settings()
    client = await connect(settings)
    worker = stack.start_worker()
    await asyncio.sleep(2)
    started = await start_item(client, settings, default_registry(), stack.url)
    while stack.bytes_sent() < stack.size * 0.5:
        await asyncio.sleep(0.05)
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    killed_at = time.perf_counter()
    before = stack.bytes_sent()
    stack.start_worker()
    result = await item_result(started.handle, stack.url)
    after = stack.bytes_sent() - before
    return {
        "benchmark": "resume",
        "file_bytes": stack.size,
        "served_before_kill": round(before / stack.size, 3),
        "served_after_restart": round(after / stack.size, 3),
        "kill_to_commit_s": round(time.perf_counter() - killed_at, 2),
        "outcome": result.outcome,
        "sha256_matches": bool(result.assets) and result.assets[0].sha256 == MediaFile("mp4", stack.seed, stack.size).sha256(),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=200 * 1024 * 1024)
    parser.add_argument("--rate", type=int, default=40 * 1024 * 1024)
    args = parser.parse_args()
    stack = Stack(args.size, throttle_bps=args.rate, seed="resume-bench")
    try:
        print(json.dumps(asyncio.run(run(stack))))
    finally:
        stack.close()


if __name__ == "__main__":
    main()
