"""Shared state: values every worker process reads and writes through the catalog (a platform's
visitor session, a proxy's rest), so N workers ask a platform for one session, not N
(trawl.shared_state).

Revision ID: 0011
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if "shared_state" in sa.inspect(op.get_bind()).get_table_names():
        return
    op.create_table(
        "shared_state",
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("shared_state")
