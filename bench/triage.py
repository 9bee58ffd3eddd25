"""`trawl logs triage` on a million log lines: prints JSON with lines per second.

The log is generated: activity lines in trawl's format, 2% failing across a few platforms,
stages and error classes. Usage: .venv/bin/python bench/triage.py [--lines N]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

BIN = Path(sys.executable).parent


def write_log(path: Path, lines: int) -> None:
    rng = random.Random(7)
    start = datetime(2026, 11, 30, tzinfo=UTC)
    platforms = ["bilibili", "weibo", "facebook", "generic"]
    stages = ["fetch", "download", "verify", "commit"]
    classes = ["http_5xx", "rate_limited", "network_timeout", "not_found", "url_expired"]
    with open(path, "w") as out:
        for i in range(lines):
            ts = (start + timedelta(milliseconds=i * 5)).isoformat().replace("+00:00", "Z")
            failing = rng.random() < 0.02
            event = {
                "outcome": ("retry" if rng.random() < 0.8 else "failed") if failing else "ok",
                "duration_ms": rng.randint(1, 5000), "task_id": f"url-{rng.getrandbits(64):016x}",
                "stage": rng.choice(stages), "attempt": 1, "platform": rng.choice(platforms),
                "canonical_url": f"https://example.com/v/{i}", "event": "activity", "worker": "host:123",
                "level": "warning" if failing else "info", "ts": ts, "error_class": None, "bytes": None,
            }
            if failing:
                event["error_class"] = rng.choice(classes)
                event["error"] = "simulated failure"
            out.write(json.dumps(event) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "worker.log"
        write_log(log, args.lines)
        started = time.perf_counter()
        done = subprocess.run([str(BIN / "trawl"), "logs", "triage", str(log), "--json"], capture_output=True,
                              text=True, check=True)
        elapsed = time.perf_counter() - started
        report = json.loads(done.stdout)
        print(json.dumps({
            "benchmark": "triage", "lines": report["lines"], "bytes": log.stat().st_size,
            "seconds": round(elapsed, 2), "lines_per_s": int(report["lines"] / elapsed),
            "groups": len(report["groups"]),
        }))


if __name__ == "__main__":
    main()
