"""The catalog's ``shared_state`` table as :class:`trawl.shared_state.SharedState`: what every
worker process over one catalog shares (a visitor session, a proxy's rest)."""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite

from trawl.storage.catalog import Catalog, SharedValue


class CatalogState:
    """Shared values in the catalog (migration 0011). Failures are ``storage_error`` (retried)."""

    def __init__(self, catalog: Catalog, clock: Callable[[], float] = time.time) -> None:
        self.catalog = catalog
        self._clock = clock
        self._insert = postgresql.insert if catalog.engine.dialect.name == "postgresql" else sqlite.insert

    def get(self, key: str) -> str | None:
        with self.catalog.reading() as session:
            return session.scalar(select(SharedValue.value).where(SharedValue.key == key,
                                                                  SharedValue.expires_at > self._clock()))

    def items(self, prefix: str) -> dict[str, str]:
        # The keys are trawl's own (no LIKE wildcards in them); the prefix is compared as text.
        with self.catalog.reading() as session:
            rows = session.execute(select(SharedValue.key, SharedValue.value).where(
                SharedValue.key >= prefix, SharedValue.key < prefix + "\U0010ffff",
                SharedValue.expires_at > self._clock()))
            return {key: value for key, value in rows if key.startswith(prefix)}

    def put(self, key: str, value: str, ttl: float) -> None:
        row = {"key": key, "value": value, "expires_at": self._clock() + ttl}
        statement = self._insert(SharedValue).values(row)
        statement = statement.on_conflict_do_update(index_elements=[SharedValue.key],
                                                    set_={"value": value, "expires_at": row["expires_at"]})
        with self.catalog.writing() as session:
            session.execute(statement)

    def put_new(self, key: str, value: str, ttl: float) -> bool:
        now = self._clock()
        statement = self._insert(SharedValue).values(key=key, value=value, expires_at=now + ttl)
        with self.catalog.writing() as session:
            # An expired value is gone for everyone; whoever inserts first after it holds the key.
            session.execute(delete(SharedValue).where(SharedValue.key == key, SharedValue.expires_at <= now))
            inserted = statement.on_conflict_do_nothing(index_elements=[SharedValue.key]).returning(SharedValue.key)
            return session.scalar(inserted) is not None

    def delete(self, key: str) -> None:
        with self.catalog.writing() as session:
            session.execute(delete(SharedValue).where(SharedValue.key == key))


__all__ = ["CatalogState"]
