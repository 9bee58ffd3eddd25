"""A throttled CDN (a per-connection rate limit): single-connection clients against segments.

The simulator limits each connection to --rate bytes/s (nginx's ``limit_rate``). Measured in one
run, on the same file: curl, yt-dlp and ``aria2c -xN -sN`` when installed, trawl's HttpDownloader
with 1 and N segments (the download stage alone), trawl end to end (submitted -> committed,
a worker per setting) with 1 and N segments, then a worker SIGKILLed at ~50 % of an N-segment
download and a new one started: how many bytes were served twice, and that in seconds of one
segment's transfer (each segment records its progress every 0.5-1 s).

Prints JSON with the ratios: ``speedup_over_*`` is that client's seconds over trawl's with N
segments (goal: >= 3 against every single-connection client, >= 1 against aria2c), and
``e2e_n_over_aria2c``; each end-to-end run's stage times (``e2e_*_stage_ms``) hold, from the
item's history, where the time around the download went (``until_download_scheduled``,
``download_dispatch``, ``download_run``, ``after_download``, the events). Each end-to-end run has a data directory of its own: a blob already in
the store is hashed again before it is trusted, which a second commit of the same file would
add to its time (0.25 s for 96 MiB).

``--server nginx`` serves the file from nginx with ``limit_rate`` instead of the simulator (when
nginx is installed): its throttle lets each request send a second's worth at once before it
paces, as many CDNs' do; the SIGKILL run needs the simulator's byte counts and is skipped.
Each end-to-end worker runs a 64 KiB item of the simulator's before the one timed, as a
deployment's worker has (its first workflow, fetch and commit warm the process); ``--cold``
times its first item instead, as before 2026-12-07.
``--quick`` leaves out the single-connection clients and the SIGKILL run (A/B runs of the
split). ``--stages``: the end-to-end runs take an activity per stage on the claimed host
(``download.one_activity_on_host`` off), as every item over ``small_item_size`` did before. ``--one-slow BYTES_PER_S``: connections of unequal speed instead, the fourth request to
arrive served at that rate and every other at ``--rate``; only aria2c and trawl's downloader,
each on a fresh in-process simulator (a connection left with nothing takes from the others).
``--command ROUNDS``: ``trawl crawl URL`` typed, as issue 45 measured it (the command's whole wall
time; its background server, worker and warm process started by a first command), against
``aria2c -xN -sN``, alternated, 2 s apart; each command traced from its crawl's and item's
histories: milliseconds from the command's start to the crawl's start, the item's, its fetch and
its download activity (scheduled, completed), the item's and crawl's end, and the command's.

Usage: .venv/bin/python bench/segmented.py [--size BYTES] [--rate BYTES_PER_S] [--segments N]
       [--server simulator|nginx] [--quick] [--cold] [--stages] [--one-slow BYTES_PER_S] [--no-search-attribute-cache]
       [--command ROUNDS]
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

from common import BIN, Nginx, Stack

from trawl.cli.quick import SOCKET
from trawl.simulator import MediaFile
from trawl.starter.embedded import DEV_SERVER_DYNAMIC_CONFIG


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


async def end_to_end(stack: Stack, segments: int, url: str, warm: bool = True) -> tuple[float, dict[str, object]]:
    from trawl.starter.client import connect, item_result, start_item
    from trawl.platforms.registry import default_registry

    stack.env["TRAWL_DATA_DIR"] = str(stack.tmp / f"data-{segments}")  # a store without this file
    stack.env["TRAWL_DOWNLOAD__SEGMENTS"] = str(segments)
    stack.env["TRAWL_DOWNLOAD__SEGMENT_MIN_SIZE"] = str(1 << 20)
    worker = stack.start_worker()
    try:
        settings = stack.settings()
        client = await connect(settings)
        await settle(worker.pid)  # the worker's start (imports, pollers) is not part of the item's time
        # Nor the platforms' imports (70 ms on a first call): a command's start-up (bench/oneshot.py).
        registry = default_registry()
        if warm:  # a worker that has run an item before, as a deployment's does (--cold: none)
            warming = await start_item(client, settings, registry, f"{stack.warm_url}?run={segments}")
            await item_result(warming.handle, stack.warm_url)
        started_at = time.perf_counter()
        started = await start_item(client, settings, registry, url)
        result = await item_result(started.handle, url)
        elapsed = time.perf_counter() - started_at
        assert result.outcome in ("committed", "duplicate"), result
        stages = stage_ms(stack.tmp / f"worker-{len(stack.procs) - 1}.log")
        return elapsed, {**stages, **await around_download(started.handle)}
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)


# The activities that download an item's file: a stage of its own, or download, verify and commit
# in one (a small item, or a larger one on its host: download.one_activity_on_host).
DOWNLOADS = ("download", "small_item")


async def around_download(handle) -> dict[str, object]:  # noqa: ANN001 - a WorkflowHandle
    """From the item's history (the server's clock), milliseconds from the item's start: when its
    download was scheduled, when its last attempt started and how long that ran (with its verify and
    commit when they run in the same activity), and from the end of that activity until the item's
    end; with the attempts and every event as type@ms.

    The server writes an activity's started event when the attempt ends, with the time the
    attempt started: ``download_dispatch`` is the wait for a worker only when ``download_attempts``
    is 1 (otherwise it holds the earlier attempts and their backoff too). An item of several
    downloads (a video and its cover) is measured on the one that ended last."""
    from temporalio.api.enums.v1 import EventType

    events = [event async for event in handle.fetch_history_events()]
    first = events[0].event_time.ToDatetime()

    def ms(event) -> int:  # noqa: ANN001
        return round((event.event_time.ToDatetime() - first).total_seconds() * 1000)

    names: dict[int, str] = {}
    scheduled: dict[int, int] = {}
    started: dict[int, tuple[int, int]] = {}
    timeline: list[str] = []
    last: tuple[int, int] | None = None  # (scheduled event id, completed at)
    for event in events:
        kind = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_").lower()
        if event.HasField("activity_task_scheduled_event_attributes"):
            names[event.event_id] = event.activity_task_scheduled_event_attributes.activity_type.name
            scheduled[event.event_id] = ms(event)
            kind += ":" + names[event.event_id]
        elif event.HasField("activity_task_started_event_attributes"):
            attrs = event.activity_task_started_event_attributes
            started[attrs.scheduled_event_id] = (ms(event), attrs.attempt)
        elif event.HasField("activity_task_completed_event_attributes"):
            of = event.activity_task_completed_event_attributes.scheduled_event_id
            if names.get(of) in DOWNLOADS:
                last = (of, ms(event))
        timeline.append(f"{kind}@{ms(event)}")
    end = ms(events[-1])
    figures: dict[str, object] = {"history_ms": end, "history_events": len(events), "timeline": timeline}
    if last is not None and last[0] in started:
        of, completed = last
        began, attempts = started[of]
        figures.update(until_download_scheduled=scheduled[of], download_dispatch=began - scheduled[of],
                       download_attempts=attempts, download_run=completed - began, after_download=end - completed)
    return figures


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

    stack.env["TRAWL_DATA_DIR"] = str(stack.tmp / "data-kill")
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


def nginx_serving(tmp: Path, media: MediaFile, rate: int) -> Nginx:
    """nginx serving ``media`` as ``big.mp4``, each request limited to ``rate`` bytes/s."""
    root = tmp / "nginx"
    (root / "www").mkdir(parents=True)
    with open(root / "www" / "big.mp4", "wb") as out:
        for chunk in media.chunks(0, media.size - 1, 4 << 20):
            out.write(chunk)
    return Nginx(root, rate)


def one_slow(size: int, rate: int, slow: int, n: int) -> dict[str, object]:
    """aria2c and trawl's downloader where the fourth request to arrive goes at ``slow`` bytes/s."""
    import dataclasses
    import itertools
    import tempfile
    import threading

    from trawl.simulator import Simulator

    media = MediaFile("mp4", "one-slow", size)
    figures: dict[str, object] = {"benchmark": "segmented-one-slow", "file_bytes": size, "rate_per_connection": rate,
                                  "slow_connection_rate": slow, "segments": n, "load": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="trawl-bench-") as tmp:
        for name in ("aria2c", "trawl"):
            if name == "aria2c" and not shutil.which("aria2c"):
                continue
            sim = Simulator().start()
            count, lock = itertools.count(), threading.Lock()

            def answer(req, sim=sim, count=count, lock=lock):  # noqa: ANN001, ANN202
                with lock:
                    nth = next(count)
                return dataclasses.replace(sim.serve_media(req, media), throttle_bps=slow if nth == 3 else rate)

            sim.add_exact("/f.mp4", answer)
            try:
                if name == "aria2c":
                    figures["aria2c_s"] = timed(["aria2c", "-q", f"-x{n}", f"-s{n}", "--min-split-size=1M",
                                                 "--file-allocation=none", "--allow-overwrite=true", "-d", tmp,
                                                 "-o", "client.out", sim.url("/f.mp4")])
                else:
                    figures["trawl_download_n_s"], _ = downloader_seconds(sim.url("/f.mp4"), Path(tmp) / "t.part", n)
                    figures["trawl_requests"] = len(sim.stats["/f.mp4"].ranges)
            finally:
                sim.stop()
    if "aria2c_s" in figures:
        figures["trawl_over_aria2c"] = round(figures["trawl_download_n_s"] / figures["aria2c_s"], 3)
    return figures


