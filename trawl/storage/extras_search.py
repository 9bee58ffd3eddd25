"""Search over the extras' lines (migration 0009): which items hold every word of a search in one
line of a subtitle track, a danmaku or a comment, and which line that is.

A line's id is ``item id << ITEM_SHIFT | kind slot << SLOT_SHIFT | its number``: the lines of one
item and kind are one range of ids (:func:`id_range`), and ids run in the items' order, so
walking the index downwards by id meets the newest items first and a LIMIT stops it early.

- SQLite: ``extras_trigram`` (words of three characters or more, as a phrase each) and
  ``extras_short`` (shorter words, as 0006's ``items_short``), contentless FTS5 tables whose rowid
  is the line's id.
- PostgreSQL: ``ix_extras_lines_grams``, a GIN index over each line's pieces under its item's
  bucket of 2 ** LINE_BUCKET_BITS items, read bucket by bucket, newest first; a word of three
  characters or more is confirmed by a substring test.

Words are letters and digits only (trawl.storage.library.search_words): nothing in them is FTS5
syntax, and they are bound, never spliced.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import (ARRAY, Integer, Select, Text, bindparam, exists, column, func, literal_column, select, table,
                        text, true)

from trawl.extras_text import SEARCHED_KINDS, ExtraLine
from trawl.storage.records import ExtraHit

LINES_TABLE = "extras_lines"
TRIGRAM = "extras_trigram"
SHORT = "extras_short"
ITEM_SHIFT = 20
SLOT_SHIFT = 17
# The most lines of one kind an item may have indexed (its number must fit under SLOT_SHIFT).
MAX_LINES = 100_000
KIND_SLOTS = {kind: slot for slot, kind in enumerate(SEARCHED_KINDS)}
LINE_BUCKET_BITS = 12  # migration 0009's trawl_line_grams: 4,096 items a bucket

lines = table(LINES_TABLE, column("id"), column("item_id"), column("kind"), column("seconds"), column("text"))


def id_range(item_id: int, kind: str) -> tuple[int, int]:
    """The first and the last id the lines of ``item_id``'s ``kind`` may have."""
    first = (item_id << ITEM_SHIFT) | (KIND_SLOTS[kind] << SLOT_SHIFT)
    return first, first + (1 << SLOT_SHIFT) - 1


def line_rows(item_id: int, kind: str, found: Iterable[ExtraLine]) -> list[dict[str, Any]]:
    """The rows of ``found`` (at most MAX_LINES of them) for the lines table."""
    first, _ = id_range(item_id, kind)
    return [dict(id=first + n, item_id=item_id, kind=kind, seconds=line.seconds, text=line.text)
            for n, line in zip(range(MAX_LINES), found)]


def _fts_phrases(words: list[str]) -> str:
    return " ".join(f'"{w}"' if len(w) >= 2 else f'"{w}"*' for w in words)


def _sqlite_lines(words: list[str], first: int | None = None, last: int | None = None) -> tuple[Any, list[Any]]:
    """The FTS5 table a search of ``words`` walks, and its WHERE: the lines holding every word
    (within ids ``first``..``last``)."""
    long = [w for w in words if len(w) >= 3]
    short = [w for w in words if len(w) < 3]
    driver = TRIGRAM if long else SHORT
    index = table(driver, column("rowid"))
    where = [text(f"{driver} MATCH :extras_{driver}").bindparams(**{f"extras_{driver}": _fts_phrases(long or short)})]
    if long and short:  # the short words checked line by line, against their table
        where.append(exists(select(literal_column("1")).select_from(text(SHORT)).where(
            text(f"{SHORT} MATCH :extras_{SHORT} AND {SHORT}.rowid = {driver}.rowid").bindparams(
                **{f"extras_{SHORT}": _fts_phrases(short)}))))
    if first is not None:
        where.append(index.c.rowid.between(first, last))
    return index, where


def sqlite_line_ids(words: list[str], first: int | None = None, last: int | None = None) -> Select[Any]:
    """The ids of the lines holding every word, newest item first (within ``first``..``last``)."""
    index, where = _sqlite_lines(words, first, last)
    return select(index.c.rowid.label("id")).where(*where).order_by(index.c.rowid.desc())


def sqlite_items(model: Any, words: list[str], filters: list[Any]) -> Select[Any]:
    """The items with a line holding every word, newest first (the query's ``filters`` on ``model``).

    One flat SELECT DISTINCT ordered by the FTS5 rowid: SQLite walks the index downwards, drops
    an item it has given already, and stops at a LIMIT (a DISTINCT subquery would be read whole
    first: every matching line of a common word)."""
    index, where = _sqlite_lines(words)
    return select(model.id).distinct().select_from(index).join(
        model, model.id == index.c.rowid.op(">>")(ITEM_SHIFT)).where(*where, *filters).order_by(index.c.rowid.desc())


def pg_line_keys(session: Any, words: list[str]) -> list[tuple[int, str]]:
    """What ``pg_items`` asks the lines' index for in each bucket, newest first: the bucket and its
    keys (``<bucket>:<piece>``, space-separated), as trawl.storage.library.pg_bucket_keys."""
    params = {f"word{n}": word for n, word in enumerate(words)}
    pieces_sql = " || ".join(f"trawl_word_grams(lower(:{name}))" for name in params)
    _, _, newest, pieces = session.execute(text(
        "SELECT set_config('jit', 'off', true), set_config('max_parallel_workers_per_gather', '0', true), "
        f"(SELECT coalesce(max(id), 0) FROM {LINES_TABLE}) >> {ITEM_SHIFT + LINE_BUCKET_BITS}, "
        f"{pieces_sql}").bindparams(**params)).one()
    unique = sorted(set(pieces or []))
    return [(bucket, " ".join(f"{bucket}:{piece}" for piece in unique)) for bucket in range(newest, -1, -1)]


