"""Search in every script (migration 0006) on SQLite and (TRAWL_TEST_POSTGRES_URL) PostgreSQL: a word
from the middle of a Chinese, Japanese or Korean title finds its item and only it; English words
still do; title matches rank first; what the search makes of any text (``search_words``)."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import text

from tests.conftest import catalog_at
from trawl.storage.catalog import Catalog, CommittedAsset
from trawl.storage.library import MAX_QUERY_WORDS, MAX_WORD, LibraryQuery, search_words

ITEMS = [
    # key, title, uploader, description, tags
    ("bili:spring", "春天的两张照片", "小明同学", "在公园里拍的", ["摄影"]),
    ("bili:cat", "北京胡同里的老猫晒太阳", "胡同日记", "冬天下午", ["宠物", "北京"]),
    ("bili:hotpot", "周末在成都吃火锅的视频记录", "吃货阿强", "我们在夜市吃了臭豆腐", ["美食探店"]),
    ("nico:tokyo", "東京の夜景をドローンで撮影してみた", "空撮チャンネル", "レインボーブリッジ", ["ドローン"]),
    ("kr:jeju", "제주도여행브이로그 둘째날", "여행하는곰", "성산일출봉 일출", ["여행"]),
    ("web:bay", "Sunrise over the bay", "harbour cam", "Morning light on the water", ["dawn"]),
    ("web:gulls", "Field recording", "birder", "Wind and distant gulls", []),
]


def fill(catalog: Catalog) -> None:
    for n, (key, title, uploader, description, tags) in enumerate(ITEMS):
        assert catalog.commit_item(canonical_key=key, platform=key.split(":")[0], canonical_url=f"https://e.com/{key}",
                                   source_url=f"https://e.com/{key}", title=title, uploader=uploader, duration=None,
                                   published_at=None, metadata={"description": description, "tags": tags},
                                   workflow_id=None, assets=[CommittedAsset("video", "video", f"{n}".ljust(64, "0"),
                                                                            1, None, f"k/{n}")])


def found(catalog: Catalog, words: str, **query: object) -> list[str]:
    return [i.canonical_key for i in catalog.library(LibraryQuery(text=words, **query)).items]  # type: ignore[arg-type]


# Five words from the middle of three Chinese titles, one or two a title.
CHINESE = [("照片", "bili:spring"), ("两张", "bili:spring"), ("胡同里", "bili:cat"), ("晒太阳", "bili:cat"),
           ("火锅", "bili:hotpot")]


@pytest.mark.parametrize("word, key", CHINESE)
def test_a_word_from_the_middle_of_a_chinese_title_finds_its_item_and_only_it(
        catalog: Catalog, word: str, key: str) -> None:
    fill(catalog)
    assert found(catalog, word) == [key]


def test_japanese_korean_english_and_every_field(catalog: Catalog) -> None:
    fill(catalog)
    assert found(catalog, "夜景") == ["nico:tokyo"]  # Japanese, kanji
    assert found(catalog, "ドローン") == ["nico:tokyo"]  # katakana, in the title and a tag
    assert found(catalog, "여행") == ["kr:jeju"]  # Korean, from a word with no space in it
    assert found(catalog, "브이로그") == ["kr:jeju"]
    assert found(catalog, "猫") == ["bili:cat"]  # one character
    assert found(catalog, "明同") == ["bili:spring"]  # the middle of an uploader's name
    assert found(catalog, "臭豆腐") == ["bili:hotpot"]  # a description
    assert found(catalog, "探店") == ["bili:hotpot"]  # a tag
    assert found(catalog, "北京 太阳") == ["bili:cat"]  # every word, in any field
    assert found(catalog, "北京 火锅") == []
    assert found(catalog, "春天的两张照片") == ["bili:spring"]  # the whole title
    assert found(catalog, "sunrise") == ["web:bay"]
    assert found(catalog, "BAY") == ["web:bay"]  # any case
    assert found(catalog, "ULL") == ["web:gulls"]  # the middle of an English word
    assert found(catalog, "in") == ["web:gulls", "web:bay"]  # two letters: "recording", then "Morning"
    assert found(catalog, "照片", platform="nico") == []  # with a filter
    assert found(catalog, "照片x") == []


def test_title_matches_rank_first_then_newest(catalog: Catalog) -> None:
    fill(catalog)
    for key, title, description in (("bili:older", "两张老照片", ""), ("bili:newer", "一段视频", "附两张照片")):
        catalog.commit_item(canonical_key=key, platform="bili", canonical_url=key, source_url=key, title=title,
                            uploader=None, duration=None, published_at=None, metadata={"description": description},
                            workflow_id=None, assets=[])
    assert found(catalog, "照片") == ["bili:older", "bili:spring", "bili:newer"]
    assert found(catalog, "照片", sort="new") == ["bili:newer", "bili:older", "bili:spring"]
    assert catalog.library(LibraryQuery(text="照片", limit=1, offset=2)).items[0].canonical_key == "bili:newer"
    assert found(catalog, "照片", sort="title") == ["bili:newer", "bili:older", "bili:spring"]  # 一 < 两 < 春


def test_past_the_count_the_newest_matches_are_ranked(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """A search reads its matches newest first, no further than the count's cap: the best-match
    order ranks those, so a broad word costs what a narrow one does."""
    from trawl.storage import library

    fill(catalog)
    for key, title, description in (("bili:older", "两张老照片", ""), ("bili:newer", "一段视频", "附两张照片")):
        catalog.commit_item(canonical_key=key, platform="bili", canonical_url=key, source_url=key, title=title,
                            uploader=None, duration=None, published_at=None, metadata={"description": description},
                            workflow_id=None, assets=[])
    monkeypatch.setattr(library, "COUNT_CAP", 1)
    page = catalog.library(LibraryQuery(text="照片"))
    assert [i.canonical_key for i in page.items] == ["bili:older", "bili:newer"] and page.more_than_counted
    assert found(catalog, "照片", sort="new") == ["bili:newer", "bili:older", "bili:spring"]  # newest: every one
    assert found(catalog, "照片", sort="new", limit=1, offset=2) == ["bili:spring"]
    assert found(catalog, "照片", sort="new", limit=1) == ["bili:newer"]
    assert found(catalog, "猫") == ["bili:cat"]
    assert catalog.library(LibraryQuery(text="照片", platform="bili")).total == 2  # with a filter: counted to 2


def test_postgresql_reads_the_newest_buckets_first_and_stops(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL's index keys each piece under its item's bucket of 65,536 ids: a search reads
    the newest bucket first and reads no older one once it holds the matches it needs."""
    from trawl.storage import library
    from trawl.storage.catalog import Item

    if catalog.engine.dialect.name != "postgresql":
        pytest.skip("SQLite walks its FTS5 tables backwards by rowid")
    fill(catalog)
    with catalog.engine.begin() as connection:  # the next items in the second bucket
        connection.execute(text("SELECT setval('items_id_seq', 70000)"))
    for key, title in (("bili:later", "两张新照片"), ("bili:latest", "又两张")):
        catalog.commit_item(canonical_key=key, platform="bili", canonical_url=key, source_url=key, title=title,
                            uploader=None, duration=None, published_at=None, metadata={}, workflow_id=None, assets=[])
    assert found(catalog, "两张") == ["bili:latest", "bili:later", "bili:spring"]
    assert found(catalog, "两张", sort="title") == ["bili:later", "bili:latest", "bili:spring"]  # 两 < 又 < 春
    monkeypatch.setattr(library, "COUNT_CAP", 1)  # two matches wanted: the newest bucket holds them
    assert found(catalog, "两张") == ["bili:latest", "bili:later"]
    query = LibraryQuery(text="两张")
    with catalog._session() as session:
        keys = library.pg_bucket_keys(session, query.words())
        assert [bucket for bucket, _ in keys] == [1, 0] and keys[0][1] == "1:两张"
        statement = library.pg_matches(Item, query, query.words(), keys=keys).limit(2)
        sql = statement.compile(dialect=catalog.engine.dialect)
        cursor = session.connection().connection.dbapi_connection.cursor()
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + str(sql), sql.params)
        plan = cursor.fetchone()[0]

    def nodes(node: dict) -> list[dict]:
        return [node, *(n for child in node.get("Plans", []) for n in nodes(child))]

    buckets = [n for n in nodes(plan[0]["Plan"]) if n["Node Type"] == "Function Scan"]
    assert [n["Actual Rows"] for n in buckets] == [1]  # bucket 1 alone was read


