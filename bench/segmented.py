"""A throttled CDN (a per-connection rate limit): single-connection clients against segments.

The simulator limits each connection to --rate bytes/s (nginx's ``limit_rate``). Measured in one
run, on the same file: curl, yt-dlp and ``aria2c -xN -sN`` when installed, trawl's HttpDownloader
with 1 and N segments (the download stage alone), trawl end to end (submitted -> committed,
a worker per setting) with 1 and N segments, then a worker SIGKILLed at ~50 % of an N-segment
download and a new one started: how many bytes were served twice, and that in seconds of one
segment's transfer (each segment records its progress every 0.5-1 s).

Prints JSON with the ratios: ``speedup_over_*`` is that client's seconds over trawl's with N
segments (goal: >= 3 against every single-connection client, >= 1 against aria2c).

Usage: .venv/bin/python bench/segmented.py [--size BYTES] [--rate BYTES_PER_S] [--segments N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from common import Stack

from trawl.simulator import MediaFile


def timed(cmd: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=3600)
    return time.perf_counter() - started


def downloader_seconds(url: str, part: Path, segments: int) -> tuple[float, int]:
    import httpx

    from trawl.download import HttpDownloader, HostSlots

    with httpx.Client() as client:
        started = time.perf_counter()
        out = HttpDownloader(client, max_file_size=1 << 40, segments=segments, segment_min_size=1 << 20,
                         host_slots=HostSlots(8)).download([url], part)
        elapsed = time.perf_counter() - started
    part.unlink()
    return elapsed, out.connections


async def end_to_end(stack: Stack, segments: int, url: str) -> tuple[float, dict[str, int]]:
    from trawl.starter.client import connect, item_result, start_item
    from trawl.platforms.registry import default_registry

    stack.env["TRAWL_DOWNLOAD__SEGMENTS"] = str(segments)
    stack.env["TRAWL_DOWNLOAD__SEGMENT_MIN_SIZE"] = str(1 << 20)
    worker = stack.start_worker()
    try:
        settings = stack.settings()
        client = await connect(settings)
        await settle(worker.pid)  # the worker's start (imports, pollers) is not part of the item's time
        started_at = time.perf_counter()
        started = await start_item(client, settings, default_registry(), url)
        result = await item_result(started.handle, url)
        assert result.outcome in ("committed", "duplicate"), result
        return time.perf_counter() - started_at, stage_ms(stack.tmp / f"worker-{len(stack.procs) - 1}.log")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)


async def settle(pid: int) -> None:
    """Wait until process ``pid`` has started up: its CPU time stops growing."""
    await asyncio.sleep(2)
    last = cpu_seconds(pid)
    for _ in range(30):
        await asyncio.sleep(1)
        now = cpu_seconds(pid)
        if now - last < 0.05:
            return
        last = now


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stage_ms(log: Path) -> dict[str, int]:
    stages: dict[str, int] = {}
    for line in log.read_text().splitlines():
        if line.startswith("{") and '"event": "activity"' in line:
            entry = json.loads(line)
            stages[entry["stage"]] = stages.get(entry["stage"], 0) + entry.get("duration_ms", 0)
    return stages


async def killed_midway(stack: Stack, segments: int, url: str) -> dict:
    from trawl.starter.client import connect, item_result, start_item
    from trawl.platforms.registry import default_registry

    stack.env["TRAWL_DOWNLOAD__SEGMENTS"] = str(segments)
    settings = stack.settings()
    client = await connect(settings)
    base = stack.bytes_sent()
    worker = stack.start_worker()
    await settle(worker.pid)
    started = await start_item(client, settings, default_registry(), url)
    while stack.bytes_sent() - base < stack.size * 0.5:
        await asyncio.sleep(0.05)
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    before = stack.bytes_sent() - base
    second = stack.start_worker()
    result = await item_result(started.handle, url)
    served = stack.bytes_sent() - base
    second.send_signal(signal.SIGTERM)
    second.wait(timeout=30)
    return {
        "served_before_kill": round(before / stack.size, 3),
        "served_twice_bytes": served - stack.size,
        "served_twice_s_per_segment": round((served - stack.size) / segments / stack.rate, 2),
        "sha256_matches": bool(result.assets)
        and result.assets[0].sha256 == MediaFile("mp4", stack.seed, stack.size).sha256(),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=48 * 1024 * 1024)
    parser.add_argument("--rate", type=int, default=6 * 1000 * 1000)
    parser.add_argument("--segments", type=int, default=4)
    parser.add_argument("--no-kill", action="store_true", help="skip the SIGKILL run")
    args = parser.parse_args()
    n = args.segments
    stack = Stack(args.size, throttle_bps=args.rate, seed="segmented-bench")
    stack.rate = args.rate
    figures: dict[str, object] = {"benchmark": "segmented", "file_bytes": args.size, "rate_per_connection": args.rate,
                                  "segments": n}
    try:
        out = stack.tmp / "client.out"
        figures["curl_s"] = timed(["curl", "-sS", "-o", str(out), stack.url])
        out.unlink()
        if shutil.which("yt-dlp"):
            figures["ytdlp_s"] = timed(["yt-dlp", "-q", "--no-part", "-o", str(out), stack.url])
            out.unlink()
        if shutil.which("aria2c"):
            figures["aria2c_s"] = timed(["aria2c", "-q", f"-x{n}", f"-s{n}", "--min-split-size=1M",
                                         "--file-allocation=none", "--allow-overwrite=true", "-d", str(stack.tmp),
                                         "-o", out.name, stack.url])
            out.unlink()
        figures["trawl_download_1_s"], _ = downloader_seconds(stack.url, stack.tmp / "t1.part", 1)
        figures["trawl_download_n_s"], figures["trawl_connections"] = downloader_seconds(
            stack.url, stack.tmp / "tn.part", n)
        figures["trawl_e2e_1_s"], figures["e2e_1_stage_ms"] = asyncio.run(end_to_end(stack, 1, stack.url + "?run=1"))
        figures["trawl_e2e_n_s"], figures["e2e_n_stage_ms"] = asyncio.run(end_to_end(stack, n, stack.url + "?run=n"))
        best = figures["trawl_download_n_s"]
        for name in ("curl_s", "ytdlp_s", "aria2c_s", "trawl_download_1_s"):
            if name in figures:
                figures[f"speedup_over_{name.removesuffix('_s')}"] = round(figures[name] / best, 2)
        figures["e2e_speedup_n_over_1"] = round(figures["trawl_e2e_1_s"] / figures["trawl_e2e_n_s"], 2)
        figures["e2e_n_over_curl"] = round(figures["trawl_e2e_n_s"] / figures["curl_s"], 2)
        if not args.no_kill:
            figures["sigkill_at_half"] = asyncio.run(killed_midway(stack, n, stack.url + "?run=kill"))
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}))
    finally:
        stack.close()


if __name__ == "__main__":
    main()
