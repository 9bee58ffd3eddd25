"""The frontier's clean-up reads: which crawls' frontiers are old (the newest entry of each crawl,
found through the index, not by reading every entry), and a drop in batches of its own."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text, update

from trawl.storage import catalog as catalog_module
from trawl.storage.catalog import Catalog, FrontierRow


def add(catalog: Catalog, crawl_id: str, count: int, first: int = 0) -> None:
    catalog.frontier_add(crawl_id, [(f"http://127.0.0.1:9/{crawl_id}/{i}", "generic", f"{crawl_id}-{i}", None)
                                    for i in range(first, first + count)])


def age(catalog: Catalog, crawl_id: str, when: datetime) -> None:
    with catalog.engine.begin() as conn:
        conn.execute(update(FrontierRow).where(FrontierRow.crawl_id == crawl_id).values(created_at=when))


def test_idle_crawls_are_those_whose_newest_entry_is_old(catalog: Catalog) -> None:
    now = datetime.now(UTC)
    assert catalog.frontier_idle_crawls(now) == []  # an empty frontier
    for crawl_id in ("c-old", "a-old", "b-grew-lately", "d-recent"):
        add(catalog, crawl_id, 3)
    for crawl_id in ("c-old", "a-old", "b-grew-lately"):
        age(catalog, crawl_id, now - timedelta(days=2))
    add(catalog, "b-grew-lately", 2, first=3)  # old entries, and newer ones added since
    assert sorted(catalog.frontier_idle_crawls(now - timedelta(days=1))) == ["a-old", "c-old"]
    assert sorted(catalog.frontier_idle_crawls(now + timedelta(days=1))) == ["a-old", "b-grew-lately", "c-old",
                                                                             "d-recent"]
    assert len(catalog.frontier_idle_crawls(now + timedelta(days=1), limit=2)) == 2


def test_a_frontier_is_dropped_in_batches_and_the_others_stay(catalog: Catalog,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_module, "FRONTIER_DROP_ROWS", 4)
    add(catalog, "big", 10)
    add(catalog, "exact", 8)  # a multiple of the batch: the last batch is empty
    add(catalog, "other", 3)
    assert catalog.frontier_drop("big") == 10
    assert catalog.frontier_drop("exact") == 8
    assert catalog.frontier_drop("missing") == 0
    assert catalog.frontier_page("big", 0, 100) == [] and catalog.frontier_page("exact", 0, 100) == []
    assert [e.workflow_id for e in catalog.frontier_page("other", 0, 100)] == ["other-0", "other-1", "other-2"]


def test_a_big_fill_leaves_the_next_page_read_through_the_index(catalog: Catalog,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL: a crawl of many URLs (its frontier written at once, before autovacuum has read
    the table, if it runs at all) reads each next page by walking the (crawl_id, id) index, not by
    taking every entry after the cursor and sorting them (55 ms a page at 100,000 entries)."""
    if catalog.engine.dialect.name != "postgresql":
        pytest.skip("SQLite plans without statistics")
    monkeypatch.setattr(catalog_module, "FRONTIER_ANALYZE_ROWS", 100)
    with catalog.engine.begin() as conn:  # most of a big crawl's fill, written fast
        conn.execute(text("INSERT INTO crawl_frontier (crawl_id, workflow_id, url, platform, created_at) "
                          "SELECT 'big', 'big-' || i, 'http://127.0.0.1:9/big/' || i, 'generic', now() "
                          "FROM generate_series(0, 29899) AS i"))
    add(catalog, "big", 100, first=29_900)  # unread, PostgreSQL 15 estimates 6 of 30,000 and sorts them all
    with catalog.engine.connect() as conn:
        plan = json.dumps(conn.execute(text(
            "EXPLAIN (FORMAT JSON) SELECT id, url FROM crawl_frontier WHERE crawl_id = 'big' AND id > 100 "
            "ORDER BY id LIMIT 500")).scalar_one())
    assert '"Node Type": "Sort"' not in plan and '"Node Type": "Index Scan"' in plan, plan
    assert [e.workflow_id for e in catalog.frontier_page("big", 0, 2)] == ["big-0", "big-1"]
