"""Alembic environment: run with the connection the caller passes (see trawl.storage.catalog)."""

from alembic import context

from trawl.storage.catalog import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
