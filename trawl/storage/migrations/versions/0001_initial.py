"""The catalog as it is today: items and their assets.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "items",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("canonical_key", sa.String(255), nullable=False, unique=True),
        sa.Column("platform", sa.String(32), nullable=False, index=True),
        sa.Column("canonical_url", sa.Text(), nullable=False),
        sa.Column("source_url", sa.Text(), nullable=False),
        sa.Column("title", sa.Text()),
        sa.Column("uploader", sa.Text()),
        sa.Column("duration", sa.Float()),
        sa.Column("published_at", sa.String(64)),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("workflow_id", sa.String(512)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "assets",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("item_id", sa.Integer(), sa.ForeignKey("items.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False, index=True),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("mime", sa.String(128)),
        sa.Column("blob_path", sa.Text(), nullable=False),
        sa.Column("source_url", sa.Text()),
        sa.UniqueConstraint("item_id", "name"),
    )


def downgrade() -> None:
    op.drop_table("assets")
    op.drop_table("items")
