"""What the library page asks of the catalog: committed items filtered, searched, sorted and paged.

Every filter and sort is on an indexed column (migration 0004). The text search (migration 0006)
finds each word of the query anywhere in an item's title, uploader, tags or description, in any
script (a Chinese title has no spaces to split at); all of them must match, in any case. SQLite
reads the matches from FTS5 tables (``items_trigram`` for words of three characters or more,
``items_short`` for shorter ones); PostgreSQL from a GIN index over the text's one- and
two-character pieces, confirmed by a substring test. Items whose title holds every word come first.
An item is also found by one line of its extras that holds every word (migration 0009,
trawl.storage.extras_search); those rank last.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (ARRAY, ColumnElement, Integer, Select, Text, and_, bindparam, case, column, exists, func,
                        literal, or_, select, table, text, true)

from trawl.storage.extras_search import extras_condition, pg_items, pg_line_keys, sqlite_items

from trawl.storage.records import CatalogItem, ExtraHit

# The FTS5 tables of SQLite catalogs (and the prefixes of their shadow tables): words of three
# characters or more are found by trigrams, shorter ones in the table of two-character windows.
TRIGRAM_TABLE = "items_trigram"
SHORT_TABLE = "items_short"
SEARCH_TABLES = (TRIGRAM_TABLE, SHORT_TABLE)
# PostgreSQL: each item's search text (0006's trawl_search_text, lower case) and where its title
# ends in it, kept by a trigger in a narrow table of their own (migration 0008), whose GIN index
# holds the text's one- and two-character pieces.
SEARCH_TABLE = "items_search"
# A live recording: its metadata holds the recording's record (migration 0008 indexes these).
LIVE = {"sqlite": "json_type(items.metadata, '$.live') = 'object'",
        "postgresql": "json_typeof(trawl_safe_json(items.metadata) -> 'live') = 'object'"}
MAX_QUERY_WORDS = 16
MAX_WORD = 64

SORTS = {
    "relevance": "best match, then newest",
    "new": "newest first",
    "old": "oldest first",
    "published": "published, newest first",
    "title": "title, A to Z",
    "longest": "longest first",
    "largest": "largest first",
}
KINDS = ("video", "audio", "image")
# The indexed prefix of titles and uploaders (migration 0004: PostgreSQL's btree refuses long entries).
PREFIX = 200
# Matches are counted up to this many: past it the page says "10,000+", and a broad filter costs no
# more than a narrow one (a count reads every match).
COUNT_CAP = 10_000
DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class LibraryQuery:
    """One page of the library: ``None`` or ``""`` leaves a filter out. ``since`` and ``until``
    are days (``YYYY-MM-DD``, both included), matched against the day an item is listed under."""

    text: str = ""
    platform: str | None = None
    uploader: str | None = None
    kind: str | None = None
    since: str | None = None
    until: str | None = None
    sort: str = "relevance"
    limit: int = 48
    offset: int = 0
    live: bool = False  # live recordings alone (metadata.live: the recording's record)
    gone: bool = False  # items a re-check found gone upstream alone
    unwatched: str | None = None  # this viewer's unwatched items alone (migration 0008's viewer_state)

    def __post_init__(self) -> None:
        if self.sort not in SORTS:
            raise ValueError(f"sort must be one of {', '.join(SORTS)}, not {self.sort!r}")
        if self.kind and self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        for name in ("since", "until"):
            value = getattr(self, name)
            if value and not DAY.fullmatch(value):
                raise ValueError(f"{name} must be a day as YYYY-MM-DD, not {value!r}")

    def words(self) -> list[str]:
        """What the search looks for: the query's words, runs of letters and digits in any script
        (everything else separates them, so no character reaches the database as syntax), each
        cut to MAX_WORD characters, the first MAX_QUERY_WORDS different ones."""
        return search_words(self.text)


def search_words(text: str | None) -> list[str]:
    """The words of a search text (``LibraryQuery.words``). Reads no further than it needs, so a
    text of any length costs at most MAX_QUERY_WORDS matches."""
    found: list[str] = []
    for match in WORD.finditer(text or ""):
        word = match.group()[:MAX_WORD]
        if word not in found:
            found.append(word)
            if len(found) == MAX_QUERY_WORDS:
                break
    return found


WORD = re.compile(r"[^\W_]+")


@dataclass
class LibraryPage:
    items: list[CatalogItem]
    total: int  # the items that match, on every page: at most COUNT_CAP + 1
    query: LibraryQuery = field(default_factory=LibraryQuery)
    # By canonical key, for the items found by a line of their extras rather than their own text:
    # that line (the first holding every word).
    hits: dict[str, ExtraHit] = field(default_factory=dict)

    @property
    def more_than_counted(self) -> bool:
        return self.total > COUNT_CAP


def conditions(model: Any, query: LibraryQuery, dialect: str, search: bool = True) -> list[ColumnElement[bool]]:
    """The WHERE of a library query on the ``items`` model (without the search's with ``search=False``)."""
    words = query.words()
    # With a text search, SQLite reads the matches from the full-text index and looks each item up
    # by its id; left to itself it would walk a filter's index (half the catalog for kind=video)
    # and test each row against the matches. `column || ''` keeps it off those indexes.
    by_search = bool(words) and dialect == "sqlite"

    def column(name: str) -> Any:
        found = getattr(model, name)
        return found.concat("") if by_search else found

    where: list[ColumnElement[bool]] = [model.status == "committed"]
    if query.platform:
        where.append(column("platform") == query.platform)
    if query.uploader:
        where += [prefix(model.uploader) == query.uploader[:PREFIX], model.uploader == query.uploader]
    if query.kind:
        where.append(column("kind") == query.kind)
    if query.since:
        where.append(column("day") >= query.since)
    if query.until:
        where.append(column("day") <= query.until)
    if query.live:  # migration 0008's partial index ix_items_live holds these
        where.append(text(LIVE[dialect]))
    if query.gone:
        where.append(model.gone_at.is_not(None))
    if query.unwatched:
        where.append(~exists(select(literal(1)).select_from(text("viewer_state")).where(text(
                "viewer_state.viewer = :viewer AND viewer_state.item_id = items.id AND viewer_state.watched_at IS "
                "NOT NULL").bindparams(viewer=query.unwatched[:64]))))
    if words and search:
        where += search_conditions(model, words, dialect)
    return where


def search_conditions(model: Any, words: list[str], dialect: str) -> list[ColumnElement[bool]]:
    """Every word anywhere in the item's text, or every word in one line of its extras
    (trawl.storage.extras_search)."""
    return [or_(and_(*text_conditions(model, words, dialect)), extras_condition(model, words, dialect))]


def text_conditions(model: Any, words: list[str], dialect: str) -> list[ColumnElement[bool]]:
    """Every word anywhere in the item's text. Words are letters and digits only
    (``search_words``), so nothing in them is FTS5 syntax; they are bound, never spliced."""
    if dialect == "postgresql":
        return [model.id.in_(pg_matches(model, LibraryQuery(), words, dialect, with_rank=False))]
    found = []
    # A word of three characters or more is a phrase of trigrams; a shorter one is a token of the
    # windows table (one of one character, the prefix of a token).
    long = [w for w in words if len(w) >= 3]
    short = [w for w in words if len(w) < 3]
    for name, matched in ((TRIGRAM_TABLE, long), (SHORT_TABLE, short)):
        if matched:
            found.append(model.id.in_(select(text("rowid")).select_from(text(name)).where(
                text(f"{name} MATCH :{name}").bindparams(**{name: _fts_query(matched)}))))
    return found


def title_holds(model: Any, words: list[str], dialect: str) -> ColumnElement[bool]:
    """The title holds every word (in any case): what ranks an item first."""
    position = func.strpos if dialect == "postgresql" else func.instr
    return and_(*[position(func.lower(model.title), func.lower(bindparam(f"title{n}", word))) > 0
                  for n, word in enumerate(words)])


def prefix(column: Any) -> Any:
    """The expression migration 0004 indexes a text column by."""
    return func.substr(column, 1, PREFIX)


def statements(model: Any, query: LibraryQuery, dialect: str) -> tuple[Select[Any], Select[Any]]:
    """The page's SELECT (rows of ``model``) and the matching items' count, up to ``COUNT_CAP + 1``.
    A search in the default order or newest first is ``search``'s."""
    words = query.words()
    where = and_(*conditions(model, query, dialect))
    order = {
        "relevance": [case((title_holds(model, words, dialect), 0), else_=1), model.id.desc()] if words
        else [model.id.desc()],
        "new": [model.id.desc()],
        "old": [model.id.asc()],
        "published": [model.day.desc(), model.id.desc()],
        "title": [prefix(model.title).asc(), model.id.asc()],
        "longest": [model.duration.desc().nulls_last(), model.id.desc()],
        "largest": [model.size.desc().nulls_last(), model.id.desc()],
    }[query.sort]
    page = select(model).where(where).order_by(*order).limit(query.limit).offset(query.offset)
    count = select(func.count()).select_from(select(model.id).where(where).limit(COUNT_CAP + 1).subquery())
    return page, count


def is_search(query: LibraryQuery) -> bool:
    """Whether ``search`` answers the query (else ``statements``): a search in the default order or
    newest first."""
    return bool(query.words()) and query.sort in ("relevance", "new")


def pg_bucket_keys(session: Any, words: list[str]) -> list[tuple[int, str]]:
    """What ``pg_matches`` asks the index for in each bucket, newest bucket first: the bucket and
    its keys (``<bucket>:<piece>`` for every piece of every word, space-separated: a piece holds
    no space). The pieces are the database's own (``trawl_word_grams`` of its ``lower``), as the
    index's are; computed once here, not once a bucket."""
    params = {f"word{n}": word for n, word in enumerate(words)}
    pieces_sql = " || ".join(f"trawl_word_grams(lower(:{name}))" for name in params)
    # With the pieces, for the rest of the transaction: no JIT (the search's plans are priced high,
    # as trawl_bucket_grams is so that its index is used, and compiling them took 0.1-0.7 s), and
    # no parallel workers (the nested loop over the buckets reads them in order).
    _, _, newest, pieces = session.execute(text(
        "SELECT set_config('jit', 'off', true), set_config('max_parallel_workers_per_gather', '0', true), "
        f"(SELECT coalesce(max(id), 0) FROM {SEARCH_TABLE}) >> {BUCKET_BITS}, {pieces_sql}").bindparams(
            **params)).one()
    unique = sorted(set(pieces or []))
    return [(bucket, " ".join(f"{bucket}:{piece}" for piece in unique)) for bucket in range(newest, -1, -1)]


def pg_matches(model: Any, query: LibraryQuery, words: list[str], dialect: str = "postgresql",
               with_rank: bool = True, keys: list[tuple[int, str]] | None = None) -> Select[Any]:
    """The items that hold every word, newest first, on PostgreSQL (``items_search``): their ids
    (and with ``with_rank``, 0 when their title holds every word, else 1), read bucket by bucket of
    ids, newest bucket first, so that a LIMIT stops the reading early.

    The index keys each piece of an item's text under its bucket (65,536 ids, migration 0008):
    for each bucket the index gives the rows holding every word's pieces (its two-character
    pieces, or itself when shorter: then it is found exactly), a substring test confirms a word
    of three characters or more (its pieces in that order). Words are bound, never spliced."""
    params = {f"word{n}": word for n, word in enumerate(words)}
    confirm = [f"strpos(s.body, lower(:{name})) > 0" for name, word in params.items() if len(word) >= 3]
    title = " AND ".join(f"strpos(left(s.body, s.title_end), lower(:{name})) > 0" for name in params)
    filters = conditions(model, query, dialect, search=False)[1:]  # items_search holds committed items alone
    searched = table(SEARCH_TABLE, column("id"), column("body"), column("title_end")).alias("s")
    columns = [searched.c.id.label("id")]
    if with_rank:
        columns.append(case((text(title), 0), else_=1).label("rank"))
    source = searched.join(model, model.id == searched.c.id) if filters else searched
    if keys is not None:  # the keys of each bucket computed before (pg_bucket_keys)
        buckets = func.unnest(bindparam("buckets", [b for b, _ in keys], type_=ARRAY(Integer)),
                              bindparam("keysets", [k for _, k in keys], type_=ARRAY(Text))).table_valued(
            "n", "keys").render_derived(name="b")
        found_in_bucket = "trawl_bucket_grams(s.id, s.body) @> string_to_array(b.keys, ' ')"
    else:  # every bucket, its keys computed by the database bucket by bucket
        newest = select(func.coalesce(func.max(table(SEARCH_TABLE, column("id")).c.id), 0)).scalar_subquery()
        buckets = func.generate_series(newest.op(">>")(BUCKET_BITS), 0, -1).table_valued("n").render_derived(name="b")
        words_array = "ARRAY[" + ", ".join(f"CAST(:{name} AS text)" for name in params) + "]"
        found_in_bucket = f"trawl_bucket_grams(s.id, s.body) @> trawl_bucket_keys(b.n, {words_array})"
    inner = select(*columns).select_from(source).where(
        text(found_in_bucket), *[text(c) for c in confirm], *filters).order_by(searched.c.id.desc()).lateral("m")
    found = select(*[inner.c[c.name] for c in columns]).select_from(buckets.join(inner, true()))
    return found.params(**params)


# Ids per bucket of migration 0008's index (2 ** 16).
BUCKET_BITS = 16


# A match found in an item's extras alone ranks after those found in its own text.
EXTRAS_RANK = 2


def search(session: Any, model: Any, query: LibraryQuery, dialect: str) -> tuple[list[int], int]:
    """A search in the default order or newest first: the ids of the page's items, in order, and
    how many items match (up to ``COUNT_CAP + 1``). The newest ``COUNT_CAP + 1`` matches are what
    the count counts and the best-match order ranks (their title holds every word, then their text
    does, then a line of their extras); newest first goes on past them.

    Two reads, each newest first and stopped by its LIMIT: the items whose text holds every word
    (``pg_matches``, ``sqlite_matches``), and those with a line of their extras that does
    (trawl.storage.extras_search); merged here."""
    words = query.words()
    wanted = COUNT_CAP + 1
    if query.sort == "new":
        wanted = max(wanted, query.offset + query.limit)
    ranked = query.sort == "relevance"
    filters = conditions(model, query, dialect, search=False)[1:]  # without its status == committed
    if dialect == "postgresql":
        keys = pg_bucket_keys(session, words)
        own = session.execute(pg_matches(model, query, words, keys=keys, with_rank=ranked).limit(wanted))
        line_keys = pg_line_keys(session, words)
        extras = session.scalars(pg_items(model, words, filters, line_keys).limit(wanted))
    else:
        own = session.execute(sqlite_matches(model, query, words, with_rank=ranked).limit(wanted))
        extras = session.scalars(sqlite_items(model, words, [model.status == "committed", *filters]).limit(wanted))
    rows = {row[0]: (row[1] if ranked else 0) for row in own}
    for item_id in extras:
        rows.setdefault(item_id, EXTRAS_RANK)
    newest = sorted(rows, reverse=True)[:wanted]
    if ranked:
        newest.sort(key=lambda item_id: rows[item_id])  # stable: newest first within a rank
    return newest[query.offset:query.offset + query.limit], min(len(newest), COUNT_CAP + 1)


def sqlite_matches(model: Any, query: LibraryQuery, words: list[str], with_rank: bool = True) -> Select[Any]:
    """The items whose text holds every word, newest first, on SQLite: their ids (and with
    ``with_rank``, 0 when their title holds every word, else 1). The FTS5 table is walked
    backwards by rowid, each item looked up, no further than a LIMIT needs."""
    long = [w for w in words if len(w) >= 3]
    short = [w for w in words if len(w) < 3]
    driver = TRIGRAM_TABLE if long else SHORT_TABLE
    index = table(driver, column("rowid"))
    where = conditions(model, query, "sqlite", search=False)
    where.append(text(f"{driver} MATCH :{driver}").bindparams(**{driver: _fts_query(long or short)}))
    if long and short:  # the short words checked item by item, against their table
        where.append(exists(select(literal(1)).select_from(text(SHORT_TABLE)).where(
            text(f"{SHORT_TABLE} MATCH :{SHORT_TABLE} AND {SHORT_TABLE}.rowid = items.id").bindparams(
                **{SHORT_TABLE: _fts_query(short)}))))
    columns = [model.id.label("id")]
    if with_rank:
        columns.append(case((title_holds(model, words, "sqlite"), 0), else_=1).label("rank"))
    return select(*columns).select_from(index).join(model, model.id == index.c.rowid).where(
        and_(*where)).order_by(index.c.rowid.desc())


def _fts_query(words: list[str]) -> str:
    """An FTS5 query: every word as a phrase (a trigram table matches it anywhere; in the windows
    table a two-character word is a token, a one-character word a token's beginning)."""
    return " ".join(f'"{w}"' if len(w) >= 2 else f'"{w}"*' for w in words)
