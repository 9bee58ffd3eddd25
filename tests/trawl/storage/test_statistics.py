"""PostgreSQL: the workers read the statistics of the catalog's tables autovacuum does not look
after (Catalog.analyze_stale), or plans made while a table was near empty stay (a foreign-key check
that reads all of ``items`` at every commit: bench/bigcrawl.py). On SQLite it is not trawl's to do.
The tests turn autovacuum off for one table, so they hold whatever the server's own setting."""

from __future__ import annotations

from sqlalchemy import text

from tests.polling import wait_until
from trawl.storage import catalog as catalog_module
from trawl.storage.catalog import Catalog


def without_autovacuum(catalog: Catalog, table: str = "url_aliases") -> bool:
    """Turn autovacuum off for ``table``; False on SQLite (nothing to turn off)."""
    if catalog.engine.dialect.name != "postgresql":
        return False
    with catalog.engine.begin() as conn:
        conn.execute(text(f"ALTER TABLE {table} SET (autovacuum_enabled = off)"))
    return True


def analyzed(catalog: Catalog, table: str = "url_aliases") -> bool:
    with catalog.engine.connect() as conn:
        return conn.execute(text("SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = :t"),
                            {"t": table}).scalar_one()


def test_the_tables_that_changed_have_their_statistics_read_again(catalog: Catalog) -> None:
    if not without_autovacuum(catalog):
        assert catalog.analyze_stale() is None  # SQLite plans without statistics
        return
    catalog.remember_urls([f"http://127.0.0.1:9/{i}" for i in range(200)], "web:many")
    # The counts reach pg_stat_user_tables once the writing connection has reported them.
    read = wait_until(catalog.analyze_stale, "url_aliases' statistics read again", timeout=30,
                      holds=lambda tables: "url_aliases" in tables)
    assert "items" not in read  # unchanged
    assert analyzed(catalog)
    assert catalog.analyze_stale() == []  # nothing changed since


def test_one_worker_reads_them_at_a_time(catalog: Catalog) -> None:
    if not without_autovacuum(catalog):
        assert catalog.analyze_stale() is None
        return
    catalog.remember_urls([f"http://127.0.0.1:9/{i}" for i in range(200)], "web:many")
    with catalog.engine.connect() as other, other.begin():  # another worker, reading them now
        other.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": catalog_module.ANALYZE_LOCK})
        assert catalog.analyze_stale() == []
    assert "url_aliases" in wait_until(catalog.analyze_stale, "the statistics read once the other is done",
                                       timeout=30, holds=lambda tables: "url_aliases" in tables)