def command_rounds(stack: Stack, url: str, n: int, rounds: int) -> dict[str, object]:
    """``trawl crawl URL`` typed (its background server, worker and warm process started by a first
    command, as a person's second command finds them) against ``aria2c -xN -sN``, alternated, 2 s
    apart; each command traced from its crawl's and item's histories (the server's clock, the same
    machine's as the command's)."""
    import statistics

    trawl = str(BIN / "trawl")
    background = stack.background_env()
    # As aria2c is told: N connections, a file of 1 MiB or more split (trawl's defaults otherwise).
    background.update(TRAWL_DOWNLOAD__SEGMENTS=str(n), TRAWL_DOWNLOAD__SEGMENT_MIN_SIZE=str(1 << 20))
    out = stack.tmp / "client.out"
    aria2c = ["aria2c", "-q", f"-x{n}", f"-s{n}", "--min-split-size=1M", "--file-allocation=none",
              "--allow-overwrite=true", "-d", str(stack.tmp), "-o", out.name, url]
    wall: dict[str, list[float]] = {"aria2c": [], "trawl_crawl": []}
    traces: list[dict[str, int]] = []
    loads: list[float] = []
    try:
        subprocess.run([trawl, "crawl", f"{stack.warm_url}?first"], env=background, cwd=stack.tmp, check=True,
                       stdout=subprocess.DEVNULL, timeout=600)  # starts the server, the worker, the warm process
        warm = stack.tmp / "bg" / "run" / SOCKET  # the warm process starts a few seconds after the worker
        deadline = time.monotonic() + 60
        while not warm.exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"no warm process for the commands ({warm} never appeared)")
            time.sleep(0.2)
        time.sleep(5)  # the background worker started as the first command ended: its imports take a second of CPU
        for round_ in range(rounds):
            loads.append(os.getloadavg()[0])
            for name in (("aria2c", "trawl_crawl") if round_ % 2 == 0 else ("trawl_crawl", "aria2c")):
                time.sleep(2)
                if name == "aria2c":
                    wall[name].append(timed(aria2c))
                    out.unlink()
                    continue
                began = time.time()
                done = subprocess.run([trawl, "crawl", "--json", f"{url}?r={round_}"], env=background, cwd=stack.tmp,
                                      capture_output=True, text=True, timeout=3600)
                ended = time.time()
                if done.returncode != 0:
                    raise RuntimeError(f"trawl crawl failed: {done.stdout} {done.stderr[-2000:]}")
                wall[name].append(ended - began)
                record = json.loads(done.stdout.splitlines()[0])
                traces.append(asyncio.run(command_trace(background, record["id"], began, ended)))
                shutil.rmtree(stack.tmp / "bg" / "blobs", ignore_errors=True)  # the next run stores it anew
    finally:
        subprocess.run([trawl, "down"], env=background, capture_output=True, timeout=120)
    medians = {name: statistics.median(s) for name, s in wall.items()}
    return {"benchmark": "segmented-command", "file_bytes": stack.size, "rate_per_connection": stack.rate,
            "segments": n, "rounds": rounds, "load_avg_1m": [round(x, 2) for x in loads],
            "wall_s": {name: [round(x, 3) for x in s] for name, s in wall.items()},
            "command_over_aria2c": {"of_medians": round(medians["trawl_crawl"] / medians["aria2c"], 3),
                                    "each_round": [round(a / b, 3) for a, b in zip(wall["trawl_crawl"], wall["aria2c"])]},
            "traces_ms": traces}


