"""Extras (danmaku, subtitles, comments) as assets of their item: an asset's language, and the
extras that could not be had, with their error class and reason.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    if "language" not in {c["name"] for c in inspector.get_columns("assets")}:
        op.add_column("assets", sa.Column("language", sa.String(35), nullable=True))
    if "extras_missing" in inspector.get_table_names():
        return
    op.create_table(
        "extras_missing",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("item_id", sa.Integer(), sa.ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("language", sa.String(35), nullable=True),
        sa.Column("error_class", sa.String(64), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("item_id", "name", name="uq_extras_missing_item_name"),
    )
    op.create_index("ix_extras_missing_item_id", "extras_missing", ["item_id"])


def downgrade() -> None:
    op.drop_index("ix_extras_missing_item_id", table_name="extras_missing")
    op.drop_table("extras_missing")
    with op.batch_alter_table("assets") as batch:
        batch.drop_column("language")
