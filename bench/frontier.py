"""A crawl's frontier as its table grows: the cost of a page must not grow with the crawl.

For each size, a fresh catalog (SQLite, and PostgreSQL with --postgres) gets one crawl's frontier
of SIZE entries through ``Catalog.frontier_add`` (in batches of 500, as an expansion or a watch's
run adds them), a tenth of its URLs remembered as committed (so the known-items check finds some),
and 20 small crawls that ended long ago (what the workers' clean-up looks for). Then, with no
Temporal server (the activities are called as the worker calls them):

- ``frontier_next``: reading a page of 500 after the cursor with its known-items check, at the
  start, the middle and the end of the crawl's entries (median of --reads reads each);
- ``frontier_add``: a new batch of 500 appended to the full table, and the same batch again
  (idempotent: every entry repeated);
- the clean-up: ``frontier_idle_crawls`` (which crawls' frontiers are old) and ``frontier_drop``
  of the big crawl (all its entries).

The baseline is the same figures at the smallest size, in the same run: a page that costs the same
at 1,000,000 entries as at 100,000 does not grow with the crawl. Prints JSON.

Usage: .venv/bin/python bench/frontier.py [--sizes 100000,1000000] [--postgres URL] [--no-sqlite]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import create_engine, event, func, select, text, update  # noqa: E402

from trawl.activities.crawl import CrawlActivities  # noqa: E402
from trawl.contracts import FrontierRead  # noqa: E402
from trawl.platforms.registry import default_registry  # noqa: E402
from trawl.settings import CatalogSettings, Settings  # noqa: E402
from trawl.storage.catalog import Catalog, FrontierRow  # noqa: E402
from trawl.storage.records import CommittedAsset  # noqa: E402

PAGE = 500  # the crawl workflow's FRONTIER_PAGE
CRAWL = "crawl-bench-frontier"
ENDED_CRAWLS = 20


def url(i: int) -> str:
    return f"http://127.0.0.1:9/frontier/{i}.mp4"


def entries(start: int, stop: int, crawl: str = CRAWL) -> Iterator[tuple[str, str, str, None]]:
    return ((url(i), "generic", f"{crawl}-item-{i}", None) for i in range(start, stop))


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    began = time.perf_counter()
    result = call()
    return 1000 * (time.perf_counter() - began), result


def median_ms(call: Callable[[], Any], times: int) -> float:
    return round(statistics.median(timed(call)[0] for _ in range(times)), 2)


def fill(catalog: Catalog, size: int) -> dict[str, float]:
    """The crawl's frontier, ended crawls, and a tenth of the URLs known; the fill's add times."""
    adds: list[float] = []
    began = time.perf_counter()
    for start in range(0, size, PAGE):
        adds.append(timed(lambda: catalog.frontier_add(CRAWL, entries(start, min(size, start + PAGE))))[0])
    fill_s = time.perf_counter() - began
    long_ago = datetime.now(UTC) - timedelta(days=30)
    for n in range(ENDED_CRAWLS):
        catalog.frontier_add(f"ended-{n}", entries(0, 100, f"ended-{n}"))
    with catalog.engine.begin() as conn:
        conn.execute(update(FrontierRow).where(FrontierRow.crawl_id.like("ended-%")).values(created_at=long_ago))
    catalog.commit_item(canonical_key="web:bench-known", platform="generic", canonical_url=url(0), source_url=url(0),
                        title="known", uploader=None, duration=None, published_at=None, metadata={},
                        workflow_id="bench", assets=[CommittedAsset("video", "video", "a" * 64, 10, "video/mp4",
                                                                    "sha256/aa/aa/" + "a" * 64)])
    known = [url(i) for i in range(0, size, 10)]
    for start in range(0, len(known), 2000):
        catalog.remember_urls(known[start:start + 2000], "web:bench-known")
    tenth = max(1, len(adds) // 10)
    return {"fill_s": round(fill_s, 1), "add_ms_first_tenth": round(statistics.median(adds[:tenth]), 2),
            "add_ms_last_tenth": round(statistics.median(adds[-tenth:]), 2)}


def idle_crawls_group_by(catalog: Catalog, before: datetime) -> list[str]:
    """The clean-up's query before it walked the index: every entry of every crawl read, grouped."""
    with catalog.engine.connect() as conn:
        return list(conn.scalars(select(FrontierRow.crawl_id).group_by(FrontierRow.crawl_id)
                                 .having(func.max(FrontierRow.created_at) < before).limit(100)))