async def command_trace(env: dict[str, str], item_id: str, began: float, ended: float) -> dict[str, int]:
    """Milliseconds from the command's start: its crawl's first and last events, the item's, and
    the item's download activity; and the command's end."""
    from temporalio.client import Client

    client = await Client.connect(env["TRAWL_TEMPORAL__ADDRESS"])
    item = [event async for event in client.get_workflow_handle(item_id).fetch_history_events()]
    parent = item[0].workflow_execution_started_event_attributes.parent_workflow_execution.workflow_id
    crawl = [event async for event in client.get_workflow_handle(parent).fetch_history_events()] if parent else []

    def ms(event) -> int:  # noqa: ANN001 - ToDatetime() is naive: .timestamp() would read it as local time
        return round((event.event_time.ToMicroseconds() / 1e6 - began) * 1000)

    figures = {"crawl_started": ms(crawl[0]) if crawl else -1, "item_started": ms(item[0])}
    for event in item:
        if event.HasField("activity_task_scheduled_event_attributes"):
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            figures.setdefault(f"{name}_scheduled", ms(event))
        elif event.HasField("activity_task_completed_event_attributes"):
            of = next(e for e in item if e.event_id == event.activity_task_completed_event_attributes.scheduled_event_id)
            figures[f"{of.activity_task_scheduled_event_attributes.activity_type.name}_completed"] = ms(event)
    figures["item_closed"] = ms(item[-1])
    if crawl:
        figures["crawl_closed"] = ms(crawl[-1])
        figures["crawl_events"] = len(crawl)
    figures["command_ended"] = round((ended - began) * 1000)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=48 * 1024 * 1024)
    parser.add_argument("--rate", type=int, default=6 * 1000 * 1000)
    parser.add_argument("--segments", type=int, default=4)
    parser.add_argument("--no-kill", action="store_true", help="skip the SIGKILL run")
    parser.add_argument("--server", choices=("simulator", "nginx"), default="simulator")
    parser.add_argument("--quick", action="store_true", help="no single-connection client, no SIGKILL run")
    parser.add_argument("--cold", action="store_true",
                        help="the timed item is the worker's first (by default it has run a 64 KiB item before)")
    parser.add_argument("--stages", action="store_true",
                        help="end to end with an activity per stage on the claimed host (download.one_activity_on_host off)")
    parser.add_argument("--one-slow", type=int, default=0, metavar="BYTES_PER_S",
                        help="one connection of N at this rate: aria2c and the downloader only")
    parser.add_argument("--no-search-attribute-cache", dest="search_attribute_cache", action="store_false",
                        help="the dev server reads search attributes from its database every time (its default)")
    parser.add_argument("--command", type=int, default=0, metavar="ROUNDS",
                        help="`trawl crawl URL` typed (background server and worker) against aria2c, this many rounds")
    args = parser.parse_args()
    if args.command and not shutil.which("aria2c"):
        parser.error("--command compares with aria2c: install it (apt-get install aria2)")
    n = args.segments
    if args.one_slow:
        figures = one_slow(args.size, args.rate, args.one_slow, n)
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}))
        return
    server_config = dict(DEV_SERVER_DYNAMIC_CONFIG)
    if not args.search_attribute_cache:  # the CLI's default, as before 2026-12-07
        server_config["system.forceSearchAttributesCacheRefreshOnRead"] = "true"
    stack = Stack(args.size, throttle_bps=args.rate, seed="segmented-bench", server_config=server_config)
    stack.rate = args.rate
    stack.env["TRAWL_DOWNLOAD__ONE_ACTIVITY_ON_HOST"] = str(not args.stages).lower()
    nginx = nginx_serving(stack.tmp, MediaFile("mp4", stack.seed, stack.size), args.rate) if args.server == "nginx" else None
    url = nginx.url("big.mp4") if nginx is not None else stack.url
    figures: dict[str, object] = {"benchmark": "segmented", "server": args.server, "file_bytes": args.size,
                                  "rate_per_connection": args.rate, "segments": n, "load": os.getloadavg()[0],
                                  "one_activity_on_host": not args.stages, "server_dynamic_config": server_config,
                                  "worker_warmed": not args.cold}
    try:
        if args.command:
            print(json.dumps(command_rounds(stack, url, n, args.command)))
            return
        out = stack.tmp / "client.out"
        if not args.quick:
            figures["curl_s"] = timed(["curl", "-sS", "-o", str(out), url])
            out.unlink()
            if shutil.which("yt-dlp"):
                figures["ytdlp_s"] = timed(["yt-dlp", "-q", "--no-part", "-o", str(out), url])
                out.unlink()
        if shutil.which("aria2c"):
            figures["aria2c_s"] = timed(["aria2c", "-q", f"-x{n}", f"-s{n}", "--min-split-size=1M",
                                         "--file-allocation=none", "--allow-overwrite=true", "-d", str(stack.tmp),
                                         "-o", out.name, url])
            out.unlink()
        if not args.quick:
            figures["trawl_download_1_s"], _ = downloader_seconds(url, stack.tmp / "t1.part", 1)
        figures["trawl_download_n_s"], figures["trawl_connections"] = downloader_seconds(url, stack.tmp / "tn.part", n)
        if not args.quick:
            figures["trawl_e2e_1_s"], figures["e2e_1_stage_ms"] = asyncio.run(
                end_to_end(stack, 1, url + "?run=1", not args.cold))
        figures["trawl_e2e_n_s"], figures["e2e_n_stage_ms"] = asyncio.run(
            end_to_end(stack, n, url + "?run=n", not args.cold))
        best = figures["trawl_download_n_s"]
        for name in ("curl_s", "ytdlp_s", "aria2c_s", "trawl_download_1_s"):
            if name in figures:
                figures[f"speedup_over_{name.removesuffix('_s')}"] = round(figures[name] / best, 2)
        if "aria2c_s" in figures:
            figures["e2e_n_over_aria2c"] = round(figures["trawl_e2e_n_s"] / figures["aria2c_s"], 3)
        if "trawl_e2e_1_s" in figures:
            figures["e2e_speedup_n_over_1"] = round(figures["trawl_e2e_1_s"] / figures["trawl_e2e_n_s"], 2)
            figures["e2e_n_over_curl"] = round(figures["trawl_e2e_n_s"] / figures["curl_s"], 2)
        if not (args.no_kill or args.quick or nginx is not None):
            figures["sigkill_at_half"] = asyncio.run(killed_midway(stack, n, url + "?run=kill"))
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}))
    finally:
        if nginx is not None:
            nginx.close()
        stack.close()


if __name__ == "__main__":
    main()
