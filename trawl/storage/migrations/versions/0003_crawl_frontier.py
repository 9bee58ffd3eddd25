"""A crawl's URLs, outside the workflow's history: the frontier it reads page by page.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A catalog adopted from before migrations was made from the models, this table included.
    if "crawl_frontier" in sa.inspect(op.get_bind()).get_table_names():
        return
    op.create_table(
        "crawl_frontier",
        # BIGINT on PostgreSQL; on SQLite only INTEGER PRIMARY KEY is the rowid (it autoincrements).
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("crawl_id", sa.String(255), nullable=False),
        sa.Column("workflow_id", sa.String(512), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("platform", sa.String(32), nullable=False),
        sa.Column("listing", sa.JSON()),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        # One row per item (or listing) per crawl: the same URL added twice, by two sources or by a
        # retried activity, is crawled once.
        sa.UniqueConstraint("crawl_id", "workflow_id", name="uq_crawl_frontier_item"),
    )
    # The crawl reads its frontier in order, after a cursor: WHERE crawl_id = ? AND id > ? ORDER BY id.
    op.create_index("ix_crawl_frontier_crawl_id_id", "crawl_frontier", ["crawl_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_crawl_frontier_crawl_id_id", table_name="crawl_frontier")
    op.drop_table("crawl_frontier")