def drop_one_statement_ms(catalog: Catalog) -> float:
    """The clean-up's drop before it went in batches (one DELETE of all the crawl's entries), rolled back."""
    with catalog.engine.connect() as conn:
        trans = conn.begin()
        began = time.perf_counter()
        conn.execute(text("DELETE FROM crawl_frontier WHERE crawl_id = :c"), {"c": CRAWL})
        took = 1000 * (time.perf_counter() - began)
        trans.rollback()
    return took


class Statements:
    """The statements a catalog's engine runs, with their times (the longest DELETE is the longest
    a drop holds the write lock), and, on PostgreSQL, EXPLAIN (ANALYZE, BUFFERS) of them."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.seen: list[tuple[str, Any, float]] = []
        self._began = 0.0
        event.listen(catalog.engine, "before_cursor_execute", self._before)
        event.listen(catalog.engine, "after_cursor_execute", self._after)

    def _before(self, conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
        self._began = time.perf_counter()

    def _after(self, conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
        self.seen.append((statement, params, 1000 * (time.perf_counter() - self._began)))

    def of(self, call: Callable[[], Any]) -> list[tuple[str, Any, float]]:
        self.seen = []
        call()
        return [s for s in self.seen if s[0].lstrip().upper().startswith(("SELECT", "DELETE", "WITH", "INSERT"))]

    def explain(self, statement: str, params: Any) -> list[str]:
        with self.catalog.engine.raw_connection() as raw:
            cursor = raw.cursor()
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement, params)
            plan = [row[0] for row in cursor.fetchall()]
            raw.rollback()
        return plan


def cursor_at(catalog: Catalog, index: int) -> int:
    """The cursor just before the crawl's ``index``-th entry (its ``seq`` minus one)."""
    with catalog.engine.connect() as conn:
        return conn.execute(text("SELECT id FROM crawl_frontier WHERE crawl_id = :c ORDER BY id LIMIT 1 OFFSET :n"),
                            {"c": CRAWL, "n": index}).scalar_one() - 1


