"""One-shot crawls as people type them: `trawl crawl URL` of a 1 MiB file, again and again.

Serves distinct 1 MiB files from the simulator (a new file each time, as a person downloads one
video after another) and times, as wall time of the whole command:

- ``background``: the default, with nothing running at first: the first command starts the
  embedded Temporal server and a worker in the background (`first`), the next ``--runs`` use
  them (`median`); then `trawl down`. ``--firsts`` first commands, each in a new data directory
  (one sample of a first command is too noisy to judge by: 2.1-2.8 s on a quiet machine).
- ``old``: the same with ``temporal.idle_timeout = 0`` (every command boots and stops its own
  server and runs its own worker, as before the background server).
- a pause of 2 s before each command of every tool, as a person types the next one (the
  background's warm process starts 3 s after its server);
- baselines in the same run: ``yt-dlp -o FILE URL`` (on PATH, or ``--yt-dlp PATH``) and
  ``curl -o FILE URL`` of the same files.

Goal (issue 43): background's median at most yt-dlp's, its first at most 2x yt-dlp's.
Prints JSON. Usage: .venv/bin/python bench/oneshot.py [--runs 5] [--firsts 5] [--yt-dlp PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import BIN, REPO, free_port, wait_port

SIZE = 1 << 20


PAUSE_S = 2.0  # between two commands, as a person types the next one (the same for every tool)


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    time.sleep(PAUSE_S)
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.strip()[-800:]}")
    return elapsed


def trawl_env(tmp: Path, name: str, sim_port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
    env.update(TRAWL_DATA_DIR=str(tmp / name / "data"), TRAWL_NET__ALLOW_PRIVATE="true",
               TRAWL_TEMPORAL__ADDRESS=f"127.0.0.1:{free_port()}", TRAWL_TEMPORAL__UI_PORT=str(free_port()),
               XDG_CONFIG_HOME=str(tmp / "config"), **extra)  # no user config file: the defaults
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--firsts", type=int, default=5, help="first commands, each in a new data directory")
    parser.add_argument("--yt-dlp", dest="ytdlp", default=shutil.which("yt-dlp"))
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="trawl-oneshot-"))
    count = 4 * (args.runs + 1) + args.firsts + 2
    sim_port = free_port()
    sim = subprocess.Popen([sys.executable, "-c", (
        "import time\n"
        "from trawl.simulator import Simulator, MediaFile\n"
        f"sim = Simulator(port={sim_port}).start()\n"
        f"for n in range({count}):\n"
        f"    sim.add_file(f'/media/{{n}}.mp4', MediaFile('mp4', f'oneshot-{{n}}', {SIZE}))\n"
        "time.sleep(1e9)\n")], cwd=REPO, stdout=subprocess.DEVNULL)
    urls = iter(f"http://127.0.0.1:{sim_port}/media/{n}.mp4" for n in range(count))
    trawl = str(BIN / "trawl")
    seconds: dict[str, list[float]] = {}
    try:
        wait_port(sim_port)
        out = tmp / "out"
        out.mkdir()
        baselines = {"curl": lambda url, n: ["curl", "-sf", "-o", str(out / f"curl-{n}.mp4"), url]}
        if args.ytdlp:
            baselines["yt-dlp"] = lambda url, n: [args.ytdlp, "-q", "--no-progress", "-o", str(out / f"yt-{n}.mp4"), url]
        for name, cmd in baselines.items():
            seconds[name] = [timed(cmd(next(urls), n), dict(os.environ), tmp) for n in range(args.runs)]

        for mode, extra in (("background", {}), ("old", {"TRAWL_TEMPORAL__IDLE_TIMEOUT": "0"})):
            # Each first command in a data directory of its own, nothing running: --firsts of them.
            for n in range(args.firsts if mode == "background" else 1):
                env = trawl_env(tmp, f"{mode}-{n}", sim_port, **extra)
                try:
                    seconds.setdefault(f"{mode} first", []).append(timed([trawl, "crawl", next(urls)], env, tmp))
                    if n == 0:
                        seconds[mode] = [timed([trawl, "crawl", next(urls)], env, tmp) for _ in range(args.runs)]
                finally:
                    subprocess.run([trawl, "down"], env=env, cwd=tmp, capture_output=True, timeout=120)
    finally:
        sim.terminate()
        sim.wait(timeout=15)
        shutil.rmtree(tmp, ignore_errors=True)
    medians = {name: statistics.median(s) for name, s in seconds.items()}
    report: dict[str, object] = {
        "load_avg_1m": round(os.getloadavg()[0], 2), "runs": args.runs, "file_bytes": SIZE,
        "median_s": {name: round(m, 3) for name, m in medians.items()},
        "each_s": {name: [round(x, 3) for x in s] for name, s in seconds.items()},
    }
    if "yt-dlp" in medians:
        base = medians["yt-dlp"]
        report["over_ytdlp"] = {name: round(m / base, 2) for name, m in medians.items() if name != "yt-dlp"}
        report["goal_met"] = {"median <= yt-dlp": medians["background"] <= base,
                              "first <= 2x yt-dlp": medians["background first"] <= 2 * base}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
