"""Blob intents: a commit attempt names the blobs it is about to store before it stores them, so
that a blob no item row names yet is told apart from one an attempt left behind (an orphan).

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A catalog adopted from before migrations was made from the models, this table included.
    if "blob_intents" in sa.inspect(op.get_bind()).get_table_names():
        return
    op.create_table(
        "blob_intents",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("workflow_id", sa.String(512), nullable=False),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    # The reclaim asks by key (is this blob announced?) and by age (which announcements are stale?).
    op.create_index("ix_blob_intents_key", "blob_intents", ["key"])
    op.create_index("ix_blob_intents_created_at", "blob_intents", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_blob_intents_created_at", table_name="blob_intents")
    op.drop_index("ix_blob_intents_key", table_name="blob_intents")
    op.drop_table("blob_intents")
