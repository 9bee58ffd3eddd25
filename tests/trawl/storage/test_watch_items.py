"""The items a watch refreshes the extras of (issue 41, point 6): those its runs brought, younger than
N days by their publication (else by their commit), the youngest first, bounded; on SQLite and
PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from trawl.starter.watches import runs_like
from trawl.storage.catalog import Catalog


def commit(catalog: Catalog, n: int, published: str | None, workflow_id: str) -> None:
    catalog.commit_item(canonical_key=f"bili:BV{n}", platform="bilibili",
                        canonical_url=f"https://www.bilibili.com/video/BV{n}",
                        source_url=f"https://www.bilibili.com/video/BV{n}", title=None, uploader=None, duration=None,
                        published_at=published, metadata={}, workflow_id=workflow_id, assets=[])


def test_a_watchs_young_items_youngest_first(catalog: Catalog) -> None:
    now = datetime.now(UTC)
    day = lambda days: (now - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    run = "crawl-trawl-watch-favs-2026-12-05T10:00:00Z"
    other = "crawl-trawl-watch-favs-x-2026-12-05T10:00:00Z"  # watch favs-x: its name starts with favs'
    catalog.frontier_add(run, [(f"u{n}", "bilibili", f"item-{n}", None) for n in (1, 2, 3, 4)])
    catalog.frontier_add(other, [("u5", "bilibili", "item-5", None)])
    commit(catalog, 1, day(2), "item-1")
    commit(catalog, 2, day(30), "item-2")  # too old
    commit(catalog, 3, None, "item-3")  # no date: committed now, young
    commit(catalog, 4, day(1), "item-4")
    commit(catalog, 5, day(1), "item-5")  # the other watch's
    commit(catalog, 6, day(1), "item-6")  # no crawl's
    pattern = runs_like("trawl-watch-favs")
    assert catalog.items_of_runs(pattern, now - timedelta(days=7), 10) == [
        ("bili:BV4", "bilibili"), ("bili:BV1", "bilibili"), ("bili:BV3", "bilibili")]
    assert catalog.items_of_runs(pattern, now - timedelta(days=7), 1) == [("bili:BV4", "bilibili")]
    assert catalog.items_of_runs(runs_like("trawl-watch-favs-x"), now - timedelta(days=7), 10) == [
        ("bili:BV5", "bilibili")]
    assert catalog.items_of_runs(runs_like("trawl-watch-fav_"), now - timedelta(days=7), 10) == []
