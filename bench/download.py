"""One large file over loopback: trawl end to end against curl on the same URL, same run.

Prints JSON: file size, curl seconds, trawl seconds (workflow submitted -> committed, with a
`trawl worker` process already polling), their ratio, yt-dlp seconds when yt-dlp is installed,
the worker's peak RSS and the time each stage took.

Usage: .venv/bin/python bench/download.py [--size BYTES]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import time

from common import Stack, peak_rss_mib


def timed(cmd: list[str]) -> float:
    os.sync()  # start each measurement with no other run's dirty pages being written back
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1 << 30)
    args = parser.parse_args()
    stack = Stack(args.size, seed="download-bench")
    try:
        out = stack.tmp / "curl.out"
        curl_s = timed(["curl", "-sS", "-o", str(out), stack.url])
        out.unlink()
        ytdlp_s = None
        if shutil.which("yt-dlp"):
            ytdlp_s = timed(["yt-dlp", "-q", "-o", str(stack.tmp / "ytdlp.out"), stack.url])
        worker = stack.start_worker()
        time.sleep(2)  # let the worker's pollers connect; not part of the item's time
        os.sync()
        trawl_s, result = asyncio.run(stack.submit_and_wait())
        rss = peak_rss_mib(worker.pid)
        stages = {}
        for log in stack.tmp.glob("worker-*.log"):
            for line in log.read_text().splitlines():
                if line.startswith("{") and '"event": "activity"' in line:
                    entry = json.loads(line)
                    stages[entry["stage"]] = stages.get(entry["stage"], 0) + entry.get("duration_ms", 0)
        print(json.dumps({
            "benchmark": "download",
            "file_bytes": args.size,
            "curl_s": round(curl_s, 3),
            "curl_MBps": round(args.size / curl_s / 1e6, 1),
            "trawl_s": round(trawl_s, 3),
            "trawl_MBps": round(args.size / trawl_s / 1e6, 1),
            "trawl_over_curl": round(trawl_s / curl_s, 2),
            "ytdlp_s": round(ytdlp_s, 3) if ytdlp_s else None,
            "worker_peak_rss_mib": round(rss, 1),
            "stage_ms": stages,
            "outcome": result.outcome,
        }))
    finally:
        stack.close()


if __name__ == "__main__":
    main()
