"""Extras in the catalog (migration 0007): stored as assets of their item with a language, or
recorded missing with their class; idempotent; on SQLite and PostgreSQL."""

from __future__ import annotations

from trawl.storage.catalog import Catalog
from trawl.storage.records import CommittedAsset, MissingExtra


def _item(catalog: Catalog, key: str = "bilibili:BV1") -> None:
    catalog.commit_item(canonical_key=key, platform="bilibili", canonical_url="https://x/1", source_url="https://x/1",
                        title="t", uploader=None, duration=10.0, published_at=None, metadata={}, workflow_id="wf",
                        assets=[CommittedAsset("video", "video", "a" * 64, 10, "video/mp4", "sha256/aa/aa/" + "a" * 64)])


def _asset(name: str, sha: str, language: str | None = None) -> CommittedAsset:
    return CommittedAsset(name, "subtitles", sha * 64, 5, "application/json", f"sha256/{sha * 2}/{sha * 2}/{sha * 64}",
                          "https://s/1.json", language)


def test_extras_are_assets_with_a_language_and_missing_ones_are_recorded(catalog: Catalog) -> None:
    _item(catalog)
    gone = MissingExtra("subtitles.ai-en", "subtitles", "ai-en", "login_required", "no subtitle_url")
    assert catalog.add_extras("bilibili:BV1", [_asset("subtitles.zh-CN", "b", "zh-CN")], [gone])
    item = catalog.get("bilibili:BV1")
    assert item is not None
    assert [(a.name, a.kind, a.language) for a in item.assets] == [("subtitles.zh-CN", "subtitles", "zh-CN"),
                                                                   ("video", "video", None)]
    [missing] = catalog.missing_extras("bilibili:BV1")
    assert (missing.name, missing.language, missing.error_class, missing.reason) == (
        "subtitles.ai-en", "ai-en", "login_required", "no subtitle_url")
    # Again (a retried activity): nothing doubles; the missing one stored after all is no longer missing.
    assert catalog.add_extras("bilibili:BV1", [_asset("subtitles.zh-CN", "c", "zh-CN"), _asset("subtitles.ai-en", "d")],
                              [])
    item = catalog.get("bilibili:BV1")
    assert item is not None and len(item.assets) == 3
    assert next(a for a in item.assets if a.name == "subtitles.zh-CN").sha256 == "b" * 64  # the first stays
    assert catalog.missing_extras("bilibili:BV1") == []


def test_a_missing_extra_recorded_again_is_updated_and_a_stored_one_is_never_marked_missing(catalog: Catalog) -> None:
    _item(catalog)
    catalog.add_extras("bilibili:BV1", [], [MissingExtra("danmaku", "danmaku", None, "http_5xx", "503")])
    catalog.add_extras("bilibili:BV1", [], [MissingExtra("danmaku", "danmaku", None, "parse_error", "garbage")])
    assert [(m.error_class, m.reason) for m in catalog.missing_extras("bilibili:BV1")] == [("parse_error", "garbage")]
    catalog.add_extras("bilibili:BV1", [], [MissingExtra("video", "video", None, "http_5xx", "x")])
    assert [m.name for m in catalog.missing_extras("bilibili:BV1")] == ["danmaku"]


def test_extras_of_an_item_the_catalog_lacks_are_refused_and_a_deleted_item_takes_them_along(catalog: Catalog) -> None:
    assert not catalog.add_extras("bilibili:none", [], [MissingExtra("danmaku", "danmaku", None, "http_5xx", "x")])
    _item(catalog)
    catalog.add_extras("bilibili:BV1", [_asset("comments", "e")], [MissingExtra("danmaku", "danmaku", None, "x", "y")])
    assert catalog.delete("bilibili:BV1")
    assert catalog.missing_extras("bilibili:BV1") == [] and catalog.get("bilibili:BV1") is None


def test_an_extras_fields_join_the_items_metadata(catalog: Catalog) -> None:
    _item(catalog)
    chapters = [{"start_time": 0.0, "end_time": 1.0, "title": "开场"}]
    assert catalog.merge_metadata("bilibili:BV1", {"chapters": chapters})
    item = catalog.get("bilibili:BV1")
    assert item is not None and item.metadata == {"chapters": chapters}
    assert not catalog.merge_metadata("bilibili:none", {"chapters": chapters})
