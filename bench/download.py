"""One large file over loopback: trawl end to end against curl on the same URL, same run.

Each round times, in an order that rotates from round to round (so that a busy moment of the
shared machine does not always fall on the same tool):

- ``curl``: ``curl -o FILE URL``, the file only written (it may still be in the page cache);
- ``curl_fsync``: the same followed by ``sync FILE`` (an fsync): as durable as trawl's commit,
  the pace the disk sets;
- ``ytdlp``: ``yt-dlp -o FILE URL`` when yt-dlp is on PATH (or ``--yt-dlp PATH``);
- ``trawl``: the item workflow submitted from this process -> committed, a ``trawl worker``
  process already polling;
- ``trawl_crawl``: ``trawl crawl URL`` typed (the command's whole wall time), its background
  server and worker already running (started by an uncounted first crawl), as a person runs one
  download after another; ``--no-command`` leaves it out.

Every trawl run gets a URL of its own (a query string) and its blob is removed after it, so each
one downloads, verifies and stores the file anew. Prints JSON: min/median/max of each, the
ratios of medians (and each round's ratio), the worker's CPU (user, system) per run, its
resident memory before each run and sampled every 20 ms during it (and its peak over its
life), the stages' milliseconds from its log, the machine's load.

The file is served by ``bench/staticserve.py`` (``sendfile``, as nginx would) unless
``--server simulator``, whose Python makes every byte and shares the two cores with the client.

Usage: .venv/bin/python bench/download.py [--size BYTES] [--rounds N] [--segments N]
                                          [--server static|simulator] [--yt-dlp PATH] [--no-command]

``--segments`` sets the worker's ``download.segments`` (default: the setting's default); on an
unthrottled loopback server one connection is enough and the download stays on it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import threading
import time
from pathlib import Path

from common import BIN, Stack, peak_rss_mib, rss_mib


def timed(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one command."""
    os.sync()  # start each measurement with no other run's dirty pages being written back
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cpu_seconds(pid: int) -> float:
    return sum(cpu_split(pid))