def _pg_confirm(words: list[str], row: str = "l") -> list[Any]:
    return [text(f"strpos(lower({row}.text), lower(:extras_word{n})) > 0").bindparams(**{f"extras_word{n}": word})
            for n, word in enumerate(words) if len(word) >= 3]


def pg_items(model: Any, words: list[str], filters: list[Any], keys: list[tuple[int, str]]) -> Select[Any]:
    """The items with a line holding every word, newest first, read bucket by bucket (``keys``:
    ``pg_line_keys``) so that a LIMIT stops the reading early."""
    found = lines.alias("l")
    buckets = func.unnest(bindparam("line_buckets", [b for b, _ in keys], type_=ARRAY(Integer)),
                          bindparam("line_keysets", [k for _, k in keys], type_=ARRAY(Text))).table_valued(
        "n", "keys").render_derived(name="lb")
    inner = select(found.c.item_id.label("id")).where(
        text("trawl_line_grams(l.item_id, l.text) @> string_to_array(lb.keys, ' ')"), *_pg_confirm(words)).distinct(
    ).order_by(found.c.item_id.desc()).lateral("m")
    matches = select(inner.c.id).select_from(buckets.join(inner, true()))
    if not filters:  # lines are added to committed items alone (Catalog.add_extras)
        return matches
    # The filters looked up item by item (a scalar subquery: PostgreSQL never turns it into a join):
    # joined, each bucket's lines were merged or hashed with every item the filters let through.
    return matches.where(select(literal_column("1")).select_from(model).where(
        model.id == inner.c.id, *filters).scalar_subquery().is_not(None))


def pg_all_items(words: list[str]) -> Select[Any]:
    """Every item with a line holding every word (in no order): every bucket's keys computed by
    the database (for the sorts that read every match)."""
    found = lines.alias("l")
    newest = select(func.coalesce(func.max(lines.c.id), 0)).scalar_subquery()
    buckets = func.generate_series(newest.op(">>")(ITEM_SHIFT + LINE_BUCKET_BITS), 0, -1).table_valued(
        "n").render_derived(name="lb")
    words_array = "ARRAY[" + ", ".join(f"CAST(:extras_word{n} AS text)" for n in range(len(words))) + "]"
    inner = select(found.c.item_id.label("id")).where(
        text(f"trawl_line_grams(l.item_id, l.text) @> trawl_bucket_keys(CAST(lb.n AS integer), {words_array})"),
        *_pg_confirm(words)).lateral("m")
    return select(inner.c.id).select_from(buckets.join(inner, true())).params(
        **{f"extras_word{n}": word for n, word in enumerate(words)})


def first_hits(session: Any, dialect: str, item_ids: list[int], words: list[str]) -> dict[int, ExtraHit]:
    """For each item, its first line (subtitles, then danmaku, then comments; in their order)
    holding every word, if any."""
    hits: dict[int, ExtraHit] = {}
    if not item_ids or not words:
        return hits
    if dialect == "postgresql":
        holds = " AND ".join(f"strpos(lower(text), lower(:word{n})) > 0" for n in range(len(words)))
        rows = session.execute(text(
            f"SELECT DISTINCT ON (item_id) item_id, kind, seconds, text FROM {LINES_TABLE} "
            f"WHERE item_id = ANY(:items) AND {holds} ORDER BY item_id, id").bindparams(
                bindparam("items", item_ids, type_=ARRAY(Integer)), **{f"word{n}": w for n, w in enumerate(words)}))
        return {row[0]: ExtraHit(row[1], row[2], row[3]) for row in rows}
    # The lines of these items holding every word as SQLite's lower() sees it (ASCII letters alone
    # fold), the first of each item kept; the FTS5 tables (which fold every script's case) answer
    # for an item this finds nothing in.
    holds = [text(f"instr(lower(extras_lines.text), lower(:extras_word{n})) > 0").bindparams(
        **{f"extras_word{n}": word}) for n, word in enumerate(words)]
    for item_id, kind, seconds, line in session.execute(select(lines.c.item_id, lines.c.kind, lines.c.seconds,
                                                               lines.c.text).where(lines.c.item_id.in_(item_ids),
                                                                                   *holds).order_by(lines.c.id)):
        hits.setdefault(item_id, ExtraHit(kind, seconds, line))
    for item_id in [i for i in item_ids if i not in hits]:
        first, last = item_id << ITEM_SHIFT, ((item_id + 1) << ITEM_SHIFT) - 1
        line_ids = sqlite_line_ids(words, first, last).order_by(None).order_by(literal_column("rowid")).limit(1)
        row = session.execute(select(lines.c.kind, lines.c.seconds, lines.c.text).where(
            lines.c.id == line_ids.scalar_subquery())).first()
        if row is not None:
            hits[item_id] = ExtraHit(row[0], row[1], row[2])
    return hits


def extras_condition(model: Any, words: list[str], dialect: str) -> Any:
    """The item has a line holding every word (a WHERE on ``model``)."""
    if dialect == "postgresql":
        return model.id.in_(pg_all_items(words))
    found = sqlite_line_ids(words).order_by(None).subquery("line")
    return model.id.in_(select(found.c.id.op(">>")(ITEM_SHIFT)))

