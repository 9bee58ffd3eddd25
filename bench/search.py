"""Search in every script over a large catalog: how long a search for a word from the middle of a
title takes, and how large its index is (migration 0006).

Fills a catalog at revision 0005 with --items committed items (synthetic but shaped like an archive
of Chinese media: titles of made-up Chinese words drawn by a Zipf law, some English and mixed
titles, uploaders, tags and a description), bulk-inserted without the old word index, then brings
it to the newest revision: migrations 0006 and 0008 index every row (their backfill is timed). Then asks the
catalog for the library's first page (48 items and the count, as the page does) for words taken
from the middle of random titles, and reports per kind of word the median and the 95th percentile
in milliseconds. Baseline, on the same data: a plain substring scan (LIKE) over the same text,
which finds the same items without an index.

Runs on SQLite (a file under --dir) and, with --postgres URL (a server database the bench may fill;
a fresh database is made beside it and dropped after), on PostgreSQL. Prints JSON.

Usage: .venv/bin/python bench/search.py [--items 1000000] [--queries 60] [--postgres URL] [--no-sqlite]
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
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import create_engine, text  # noqa: E402

from trawl.storage.catalog import Catalog, MIGRATIONS  # noqa: E402
from trawl.storage.library import LibraryQuery  # noqa: E402

# Common characters of Chinese titles; words are two to four of them, drawn by a Zipf law.
CHARACTERS = ("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面"
              "而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把"
              "性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质"
              "气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活"
              "设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任"
              "取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采"
              "转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集"
              "温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半"
              "办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格"
              "养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严龙飞")
ENGLISH = ("vlog review unboxing tutorial live cover remix highlights trailer interview music travel food cooking "
           "gaming football piano guitar dance drone timelapse city night market street snack hotpot tea coffee "
           "camera phone laptop painting museum castle bridge island forest river mountain ocean rain snow").split()
PLATFORMS = ("bilibili", "weibo", "youtube", "generic")
VOCABULARY = 20_000
BATCH = 20_000
PAGE = 48


def vocabulary(rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < VOCABULARY:
        words.add("".join(rng.choice(CHARACTERS) for _ in range(rng.choice((2, 2, 2, 3, 4)))))
    return sorted(words, key=lambda _: rng.random())


class Text:
    """Made-up titles, uploaders, descriptions and tags."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary(self.rng)
        weights = [1 / (rank + 10) for rank in range(len(self.words))]  # Zipf, flattened at the top
        self.cumulative = list(_accumulate(weights))

    def chinese(self, count: int) -> str:
        return "".join(self.rng.choices(self.words, cum_weights=self.cumulative, k=count))

    def title(self) -> str:
        roll = self.rng.random()
        if roll < 0.6:  # 春天的两张照片: no spaces
            return self.chinese(self.rng.randint(3, 8))
        if roll < 0.75:  # 【4K】成都火锅 vlog
            return f"【{self.rng.choice(ENGLISH)}】{self.chinese(self.rng.randint(2, 5))} {self.rng.choice(ENGLISH)}"
        return " ".join(self.rng.choice(ENGLISH) for _ in range(self.rng.randint(3, 7))).capitalize()

    def row(self, n: int, epoch: datetime) -> tuple[object, ...]:
        published = epoch + timedelta(seconds=self.rng.randint(0, 3 * 365 * 86400))
        metadata = json.dumps({"description": self.chinese(self.rng.randint(5, 20)),
                               "tags": [self.chinese(1) for _ in range(self.rng.randint(1, 4))]})
        stamp = published.isoformat()
        return (n, f"bench:{n}", self.rng.choice(PLATFORMS), f"https://example.com/v/{n}",
                f"https://example.com/v/{n}", self.title(), self.chinese(1) + str(self.rng.randint(1, 999)),
                self.rng.uniform(5, 3600), published.strftime("%Y-%m-%dT%H:%M:%SZ"), metadata, "committed",
                f"url-bench-{n}", stamp, stamp, "video", self.rng.randint(10**5, 10**9), published.date().isoformat())


def _accumulate(values: list[float]) -> list[float]:
    total, out = 0.0, []
    for value in values:
        total += value
        out.append(total)
    return out


COLUMNS = ("id, canonical_key, platform, canonical_url, source_url, title, uploader, duration, published_at, "
           "metadata, status, workflow_id, created_at, updated_at, kind, size, day")


