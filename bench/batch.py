"""A batch: 30 files of 8 MiB behind a per-connection rate limit, one crawl, against aria2c.

The simulator limits each connection to --rate bytes/s (a throttled CDN). Measured in one run,
on the same files (each client gets its own copy of the list, under its own path): ``aria2c -j16
-i list`` when installed, else curl with the same parallelism (``xargs -P16``); then ``trawl
crawl --no-worker -a list`` with a worker already running (started and settled first, as under
`trawl up`; the crawl command's own start-up counts, as aria2c's does). Prints JSON: seconds of
each, ``trawl_over_baseline`` (goal: <= 1.0), and the worker's stage seconds summed over the items.

With --own-worker no worker runs: the command starts its own, as a newcomer's first crawl does.

Usage: .venv/bin/python bench/batch.py [--files 30] [--size BYTES] [--rate BYTES_PER_S] [--jobs 16] [--own-worker]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import subprocess
import sys
import time

from common import BIN, REPO, Stack, free_port, wait_port
from segmented import settle, stage_ms

MiB = 1024 * 1024


class BatchStack(Stack):
    """Stack's Temporal server and workers, with a simulator serving ``files`` throttled files under
    each of the ``lists`` (``/<list>/<i>.mp4``)."""

    def __init__(self, files: int, size: int, rate: int, lists: tuple[str, ...]) -> None:
        super().__init__(4096, seed="batch-unused")
        self.procs[0].kill()  # Stack's one-file simulator: this benchmark serves its own files
        self.sim_port = free_port()
        sim_code = (
            "import time\n"
            "from trawl.simulator import Simulator, MediaFile, FileBehaviour\n"
            f"sim = Simulator(port={self.sim_port}).start()\n"
            f"for name in {list(lists)!r}:\n"
            f"    for i in range({files}):\n"
            f"        sim.add_file(f'/{{name}}/{{i}}.mp4', MediaFile('mp4', f'batch-{{name}}-{{i}}', {size}),"
            f" FileBehaviour(throttle_bps={rate}))\n"
            "time.sleep(1e9)\n"
        )
        self.procs.append(subprocess.Popen([sys.executable, "-c", sim_code], cwd=REPO, stdout=subprocess.DEVNULL))
        try:
            wait_port(self.sim_port)
        except RuntimeError:
            self.close()
            raise
        self.files = files

    def url_list(self, name: str) -> str:
        path = self.tmp / f"{name}.txt"
        path.write_text("".join(f"http://127.0.0.1:{self.sim_port}/{name}/{i}.mp4\n" for i in range(self.files)))
        return str(path)


def timed(cmd: list[str], **kwargs: object) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800, **kwargs)
    return time.perf_counter() - started


def baseline(stack: BatchStack, jobs: int) -> tuple[str, float]:
    out = stack.tmp / "baseline"
    out.mkdir()
    urls = stack.url_list("baseline")
    if shutil.which("aria2c"):
        return f"aria2c -j{jobs}", timed(["aria2c", "-q", f"-j{jobs}", "--file-allocation=none",
                                          "--allow-overwrite=true", "-d", str(out), "-i", urls])
    # Without aria2c: curl, as many at once.
    return f"curl xargs -P{jobs}", timed(["sh", "-c", f"cd {out} && xargs -P{jobs} -n1 curl -sS -O < {urls}"])


def trawl_crawl(stack: BatchStack, name: str, own_worker: bool = False) -> tuple[float, list[dict]]:
    cmd = [str(BIN / "trawl"), "crawl", *([] if own_worker else ["--no-worker"]), "--json", "-a", stack.url_list(name)]
    started = time.perf_counter()
    done = subprocess.run(cmd, env=stack.env, cwd=stack.tmp, capture_output=True, text=True, timeout=1800)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"crawl failed: {done.stdout[-2000:]} {done.stderr[-2000:]}")
    return elapsed, [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=30)
    parser.add_argument("--size", type=int, default=8 * MiB)
    parser.add_argument("--rate", type=int, default=2 * 1000 * 1000)
    parser.add_argument("--jobs", type=int, default=16, help="the baseline's downloads at once")
    parser.add_argument("--own-worker", action="store_true",
                        help="no worker running: the crawl command starts its own, as a newcomer's first crawl does")
    parser.add_argument("--setting", action="append", default=[], metavar="SECTION.NAME=VALUE",
                        help="a trawl setting for the workers and the crawl, e.g. download.segments=1")
    args = parser.parse_args()
    stack = BatchStack(args.files, args.size, args.rate, ("baseline", "trawl"))
    for setting in args.setting:
        name, _, value = setting.partition("=")
        stack.env["TRAWL_" + name.upper().replace(".", "__")] = value
    figures: dict[str, object] = {"benchmark": "batch", "files": args.files, "file_bytes": args.size,
                                  "rate_per_connection": args.rate, "settings": args.setting}
    try:
        figures["baseline"], figures["baseline_s"] = baseline(stack, args.jobs)
        if args.own_worker:
            figures["trawl_crawl_s"], records = trawl_crawl(stack, "trawl", own_worker=True)
            figures["committed"] = sum(r.get("outcome") == "committed" for r in records)
            figures["trawl_over_baseline"] = round(figures["trawl_crawl_s"] / figures["baseline_s"], 2)
            print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in figures.items()}))
            return
        worker = stack.start_worker()
        asyncio.run(settle(worker.pid))  # the worker's start-up is not the crawl's time
        figures["trawl_crawl_s"], records = trawl_crawl(stack, "trawl")
        figures["committed"] = sum(r.get("outcome") == "committed" for r in records)
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
        log = stack.tmp / f"worker-{len(stack.procs) - 1}.log"
        figures["stage_s"] = {k: round(v / 1000, 1) for k, v in stage_ms(log).items()}  # summed over the items
        figures["trawl_over_baseline"] = round(figures["trawl_crawl_s"] / figures["baseline_s"], 2)
        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in figures.items()}))
    finally:
        stack.close()


if __name__ == "__main__":
    main()
