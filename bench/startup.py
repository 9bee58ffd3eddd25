"""Start-up: what a command costs before it does anything, against yt-dlp and aria2c.

Runs, interleaved for --rounds rounds: the interpreter alone (`python -c pass`), `trawl
--version`, `trawl crawl --help`, `trawl resolve URL` (a 1 MiB file on the local simulator),
`trawl crawl --detach URL` (a dev server running, no worker: the command returns once the crawl
is started), and as baselines `yt-dlp --version`, `yt-dlp -j URL` (yt-dlp's resolve, on the same
URL) and `aria2c --version` when they are on PATH. Prints medians and spreads (seconds) and the
ratios to yt-dlp, with the machine's load.

Usage: .venv/bin/python bench/startup.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from common import BIN, Stack


def timed(cmd: list[str], env: dict[str, str], cwd: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    stack = Stack(1 << 20)
    trawl = str(BIN / "trawl")
    try:
        commands = {
            "python": [sys.executable, "-c", "pass"],
            "trawl --version": [trawl, "--version"],
            "trawl crawl --help": [trawl, "crawl", "--help"],
            "trawl resolve": [trawl, "resolve", stack.url],
            "trawl crawl --detach": [trawl, "crawl", "--detach", stack.url],
        }
        if shutil.which("yt-dlp"):
            commands["yt-dlp --version"] = ["yt-dlp", "--version"]
            commands["yt-dlp -j"] = ["yt-dlp", "-j", stack.url]
        if shutil.which("aria2c"):
            commands["aria2c --version"] = ["aria2c", "--version"]
        for cmd in commands.values():  # warm the page cache, and the dev server's first answers
            timed(cmd, stack.env, str(stack.tmp))
        seconds: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, cmd in commands.items():
                seconds[name].append(timed(cmd, stack.env, str(stack.tmp)))
    finally:
        stack.close()
    medians = {name: statistics.median(s) for name, s in seconds.items()}
    report = {
        "load_avg_1m": round(os.getloadavg()[0], 2), "rounds": args.rounds,
        "median_s": {name: round(m, 3) for name, m in medians.items()},
        "spread_s": {name: [round(min(s), 3), round(max(s), 3)] for name, s in seconds.items()},
    }
    if "yt-dlp --version" in medians:
        base = medians["yt-dlp --version"]
        report["over_ytdlp_version"] = {name: round(m / base, 2) for name, m in medians.items() if name.startswith("trawl")}
        report["resolve_over_ytdlp_j"] = round(medians["trawl resolve"] / medians["yt-dlp -j"], 2)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
