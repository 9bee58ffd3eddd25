"""Search that finds a word anywhere in the text, in every script: Chinese, Japanese and Korean
titles have no spaces, so the word indexes of 0004 (split at spaces) found a word only at the
beginning of a run (``春天`` found ``春天的两张照片``, ``照片`` did not).

The text searched is one string per item: title, uploader, tags and description, joined by spaces
(a query word never holds a space, so no match spans two of them). Tags are read one by one: the
metadata's JSON text writes a Chinese tag in escapes (``\\u6625``).

- SQLite: two contentless FTS5 tables kept by triggers. ``items_trigram`` (the trigram tokenizer)
  finds a word of three or more characters anywhere; trigrams cannot match a shorter word, so
  ``items_short`` holds every two-character window of the text (its first SHORT_TEXT characters)
  as a token: a two-character word is a token, a one-character word a token's prefix.
- PostgreSQL: a GIN index over the text's distinct one- and two-character pieces
  (``trawl_grams``): a word's pieces narrow the items down through the index, a substring test
  (``strpos``) confirms the rest. Plain SQL, no extension: pg_trgm was the other choice, but it
  extracts no trigram from a one- or two-character word (most Chinese words), so those scan the
  whole index, and it splits on what the database's LC_CTYPE calls letters.

The word indexes of 0004 (``items_fts``, ``items.search``) go: nothing reads them any more.

Revision ID: 0006
Revises: 0005
"""

import importlib.util
from pathlib import Path

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# The text searched on PostgreSQL, and by trigrams on SQLite: the first TEXT_LIMIT characters
# (0004's bound: a longer description is searched by its beginning).
TEXT_LIMIT = 20000
# One- and two-character words are found in the first SHORT_TEXT characters on SQLite (one token
# per character there: the index would be several times the text).
SHORT_TEXT = 4000

SQLITE_TEXT = ("substr(coalesce({row}.title, '') || ' ' || coalesce({row}.uploader, '') || ' ' || "
               "coalesce(CASE WHEN json_valid({row}.metadata) THEN (SELECT group_concat(value, ' ') "
               "FROM json_each({row}.metadata, '$.tags')) END, '') "
               "|| ' ' || coalesce(CASE WHEN json_valid({row}.metadata) "
               "THEN json_extract({row}.metadata, '$.description') END, ''), 1, {limit})")


def _sqlite_values(row: str) -> tuple[str, str]:
    """The trigram table's text and the short table's windows of ``row`` (``new``, ``old``, ``items``)."""
    full = SQLITE_TEXT.format(row=row, limit=TEXT_LIMIT)
    windows = ("(SELECT group_concat(substr(x, n, 2), ' ') FROM (SELECT "
               f"{SQLITE_TEXT.format(row=row, limit=SHORT_TEXT)} AS x), items_search_positions WHERE n <= length(x))")
    return full, windows


def _sqlite_index(row: str) -> str:
    full, windows = _sqlite_values(row)
    return (f"INSERT INTO items_trigram(rowid, body) VALUES ({row}.id, {full}); "
            f"INSERT INTO items_short(rowid, windows) VALUES ({row}.id, {windows}); ")


def _sqlite_unindex(row: str) -> str:
    # A contentless table forgets a row when told the values it was given ('delete').
    full, windows = _sqlite_values(row)
    return (f"INSERT INTO items_trigram(items_trigram, rowid, body) VALUES ('delete', {row}.id, {full}); "
            f"INSERT INTO items_short(items_short, rowid, windows) VALUES ('delete', {row}.id, {windows}); ")


SQLITE = [
    "CREATE TABLE IF NOT EXISTS items_search_positions (n INTEGER PRIMARY KEY)",
    # The positions the short table's windows start at (a trigger may not hold a WITH).
    "WITH RECURSIVE up(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM up WHERE n < "
    f"{SHORT_TEXT}) INSERT OR IGNORE INTO items_search_positions (n) SELECT n FROM up",
    "CREATE VIRTUAL TABLE IF NOT EXISTS items_trigram USING fts5(body, content='', tokenize='trigram')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS items_short USING fts5(windows, content='', detail=none, prefix='1', "
    "tokenize='unicode61 remove_diacritics 0')",
    f"CREATE TRIGGER IF NOT EXISTS items_search_insert AFTER INSERT ON items BEGIN {_sqlite_index('new')}END",
    f"CREATE TRIGGER IF NOT EXISTS items_search_delete AFTER DELETE ON items BEGIN {_sqlite_unindex('old')}END",
    "CREATE TRIGGER IF NOT EXISTS items_search_update AFTER UPDATE OF title, uploader, metadata ON items BEGIN "
    f"{_sqlite_unindex('old')}{_sqlite_index('new')}END",
]
_SQLITE_FILL = _sqlite_values("items")
SQLITE_BACKFILL = [
    f"INSERT INTO items_trigram(rowid, body) SELECT items.id, {_SQLITE_FILL[0]} FROM items",
    f"INSERT INTO items_short(rowid, windows) SELECT items.id, {_SQLITE_FILL[1]} FROM items",
]

