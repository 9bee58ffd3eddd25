"""What an archive is browsed by, and search that stops early on PostgreSQL.

- ``items_search`` (PostgreSQL): each item's search text (0006's ``trawl_search_text``) in a
  narrow table of its own, kept by a trigger, with the GIN index of its pieces (0006's
  ``ix_items_grams`` moves here) and ``title_end``, where the title ends in it. A search confirms
  its words and ranks its matches on this table alone: before, each candidate's text was computed
  again from the item's row (its metadata parsed), 20-50 µs a row, and each match read from the
  wide ``items`` table.
- ``crawl_items``: which crawl committed which item (a watch's runs are crawls: what each brought).
  The frontier that says so is dropped some time after its crawl; this stays.
- ``listings`` and ``listing_entries``: a listing (a collection, a series, a favourites folder, an
  uploader's videos, an album, a feed) and its entries in its order, each with the title the
  listing gave and, for an entry the listing marks as dead, the listing's words for it.
- ``items.gone_at``, ``gone_reason``, ``checked_at``: a re-check's finding that the platform no
  longer has the item (its own reason), and when it last asked. The archived copy stays.
- ``viewer_state``: per viewer (a browser), where they stopped in an item and whether they watched it.

Revision ID: 0008
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

# The search text of committed items (the library shows those alone: a search needs no other
# row). A search query runs with JIT off (trawl.storage.catalog): its plans are priced high (the
# pieces' function is, so that the index is used), and compiling them took 0.1-0.7 s a query.
POSTGRESQL_SEARCH = [
    "CREATE TABLE IF NOT EXISTS items_search (id integer PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE, "
    "title_end integer NOT NULL, body text NOT NULL)",
    "INSERT INTO items_search (id, title_end, body) SELECT id, length(lower(coalesce(title, ''))), "
    "trawl_search_text(title, uploader, metadata) FROM items WHERE status = 'committed' ON CONFLICT (id) DO NOTHING",
    "CREATE OR REPLACE FUNCTION trawl_items_search() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "IF NEW.status = 'committed' THEN "
    "INSERT INTO items_search (id, title_end, body) VALUES (NEW.id, length(lower(coalesce(NEW.title, ''))), "
    "trawl_search_text(NEW.title, NEW.uploader, NEW.metadata)) ON CONFLICT (id) DO UPDATE "
    "SET title_end = EXCLUDED.title_end, body = EXCLUDED.body; "
    "ELSE DELETE FROM items_search WHERE id = NEW.id; END IF; RETURN NULL; END $$",
    "DROP TRIGGER IF EXISTS items_search_sync ON items",
    "CREATE TRIGGER items_search_sync AFTER INSERT OR UPDATE OF title, uploader, metadata, status ON items "
    "FOR EACH ROW EXECUTE FUNCTION trawl_items_search()",
    # The pieces, each under the bucket of 65,536 ids its item is in (``<id >> 16>:<piece>``): a
    # search reads the newest buckets first and stops when it holds the newest matches it needs,
    # decoding no posting list but those buckets' (a GIN index has no order of its own).
    "CREATE OR REPLACE FUNCTION trawl_bucket_grams(id integer, body text) RETURNS text[] "
    "LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE COST 100000 AS $$ SELECT coalesce(array_agg((id >> 16)::text "
    "|| ':' || piece), '{}') FROM unnest(trawl_grams(body)) AS piece $$",
    # What a search asks a bucket for: every piece of every word (trawl_word_grams), in that bucket.
    "CREATE OR REPLACE FUNCTION trawl_bucket_keys(bucket integer, words text[]) RETURNS text[] "
    "LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT coalesce(array_agg(DISTINCT bucket::text || ':' "
    "|| piece), '{}') FROM unnest(words) AS word, unnest(trawl_word_grams(lower(word))) AS piece $$",
    "CREATE INDEX IF NOT EXISTS ix_items_search_grams ON items_search USING gin (trawl_bucket_grams(id, body))",
    "DROP INDEX IF EXISTS ix_items_grams",
    "ANALYZE items_search",
]


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute("SET LOCAL maintenance_work_mem = '256MB'")  # the index is built from every row
        for statement in POSTGRESQL_SEARCH:
            op.execute(statement)
    tables = set(sa.inspect(bind).get_table_names())
    columns = {c["name"] for c in sa.inspect(bind).get_columns("items")}
    for name, kind in (("gone_at", sa.DateTime(timezone=True)), ("gone_reason", sa.Text()),
                       ("checked_at", sa.DateTime(timezone=True))):
        if name not in columns:  # nullable: no row is rewritten, on either database
            op.add_column("items", sa.Column(name, kind, nullable=True))
    op.create_index("ix_items_gone_at", "items", ["gone_at"], if_not_exists=True)
    # The live recordings (the library's filter): their metadata holds the recording's record.
    live = {"sqlite": "json_type(metadata, '$.live') = 'object'",
            "postgresql": "json_typeof(trawl_safe_json(metadata) -> 'live') = 'object'"}[bind.dialect.name]
    if bind.dialect.name == "postgresql":
        # json's operators refuse a \u0000 escape anywhere in the value (0006's search text reads it as
        # U+FFFD, an escape of the same length): so does this.
        op.execute("CREATE OR REPLACE FUNCTION trawl_safe_json(metadata json) RETURNS json LANGUAGE sql IMMUTABLE "
                   "STRICT PARALLEL SAFE AS $$ SELECT CASE WHEN strpos(metadata::text, '\\u0000') = 0 THEN metadata "
                   "ELSE replace(metadata::text, '\\u0000', '\\ufffd')::json END $$")
    op.execute(f"CREATE INDEX IF NOT EXISTS ix_items_live ON items (id) WHERE {live}")
    if "crawl_items" not in tables:
        op.create_table(
            "crawl_items",
            sa.Column("crawl_id", sa.String(255), primary_key=True),
            sa.Column("item_id", sa.Integer(), sa.ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
            sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        )
        op.create_index("ix_crawl_items_item_id", "crawl_items", ["item_id"])
    # A commit finds the crawls whose frontier holds its item by the item's workflow id.
    op.create_index("ix_crawl_frontier_workflow_id", "crawl_frontier", ["workflow_id"], if_not_exists=True)
    if "viewer_state" not in tables:
        # Watched state, per viewer (a browser's cookie): where they stopped, whether they watched it.
        op.create_table(
            "viewer_state",
            sa.Column("viewer", sa.String(64), primary_key=True),
            sa.Column("item_id", sa.Integer(), sa.ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
            sa.Column("position", sa.Float()),
            sa.Column("watched_at", sa.DateTime(timezone=True)),
            sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        )
    if "listings" not in tables:
        op.create_table(
            "listings",
            sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
            sa.Column("key", sa.String(255), nullable=False, unique=True),  # <source kind>:<its id>
            sa.Column("kind", sa.String(64), nullable=False),
            sa.Column("ident", sa.Text(), nullable=False),
            sa.Column("title", sa.Text()),
            sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        )
    if "listing_entries" not in tables:
        op.create_table(
            "listing_entries",
            sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True,
                      autoincrement=True),
            sa.Column("listing_id", sa.Integer(), sa.ForeignKey("listings.id", ondelete="CASCADE"), nullable=False),
            sa.Column("url", sa.Text(), nullable=False),
            sa.Column("url_sha1", sa.String(40), nullable=False),  # of the URL's canonical form (url_aliases')
            sa.Column("rank", sa.Float(), nullable=False),  # the listing's order: lowest first
            sa.Column("title", sa.Text()),
            sa.Column("gone", sa.Text()),  # the listing says it is dead, in these words
            sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
            sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
            sa.UniqueConstraint("listing_id", "url_sha1", name="uq_listing_entries_url"),
        )
        op.create_index("ix_listing_entries_listing_rank", "listing_entries", ["listing_id", "rank"])
        op.create_index("ix_listing_entries_url_sha1", "listing_entries", ["url_sha1"])


def downgrade() -> None:
    bind = op.get_bind()
    op.drop_table("viewer_state")
    op.drop_table("listing_entries")
    op.drop_table("listings")
    op.drop_index("ix_crawl_frontier_workflow_id", table_name="crawl_frontier")
    op.drop_table("crawl_items")
    op.drop_index("ix_items_gone_at", table_name="items")
    op.drop_index("ix_items_live", table_name="items")
    for name in ("gone_at", "gone_reason", "checked_at"):
        # SQLite 3.35+ drops a column in place (a batch copy of the table would lose its triggers).
        op.execute(f"ALTER TABLE items DROP COLUMN {name}")
    if bind.dialect.name == "postgresql":
        op.execute("SET LOCAL maintenance_work_mem = '256MB'")
        op.execute("CREATE INDEX IF NOT EXISTS ix_items_grams ON items USING gin "
                   "(trawl_grams(trawl_search_text(title, uploader, metadata)))")
        op.execute("DROP TRIGGER IF EXISTS items_search_sync ON items")
        op.execute("DROP FUNCTION IF EXISTS trawl_items_search()")
        op.execute("DROP TABLE IF EXISTS items_search")
        for function in ("trawl_bucket_keys(integer, text[])", "trawl_bucket_grams(integer, text)",
                         "trawl_safe_json(json)"):
            op.execute(f"DROP FUNCTION IF EXISTS {function}")
