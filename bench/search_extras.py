"""Search over the extras' lines (migration 0009): how long the library's first page takes when a
search reads subtitle cues, danmaku and comments too, and how large their index is.

Fills a catalog as bench/search.py does (--items items, brought to the newest revision), then gives
each item --lines lines of extras (by default 50: 30 danmaku of 1-3 words, 15 subtitle cues of 4-8,
5 comments of 5-15; Chinese words of 2-4 characters drawn by the same Zipf law as the titles), inserted as
``Catalog.add_extras`` inserts them (SQLite: through the FTS5 tables' triggers, timed; PostgreSQL:
COPY, then the GIN index built, timed). Then asks the catalog for the library's first page (48
items and the count, as the page does) for words taken from the middle of random lines, per kind
of word: median, 95th percentile, how many items matched and how many of the page's were found by a
line alone.

Usage: .venv/bin/python bench/search_extras.py [--items 100000] [--lines 50] [--queries 30]
[--postgres URL [--keep]] [--no-sqlite] [--dir DIR]; ``--catalog URL --items N`` times a catalog
filled before. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import create_engine, text  # noqa: E402

import bench.search as items_bench  # noqa: E402
from trawl.storage import extras_search  # noqa: E402
from trawl.storage.catalog import Catalog  # noqa: E402
from trawl.storage.library import LibraryQuery  # noqa: E402

PAGE = 48
SHAPES = (("danmaku", 30, 1, 3), ("subtitles", 15, 4, 8), ("comments", 5, 5, 15))  # kind, share of 50, words


def lines_of(source: items_bench.Text, item: int, count: int) -> list[tuple[object, ...]]:
    rows = []
    for kind, share, low, high in SHAPES:
        for n in range(max(1, count * share // 50)):
            first, _ = extras_search.id_range(item, kind)
            seconds = None if kind == "comments" else round(source.rng.uniform(0, 1800), 3)
            rows.append((first + n, item, kind, seconds, source.chinese(source.rng.randint(low, high))[:300]))
    return rows


def fill_lines(url: str, items: int, per_item: int) -> dict[str, float]:
    engine = create_engine(url)
    postgres = engine.dialect.name == "postgresql"
    source = items_bench.Text(seed=23)
    if postgres:
        with engine.begin() as connection:
            connection.exec_driver_sql("DROP INDEX ix_extras_lines_grams")
    started = time.perf_counter()
    raw = engine.raw_connection()
    total = 0
    try:
        cursor = raw.cursor()
        for first in range(1, items + 1, 2000):
            rows = [row for item in range(first, min(first + 2000, items + 1))
                    for row in lines_of(source, item, per_item)]
            total += len(rows)
            if postgres:
                with cursor.copy("COPY extras_lines (id, item_id, kind, seconds, text) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
            else:
                cursor.executemany("INSERT INTO extras_lines (id, item_id, kind, seconds, text) VALUES (?, ?, ?, ?, ?)",
                                   rows)
            raw.commit()
    finally:
        raw.close()
    inserted = time.perf_counter() - started
    report = {"lines": total, "insert_s": round(inserted, 1)}
    if postgres:
        started = time.perf_counter()
        with engine.begin() as connection:
            connection.exec_driver_sql("SET LOCAL maintenance_work_mem = '256MB'")
            connection.exec_driver_sql("CREATE INDEX ix_extras_lines_grams ON extras_lines USING gin "
                                       "(trawl_line_grams(item_id, text))")
            connection.exec_driver_sql("ANALYZE extras_lines")
        report["index_build_s"] = round(time.perf_counter() - started, 1)
    engine.dispose()
    return report


def queries(url: str, per_kind: int) -> dict[str, list[str]]:
    """Words from the middle of random lines, by kind."""
    rng = random.Random(5)
    engine = create_engine(url)
    kinds: dict[str, list[str]] = {"2 characters": [], "3-4 characters": [], "1 character": [], "two words": []}
    with engine.connect() as connection:
        newest = connection.execute(text("SELECT max(id) FROM extras_lines")).scalar() or 0
        while min(len(v) for v in kinds.values()) < per_kind:
            line = connection.execute(text("SELECT text FROM extras_lines WHERE id >= :n ORDER BY id LIMIT 1"),
                                      {"n": rng.randint(0, newest)}).scalar() or ""
            if len(line) >= 8:
                at = rng.randint(1, len(line) - 6)
                kinds["2 characters"].append(line[at:at + 2])
                kinds["3-4 characters"].append(line[at:at + rng.choice((3, 4))])
                kinds["1 character"].append(line[at])
                kinds["two words"].append(f"{line[at:at + 2]} {line[at + 3:at + 5]}")
    engine.dispose()
    found = {kind: words[:per_kind] for kind, words in kinds.items()}
    found["2 characters, platform filter"] = found["2 characters"]  # timed with platform=bilibili
    return found


def timed(url: str, words: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    catalog = Catalog(url)
    report = {}
    try:
        for kind, texts in words.items():
            times, matches, found_by_extras = [], [], []
            platform = "bilibili" if "platform" in kind else None
            catalog.library(LibraryQuery(text=texts[0], limit=PAGE, platform=platform))  # warm
            for query in texts:
                started = time.perf_counter()
                page = catalog.library(LibraryQuery(text=query, limit=PAGE, platform=platform))
                times.append((time.perf_counter() - started) * 1000)
                matches.append(page.total)
                found_by_extras.append(len(page.hits))
            times.sort()
            report[kind] = {"median_ms": round(statistics.median(times), 1),
                            "p95_ms": round(times[max(0, int(len(times) * 0.95) - 1)], 1),
                            "max_ms": round(times[-1], 1), "median_matches": statistics.median(matches),
                            "median_page_items_found_by_a_line": statistics.median(found_by_extras)}
    finally:
        catalog.close()
    return report


def index_size(url: str) -> dict[str, float]:
    engine = create_engine(url)
    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            sizes = {"lines_index_mib": connection.exec_driver_sql(
                         "SELECT pg_relation_size('ix_extras_lines_grams')").scalar() / 2**20,
                     "lines_table_with_indexes_mib": connection.exec_driver_sql(
                         "SELECT pg_total_relation_size('extras_lines')").scalar() / 2**20}
        else:
            sizes = {"lines_index_mib": connection.exec_driver_sql(
                         "SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'extras_trigram%' OR name LIKE "
                         "'extras_short%'").scalar() / 2**20,
                     "lines_table_mib": connection.exec_driver_sql(
                         "SELECT sum(pgsize) FROM dbstat WHERE name = 'extras_lines' OR name = "
                         "'ix_extras_lines_item_id'").scalar() / 2**20}
        characters = connection.exec_driver_sql("SELECT sum(length(text)) FROM extras_lines").scalar()
    engine.dispose()
    return {**{k: round(v, 1) for k, v in sizes.items()}, "text_million_characters": round(characters / 1e6, 1)}


def run(url: str, args: argparse.Namespace) -> dict[str, object]:
    built: dict[str, object] = {}
    if not args.catalog:
        built = {"items_fill": items_bench.fill(url, args.items), "extras": fill_lines(url, args.items, args.lines)}
    words = queries(url, args.queries)
    return {"items": args.items, **built, "index": index_size(url), "search": timed(url, words)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--lines", type=int, default=50, help="lines of extras per item")
    parser.add_argument("--queries", type=int, default=30, help="words of each kind")
    parser.add_argument("--postgres", default="", help="a PostgreSQL URL (the bench makes its own database there)")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--dir", default="", help="where the SQLite catalog goes (default: a temporary directory)")
    parser.add_argument("--catalog", default="", help="time the searches on this catalog, filled before")
    parser.add_argument("--keep", action="store_true", help="keep the PostgreSQL database (its URL is printed)")
    args = parser.parse_args()
    results: dict[str, object] = {}
    if args.catalog:
        print(json.dumps({"catalog": run(args.catalog, args)}, indent=2))
        return
    if not args.no_sqlite:
        with tempfile.TemporaryDirectory(dir=args.dir or None) as directory:
            results["sqlite"] = run(f"sqlite:///{Path(directory) / 'catalog.db'}", args)
            print(json.dumps({"sqlite": results["sqlite"]}), file=sys.stderr, flush=True)
    if args.postgres:
        name = f"trawl_bench_{uuid.uuid4().hex[:8]}"
        admin = create_engine(args.postgres, isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
        url = args.postgres.rsplit("/", 1)[0] + "/" + name
        try:
            results["postgresql"] = run(url, args)
        finally:
            if args.keep:
                print(f"kept: {url}", file=sys.stderr)
            else:
                with admin.connect() as connection:
                    connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.dispose()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
