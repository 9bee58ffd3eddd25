"""Every URL form that led to a committed item, so a known URL is answered without a request.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A catalog adopted from before migrations was made from the models, this table included.
    if "url_aliases" in sa.inspect(op.get_bind()).get_table_names():
        return
    op.create_table(
        "url_aliases",
        sa.Column("url_sha1", sa.String(40), primary_key=True),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("canonical_key", sa.String(255), nullable=False, index=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("url_aliases")
