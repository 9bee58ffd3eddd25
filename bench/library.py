"""The library page with 100,000 items: how long each page the web page offers takes to answer.

Seeds a catalog (SQLite by default, or --catalog URL) with --items committed items (bulk inserts,
the search index kept by the migration's triggers or generated column as a commit keeps it),
starts `trawl api` on it (its own process, a Temporal dev server beside it), and asks for each page
--requests times per round, rounds interleaved, over one kept-alive HTTP connection. The baseline, in the same
run and the same way: a static file and /healthz of the same server (what an answer costs with no
catalog behind it). Prints JSON: per page, the median and the 90th percentile in milliseconds, and
the median's ratio to the static file's.

Usage: .venv/bin/python bench/library.py [--items 100000] [--rounds 3] [--requests 10] [--catalog URL]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BIN, free_port, wait_port  # noqa: E402

from trawl.storage.catalog import AssetRow, Catalog, Item  # noqa: E402

WORDS = ("harbour sunrise gull tide lighthouse storm ferry market festival river mountain night train city "
         "garden winter summer concert lecture interview recipe travel drone timelapse football chess piano "
         "guitar opera dance painting museum castle bridge island forest desert rain snow wind ocean").split()
PLATFORMS = ("alpha", "beta", "gamma", "delta")
KINDS = ("video", "video", "video", "audio", "image")
BATCH = 5000


def seed(url: str, count: int) -> float:
    """``count`` committed items with their files; returns the seconds it took."""
    started = time.perf_counter()
    catalog = Catalog(url)
    catalog.create_schema()
    rng = random.Random(7)
    epoch = datetime(2023, 1, 1, tzinfo=UTC)
    with catalog.engine.begin() as connection:
        for first in range(1, count + 1, BATCH):
            items, assets = [], []
            for n in range(first, min(first + BATCH, count + 1)):
                title = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))).capitalize() + f" {n}"
                kind = rng.choice(KINDS)
                size = rng.randint(100_000, 900_000_000)
                published = epoch + timedelta(seconds=rng.randint(0, 3 * 365 * 86400))
                items.append(dict(
                    id=n, canonical_key=f"bench:{n}", platform=rng.choice(PLATFORMS),
                    canonical_url=f"https://example.com/v/{n}", source_url=f"https://example.com/v/{n}",
                    title=title, uploader=f"uploader-{rng.randint(1, 1000)}",
                    duration=None if kind == "image" else rng.uniform(5, 7200),
                    published_at=published.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    metadata_json={"description": " ".join(rng.choice(WORDS) for _ in range(12)),
                                   "tags": rng.sample(WORDS, 3)},
                    status="committed", workflow_id=f"url-bench-{n}", created_at=published, updated_at=published,
                    kind=kind, size=size, day=published.date().isoformat()))
                sha = f"{n:064x}"
                assets.append(dict(item_id=n, name=kind, kind=kind, sha256=sha, size=size, mime=None,
                                   key=f"sha256/{sha[:2]}/{sha[2:4]}/{sha}", source_url=None))
                if n % 2:
                    assets.append(dict(item_id=n, name="thumbnail", kind="thumbnail", sha256=sha[::-1], size=30_000,
                                       mime="image/jpeg", key=f"sha256/x/{sha[::-1]}", source_url=None))
            connection.execute(Item.__table__.insert(), [{("metadata" if k == "metadata_json" else k): v
                                                          for k, v in row.items()} for row in items])
            connection.execute(AssetRow.__table__.insert(), [{("blob_path" if k == "key" else k): v
                                                              for k, v in row.items()} for row in assets])
    if catalog.engine.dialect.name == "postgresql":
        with catalog.engine.begin() as connection:
            connection.exec_driver_sql("ANALYZE items")
            connection.exec_driver_sql("ANALYZE assets")
    catalog.close()
    return time.perf_counter() - started


def get(connection: http.client.HTTPConnection, path: str) -> bytes:
    connection.request("GET", path, headers={"Accept": "text/html"})
    answer = connection.getresponse()
    body = answer.read()
    if answer.status != 200:
        raise RuntimeError(f"{path}: HTTP {answer.status}: {body[:300]!r}")
    return body


def pages(count: int) -> dict[str, str]:
    return {
        "static file (baseline)": "/static/trawl.css",
        "/healthz (baseline)": "/healthz",
        "library, first page": "/",
        "library, page 1,000": "/?page=1000",
        "search, one word": "/?q=lighthouse",
        "search, two words": "/?q=harbour+sunrise",
        "search + platform + kind": "/?q=storm&platform=beta&kind=video",
        "platform + kind": "/?platform=gamma&kind=audio",
        "uploader": "/?uploader=uploader-17",
        "date range (a month)": "/?since=2024-03-01&until=2024-03-31",
        "largest first": "/?sort=largest",
        "longest first": "/?sort=longest",
        "title A to Z": "/?sort=title",
        "an item's page": f"/items/bench:{count // 2}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--catalog", default="", help="a catalog URL (default: SQLite in a temporary directory)")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="trawl-bench-library-"))
    catalog_url = args.catalog or f"sqlite:///{tmp / 'catalog.db'}"
    seconds = seed(catalog_url, args.items)
    temporal_port, api_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
    env.update(TRAWL_DATA_DIR=str(tmp / "data"), TRAWL_CATALOG__URL=catalog_url,
               TRAWL_TEMPORAL__ADDRESS=f"127.0.0.1:{temporal_port}", TRAWL_TEMPORAL__EMBEDDED="false",
               TRAWL_API__PORT=str(api_port), TRAWL_API__REQUESTS_PER_MINUTE="0")
    procs = [subprocess.Popen([str(BIN / "temporal"), "server", "start-dev", "--headless", "--ip", "127.0.0.1",
                               "--port", str(temporal_port), "--http-port", str(free_port()), "--log-level", "error",
                               "--db-filename", str(tmp / "temporal.db")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        wait_port(temporal_port)
        procs.append(subprocess.Popen([str(BIN / "trawl"), "api"], env=env, cwd=tmp, stdout=subprocess.DEVNULL,
                                      stderr=open(tmp / "api.log", "wb")))
        wait_port(api_port, timeout=120)
        targets = pages(args.items)
        times: dict[str, list[float]] = {name: [] for name in targets}
        # The standard library's client, one kept-alive connection, as a browser keeps one.
        web = http.client.HTTPConnection("127.0.0.1", api_port, timeout=60)
        for path in targets.values():  # warm: the first answer of each opens what it needs
            get(web, path)
        for _ in range(args.rounds):
            for name, path in targets.items():
                for _ in range(args.requests):
                    started = time.perf_counter()
                    get(web, path)
                    times[name].append((time.perf_counter() - started) * 1000)
        web.close()
        baseline = statistics.median(times["static file (baseline)"])
        report = {
            "items": args.items, "catalog": catalog_url.split(":", 1)[0], "seed_s": round(seconds, 1),
            "rounds": args.rounds, "requests_per_round": args.requests,
            "load": round(os.getloadavg()[0], 2),
            "pages": {name: {"median_ms": round(statistics.median(ms), 2),
                             "p90_ms": round(sorted(ms)[int(len(ms) * 0.9) - 1], 2),
                             "x_static": round(statistics.median(ms) / baseline, 1)}
                      for name, ms in times.items()},
        }
        print(json.dumps(report, indent=2))
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        subprocess.run(["rm", "-rf", str(tmp)], check=False)


if __name__ == "__main__":
    main()