def fill(url: str, count: int) -> dict[str, float]:
    """``count`` items in a catalog at 0005 without 0004's word index, then the newest revision (0006's
    index, 0008's search table and bucketed index); the seconds each took."""
    from alembic import command
    from alembic.config import Config

    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    postgres = engine.dialect.name == "postgresql"
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0005")
        if postgres:  # the bulk load needs no word index: 0006 drops it anyway
            connection.exec_driver_sql("ALTER TABLE items DROP COLUMN search")
        else:
            for trigger in ("items_fts_insert", "items_fts_delete", "items_fts_update"):
                connection.exec_driver_sql(f"DROP TRIGGER {trigger}")
    started = time.perf_counter()
    source = Text()
    epoch = datetime(2023, 1, 1, tzinfo=UTC)
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        for first in range(1, count + 1, BATCH):
            rows = [source.row(n, epoch) for n in range(first, min(first + BATCH, count + 1))]
            if postgres:
                with cursor.copy(f"COPY items ({COLUMNS}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
            else:
                cursor.executemany(f"INSERT INTO items ({COLUMNS}) VALUES ({', '.join('?' * 17)})", rows)
        raw.commit()
    finally:
        raw.close()
    inserted = time.perf_counter() - started
    engine.dispose()
    started = time.perf_counter()
    catalog = Catalog(url)
    catalog.create_schema()  # 0006 and 0008: the search text and its index over every row
    indexed = time.perf_counter() - started
    catalog.close()
    return {"insert_s": round(inserted, 1), "migrations_s": round(indexed, 1)}


def queries(url: str, count: int, per_kind: int) -> dict[str, list[str]]:
    """Words from the middle of random titles (never their first characters), by kind."""
    rng = random.Random(11)
    engine = create_engine(url)
    kinds: dict[str, list[str]] = {"chinese 2 characters": [], "chinese 3-4 characters": [],
                                   "chinese 1 character": [], "english word": [], "two words": []}
    with engine.connect() as connection:
        while min(len(v) for v in kinds.values()) < per_kind:
            title = connection.execute(text("SELECT title FROM items WHERE id = :n"),
                                       {"n": rng.randint(1, count)}).scalar() or ""
            chinese = "".join(c for c in title if "\u4e00" <= c <= "\u9fff")
            if len(chinese) >= 8:
                at = rng.randint(2, len(chinese) - 5)
                kinds["chinese 2 characters"].append(chinese[at:at + 2])
                kinds["chinese 3-4 characters"].append(chinese[at:at + rng.choice((3, 4))])
                kinds["chinese 1 character"].append(chinese[at])
                kinds["two words"].append(f"{chinese[at:at + 2]} {chinese[at + 3:at + 5]}")
            elif " " in title and not chinese:
                kinds["english word"].append(rng.choice(title.split()[1:]).lower())
    engine.dispose()
    return {kind: words[:per_kind] for kind, words in kinds.items()}


def timed(url: str, words: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    catalog = Catalog(url)
    report = {}
    try:
        for kind, texts in words.items():
            times, matches = [], []
            catalog.library(LibraryQuery(text=texts[0], limit=PAGE))  # warm
            for query in texts:
                started = time.perf_counter()
                page = catalog.library(LibraryQuery(text=query, limit=PAGE))
                times.append((time.perf_counter() - started) * 1000)
                matches.append(page.total)
            times.sort()
            report[kind] = {"median_ms": round(statistics.median(times), 1),
                            "p95_ms": round(times[max(0, int(len(times) * 0.95) - 1)], 1),
                            "max_ms": round(times[-1], 1), "median_matches": statistics.median(matches)}
    finally:
        catalog.close()
    return report


def baseline(url: str, words: list[str]) -> dict[str, float]:
    """A substring scan over the same text, no index: what the search would cost without one (the
    matches counted up to the page's cap, newest first, as the page counts them)."""
    engine = create_engine(url)
    postgres = engine.dialect.name == "postgresql"
    found = ("strpos(trawl_search_text(title, uploader, metadata), :w) > 0" if postgres else
             "(title || ' ' || uploader || ' ' || json_extract(metadata, '$.description')) LIKE '%' || :w || '%'")
    scan = f"SELECT count(*) FROM (SELECT id FROM items WHERE {found} ORDER BY id DESC LIMIT 10001) AS matches"
    times = []
    with engine.connect() as connection:
        for word in words:
            started = time.perf_counter()
            connection.execute(text(scan), {"w": word}).all()
            times.append((time.perf_counter() - started) * 1000)
    engine.dispose()
    return {"median_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1)}


def index_size(url: str) -> dict[str, float]:
    engine = create_engine(url)
    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            index = connection.exec_driver_sql("SELECT pg_relation_size('ix_items_search_grams')").scalar()
            text_table = connection.exec_driver_sql("SELECT pg_relation_size('items_search')").scalar()
            table = connection.exec_driver_sql("SELECT pg_total_relation_size('items')").scalar()
            sizes = {"search_index_mib": index / 2**20, "search_table_mib": text_table / 2**20,
                     "items_table_with_indexes_mib": table / 2**20}
        else:
            index = connection.exec_driver_sql(
                "SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'items_trigram%' OR name LIKE 'items_short%'").scalar()
            trigram = connection.exec_driver_sql(
                "SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'items_trigram%'").scalar()
            whole = connection.exec_driver_sql("SELECT page_count * page_size FROM pragma_page_count(), "
                                               "pragma_page_size()").scalar()
            sizes = {"search_index_mib": index / 2**20, "of_which_trigram_mib": trigram / 2**20,
                     "database_file_mib": whole / 2**20}
        searched = ("trawl_search_text(title, uploader, metadata)" if engine.dialect.name == "postgresql"
                    else "title || uploader || json_extract(metadata, '$.description') || "
                         "(SELECT group_concat(value) FROM json_each(metadata, '$.tags'))")
        text_size = connection.exec_driver_sql(f"SELECT sum(length({searched})) FROM items").scalar()
    engine.dispose()
    return {**{k: round(v, 1) for k, v in sizes.items()}, "text_million_characters": round(text_size / 1e6, 1)}


def run(url: str, args: argparse.Namespace) -> dict[str, object]:
    built = fill(url, args.items) if not args.catalog else {}
    words = queries(url, args.items, args.queries)
    report: dict[str, object] = {"items": args.items, **built, "index": index_size(url),
                                 "search": timed(url, words),
                                 "baseline_substring_scan": baseline(url, words["chinese 2 characters"][:3]
                                                                     + words["chinese 3-4 characters"][:1])}
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=60, help="words of each kind")
    parser.add_argument("--postgres", default="", help="a PostgreSQL URL (the bench makes its own database there)")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--dir", default="", help="where the SQLite catalog goes (default: a temporary directory)")
    parser.add_argument("--catalog", default="", help="time the searches on this catalog, filled before (--items "
                        "says how many it holds), instead of filling new ones")
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
        try:
            results["postgresql"] = run(args.postgres.rsplit("/", 1)[0] + "/" + name, args)
        finally:
            with admin.connect() as connection:
                connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.dispose()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