def cpu_split(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / os.sysconf("SC_CLK_TCK"), int(fields[12]) / os.sysconf("SC_CLK_TCK")


class RssSampler:
    """The highest resident memory of a process seen while it runs (sampled every 20 ms)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.most = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.most = max(self.most, rss_mib(self.pid))

    def __enter__(self) -> RssSampler:
        self.most = rss_mib(self.pid)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def settle(pid: int) -> None:
    """Wait until a process has finished starting (its imports), so its CPU time is the item's."""
    settled = cpu_seconds(pid)
    for _ in range(30):
        time.sleep(1)
        busy, settled = cpu_seconds(pid) - settled, cpu_seconds(pid)
        if busy < 0.05:
            return


def stage_ms(log: Path, offset: int) -> tuple[dict[str, int], int]:
    """Milliseconds per stage in the worker's log lines after ``offset``; the log's new end."""
    stages: dict[str, int] = {}
    with open(log, "rb") as handle:
        handle.seek(offset)
        text = handle.read()
    for line in text.decode(errors="replace").splitlines():
        if line.startswith("{") and '"event": "activity"' in line:
            entry = json.loads(line)
            stages[entry["stage"]] = stages.get(entry["stage"], 0) + entry.get("duration_ms", 0)
    return stages, offset + len(text)


def spread(values: list[float]) -> dict[str, float]:
    return {"min": round(min(values), 3), "median": round(statistics.median(values), 3), "max": round(max(values), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--segments", type=int, default=None)
    parser.add_argument("--server", choices=("static", "simulator"), default="static")
    parser.add_argument("--yt-dlp", dest="ytdlp", default=shutil.which("yt-dlp"))
    parser.add_argument("--no-command", dest="command", action="store_false")
    args = parser.parse_args()
    stack = Stack(args.size, seed="download-bench", static=args.server == "static")
    if args.segments is not None:
        stack.env["TRAWL_DOWNLOAD__SEGMENTS"] = str(args.segments)
    trawl = str(BIN / "trawl")
    background = stack.background_env()
    urls = (f"{stack.url}?r={n}" for n in range(10 ** 6))
    out = stack.tmp / "tool.out"
    wall: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    worker_cpu: list[tuple[float, float]] = []
    stages: list[dict[str, int]] = []
    rss_during: list[float] = []
    rss_before: list[float] = []
    outcomes: list[str] = []
    loads: list[float] = []
    try:
        worker = stack.start_worker()
        log = next(stack.tmp.glob("worker-*.log"))
        log_at = 0

        def run_trawl() -> tuple[float, float]:
            nonlocal log_at
            os.sync()
            user, system = cpu_split(worker.pid)
            rss_before.append(rss_mib(worker.pid))
            with RssSampler(worker.pid) as rss:
                seconds, result = asyncio.run(stack.submit_and_wait(next(urls)))
            after = cpu_split(worker.pid)
            worker_cpu.append((after[0] - user, after[1] - system))
            rss_during.append(rss.most)
            outcomes.append(result.outcome)
            time.sleep(0.3)  # the activity's log line comes just after its result
            done, log_at = stage_ms(log, log_at)
            stages.append(done)
            shutil.rmtree(stack.tmp / "data" / "blobs", ignore_errors=True)  # the next run stores it anew
            return seconds, sum(worker_cpu[-1])

        def run_command() -> tuple[float, float]:
            done = timed([trawl, "crawl", next(urls)], background, stack.tmp)
            shutil.rmtree(stack.tmp / "bg" / "blobs", ignore_errors=True)
            return done

        tools = {
            "curl": lambda: timed(["curl", "-sS", "-o", str(out), stack.url]),
            "curl_fsync": lambda: timed(["sh", "-c", f'curl -sS -o "{out}" "{stack.url}" && sync "{out}"']),
            "trawl": run_trawl,
        }
        if args.ytdlp:
            tools["ytdlp"] = lambda: timed([args.ytdlp, "-q", "--no-part", "-o", str(out), stack.url])
        if args.command:
            tools["trawl_crawl"] = run_command
            timed([trawl, "crawl", next(urls)], background, stack.tmp)  # starts the background server and worker
            shutil.rmtree(stack.tmp / "bg" / "blobs", ignore_errors=True)
        time.sleep(2)  # let the worker's pollers connect; not part of the item's time
        settle(worker.pid)
        names = list(tools)
        for round_ in range(args.rounds):
            loads.append(os.getloadavg()[0])
            for name in names[round_ % len(names):] + names[:round_ % len(names)]:
                seconds, used = tools[name]()
                out.unlink(missing_ok=True)
                wall.setdefault(name, []).append(seconds)
                cpu.setdefault(name, []).append(used)
        medians = {name: statistics.median(s) for name, s in wall.items()}
        ratios = {}
        for name in ("trawl", "trawl_crawl"):
            for base in ("curl", "curl_fsync", "ytdlp"):
                if name in wall and base in wall:
                    ratios[f"{name}_over_{base}"] = {
                        "of_medians": round(medians[name] / medians[base], 2),
                        "each_round": [round(a / b, 2) for a, b in zip(wall[name], wall[base])]}
        print(json.dumps({
            "benchmark": "download",
            "file_bytes": args.size,
            "server": args.server,
            "segments": args.segments,
            "rounds": args.rounds,
            "load_avg_1m": [round(x, 2) for x in loads],
            "wall_s": {name: spread(s) for name, s in wall.items()},
            "ratios": ratios,
            # CPU seconds are steadier than wall seconds on a shared machine: the client's own work.
            "cpu_s": {name: spread(s) for name, s in cpu.items() if name != "trawl_crawl"},
            # Most of it is the kernel's: the receive copy, writing into the page cache, the writeback.
            "worker_user_cpu_s": spread([u for u, _ in worker_cpu]),
            "worker_system_cpu_s": spread([s for _, s in worker_cpu]),
            "worker_rss_before_mib": spread(rss_before),  # idle, before each run
            "worker_rss_during_mib": spread(rss_during),
            "worker_peak_rss_mib": round(peak_rss_mib(worker.pid), 1),
            "stage_ms": {name: [s.get(name, 0) for s in stages] for name in ("fetch", "download", "verify", "commit")},
            "outcomes": sorted(set(outcomes)),
        }, indent=1))
    finally:
        if args.command:
            subprocess.run([trawl, "down"], env=background, capture_output=True, timeout=120)
        stack.close()


if __name__ == "__main__":
    main()
