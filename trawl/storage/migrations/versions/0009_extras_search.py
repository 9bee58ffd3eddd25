"""Search that reads the extras: each subtitle cue, danmaku and comment as a line of its own.

- ``extras_lines``: one row per line (trawl.extras_text), with its item, kind, time in the video
  (seconds; none for a comment) and text (folded, cut). Its id places it: ``item id << 20``, then
  the kind's slot (``<< 17``), then the line's number, so the lines of one item and kind are one
  range of ids (a refreshed snapshot replaces that range), and an index walked by id downwards
  meets the newest items first, as the items' own search does.
- SQLite: two contentless FTS5 tables kept by triggers, as 0006's for items: ``extras_trigram``
  (words of three characters or more) and ``extras_short`` (every two-character window).
- PostgreSQL: a GIN index over each line's one- and two-character pieces (0006's ``trawl_grams``)
  keyed by the bucket of 4,096 items its item is in (``<item id >> 12>:<piece>``): a search reads
  the newest buckets first and stops when it holds enough items (0008's way, with buckets 16 times
  smaller: an item has many lines).
- ``extras_lines_pending``: the (item, kind) pairs whose stored extras are still to be read into
  lines. This migration fills it from the assets already stored (their text is in the blob store,
  which a migration cannot reach); whoever opens the catalog with the blob store (the worker, the
  API) reads them (``Catalog.index_pending_extras``). Extras added later are indexed as they are
  added (``Catalog.add_extras``).

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

KINDS = ("subtitles", "danmaku", "comments")
SHORT_TEXT = 4000  # 0006's items_search_positions: a line is far shorter


def _windows(row: str) -> str:
    return (f"(SELECT group_concat(substr({row}.text, n, 2), ' ') FROM items_search_positions "
            f"WHERE n <= length({row}.text))")


SQLITE = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS extras_trigram USING fts5(body, content='', tokenize='trigram')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS extras_short USING fts5(windows, content='', detail=none, prefix='1', "
    "tokenize='unicode61 remove_diacritics 0')",
    "CREATE TRIGGER IF NOT EXISTS extras_lines_insert AFTER INSERT ON extras_lines BEGIN "
    "INSERT INTO extras_trigram(rowid, body) VALUES (new.id, new.text); "
    f"INSERT INTO extras_short(rowid, windows) VALUES (new.id, {_windows('new')}); END",
    # A contentless table forgets a row when told the values it was given ('delete').
    "CREATE TRIGGER IF NOT EXISTS extras_lines_delete AFTER DELETE ON extras_lines BEGIN "
    "INSERT INTO extras_trigram(extras_trigram, rowid, body) VALUES ('delete', old.id, old.text); "
    f"INSERT INTO extras_short(extras_short, rowid, windows) VALUES ('delete', old.id, {_windows('old')}); END",
]

POSTGRESQL = [
    "CREATE OR REPLACE FUNCTION trawl_line_grams(item integer, body text) RETURNS text[] "
    "LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE COST 100000 AS $$ SELECT coalesce(array_agg((item >> 12)::text "
    "|| ':' || piece), '{}') FROM unnest(trawl_grams(lower(body))) AS piece $$",
    "CREATE INDEX IF NOT EXISTS ix_extras_lines_grams ON extras_lines USING gin (trawl_line_grams(item_id, text))",
]


def upgrade() -> None:
    bind = op.get_bind()
    tables = set(sa.inspect(bind).get_table_names())
    if "extras_lines" not in tables:
        op.create_table(
            "extras_lines",
            # SQLite: INTEGER, so that the id is the rowid (64 bits there all the same).
            sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True,
                      autoincrement=False),
            sa.Column("item_id", sa.Integer(), sa.ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
            sa.Column("kind", sa.String(16), nullable=False),
            sa.Column("seconds", sa.Float(), nullable=True),
            sa.Column("text", sa.Text(), nullable=False),
        )
        # An item's deletion cascades here.
        op.create_index("ix_extras_lines_item_id", "extras_lines", ["item_id"])
    if "extras_lines_pending" not in tables:
        op.create_table(
            "extras_lines_pending",
            sa.Column("item_id", sa.Integer(), sa.ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
            sa.Column("kind", sa.String(16), primary_key=True),
        )
        kinds = ", ".join(f"'{kind}'" for kind in KINDS)
        op.execute("INSERT INTO extras_lines_pending (item_id, kind) SELECT DISTINCT assets.item_id, assets.kind "
                   f"FROM assets JOIN items ON items.id = assets.item_id WHERE assets.kind IN ({kinds}) "
                   "AND items.status = 'committed'")
    if bind.dialect.name == "postgresql":
        for statement in POSTGRESQL:
            op.execute(statement)
    else:
        for statement in SQLITE:
            op.execute(statement)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_extras_lines_grams")
        op.execute("DROP FUNCTION IF EXISTS trawl_line_grams(integer, text)")
    else:
        for trigger in ("extras_lines_insert", "extras_lines_delete"):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        for table in ("extras_trigram", "extras_short"):
            op.execute(f"DROP TABLE IF EXISTS {table}")
    op.drop_table("extras_lines_pending")
    op.drop_table("extras_lines")
