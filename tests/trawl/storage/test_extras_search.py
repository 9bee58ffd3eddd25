"""Search over the extras' lines (migration 0009), on SQLite and (TRAWL_TEST_POSTGRES_URL)
PostgreSQL: a subtitle cue, a danmaku or a comment finds its item, words from the middle of Chinese
text too, with the line that matched; a refreshed snapshot replaces the lines of its kind; extras
stored before 0009 are read into lines from the blob store."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from tests.conftest import catalog_at
from trawl.extras_text import ExtraLine, extra_lines
from trawl.storage.catalog import Catalog, CommittedAsset, newest_snapshots
from trawl.storage.library import LibraryQuery
from trawl.storage.records import ExtraHit


def _commit(catalog: Catalog, key: str, title: str, description: str = "") -> None:
    assert catalog.commit_item(canonical_key=key, platform=key.split(":")[0], canonical_url=f"https://e.com/{key}",
                               source_url=f"https://e.com/{key}", title=title, uploader="up", duration=600.0,
                               published_at=None, metadata={"description": description}, workflow_id=None,
                               assets=[CommittedAsset("video", "video", key.ljust(64, "0")[:64], 1, None, f"k/{key}")])


def _asset(name: str, kind: str, sha: str) -> CommittedAsset:
    return CommittedAsset(name, kind, sha * 64, 5, "application/json", f"sha256/{sha * 2}/{sha * 2}/{sha * 64}")


SUBTITLES = json.dumps({"body": [{"from": 1.5, "to": 3.0, "content": "大家好欢迎来到我的频道"},
                                 {"from": 83.2, "to": 86.0, "content": "今天我们去成都吃火锅"}]}).encode()
DANMAKU = ('<?xml version="1.0" encoding="UTF-8"?><i><chatid>1</chatid>'
           '<d p="12.5,1,25,16777215,1700000000,0,abc,1,0">前方高能预警</d>'
           '<d p="130.0,1,25,16777215,1700000000,0,abc,2,0">这个猫太可爱了 &amp; 好</d></i>').encode()
COMMENTS = json.dumps({"version": 1, "comments": [
    {"id": "1", "parent": "root", "text": "<p>请问这首<b>背景音乐</b>叫什么</p>"},
    {"id": "2", "parent": "1", "text": "Rainbow bridge at night"}]}).encode()


def _fill(catalog: Catalog) -> None:
    _commit(catalog, "bili:one", "第一个视频")
    _commit(catalog, "bili:two", "第二个视频")
    _commit(catalog, "bili:three", "春天的火锅", "火锅")
    assert catalog.add_extras("bili:one", [_asset("subtitles.zh-CN", "subtitles", "a")], [],
                              {"subtitles": extra_lines("subtitles", SUBTITLES, 100)})
    assert catalog.add_extras("bili:two", [_asset("danmaku", "danmaku", "b"), _asset("comments", "comments", "c")],
                              [], {"danmaku": extra_lines("danmaku", DANMAKU, 100),
                                   "comments": extra_lines("comments", COMMENTS, 100)})


def _found(catalog: Catalog, words: str, **query: object) -> list[tuple[str, ExtraHit | None]]:
    page = catalog.library(LibraryQuery(text=words, **query))  # type: ignore[arg-type]
    return [(item.canonical_key, page.hits.get(item.canonical_key)) for item in page.items]


def test_the_lines_of_each_kind_are_read_with_their_time() -> None:
    assert extra_lines("subtitles", SUBTITLES, 100) == [ExtraLine("subtitles", 1.5, "大家好欢迎来到我的频道"),
                                                        ExtraLine("subtitles", 83.2, "今天我们去成都吃火锅")]
    assert extra_lines("danmaku", DANMAKU, 1) == [ExtraLine("danmaku", 12.5, "前方高能预警")]
    assert extra_lines("danmaku", DANMAKU, 5)[1].text == "这个猫太可爱了 & 好"
    assert [line.text for line in extra_lines("comments", COMMENTS, 5)] == ["请问这首 背景音乐 叫什么",
                                                                           "Rainbow bridge at night"]
    assert extra_lines("comments", COMMENTS, 5)[0].seconds is None
    assert extra_lines("chapters", b"[]", 5) == []
    for kind in ("subtitles", "danmaku", "comments"):  # not the kind's form: no lines, no error
        for body in (b"", b"\x00\xff" * 50, b"<i><d p='x'>", b'{"body": 5, "comments": {}}', b"[" * 100_000,
                     b'<!DOCTYPE i [<!ENTITY a "b">]><i><d p="1">&a;</d></i>'):
            assert isinstance(extra_lines(kind, body, 10), list)
    long = json.dumps({"body": [{"from": 0, "to": 1, "content": "字" * 5000 + "\x00"}]}).encode()
    assert len(extra_lines("subtitles", long, 1)[0].text) == 300


def test_a_subtitle_line_a_danmaku_and_a_comment_find_their_item(catalog: Catalog) -> None:
    _fill(catalog)
    assert _found(catalog, "成都") == [("bili:one", ExtraHit("subtitles", 83.2, "今天我们去成都吃火锅"))]
    assert _found(catalog, "高能") == [("bili:two", ExtraHit("danmaku", 12.5, "前方高能预警"))]
    assert _found(catalog, "猫太可") == [("bili:two", ExtraHit("danmaku", 130.0, "这个猫太可爱了 & 好"))]
    assert _found(catalog, "背景音乐") == [("bili:two", ExtraHit("comments", None, "请问这首 背景音乐 叫什么"))]
    assert _found(catalog, "BRIDGE night") == [("bili:two", ExtraHit("comments", None, "Rainbow bridge at night"))]
    assert _found(catalog, "猫 可") == [("bili:two", ExtraHit("danmaku", 130.0, "这个猫太可爱了 & 好"))]
    assert _found(catalog, "高能 可爱") == []  # every word in one line
    assert _found(catalog, "频道", platform="weibo") == []
    assert _found(catalog, "频道", sort="title") == [("bili:one", ExtraHit("subtitles", 1.5, "大家好欢迎来到我的频道"))]
    assert _found(catalog, "频道", sort="old") == [("bili:one", ExtraHit("subtitles", 1.5, "大家好欢迎来到我的频道"))]


def test_an_items_own_text_ranks_before_its_extras(catalog: Catalog) -> None:
    _fill(catalog)
    # bili:three holds 火锅 in its title (no hit shown: its title shows it); bili:one in a subtitle.
    assert _found(catalog, "火锅") == [("bili:three", None),
                                     ("bili:one", ExtraHit("subtitles", 83.2, "今天我们去成都吃火锅"))]
    assert [key for key, _ in _found(catalog, "火锅", sort="new")] == ["bili:three", "bili:one"]
    assert catalog.library(LibraryQuery(text="火锅")).total == 2
    assert [key for key, _ in _found(catalog, "火锅", limit=1, offset=1)] == ["bili:one"]


def test_a_refreshed_snapshot_replaces_the_lines_of_its_kind(catalog: Catalog) -> None:
    _fill(catalog)
    newer = ('<i><d p="5,1,25,1,1,0,a,9,0">第二批弹幕来了</d></i>').encode()
    assert catalog.add_extras("bili:two", [_asset("danmaku@20261205T130800Z", "danmaku", "d")], [],
                              {"danmaku": extra_lines("danmaku", newer, 100)})
    assert _found(catalog, "高能") == []  # the older snapshot's lines are gone
    assert _found(catalog, "弹幕") == [("bili:two", ExtraHit("danmaku", 5.0, "第二批弹幕来了"))]
    assert _found(catalog, "背景音乐")[0][0] == "bili:two"  # the comments stay
    assert catalog.add_extras("bili:two", [], [], {"danmaku": extra_lines("danmaku", newer, 100)})  # again: once
    with catalog.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM extras_lines WHERE kind = 'danmaku'")).scalar() == 1


def test_a_deleted_item_takes_its_lines_along(catalog: Catalog) -> None:
    _fill(catalog)
    assert catalog.delete("bili:two")
    assert _found(catalog, "高能") == []
    with catalog.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM extras_lines")).scalar() == 2


def test_extras_stored_before_the_index_are_read_from_the_blob_store(catalog: Catalog) -> None:
    _commit(catalog, "bili:old", "旧视频")
    bodies = {"sha256/aa/aa/" + "a" * 64: SUBTITLES, "sha256/bb/bb/" + "b" * 64: DANMAKU,
              "sha256/ee/ee/" + "e" * 64: b"<i><d p='1,1,25,1,1,0,a,1,0'>newest danmaku snapshot</d></i>"}
    assert catalog.add_extras("bili:old", [_asset("subtitles.zh", "subtitles", "a"), _asset("danmaku", "danmaku", "b"),
                                           _asset("danmaku@20261205T130800Z", "danmaku", "e"),
                                           _asset("comments", "comments", "f")], [])  # no lines: as before 0009
    assert _found(catalog, "成都") == []
    with catalog.engine.begin() as connection:  # what migration 0009 leaves for the blob store's reader
        connection.execute(text("INSERT INTO extras_lines_pending (item_id, kind) SELECT DISTINCT item_id, kind "
                                "FROM assets WHERE kind IN ('subtitles', 'danmaku', 'comments')"))

    def read(key: str) -> bytes:
        if key not in bodies:
            raise FileNotFoundError(key)  # a blob gone: no lines, the rest goes on
        return bodies[key]

    assert catalog.index_pending_extras(read, limit=100, batch=2) == 3
    assert _found(catalog, "成都") == [("bili:old", ExtraHit("subtitles", 83.2, "今天我们去成都吃火锅"))]
    assert _found(catalog, "snapshot") == [("bili:old", ExtraHit("danmaku", 1.0, "newest danmaku snapshot"))]
    assert _found(catalog, "高能") == []  # an older snapshot is not read
    assert catalog.index_pending_extras(read, limit=100) == 0


def test_the_newest_snapshot_of_each_file() -> None:
    assert newest_snapshots([("danmaku", "k1"), ("danmaku@20261205T130800Z", "k2"), ("danmaku@20261204T000000Z", "k3"),
                             ("subtitles.zh", "k4")]) == {"danmaku": "k2", "subtitles.zh": "k4"}


def test_the_lines_indexed_are_bounded(catalog: Catalog) -> None:
    _commit(catalog, "bili:many", "很多弹幕")
    many = [ExtraLine("danmaku", float(n), f"line {n} 弹幕{n}") for n in range(300)]
    assert catalog.add_extras("bili:many", [], [], {"danmaku": many[:120]})
    with catalog.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM extras_lines")).scalar() == 120
    assert _found(catalog, "弹幕119")[0][1] == ExtraHit("danmaku", 119.0, "line 119 弹幕119")


@pytest.mark.parametrize("words", ['"', '" OR "', "NEAR(a b)", "a* OR b", "\x00", "火锅\x00成都", "^x", "-x",
                                   "x" * 10_000, "猫 " * 500, "'; DROP TABLE extras_lines; --", "{a b}: c"])
def test_any_text_searches_the_extras_without_error(catalog: Catalog, words: str) -> None:
    _fill(catalog)
    for sort in ("relevance", "new", "old"):
        catalog.library(LibraryQuery(text=words, sort=sort))
    with catalog.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM extras_lines")).scalar() == 6


def test_migration_0009_leaves_the_extras_stored_before_it_to_be_read(catalog_url: str) -> None:
    catalog = catalog_at(catalog_url, "0008")
    assert catalog.commit_item(canonical_key="bili:old", platform="bili", canonical_url="u", source_url="u",
                               title="旧视频", uploader=None, duration=None, published_at=None, metadata={},
                               workflow_id=None, assets=[CommittedAsset("video", "video", "v" * 64, 1, None, "k/v"),
                                                         _asset("danmaku", "danmaku", "b"),
                                                         _asset("chapters", "chapters", "c")])
    catalog.create_schema()  # 0009
    with catalog.engine.connect() as connection:
        assert connection.execute(text("SELECT kind FROM extras_lines_pending")).scalars().all() == ["danmaku"]
    assert catalog.index_pending_extras(lambda key: DANMAKU, limit=1) == 1
    assert _found(catalog, "高能") == [("bili:old", ExtraHit("danmaku", 12.5, "前方高能预警"))]
    assert _found(catalog, "可爱") == []  # past the limit of one line
    catalog.close()
