"""The library's catalog queries on SQLite and (TRAWL_TEST_POSTGRES_URL) PostgreSQL: every filter,
every sort, full-text search in the database's own index, and migration 0004 on a catalog that
holds items already."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from tests.conftest import catalog_at
from trawl.storage.catalog import Catalog, CommittedAsset
from trawl.storage.library import SORTS, LibraryQuery

ITEMS = [
    # key, platform, title, uploader, duration, published, kinds and sizes, description, tags
    ("web:a", "generic", "Sunrise over the bay", "harbour cam", 30.0, "2026-11-20T07:00:00Z",
     [("video", 5000), ("thumbnail", 100)], "Morning light on the water", ["dawn", "sea"]),
    ("web:b", "generic", "A gull, up close", "birder", 12.0, "2026-11-22T10:00:00Z",
     [("video", 9000)], "Seabird portrait", ["birds"]),
    ("bili:c", "bilibili", "春天的两张照片", "小明", None, "2026-10-01T00:00:00Z",
     [("image", 700)], "两张照片", ["春天"]),
    ("web:d", "generic", "Field recording", "birder", 95.5, None,
     [("audio", 3000)], "Wind and distant gulls", []),
]


def fill(catalog: Catalog) -> None:
    catalog.create_schema()
    for n, (key, platform, title, uploader, duration, published, files, description, tags) in enumerate(ITEMS):
        assets = [CommittedAsset(kind, kind, f"{n}{i}".ljust(64, "0"), size, None, f"k/{n}{i}")
                  for i, (kind, size) in enumerate(files)]
        assert catalog.commit_item(canonical_key=key, platform=platform, canonical_url=f"https://e.com/{key}",
                                   source_url=f"https://e.com/{key}?s=1", title=title, uploader=uploader,
                                   duration=duration, published_at=published,
                                   metadata={"description": description, "tags": tags}, workflow_id=None,
                                   assets=assets)


def keys(catalog: Catalog, **query: object) -> list[str]:
    return [i.canonical_key for i in catalog.library(LibraryQuery(**query)).items]  # type: ignore[arg-type]


def test_filters_sorts_and_counts(catalog_url: str) -> None:
    catalog = Catalog(catalog_url)
    fill(catalog)
    assert keys(catalog) == ["web:d", "bili:c", "web:b", "web:a"]  # newest committed first
    assert keys(catalog, sort="old") == ["web:a", "web:b", "bili:c", "web:d"]
    assert keys(catalog, sort="longest") == ["web:d", "web:a", "web:b", "bili:c"]  # no duration: last
    assert keys(catalog, sort="largest") == ["web:b", "web:a", "web:d", "bili:c"]
    assert keys(catalog, sort="title") == ["web:b", "web:d", "web:a", "bili:c"]
    assert keys(catalog, platform="bilibili") == ["bili:c"]
    assert keys(catalog, uploader="birder") == ["web:d", "web:b"]
    assert keys(catalog, kind="audio") == ["web:d"]
    assert keys(catalog, kind="image") == ["bili:c"]
    # The day: published, else the day it was committed (today, for web:d).
    assert keys(catalog, since="2026-11-01", until="2026-11-21") == ["web:a"]
    assert keys(catalog, until="2026-10-01") == ["bili:c"]
    page = catalog.library(LibraryQuery(limit=2, offset=2))
    assert [i.canonical_key for i in page.items] == ["web:b", "web:a"] and page.total == 4
    assert catalog.library(LibraryQuery(uploader="birder", limit=1)).total == 2
    for sort in SORTS:  # every sort answers, with the filters on
        assert catalog.library(LibraryQuery(sort=sort, platform="generic", kind="video")).total == 2
    catalog.close()


def test_full_text_search_over_title_uploader_description_and_tags(catalog_url: str) -> None:
    catalog = Catalog(catalog_url)
    fill(catalog)
    assert keys(catalog, text="sunrise") == ["web:a"]  # title, any case
    assert keys(catalog, text="birder") == ["web:d", "web:b"]  # uploader
    assert keys(catalog, text="wind") == ["web:d"]  # description
    assert keys(catalog, text="dawn") == ["web:a"]  # a tag
    assert keys(catalog, text="gull") == ["web:b", "web:d"]  # "gull," in a title first, then "gulls"
    assert keys(catalog, text="gull", sort="new") == ["web:d", "web:b"]
    assert keys(catalog, text="ULLS") == ["web:d"]  # anywhere in a word, any case
    assert keys(catalog, text="sunrise birds") == []  # every word must match
    assert keys(catalog, text="seabird portrait") == ["web:b"]
    assert keys(catalog, text="春天") == ["bili:c"]
    assert keys(catalog, text="gull", kind="audio") == ["web:d"]  # with a filter
    # Query syntax is taken as words, never as the search engine's operators.
    for hostile in ('"', "title:x OR", "a:* & !b", "NEAR(", "*", "'; drop table items; --"):
        assert catalog.library(LibraryQuery(text=hostile)).total >= 0
    assert catalog.count() == 4
    catalog.delete("web:d")  # the index follows a deleted item (fsck --repair)
    assert keys(catalog, text="wind") == []
    catalog.close()


def test_bad_filters_are_refused_with_what_is_allowed() -> None:
    with pytest.raises(ValueError, match="sort must be one of relevance, new"):
        LibraryQuery(sort="random")
    with pytest.raises(ValueError, match="kind must be one of video, audio, image"):
        LibraryQuery(kind="thumbnail")
    with pytest.raises(ValueError, match="since must be a day as YYYY-MM-DD"):
        LibraryQuery(since="yesterday")


def test_migration_fills_the_library_columns_and_search_of_items_committed_before(catalog_url: str) -> None:
    catalog = catalog_at(catalog_url, "0003")
    with catalog.engine.begin() as connection:
        connection.execute(text(
            "INSERT INTO items (canonical_key, platform, canonical_url, source_url, title, uploader, duration, "
            "published_at, metadata, status, workflow_id, created_at, updated_at) VALUES ('web:old', 'generic', 'u', "
            "'u', 'An older harbour film', 'archivist', 61, '2025-05-04T00:00:00Z', :meta, 'committed', NULL, "
            ":now, :now)"), {"meta": '{"description": "kept from before", "tags": ["film"]}',
                             "now": "2026-01-01 00:00:00+00:00"})
        item_id = connection.execute(text("SELECT id FROM items")).scalar()
        for name, kind, size in (("video", "video", 4000), ("thumbnail", "thumbnail", 50)):
            connection.execute(text(
                "INSERT INTO assets (item_id, name, kind, sha256, size, mime, blob_path) "
                "VALUES (:i, :n, :k, :s, :z, NULL, 'x')"), {"i": item_id, "n": name, "k": kind, "s": name * 4,
                                                            "z": size})
    catalog.create_schema()  # 0004 and after
    page = catalog.library(LibraryQuery(text="harbour film", kind="video", since="2025-05-04", until="2025-05-04"))
    assert [i.canonical_key for i in page.items] == ["web:old"]
    assert keys(catalog, text="kept") == ["web:old"]
    assert keys(catalog, sort="largest") == ["web:old"]
    with catalog.engine.connect() as connection:
        assert connection.execute(text("SELECT kind, size, day FROM items")).one() == ("video", 4050, "2025-05-04")
    catalog.close()


def test_matches_are_counted_up_to_the_cap(catalog_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A broad filter costs what a narrow one does: the count stops one past the cap."""
    from trawl.storage import library

    catalog = Catalog(catalog_url)
    fill(catalog)
    monkeypatch.setattr(library, "COUNT_CAP", 2)
    page = catalog.library(LibraryQuery(limit=1))
    assert (page.total, page.more_than_counted, len(page.items)) == (3, True, 1)
    narrow = catalog.library(LibraryQuery(platform="bilibili"))
    assert (narrow.total, narrow.more_than_counted) == (1, False)
    catalog.close()


