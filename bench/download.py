"""One large file over loopback: trawl end to end against curl on the same URL, same run.

Prints JSON: file size, curl seconds, curl followed by an fsync of its file (as durable as
trawl's commit), trawl seconds (workflow submitted -> committed, with a
`trawl worker` process already polling), their ratio, yt-dlp seconds when yt-dlp is installed,
the worker's peak RSS and the time each stage took.

Usage: .venv/bin/python bench/download.py [--size BYTES] [--segments N]

``--segments`` sets the worker's ``download.segments`` (default: the setting's default); on an
unthrottled loopback server segments change little, the file's bytes cross the same CPUs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import time
from pathlib import Path

from common import Stack, peak_rss_mib


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one command."""
    os.sync()  # start each measurement with no other run's dirty pages being written back
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cpu_seconds(pid: int) -> float:
    return sum(cpu_split(pid))


def cpu_split(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / os.sysconf("SC_CLK_TCK"), int(fields[12]) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1 << 30)
    parser.add_argument("--segments", type=int, default=None)
    args = parser.parse_args()
    stack = Stack(args.size, seed="download-bench")
    if args.segments is not None:
        stack.env["TRAWL_DOWNLOAD__SEGMENTS"] = str(args.segments)
    try:
        out = stack.tmp / "curl.out"
        curl_s, curl_cpu = timed(["curl", "-sS", "-o", str(out), stack.url])
        out.unlink()
        # The same download made durable (trawl's committed blob is on disk; curl's bare one may
        # still be in the page cache): where the disk, not the client, sets the pace.
        durable_s, _ = timed(["sh", "-c", f'curl -sS -o "{out}" "{stack.url}" && sync "{out}"'])
        out.unlink()
        ytdlp_s = ytdlp_cpu = None
        if shutil.which("yt-dlp"):
            ytdlp_s, ytdlp_cpu = timed(["yt-dlp", "-q", "--no-part", "-o", str(stack.tmp / "ytdlp.out"), stack.url])
            (stack.tmp / "ytdlp.out").unlink(missing_ok=True)
        worker = stack.start_worker()
        time.sleep(2)  # let the worker's pollers connect; not part of the item's time
        settled = cpu_seconds(worker.pid)
        for _ in range(30):  # and finish starting up (imports), so its CPU time is the item's
            time.sleep(1)
            busy, settled = cpu_seconds(worker.pid) - settled, cpu_seconds(worker.pid)
            if busy < 0.05:
                break
        os.sync()
        user, system = cpu_split(worker.pid)
        trawl_s, result = asyncio.run(stack.submit_and_wait())
        worker_user, worker_system = (after - before for after, before in zip(cpu_split(worker.pid), (user, system)))
        worker_cpu = worker_user + worker_system
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
            "curl_then_fsync_s": round(durable_s, 3),
            "trawl_over_curl_then_fsync": round(trawl_s / durable_s, 2),
            "ytdlp_s": round(ytdlp_s, 3) if ytdlp_s else None,
            "trawl_over_ytdlp": round(trawl_s / ytdlp_s, 2) if ytdlp_s else None,
            "segments": args.segments,
            # CPU seconds are steadier than wall seconds on a shared machine: the client's own work.
            "curl_cpu_s": round(curl_cpu, 2),
            "ytdlp_cpu_s": round(ytdlp_cpu, 2) if ytdlp_cpu is not None else None,
            "worker_cpu_s": round(worker_cpu, 2),
            # Most of it is the kernel's: writing into the page cache (on this VM 0.2-2 s per GiB
            # between identical runs of a bare pwrite loop), the receive copy, the writeback.
            "worker_system_cpu_s": round(worker_system, 2),
            "worker_peak_rss_mib": round(rss, 1),
            "stage_ms": stages,
            "outcome": result.outcome,
        }))
    finally:
        stack.close()


if __name__ == "__main__":
    main()
