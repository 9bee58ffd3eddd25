"""What the library page asks of the catalog: committed items filtered, searched, sorted and paged.

Every filter and sort is on an indexed column (migration 0004). The text search is the database's
own: SQLite's FTS5 (``items_fts``) or PostgreSQL's ``tsvector`` (``items.search``), over title,
uploader, description and tags; each word of the query matches as a prefix, all of them must.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, func, select, text

from trawl.storage.records import CatalogItem

# The FTS5 table of SQLite catalogs (and the prefix of its shadow tables).
SEARCH_TABLE = "items_fts"
MAX_QUERY_WORDS = 16
MAX_WORD = 64

SORTS = {
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
    sort: str = "new"
    limit: int = 48
    offset: int = 0

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
        """The query's words (runs of letters and digits in any script), as the search splits text."""
        return [w[:MAX_WORD] for w in re.findall(r"[^\W_]+", self.text or "")][:MAX_QUERY_WORDS]


@dataclass
class LibraryPage:
    items: list[CatalogItem]
    total: int  # the items that match, on every page: at most COUNT_CAP + 1
    query: LibraryQuery = field(default_factory=LibraryQuery)

    @property
    def more_than_counted(self) -> bool:
        return self.total > COUNT_CAP


def conditions(model: Any, query: LibraryQuery, dialect: str) -> list[ColumnElement[bool]]:
    """The WHERE of a library query on the ``items`` model."""
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
    if words:
        if dialect == "postgresql":
            # Words are letters and digits only, so nothing in them is tsquery syntax; :* makes each a prefix.
            where.append(text("items.search @@ to_tsquery('simple', :words)").bindparams(
                words=" & ".join(f"{w}:*" for w in words)))
        else:
            matching = select(text("rowid")).select_from(text(SEARCH_TABLE)).where(
                text(f"{SEARCH_TABLE} MATCH :words").bindparams(words=" ".join(f'"{w}"*' for w in words)))
            where.append(model.id.in_(matching))
    return where


def prefix(column: Any) -> Any:
    """The expression migration 0004 indexes a text column by."""
    return func.substr(column, 1, PREFIX)


def statements(model: Any, query: LibraryQuery, dialect: str) -> tuple[Select[Any], Select[Any]]:
    """The page's SELECT (rows of ``model``) and the matching items' count, up to ``COUNT_CAP + 1``."""
    where = and_(*conditions(model, query, dialect))
    order = {
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