def test_long_titles_uploaders_and_descriptions_are_committed_searched_and_sorted(catalog_url: str) -> None:
    """PostgreSQL refuses btree entries over 2704 bytes and tsvectors over 1 MB: neither limit may
    refuse a commit (post text is a title on some platforms)."""
    catalog = Catalog(catalog_url)
    catalog.create_schema()
    title, uploader = "Long " + "word " * 1200, "u" * 5000
    assert catalog.commit_item(canonical_key="web:long", platform="generic", canonical_url="u", source_url="u",
                               title=title, uploader=uploader, duration=None, published_at=None,
                               metadata={"description": "many different words " * 100_000}, workflow_id=None,
                               assets=[CommittedAsset("video", "video", "f" * 64, 1, None, "k")])
    assert keys(catalog, text="long word") == ["web:long"]
    assert keys(catalog, uploader=uploader) == ["web:long"]
    assert keys(catalog, uploader=uploader[:-1]) == []  # the whole name, not its indexed beginning
    assert keys(catalog, sort="title") == ["web:long"]
    assert keys(catalog, text="_") == ["web:long"]  # no word: no search, everything
    catalog.close()


def test_the_migration_goes_down_and_up_again_keeping_every_file(catalog_url: str) -> None:
    from alembic import command
    from alembic.config import Config

    from trawl.storage.catalog import MIGRATIONS

    catalog = Catalog(catalog_url)
    fill(catalog)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with catalog.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0003")
        assert connection.execute(text("SELECT count(*) FROM assets")).scalar() == 5
    catalog.create_schema()
    assert keys(catalog, kind="audio", text="wind") == ["web:d"]
    assert catalog.library(LibraryQuery(sort="largest")).items[0].canonical_key == "web:b"
    catalog.close()