def test_the_index_follows_changes_and_deletes(catalog: Catalog) -> None:
    fill(catalog)
    with catalog.engine.begin() as connection:  # an update in place (no path of trawl's does it yet)
        connection.execute(text("UPDATE items SET title = '秋天的落叶' WHERE canonical_key = 'bili:spring'"))
    assert found(catalog, "照片") == [] and found(catalog, "落叶") == ["bili:spring"]
    assert found(catalog, "明同") == ["bili:spring"]
    catalog.delete("bili:spring")
    assert found(catalog, "落叶") == [] and found(catalog, "明同") == [] and found(catalog, "秋") == []
    catalog.delete("bili:cat")
    assert found(catalog, "猫") == []
    assert found(catalog, "火锅") == ["bili:hotpot"]


def test_the_migration_indexes_items_committed_before(catalog_url: str) -> None:
    catalog = catalog_at(catalog_url, "0005")
    fill(catalog)  # indexed by 0004's word index only
    catalog.create_schema()  # 0006
    for word, key in CHINESE:
        assert found(catalog, word) == [key]
    assert found(catalog, "여행") == ["kr:jeju"] and found(catalog, "gulls") == ["web:gulls"]
    catalog.delete("bili:cat")  # rows the backfill indexed leave the index as others do
    assert found(catalog, "晒太阳") == []
    catalog.close()


