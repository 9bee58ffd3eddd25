"""A new SQLite catalog made in one script instead of by replaying every migration.

The migrations stay the schema's source (and upgrade every existing catalog); ``sqlite_schema.sql``
beside this module is what they build on an empty SQLite database, written out: the statements of
``sqlite_master`` (tables, indexes, triggers, each by name), then the rows the migrations wrote
(``alembic_version``, the search's positions). Running it takes a few milliseconds where the
migrations take about 0.1 s and Alembic's import: the first command of a data directory, its
worker, and every test with a catalog of its own start that much sooner.

``python -m trawl.storage.sqlite_schema_writer`` writes the file again from the migrations; a test
fails while it differs from what they build, so a new migration comes with its new snapshot.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

SNAPSHOT = Path(__file__).resolve().parent / "sqlite_schema.sql"
# The tables SQLite makes for an FTS5 table itself (CREATE VIRTUAL TABLE x makes x_data...).
FTS5_SHADOWS = ("data", "idx", "content", "docsize", "config")
HEADER = "-- the trawl catalog at revision {revision}: python -m trawl.storage.sqlite_schema_writer writes it from the migrations\n"


def _literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    return "'" + str(value).replace("'", "''") + "'"


def dump(connection: sqlite3.Connection) -> str:
    """The script that makes an empty database into what ``connection`` holds: its schema and the
    rows of its ordinary tables (SQLite's own tables and an FTS5 table's shadows come with their
    statements)."""
    entries = connection.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid").fetchall()
    virtual = {name for _, name, sql in entries if sql.upper().startswith("CREATE VIRTUAL TABLE")}
    shadows = {f"{table}_{suffix}" for table in virtual for suffix in FTS5_SHADOWS}
    # Tables, then indexes, then triggers and views, each by name: a trigger's or an index's table
    # exists before it, and the order is the same however the migrations ran (Alembic makes a
    # table's indexes in no fixed order).
    rank = {"table": 0, "index": 1, "trigger": 2, "view": 3}
    ordered = sorted(entries, key=lambda entry: (rank[entry[0]], entry[1]))
    statements = [f"{sql};" for _, name, sql in ordered
                  if name not in shadows and not name.startswith("sqlite_")]
    for kind, name, _ in ordered:
        if kind != "table" or name in virtual or name in shadows or name.startswith("sqlite_"):
            continue
        rows = connection.execute(f'SELECT * FROM "{name}"').fetchall()
        if rows:
            values = ",".join("(" + ",".join(_literal(v) for v in row) + ")" for row in rows)
            statements.append(f'INSERT INTO "{name}" VALUES {values};')
    return "\n".join(statements) + "\n"


def revision_of(connection: sqlite3.Connection) -> str:
    return connection.execute("SELECT version_num FROM alembic_version").fetchone()[0]


def snapshot_revision() -> str | None:
    """The revision the shipped snapshot is at (None: no snapshot)."""
    try:
        with open(SNAPSHOT, encoding="utf-8") as file:
            first = file.readline()
    except OSError:
        return None
    found = re.match(r"-- the trawl catalog at revision (\S+):", first)
    return found.group(1) if found else None


def create(connection: sqlite3.Connection) -> None:
    """Make the empty database of ``connection`` the catalog the snapshot holds, in one transaction:
    a database that has any table already is left as it was (sqlite3.OperationalError)."""
    script = SNAPSHOT.read_text(encoding="utf-8")
    try:
        connection.executescript(f"BEGIN IMMEDIATE;\n{script}COMMIT;\n")
    except sqlite3.Error:
        if connection.in_transaction:
            connection.rollback()
        raise
