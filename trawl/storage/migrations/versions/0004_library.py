"""The library page's catalog: an item's kind, size and day as columns, an index for every filter and
sort the page offers, and full-text search over title, uploader, description and tags.

Full-text search is the database's own: an FTS5 table kept by triggers on SQLite, a generated
``tsvector`` column with a GIN index on PostgreSQL (the ``simple`` configuration: titles come in
every language, so no stemming).

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

INDEXED = ("kind", "day", "duration", "size", "published_at")
# Titles and uploaders are unbounded text, and PostgreSQL refuses a btree entry over 2704 bytes:
# their indexes hold the first PREFIX characters (trawl.storage.library filters and sorts on the
# same expression). SQLite takes expression indexes too, so both catalogs have the same indexes.
PREFIX = 200
PREFIXED = ("title", "uploader")

# What the page shows first of an item: its video, else its audio, else its image.
KIND = ("(SELECT kind FROM assets WHERE assets.item_id = items.id AND kind IN ('video', 'audio', 'image') "
        "ORDER BY CASE kind WHEN 'video' THEN 0 WHEN 'audio' THEN 1 ELSE 2 END LIMIT 1)")
SIZE = "(SELECT SUM(size) FROM assets WHERE assets.item_id = items.id)"

# SQLite: one FTS5 row per item (rowid = items.id), written by triggers so that every way a row
# changes (a commit, fsck --repair's delete) keeps the index; metadata is JSON text there.
SQLITE_FTS_VALUES = ("{row}.id, {row}.title, {row}.uploader, "
                     "CASE WHEN json_valid({row}.metadata) THEN json_extract({row}.metadata, '$.description') END, "
                     "CASE WHEN json_valid({row}.metadata) THEN json_extract({row}.metadata, '$.tags') END")
SQLITE_FTS = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS items_fts USING fts5(title, uploader, description, tags, "
    "tokenize = 'unicode61 remove_diacritics 2')",
    "CREATE TRIGGER IF NOT EXISTS items_fts_insert AFTER INSERT ON items BEGIN "
    f"INSERT INTO items_fts(rowid, title, uploader, description, tags) VALUES ({SQLITE_FTS_VALUES.format(row='new')}); "
    "END",
    "CREATE TRIGGER IF NOT EXISTS items_fts_delete AFTER DELETE ON items BEGIN "
    "DELETE FROM items_fts WHERE rowid = old.id; END",
    "CREATE TRIGGER IF NOT EXISTS items_fts_update AFTER UPDATE OF title, uploader, metadata ON items BEGIN "
    "DELETE FROM items_fts WHERE rowid = old.id; "
    f"INSERT INTO items_fts(rowid, title, uploader, description, tags) VALUES ({SQLITE_FTS_VALUES.format(row='new')}); "
    "END",
    "INSERT INTO items_fts(rowid, title, uploader, description, tags) "
    f"SELECT {SQLITE_FTS_VALUES.format(row='items')} FROM items",
]

# PostgreSQL: the metadata column is json; ->> and to_tsvector with a named configuration are
# immutable, as a generated column needs.
# A tsvector holds at most 1 MB: the text searched is bounded (a description beyond 20,000
# characters is searched by its beginning).
POSTGRESQL_SEARCH = ("to_tsvector('simple', left(coalesce(title, '') || ' ' || coalesce(uploader, '') || ' ' || "
                     "coalesce(metadata ->> 'description', '') || ' ' || coalesce(metadata ->> 'tags', ''), 20000))")


def upgrade() -> None:
    bind = op.get_bind()
    columns = {c["name"] for c in sa.inspect(bind).get_columns("items")}
    # Plain ADD COLUMN on both: a batch operation would rebuild the table on SQLite, whose foreign
    # keys are on (the assets' rows would go with it, ON DELETE CASCADE).
    for name, kind in (("kind", sa.String(16)), ("size", sa.BigInteger()), ("day", sa.String(10))):
        if name not in columns:
            op.add_column("items", sa.Column(name, kind))
    # The day an item is listed under: its publication date, else the day it was committed.
    committed_day = "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')" if bind.dialect.name == "postgresql" \
        else "substr(created_at, 1, 10)"
    op.execute(f"UPDATE items SET kind = {KIND}, size = {SIZE}, "
               f"day = CASE WHEN published_at IS NOT NULL AND length(published_at) >= 10 "
               f"THEN substr(published_at, 1, 10) ELSE {committed_day} END")
    indexes = {i["name"] for i in sa.inspect(bind).get_indexes("items")}
    for column in INDEXED:
        if f"ix_items_{column}" not in indexes:
            op.create_index(f"ix_items_{column}", "items", [column])
    for column in PREFIXED:
        op.execute(f"CREATE INDEX IF NOT EXISTS ix_items_{column}_prefix ON items (substr({column}, 1, {PREFIX}))")
    if bind.dialect.name == "postgresql":
        op.execute(f"ALTER TABLE items ADD COLUMN IF NOT EXISTS search tsvector GENERATED ALWAYS AS "
                   f"({POSTGRESQL_SEARCH}) STORED")
        op.execute("CREATE INDEX IF NOT EXISTS ix_items_search ON items USING gin (search)")
    else:
        for statement in SQLITE_FTS:
            op.execute(statement)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_items_search")
        op.execute("ALTER TABLE items DROP COLUMN IF EXISTS search")
    else:
        for trigger in ("items_fts_insert", "items_fts_delete", "items_fts_update"):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute("DROP TABLE IF EXISTS items_fts")
    for column in PREFIXED:
        op.execute(f"DROP INDEX IF EXISTS ix_items_{column}_prefix")
    for column in INDEXED:
        op.drop_index(f"ix_items_{column}", table_name="items")
    # ALTER TABLE ... DROP COLUMN (SQLite 3.35 and later): no rebuild, so no cascade.
    for column in ("day", "size", "kind"):
        op.execute(f"ALTER TABLE items DROP COLUMN {column}")
