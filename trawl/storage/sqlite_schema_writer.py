"""Writes :mod:`trawl.storage.sqlite_schema`'s snapshot again from the migrations:
``python -m trawl.storage.sqlite_schema_writer`` (after adding a migration)."""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from pathlib import Path

from trawl.storage.catalog import make_engine, migrate
from trawl.storage.sqlite_schema import HEADER, SNAPSHOT, dump, revision_of, snapshot_revision


def from_migrations() -> str:
    """The snapshot as the migrations build it, on a new database of its own."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "catalog.db"
        engine = make_engine(f"sqlite:///{path}")
        try:
            migrate(engine, snapshot=False)
        finally:
            engine.dispose()
        connection = sqlite3.connect(path)
        try:
            return HEADER.format(revision=revision_of(connection)) + dump(connection)
        finally:
            connection.close()


if __name__ == "__main__":
    SNAPSHOT.write_text(from_migrations(), encoding="utf-8")
    print(f"{SNAPSHOT}: revision {snapshot_revision()}", file=sys.stderr)