# PostgreSQL: the text searched (lower case), and its distinct one- and two-character pieces
# without a space (a word has none). IMMUTABLE, as an index expression must be.
POSTGRESQL = [
    # The tags as jsonb's text: their characters as they are, not as json's escapes. A NUL (json's
    # \\u0000) cannot become text: it is read as U+FFFD (an escape of the same length, so the JSON
    # stays valid), lest an item whose metadata holds one could not be committed.
    "CREATE OR REPLACE FUNCTION trawl_search_text(title text, uploader text, metadata json) RETURNS text "
    "LANGUAGE sql IMMUTABLE PARALLEL SAFE COST 1000 AS $$ SELECT left(lower(coalesce(title, '') || ' ' || "
    "coalesce(uploader, '') || ' ' || coalesce((safe -> 'tags')::jsonb::text, '') || ' ' || "
    f"coalesce(safe ->> 'description', '')), {TEXT_LIMIT}) FROM (SELECT CASE WHEN strpos(metadata::text, "
    "'\\u0000') = 0 THEN metadata ELSE replace(metadata::text, '\\u0000', '\\ufffd')::json END) AS m (safe) $$",
    # Repeated pieces are left in: the index keeps each key of a row once.
    # COST: computing the pieces of a row is what the index is there to spare; priced as what it
    # is, the planner never walks the newest items testing each (seconds on a large catalog).
    "CREATE OR REPLACE FUNCTION trawl_grams(body text) RETURNS text[] "
    "LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE COST 100000 AS $$ SELECT coalesce(array_agg(piece), '{}') "
    "FROM generate_series(1, length(body)) AS i, LATERAL (VALUES (substr(body, i, 1)), (substr(body, i, 2))) "
    "AS pieces (piece) WHERE strpos(piece, ' ') = 0 $$",
    # What a query word asks the index for: its two-character pieces, or itself when shorter.
    "CREATE OR REPLACE FUNCTION trawl_word_grams(word text) RETURNS text[] "
    "LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT CASE WHEN length(word) < 3 THEN ARRAY[word] "
    "ELSE (SELECT array_agg(DISTINCT substr(word, i, 2)) FROM generate_series(1, length(word) - 1) AS i) END $$",
    "CREATE INDEX IF NOT EXISTS ix_items_grams ON items USING gin "
    "(trawl_grams(trawl_search_text(title, uploader, metadata)))",
]


def _previous() -> object:
    """Migration 0004, whose word indexes a downgrade puts back."""
    path = next(Path(__file__).resolve().parent.glob("0004_*.py"))
    spec = importlib.util.spec_from_file_location("trawl_migration_0004", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        # The index is built from the rows there (the backfill), faster with room to sort its keys.
        op.execute("SET LOCAL maintenance_work_mem = '256MB'")
        for statement in POSTGRESQL:
            op.execute(statement)
        op.execute("DROP INDEX IF EXISTS ix_items_search")
        op.execute("ALTER TABLE items DROP COLUMN IF EXISTS search")
        op.execute("ANALYZE items")  # the planner learns the new index's expression
    else:
        created = bind.exec_driver_sql(
            "SELECT count(*) FROM sqlite_master WHERE name = 'items_trigram'").scalar()
        for statement in SQLITE:
            op.execute(statement)
        if not created:
            for statement in SQLITE_BACKFILL:
                op.execute(statement)
        for trigger in ("items_fts_insert", "items_fts_delete", "items_fts_update"):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute("DROP TABLE IF EXISTS items_fts")


def downgrade() -> None:
    bind = op.get_bind()
    previous = _previous()
    if bind.dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_items_grams")
        op.execute(f"ALTER TABLE items ADD COLUMN IF NOT EXISTS search tsvector GENERATED ALWAYS AS "
                   f"({previous.POSTGRESQL_SEARCH}) STORED")  # type: ignore[attr-defined]
        op.execute("CREATE INDEX IF NOT EXISTS ix_items_search ON items USING gin (search)")
        for function in ("trawl_word_grams(text)", "trawl_grams(text)", "trawl_search_text(text, text, json)"):
            op.execute(f"DROP FUNCTION IF EXISTS {function}")
    else:
        for trigger in ("items_search_insert", "items_search_delete", "items_search_update"):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        for table in ("items_trigram", "items_short", "items_search_positions"):
            op.execute(f"DROP TABLE IF EXISTS {table}")
        for statement in previous.SQLITE_FTS:  # type: ignore[attr-defined]
            op.execute(statement)