HOSTILE = ['"', "'", '""""', "title:x OR", "a:* & !b", "NEAR(a b)", "*", "^", "-", "a AND", "(((", "\\",
           "'; drop table items; --", "\x00", "照片\x00两张", "\ud800", "a\udfffb", "\U0001f600", "%", "_", "a%b_c",
           "x" * 100_000, "照" * 100_000, " ".join(["w"] * 10_000), "\u200b\u200d", "ｆｕｌｌｗｉｄｔｈ", "İstanbul",
           "e\u0301", "{1 2}", "col : x", "+", "x*y*z"]


@pytest.mark.parametrize("hostile", HOSTILE, ids=range(len(HOSTILE)))
def test_any_text_becomes_words_of_letters_and_digits(hostile: str) -> None:
    # How long it takes is bench/search.py's to say (no clock in a test): one pass of one regex
    # that cannot backtrack (a class and a plus), whatever the text.
    words = search_words(hostile * 10)
    assert len(words) <= MAX_QUERY_WORDS and len(set(words)) == len(words)
    for word in words:
        assert re.fullmatch(r"[^\W_]+", word) and 0 < len(word) <= MAX_WORD


def test_search_words() -> None:
    assert search_words("照片, 两张!") == ["照片", "两张"]
    assert search_words('"NEAR(a b)"') == ["NEAR", "a", "b"]
    assert search_words("a a b") == ["a", "b"]
    assert search_words("照片\x00两张") == ["照片", "两张"]
    assert search_words(None) == search_words("") == search_words("\ud800 * ") == []
    assert search_words("x" * 1000) == ["x" * MAX_WORD]
    assert len(search_words(" ".join(str(n) for n in range(1000)))) == MAX_QUERY_WORDS


def test_any_text_is_answered_by_the_catalog(catalog: Catalog) -> None:
    fill(catalog)
    for hostile in HOSTILE:
        page = catalog.library(LibraryQuery(text=hostile))
        assert page.total >= 0, hostile[:20]
    assert found(catalog, '"照片"') == ["bili:spring"]  # quotes are not syntax
    assert found(catalog, "照片\x00") == ["bili:spring"]
    assert catalog.count() == len(ITEMS)


def test_metadata_of_any_shape_is_committed_and_searched(catalog: Catalog) -> None:
    """The index reads what the metadata holds: tags that are no list, no tags, a NUL (which
    PostgreSQL's text cannot hold) never refuse a commit."""
    for n, metadata in enumerate(({"description": "夜市\x00小吃"}, {"tags": ["x\x00y", "烧烤摊"]}, {"tags": "单个标签"},
                                  {"tags": {"键": "值"}}, {"tags": [1, None, {"k": "嵌套"}]}, {})):
        assert catalog.commit_item(canonical_key=f"odd:{n}", platform="odd", canonical_url="u", source_url="u",
                                   title=None, uploader=None, duration=None, published_at=None, metadata=metadata,
                                   workflow_id=None, assets=[])
    assert found(catalog, "夜市") == ["odd:0"]  # (after the NUL: SQLite's text functions stop there)
    assert found(catalog, "烧烤") == ["odd:1"] and found(catalog, "标签") == ["odd:2"]
    assert catalog.count() == 6