def measure(catalog_url: str, size: int, reads: int) -> dict[str, Any]:
    catalog = Catalog(catalog_url)
    catalog.create_schema()
    result: dict[str, Any] = {"entries": size, **fill(catalog, size)}
    if catalog.engine.dialect.name == "postgresql":
        with catalog.engine.begin() as conn:
            conn.execute(text("ANALYZE"))
    activities = CrawlActivities(None, Settings(catalog=CatalogSettings(url=catalog_url)),  # type: ignore[arg-type]
                                 default_registry(), catalog)
    for where, index in (("start", 0), ("middle", size // 2), ("end", size - PAGE)):
        after = cursor_at(catalog, index)
        page = activities.frontier_next(FrontierRead(CRAWL, after, PAGE))
        assert page.read == PAGE and page.known == PAGE // 10, (page.read, page.known)
        result[f"next_ms_{where}"] = median_ms(lambda: activities.frontier_next(FrontierRead(CRAWL, after, PAGE)), reads)
        result[f"page_ms_{where}"] = median_ms(lambda: catalog.frontier_page(CRAWL, after, PAGE), reads)
    result["add_ms_new_batch"], added = timed(lambda: catalog.frontier_add(CRAWL, entries(size, size + PAGE)))
    result["add_ms_repeated_batch"], again = timed(lambda: catalog.frontier_add(CRAWL, entries(size, size + PAGE)))
    assert (added, again) == (PAGE, 0), (added, again)
    before = datetime.now(UTC) - timedelta(days=1)
    result["idle_crawls_ms"] = median_ms(lambda: catalog.frontier_idle_crawls(before), reads)
    result["idle_crawls_group_by_ms"] = median_ms(lambda: idle_crawls_group_by(catalog, before), reads)
    assert sorted(catalog.frontier_idle_crawls(before)) == sorted(idle_crawls_group_by(catalog, before))
    assert len(catalog.frontier_idle_crawls(before)) == ENDED_CRAWLS
    result["drop_ms_ended_crawl"], _ = timed(lambda: catalog.frontier_drop("ended-0"))
    result["drop_ms_one_statement"] = drop_one_statement_ms(catalog)
    statements = Statements(catalog)
    if catalog.engine.dialect.name == "postgresql":
        middle = cursor_at(catalog, size // 2)
        plans = {}
        for name, call in (("frontier_page", lambda: catalog.frontier_page(CRAWL, middle, PAGE)),
                           ("frontier_idle_crawls", lambda: catalog.frontier_idle_crawls(before)),
                           ("idle_crawls_group_by", lambda: idle_crawls_group_by(catalog, before)),
                           ("frontier_add", lambda: catalog.frontier_add(CRAWL, entries(0, PAGE)))):
            statement, params, _ = statements.of(call)[0]
            plans[name] = statements.explain(statement, params)
        result["explain"] = plans
    drops = statements.of(lambda: result.__setitem__("drop_ms", timed(lambda: catalog.frontier_drop(CRAWL))))
    dropped = sum(1 for s in drops if s[0].lstrip().upper().startswith("DELETE"))
    result["drop_statements"] = dropped
    result["drop_ms_longest_statement"] = max(s[2] for s in drops if s[0].lstrip().upper().startswith("DELETE"))
    result["drop_ms"], dropped_rows = result["drop_ms"]
    assert dropped_rows == size + PAGE, dropped_rows
    catalog.engine.dispose()
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in result.items()}


def ratio_keys(result: dict[str, Any]) -> list[str]:
    return [k for k in result if (k.endswith("_ms") or "_ms_" in k) and isinstance(result[k], (int, float))]


def per_backend(make_url: Callable[[int], tuple[str, Callable[[], None]]], sizes: list[int],
                reads: int) -> dict[str, Any]:
    results = []
    for size in sizes:
        catalog_url, done = make_url(size)
        try:
            results.append(measure(catalog_url, size, reads))
        finally:
            done()
        print(json.dumps({k: v for k, v in results[-1].items() if k != "explain"}), file=sys.stderr)
    base = results[0]
    ratios = [{"entries": r["entries"], **{k: round(r[k] / base[k], 2) for k in ratio_keys(r) if base[k]}}
              for r in results]
    return {"results": results, "vs_smallest": ratios}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--reads", type=int, default=15, help="reads of each page (median)")
    parser.add_argument("--postgres", default="", help="a PostgreSQL URL (the bench makes its own databases there)")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--dir", default="", help="where SQLite's catalogs go (default: a temporary directory)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    out: dict[str, Any] = {"load": os.getloadavg()}
    with tempfile.TemporaryDirectory(dir=args.dir or None) as tmp:
        if not args.no_sqlite:
            def sqlite_url(size: int) -> tuple[str, Callable[[], None]]:
                path = Path(tmp) / f"frontier-{size}.db"
                return f"sqlite:///{path}", lambda: path.unlink()
            out["sqlite"] = per_backend(sqlite_url, sizes, args.reads)
        if args.postgres:
            admin = create_engine(args.postgres, isolation_level="AUTOCOMMIT")

            def postgres_url(size: int) -> tuple[str, Callable[[], None]]:
                name = f"bench_frontier_{size}_{uuid.uuid4().hex[:6]}"
                with admin.connect() as conn:
                    conn.execute(text(f'CREATE DATABASE "{name}"'))

                def drop() -> None:
                    with admin.connect() as conn:
                        conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
                return args.postgres.rsplit("/", 1)[0] + "/" + name, drop
            out["postgresql"] = per_backend(postgres_url, sizes, args.reads)
            admin.dispose()
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
