"""What an archive is browsed by (migration 0008), on SQLite and PostgreSQL: a listing's entries in
its order across reads, the crawls that brought each item, what is known of an uploader."""

from __future__ import annotations

from trawl.storage.catalog import Catalog, _ranks
from trawl.storage.records import ListingEntry


def commit(catalog: Catalog, n: int, uploader: str = "up", workflow_id: str | None = None) -> str:
    key = f"bili:BV{n}"
    catalog.commit_item(canonical_key=key, platform="bilibili", canonical_url=f"https://www.bilibili.com/video/BV{n}",
                        source_url=f"https://www.bilibili.com/video/BV{n}", title=f"视频 {n}", uploader=uploader,
                        duration=None, published_at=f"2026-0{n}-01T00:00:00Z",
                        metadata={"uploader_id": "42"}, workflow_id=workflow_id, assets=[])
    return key


def url(n: int) -> str:
    return f"https://www.bilibili.com/video/BV{n}"


def test_ranks_keep_known_places_and_put_new_entries_between() -> None:
    assert _ranks([None, None, None]) == [0.0, 1.0, 2.0]
    assert _ranks([None, None, 0.0, 1.0]) == [-2.0, -1.0, 0.0, 1.0]  # newer than the first known
    assert _ranks([0.0, None, 1.0]) == [0.0, 0.5, 1.0]
    assert _ranks([0.0, 1.0, None, None]) == [0.0, 1.0, 2.0, 3.0]


def test_a_listing_keeps_its_order_across_reads(catalog: Catalog) -> None:
    commit(catalog, 1)
    commit(catalog, 3)
    key = catalog.record_listing("bilibili_favorites", "77", [
        ListingEntry(url(3), "three"), ListingEntry(url(2), "已失效视频", gone="已失效视频"), ListingEntry(url(1))])
    # a later read of its first page only: a newer entry, then the first known one
    catalog.record_listing("bilibili_favorites", "77", [ListingEntry(url(4), "four"), ListingEntry(url(3))],
                           title="收藏夹")
    listing = catalog.listing(key)
    assert listing is not None and listing.title == "收藏夹" and listing.total == 4
    assert [(e.url, e.title, e.gone) for e in listing.entries] == [
        (url(4), "four", None), (url(3), "three", None), (url(2), "已失效视频", "已失效视频"), (url(1), None, None)]
    assert [e.item.canonical_key if e.item else None for e in listing.entries] == [None, "bili:BV3", None, "bili:BV1"]
    assert [e.url for e in catalog.listing(key, newest_last=True, limit=2).entries] == [url(1), url(2)]
    assert [entry.key for entry in catalog.listings_of("bili:BV1")] == [key]
    assert catalog.listings_of("bili:BV4") == [] and catalog.listing("nothing:1") is None
    assert [(entry.key, entry.total) for entry in catalog.all_listings()] == [(key, 4)]


def test_the_crawls_that_brought_an_item(catalog: Catalog) -> None:
    run = "trawl-watch-favs-2026-12-05T10:00:00Z"
    other = "trawl-watch-favs_x-2026-12-05T10:00:00Z"  # another watch, whose name the first's is the start of
    catalog.frontier_add(run, [(url(1), "bilibili", "item-bili:BV1", None), (url(2), "bilibili", "item-bili:BV2", None)])
    catalog.frontier_add(other, [(url(2), "bilibili", "item-bili:BV2", None)])
    commit(catalog, 1, workflow_id="item-bili:BV1")
    commit(catalog, 2, workflow_id="item-bili:BV2")
    commit(catalog, 3, workflow_id="item-bili:BV3")  # no crawl's
    runs = catalog.crawl_runs("trawl-watch-favs-")
    assert [(crawl, count, [i.canonical_key for i in items]) for crawl, count, items in runs] == [
        (run, 2, ["bili:BV2", "bili:BV1"])]
    assert [crawl for crawl, *_ in catalog.crawl_runs("trawl-watch-favs_x-")] == [other]
    assert catalog.crawl_runs("trawl-watch-favs%") == []  # LIKE's wildcards are letters here


def test_what_is_known_of_an_uploader(catalog: Catalog) -> None:
    commit(catalog, 1)
    commit(catalog, 2)
    commit(catalog, 3, uploader="someone else")
    facts = catalog.uploader_facts("up")
    assert facts == {"items": 2, "size": 0, "first_day": "2026-01-01", "last_day": "2026-02-01",
                     "platforms": ["bilibili"], "uploader_ids": ["42"]}
