"""The catalog: which items are committed and which blobs make them (SQLAlchemy 2)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert as sqlalchemy_insert
from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    delete,
    event,
    func,
    select,
    text,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import (DeclarativeBase, Mapped, Session, aliased, mapped_column, relationship, selectinload,
                            sessionmaker)

from trawl.errors import StorageError, TrawlError
from trawl.extras_text import SEARCHED_KINDS, ExtraLine, extra_lines
from trawl.logs import get_logger
from trawl.storage import extras_search
from trawl.storage.library import LibraryPage, LibraryQuery, is_search, search
from trawl.storage.library import statements as library_statements
from trawl.storage.records import CatalogItem, CommittedAsset, ExtraHit, Listing, ListingEntry, MissingExtra
from trawl.urls import canonicalize, url_sha1


_log = get_logger(__name__)


class Base(DeclarativeBase):
    pass


def _now() -> datetime:
    return datetime.now(UTC)


class Item(Base):
    __tablename__ = "items"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    canonical_key: Mapped[str] = mapped_column(String(255), unique=True, nullable=False)
    platform: Mapped[str] = mapped_column(String(32), index=True)
    canonical_url: Mapped[str] = mapped_column(Text)
    source_url: Mapped[str] = mapped_column(Text)
    title: Mapped[str | None] = mapped_column(Text)
    uploader: Mapped[str | None] = mapped_column(Text)
    duration: Mapped[float | None] = mapped_column(Float, index=True)
    published_at: Mapped[str | None] = mapped_column(String(64), index=True)
    metadata_json: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    status: Mapped[str] = mapped_column(String(16), default="committed")
    workflow_id: Mapped[str | None] = mapped_column(String(512))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    # For the library page's filters and sorts (migration 0004 adds them and indexes every column
    # the page filters or sorts on, titles and uploaders by their first 200 characters): the main
    # file's kind, the files' total size, and the day it is listed under (published, else committed).
    kind: Mapped[str | None] = mapped_column(String(16), index=True)
    size: Mapped[int | None] = mapped_column(BigInteger, index=True)
    day: Mapped[str | None] = mapped_column(String(10), index=True)
    # A re-check found the platform no longer has it, for this reason (migration 0008); the
    # archived copy stays. checked_at: when a re-check last asked.
    gone_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), index=True)
    gone_reason: Mapped[str | None] = mapped_column(Text)
    checked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    assets: Mapped[list[AssetRow]] = relationship(back_populates="item", order_by="AssetRow.name")


class AssetRow(Base):
    __tablename__ = "assets"
    __table_args__ = (UniqueConstraint("item_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    size: Mapped[int] = mapped_column(BigInteger)
    mime: Mapped[str | None] = mapped_column(String(128))
    # The blob's key in the store (sha256/ab/cd/<sha256>); the column kept its first name.
    key: Mapped[str] = mapped_column("blob_path", Text)
    source_url: Mapped[str | None] = mapped_column(Text)
    # An extra's language (migration 0007): a subtitle track's ``zh-CN``; None for media.
    language: Mapped[str | None] = mapped_column(String(35), nullable=True)

    item: Mapped[Item] = relationship(back_populates="assets")


class MissingExtraRow(Base):
    """An extra's file that could not be had (migration 0007), with its error class and reason;
    removed when the file is stored after all."""

    __tablename__ = "extras_missing"
    __table_args__ = (UniqueConstraint("item_id", "name", name="uq_extras_missing_item_name"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))
    language: Mapped[str | None] = mapped_column(String(35), nullable=True)
    error_class: Mapped[str] = mapped_column(String(64))
    reason: Mapped[str] = mapped_column(Text)
    recorded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


class ExtraLineRow(Base):
    """A line of an item's extras as search reads it (migration 0009; trawl.storage.extras_search
    says how its id places it)."""

    __tablename__ = "extras_lines"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer(), "sqlite"), primary_key=True,
                                    autoincrement=False)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    seconds: Mapped[float | None] = mapped_column(Float, nullable=True)
    text: Mapped[str] = mapped_column(Text)


class PendingExtraLines(Base):
    """An item's extras of a kind stored before migration 0009, whose lines are still to be read
    from the blob store (``Catalog.index_pending_extras``)."""

    __tablename__ = "extras_lines_pending"

    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)


class UrlAlias(Base):
    """A URL form (canonicalised) that led to a committed item: a page, a direct file, a short link."""

    __tablename__ = "url_aliases"

    url_sha1: Mapped[str] = mapped_column(String(40), primary_key=True)  # of the canonical URL
    url: Mapped[str] = mapped_column(Text)
    canonical_key: Mapped[str] = mapped_column(String(255), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


class FrontierRow(Base):
    """One URL of a crawl, in the order it was added (migration 0003)."""

    __tablename__ = "crawl_frontier"
    __table_args__ = (UniqueConstraint("crawl_id", "workflow_id", name="uq_crawl_frontier_item"),
                      Index("ix_crawl_frontier_crawl_id_id", "crawl_id", "id"),
                      Index("ix_crawl_frontier_workflow_id", "workflow_id"))

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True)
    crawl_id: Mapped[str] = mapped_column(String(255))
    workflow_id: Mapped[str] = mapped_column(String(512))
    url: Mapped[str] = mapped_column(Text)
    platform: Mapped[str] = mapped_column(String(32))
    listing: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


class CrawlItemRow(Base):
    """A crawl committed this item (migration 0008): what a watch's run brought."""

    __tablename__ = "crawl_items"

    crawl_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"), primary_key=True, index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


class ListingRow(Base):
    """A listing trawl expanded (migration 0008), by its source kind and id."""

    __tablename__ = "listings"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(255), unique=True)
    kind: Mapped[str] = mapped_column(String(64))
    ident: Mapped[str] = mapped_column(Text)
    title: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


class ListingEntryRow(Base):
    """An entry of a listing: ``rank`` orders them (lowest first), ``url_sha1`` is its URL's
    canonical form's (``url_aliases``' key: an entry finds its item through the forms that led to it)."""

    __tablename__ = "listing_entries"
    __table_args__ = (UniqueConstraint("listing_id", "url_sha1", name="uq_listing_entries_url"),
                      Index("ix_listing_entries_listing_rank", "listing_id", "rank"))

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True)
    listing_id: Mapped[int] = mapped_column(ForeignKey("listings.id", ondelete="CASCADE"))
    url: Mapped[str] = mapped_column(Text)
    url_sha1: Mapped[str] = mapped_column(String(40), index=True)
    rank: Mapped[float] = mapped_column(Float)
    title: Mapped[str | None] = mapped_column(Text)
    gone: Mapped[str | None] = mapped_column(Text)
    first_seen: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    last_seen: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


class ViewerState(Base):
    """Where a viewer (a browser) stopped in an item, and whether they watched it (migration 0008)."""

    __tablename__ = "viewer_state"

    viewer: Mapped[str] = mapped_column(String(64), primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[float | None] = mapped_column(Float)
    watched_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


class SharedValue(Base):
    """A value the worker processes share (migration 0011; trawl.shared_state): a platform's visitor
    session, a proxy's rest. ``expires_at`` in wall-clock seconds; an expired row reads as absent."""

    __tablename__ = "shared_state"

    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[float] = mapped_column(Float)


class BlobIntent(Base):
    """A commit attempt about to store a blob (migration 0005): written before the put, removed
    once the item's row names the blob. A blob that no row names and no recent intent announces
    was left behind by an attempt that died between its put and its row (an orphan)."""

    __tablename__ = "blob_intents"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(255), index=True)
    workflow_id: Mapped[str] = mapped_column(String(512))
    run_id: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True, default=_now)


@dataclasses.dataclass(frozen=True)
class FrontierEntry:
    """A frontier row as the crawl reads it: ``seq`` orders it (the cursor), the rest routes it."""

    seq: int
    url: str
    platform: str
    workflow_id: str
    listing: dict[str, Any] | None = None


# Rows per INSERT: well under SQLite's 32,766 bound parameters (6 a row) and PostgreSQL's 65,535.
FRONTIER_INSERT_ROWS = 1000
# Entries a clean-up removes per transaction (Catalog.frontier_drop).
FRONTIER_DROP_ROWS = 10_000
# PostgreSQL: entries this process adds to frontiers before it has the table's statistics read
# again (ANALYZE). Planned from statistics of a table that had none of a new crawl's rows (no
# autovacuum yet, or none at all), the read of a crawl's next page took every entry after the
# cursor and sorted them: 55 ms a page at 100,000 entries, against 0.2 ms through the index.
FRONTIER_ANALYZE_ROWS = 10_000
# Catalog.analyze_stale: the one of several workers that reads the statistics in a round (an
# advisory lock's key: "trawl" in ASCII).
ANALYZE_LOCK = 0x747261776C


MAIN_KINDS = ("video", "audio", "image")


def _by_column(mapped: Any, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` by a mapped class's attribute names, keyed by its table's column keys (which
    may differ: ``metadata_json`` is the column ``metadata``), for a Core statement on the table."""
    attributes = mapped.__mapper__.column_attrs
    return {attributes[name].columns[0].key: value for name, value in values.items()}


def main_kind(assets: Iterable[CommittedAsset]) -> str | None:
    """What an item is, for the library: its video, else its audio, else its image (migration 0004
    fills older rows the same way)."""
    kinds = {a.kind for a in assets}
    return next((k for k in MAIN_KINDS if k in kinds), None)


def alias_form(url: str) -> str | None:
    """The form a URL is remembered under (its canonical URL), or None for a URL that has none."""
    try:
        return canonicalize(url)
    except TrawlError:
        return None


# Every wait on the database is bounded, so a catalog that stops answering fails its callers
# (a retried storage_error, a 503) instead of holding them, and the threads they wait in, for
# good. A PostgreSQL URL may set its own: ?connect_timeout=5&options=-c%20statement_timeout%3D10s
CONNECT_TIMEOUT_S = 10
STATEMENT_TIMEOUT_S = 30
# Only lock waits block on SQLite (a local file), and a committing worker holds the lock briefly.
SQLITE_BUSY_TIMEOUT_S = 60
# Without these, a server that vanishes mid-statement (no FIN, no RST) is waited on for ever:
# a dead peer is noticed after idle + interval x count seconds.
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3}
# A server that is there but does not answer (a frozen process: its kernel still acknowledges
# every packet, so neither keepalives nor statement_timeout, which it would enforce itself, end
# the wait) is given up on after this long by the client, and the connection dropped.
ANSWER_LIMIT_S = STATEMENT_TIMEOUT_S + 5
# The pool's check of an idle connection before a call (SELECT 1) waits at most this long: a
# server that answers at all answers it at once, and the new connection the pool then tries may
# take CONNECT_TIMEOUT_S more, so a call that meets a frozen server ends within ANSWER_LIMIT_S
# (10 + 10 s), as one frozen mid-statement does (measured: 20.0 s and 35.0 s).
PING_LIMIT_S = 10.0


def postgresql_connect_args(url: str) -> dict[str, Any]:
    """The bounds above as libpq parameters, for those the URL does not set itself."""
    query = make_url(url).query
    args: dict[str, Any] = {k: v for k, v in {"connect_timeout": CONNECT_TIMEOUT_S, **KEEPALIVES}.items()
                            if k not in query}
    options = query.get("options", "")
    options = " ".join(options) if isinstance(options, tuple) else options
    if "statement_timeout" not in options:
        args["options"] = f"{options} -c statement_timeout={STATEMENT_TIMEOUT_S}s".strip()
    return args


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        database = make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            # WAL persists in the file; switching to it needs a moment with no other writer,
            # and that wait is not covered by the busy timeout.
            for _ in range(200):
                try:
                    if cur.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
                        break
                    cur.execute("PRAGMA journal_mode=WAL")
                except sqlite3.OperationalError:
                    time.sleep(0.05)
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    engine = create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=5,
                           connect_args=postgresql_connect_args(url) if _libpq(url) else {})
    bounded = _answer_bounded_connection() if make_url(url).get_dialect().driver == "psycopg" else None
    if bounded is not None:

        @event.listens_for(engine, "do_connect")
        def _bounded(dialect: Any, record: Any, cargs: Any, cparams: Any) -> Any:
            return bounded.connect(*cargs, **cparams)

        _bound_pings(engine)
    return engine


def _bound_pings(engine: Engine) -> None:
    """The pool's pre-ping waits :data:`PING_LIMIT_S` for its answer, not the statements' limit."""
    ping = engine.dialect.do_ping

    def do_ping(dbapi_connection: Any) -> bool:
        limit = getattr(dbapi_connection, "answer_limit", None)
        if limit is None:  # unbounded (a migration's) or not ours
            return ping(dbapi_connection)
        dbapi_connection.answer_limit = min(limit, PING_LIMIT_S)
        try:
            return ping(dbapi_connection)
        finally:
            del dbapi_connection.answer_limit  # the class's limit again

    engine.dialect.do_ping = do_ping  # type: ignore[method-assign]


# The answer bound rests on two private psycopg internals, pinned exactly in pyproject.toml and
# checked by tests/trawl/test_pinned_internals.py: Connection.wait(gen, interval, timeout), through
# which every wait for the server passes, and errors._WaitTimeout, what it raises when the timeout
# ends. False turns the bound off (engines made afterwards use psycopg's own connection): a frozen
# server is then waited on until the kernel gives up on the connection, as without it.
BOUND_ANSWERS = True
_WAIT_PARAMETERS = ["self", "gen", "interval", "timeout"]


def _psycopg_wait_timeout() -> type[Exception] | None:
    """psycopg's exception for a wait whose timeout ended, if its internals are the shape the answer
    bound was written against; None (the bound is not used: it fails closed) otherwise."""
    import inspect

    import psycopg

    timeout = getattr(psycopg.errors, "_WaitTimeout", None)
    if not (isinstance(timeout, type) and issubclass(timeout, psycopg.OperationalError)):
        return None
    try:
        parameters = list(inspect.signature(psycopg.Connection.wait).parameters)
    except (TypeError, ValueError):
        return None
    return timeout if parameters == _WAIT_PARAMETERS else None


def _answer_bounded_connection() -> type | None:
    """psycopg's connection, but every wait for the server's answer (a statement, a commit, the
    pool's ping) ends after ``answer_limit`` (:data:`ANSWER_LIMIT_S`; None: no bound, for a
    migration), dropping the connection: the caller gets an OperationalError (a storage_error)
    and the pool a new connection next time. None when :data:`BOUND_ANSWERS` is off or psycopg's
    internals changed shape (a warning says which)."""
    if not BOUND_ANSWERS:
        return None
    return _bounded_connection_class()


@functools.cache
def _bounded_connection_class() -> type | None:
    import psycopg

    wait_timeout = _psycopg_wait_timeout()
    if wait_timeout is None:
        _log.warning("catalog_answer_bound_off", psycopg=psycopg.__version__,
                     why="psycopg's Connection.wait or errors._WaitTimeout changed shape; a frozen catalog server "
                         "is waited on until TCP gives up (see tests/trawl/test_pinned_internals.py)")
        return None

    class AnswerBoundedConnection(psycopg.Connection):  # type: ignore[type-arg]
        answer_limit: float | None = ANSWER_LIMIT_S

        def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
            limit = self.answer_limit if timeout is None else timeout
            try:
                return super().wait(gen, interval, limit)
            except wait_timeout:
                self.pgconn.finish()
                raise psycopg.OperationalError(
                    f"the catalog did not answer within {limit} s; connection dropped") from None

    return AnswerBoundedConnection


def _libpq(url: str) -> bool:
    """Whether the URL's driver takes libpq's connection parameters."""
    parsed = make_url(url)
    return parsed.get_backend_name() == "postgresql" and parsed.get_dialect().driver in ("psycopg", "psycopg2")


class Catalog:
    """Idempotent writes and simple reads over the catalog tables."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self._session = sessionmaker(self.engine, expire_on_commit=False)
        self._frontier_unanalyzed = 0  # entries added since this process last analyzed the frontier

    def create_schema(self) -> None:
        """Bring the schema to the newest migration; safe when several processes start at once."""
        for attempt in range(5):
            try:
                migrate(self.engine)
                return
            except (SQLAlchemyError, sqlite3.Error) as exc:
                # Another process created a table between the existence check and the CREATE.
                if attempt < 4 and any(hint in str(exc) for hint in ("already exists", "duplicate key", "locked")):
                    time.sleep(0.1 * (attempt + 1))
                    continue
                raise StorageError(f"catalog {self.engine.url.render_as_string()}: {exc}") from None

    def close(self) -> None:
        self.engine.dispose()

    @contextlib.contextmanager
    def reading(self) -> Iterator[Session]:
        """A session to read in; a database failure is a ``storage_error`` (retried)."""
        with _storage_errors("catalog read failed"), self._session() as session:
            yield session

    @contextlib.contextmanager
    def writing(self) -> Iterator[Session]:
        """A session whose writes commit together when the block ends; a database failure is a
        ``storage_error`` (retried)."""
        with _storage_errors("catalog write failed"), self._session.begin() as session:
            yield session

    def is_committed(self, canonical_key: str) -> bool:
        with _storage_errors("catalog unavailable"), self._session() as session:
            return session.scalar(
                select(Item.id).where(Item.canonical_key == canonical_key, Item.status == "committed")
            ) is not None

    def commit_item(
        self,
        *,
        canonical_key: str,
        platform: str,
        canonical_url: str,
        source_url: str,
        title: str | None,
        uploader: str | None,
        duration: float | None,
        published_at: str | None,
        metadata: dict[str, Any],
        workflow_id: str | None,
        assets: list[CommittedAsset],
        release: Sequence[int] = (),
    ) -> bool:
        """Insert the item and its assets in one transaction. The blob intents ``release`` names
        (:meth:`intend_blobs`) end in it too, those of blobs the item's row names: all of them for
        a new item; for one committed already (another URL form's commit won), those its assets
        name, the others left to age into the clean-up's reclaim (other bytes stored in vain).

        Returns:
            True when this call created the row, False when the item was already committed
            (then nothing changes: committing twice is a no-op).
        """
        dialect = self.engine.dialect.name
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        now = _now()
        values = dict(
            canonical_key=canonical_key, platform=platform, canonical_url=canonical_url,
            source_url=source_url, title=title, uploader=uploader, duration=duration,
            published_at=published_at, metadata_json=metadata, status="committed",
            workflow_id=workflow_id, created_at=now, updated_at=now, kind=main_kind(assets),
            size=sum(a.size for a in assets), day=(published_at or "")[:10] if len(published_at or "") >= 10
            else now.date().isoformat(),
        )
        with _storage_errors("catalog write failed"), self._session.begin() as session:
            # On the tables, not the mapped classes: a Core INSERT skips the ORM's bulk machinery,
            # a third of what a tiny item's commit cost in Python (bench/scale.py).
            items = Item.__table__
            stmt = insert(items).values(_by_column(Item, values)).on_conflict_do_nothing(index_elements=["canonical_key"])
            result = session.execute(stmt.returning(items.c.id))
            item_id = result.scalar()
            if item_id is None:
                self._release(session, release, named=set(session.scalars(
                    select(AssetRow.key).join(Item, Item.id == AssetRow.item_id)
                    .where(Item.canonical_key == canonical_key))))
                return False
            # The language column only when an asset has one: a catalog still at an older revision
            # (a migration test's, a deployment mid-upgrade) has no such column yet.
            languages = any(asset.language for asset in assets)
            rows = [dict(item_id=item_id, name=asset.name, kind=asset.kind, sha256=asset.sha256, size=asset.size,
                         mime=asset.mime, key=asset.key, source_url=asset.source_url,
                         **({"language": asset.language} if languages else {})) for asset in assets]
            if rows:
                session.execute(sqlalchemy_insert(AssetRow.__table__), [_by_column(AssetRow, row) for row in rows])
            self._remember(session, [source_url, canonical_url], canonical_key)
            if workflow_id:  # the crawls whose frontier holds it brought it (a watch's run, say)
                session.execute(text(
                    "INSERT INTO crawl_items (crawl_id, item_id, created_at) SELECT DISTINCT crawl_id, :item, :now "
                    "FROM crawl_frontier WHERE workflow_id = :workflow"),
                    {"item": item_id, "now": now, "workflow": workflow_id})
            self._release(session, release)
            return True

    # -- extras (trawl.extras) -------------------------------------------------------------------
    def add_extras(self, canonical_key: str, stored: list[CommittedAsset], missing: list[MissingExtra],
                   lines: dict[str, list[ExtraLine]] | None = None, release: Sequence[int] = ()) -> bool:
        """Record a committed item's extras: ``stored`` as its assets (an asset of that name it has
        already stays as it is: idempotent), ``missing`` as missing (a stored one of that name wins;
        a missing one recorded again is updated). ``lines``, by kind, are what search reads of the
        files stored (trawl.extras_text): they replace the item's lines of that kind (a refreshed
        snapshot's, the newest, are searched alone). False when the catalog has no such item."""
        insert = postgresql.insert if self.engine.dialect.name == "postgresql" else sqlite.insert
        with _storage_errors("catalog write failed"), self._session.begin() as session:
            item_id = session.scalar(select(Item.id).where(Item.canonical_key == canonical_key))
            if item_id is None:
                return False
            for kind, found in (lines or {}).items():
                self._replace_lines(session, item_id, kind, found)
            if stored:
                session.execute(insert(AssetRow).values([
                    dict(item_id=item_id, name=a.name[:64], kind=a.kind[:16], sha256=a.sha256, size=a.size,
                         mime=a.mime, key=a.key, source_url=a.source_url, language=(a.language or None) and a.language[:35])
                    for a in stored]).on_conflict_do_nothing(index_elements=["item_id", "name"]))
                session.execute(delete(MissingExtraRow).where(MissingExtraRow.item_id == item_id,
                                                              MissingExtraRow.name.in_([a.name[:64] for a in stored])))
            held = list(session.execute(select(AssetRow.name, AssetRow.key).where(AssetRow.item_id == item_id)))
            have = {name for name, _ in held}
            self._release(session, release, named={key for _, key in held})
            for gone in missing:
                if gone.name[:64] in have:
                    continue
                values = dict(item_id=item_id, name=gone.name[:64], kind=gone.kind[:16],
                              language=(gone.language or None) and gone.language[:35],
                              error_class=gone.error_class[:64], reason=gone.reason[:2000], recorded_at=_now())
                session.execute(insert(MissingExtraRow).values(**values).on_conflict_do_update(
                    index_elements=["item_id", "name"],
                    set_={k: values[k] for k in ("kind", "language", "error_class", "reason", "recorded_at")}))
            return True

    @staticmethod
    def _replace_lines(session: Any, item_id: int, kind: str, found: list[ExtraLine]) -> None:
        if kind not in SEARCHED_KINDS:
            return
        first, last = extras_search.id_range(item_id, kind)
        session.execute(delete(ExtraLineRow).where(ExtraLineRow.id.between(first, last)))
        rows = extras_search.line_rows(item_id, kind, found)
        if rows:
            session.execute(sqlalchemy_insert(ExtraLineRow), rows)
        session.execute(delete(PendingExtraLines).where(PendingExtraLines.item_id == item_id,
                                                        PendingExtraLines.kind == kind))

    def index_pending_extras(self, read: Callable[[str], bytes], limit: int, batch: int = 20) -> int:
        """Read into lines the extras stored before search read them (migration 0009's pending
        pairs): each (item, kind) from the newest snapshot of each of its files, at most ``limit``
        lines. ``read`` gives a blob's bytes by its key; a blob it cannot read gives no lines.
        Several processes may run this at once (PostgreSQL: each takes pairs the others have not
        locked). Returns the pairs read."""
        done = 0
        while True:
            with _storage_errors("catalog write failed"), self._session.begin() as session:
                claim = select(PendingExtraLines.item_id, PendingExtraLines.kind).order_by(
                    PendingExtraLines.item_id.desc()).limit(batch)
                if self.engine.dialect.name == "postgresql":
                    claim = claim.with_for_update(skip_locked=True)
                pairs = list(session.execute(claim))
                if not pairs:
                    if done:
                        _log.info("extras_indexed", pairs=done)
                    return done
                for item_id, kind in pairs:
                    assets = session.execute(select(AssetRow.name, AssetRow.key).where(
                        AssetRow.item_id == item_id, AssetRow.kind == kind).order_by(AssetRow.name)).all()
                    found: list[ExtraLine] = []
                    for key in newest_snapshots(assets).values():
                        try:
                            body = read(key)
                        except (OSError, TrawlError) as err:
                            _log.warning("extras_index_unreadable", key=key, error=str(err)[:200])
                            continue
                        found += extra_lines(kind, body, limit - len(found))
                    self._replace_lines(session, item_id, kind, found)
                done += len(pairs)

    def merge_metadata(self, canonical_key: str, fields: dict[str, Any]) -> bool:
        """Add ``fields`` to a committed item's metadata (an extra's: its chapters), in one locked
        read and write. False when the catalog has no such item."""
        with _storage_errors("catalog write failed"), self._session.begin() as session:
            row = session.scalar(select(Item).where(Item.canonical_key == canonical_key).with_for_update())
            if row is None:
                return False
            row.metadata_json = {**_metadata(row.metadata_json), **fields}
            return True

    def missing_extras(self, canonical_key: str) -> list[MissingExtra]:
        """The extras of an item recorded missing, by name."""
        with _storage_errors("catalog read failed"), self._session() as session:
            rows = session.scalars(select(MissingExtraRow).join(Item, Item.id == MissingExtraRow.item_id)
                                   .where(Item.canonical_key == canonical_key).order_by(MissingExtraRow.name))
            return [MissingExtra(r.name, r.kind, r.language, r.error_class, r.reason,
                                 r.recorded_at.isoformat() if r.recorded_at else "") for r in rows]
    def add_to_item(self, *, canonical_key: str, platform: str, canonical_url: str, source_url: str,
                    title: str | None, uploader: str | None, published_at: str | None, workflow_id: str | None,
                    assets: list[CommittedAsset],
                    describe: Callable[[dict[str, Any], list[CommittedAsset]], tuple[dict[str, Any], float | None]],
                    release: Sequence[int] = ()) -> list[CommittedAsset]:
        """Add ``assets`` to the item (created with the first ones), in one transaction: an item
        committed in parts as they come (a live recording's). An asset it holds by that name
        already stays as it is, so adding twice changes nothing. The blob intents ``release``
        names end in the same transaction, those of blobs the item's assets name (as
        :meth:`commit_item`'s).

        ``describe(metadata so far, every asset)`` gives the item's metadata and duration now.

        Returns:
            Every asset the item holds, by name.
        """
        dialect = self.engine.dialect.name
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        now = _now()
        with _storage_errors("catalog write failed"), self._session.begin() as session:
            session.execute(insert(Item).values(
                canonical_key=canonical_key, platform=platform, canonical_url=canonical_url, source_url=source_url,
                title=title, uploader=uploader, published_at=published_at, metadata_json={}, status="committed",
                workflow_id=workflow_id, created_at=now, updated_at=now, size=0,
                day=(published_at or "")[:10] if len(published_at or "") >= 10 else now.date().isoformat(),
            ).on_conflict_do_nothing(index_elements=["canonical_key"]))
            row = session.scalar(select(Item).options(selectinload(Item.assets)).where(
                Item.canonical_key == canonical_key).with_for_update())
            assert row is not None
            held = {a.name for a in row.assets}
            for asset in assets:
                if asset.name not in held:
                    row.assets.append(AssetRow(name=asset.name, kind=asset.kind, sha256=asset.sha256, size=asset.size,
                                               mime=asset.mime, key=asset.key, source_url=asset.source_url))
            every = [CommittedAsset(a.name, a.kind, a.sha256, a.size, a.mime, a.key, a.source_url)
                     for a in sorted(row.assets, key=lambda a: a.name)]
            row.metadata_json, row.duration = describe(dict(row.metadata_json or {}), every)
            row.size, row.kind, row.updated_at = sum(a.size for a in every), main_kind(every), now
            self._remember(session, [source_url, canonical_url], canonical_key)
            self._release(session, release, named={a.key for a in every})
            return every

    def remember_urls(self, urls: list[str], canonical_key: str) -> None:
        """Record URL forms that lead to ``canonical_key`` (idempotent; the first mapping stays)."""
        with _storage_errors("catalog write failed"), self._session.begin() as session:
            self._remember(session, urls, canonical_key)

    def _remember(self, session: Any, urls: list[str], canonical_key: str) -> None:
        insert = postgresql.insert if self.engine.dialect.name == "postgresql" else sqlite.insert
        forms = {form for form in map(alias_form, urls) if form}
        if not forms:
            return
        rows = [dict(url_sha1=url_sha1(form), url=form, canonical_key=canonical_key, created_at=_now())
                for form in sorted(forms)]
        # The rows as parameters, not in the statement: SQLAlchemy never caches a statement of
        # several VALUES rows, so each commit compiled this one again.
        session.execute(insert(UrlAlias.__table__).on_conflict_do_nothing(index_elements=["url_sha1"]), rows)

    def key_for_url(self, url: str) -> str | None:
        """The canonical key a URL form led to before, if the catalog remembers one."""
        form = alias_form(url)
        if form is None:
            return None
        with _storage_errors("catalog read failed"), self._session() as session:
            return session.scalar(select(UrlAlias.canonical_key).where(UrlAlias.url_sha1 == url_sha1(form)))

    def committed_keys(self, keys: list[str]) -> set[str]:
        """Which of ``keys`` are committed items (one query per 500 keys)."""
        if not keys:
            return set()
        with _storage_errors("catalog read failed"), self._session() as session:
            found: set[str] = set()
            for batch in _batches(sorted(set(keys))):
                found.update(session.scalars(select(Item.canonical_key).where(
                    Item.canonical_key.in_(batch), Item.status == "committed")))
            return found

    def committed_metadata(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """Canonical key -> metadata for those of ``keys`` that are committed items (one query per
        500 keys); keys that are not committed are left out."""
        found: dict[str, dict[str, Any]] = {}
        if not keys:
            return found
        with _storage_errors("catalog read failed"), self._session() as session:
            for batch in _batches(sorted(set(keys))):
                for key, metadata in session.execute(select(Item.canonical_key, Item.metadata_json).where(
                        Item.canonical_key.in_(batch), Item.status == "committed")):
                    found[key] = _metadata(metadata)
        return found

    def keys_for_urls(self, urls: list[str]) -> dict[str, str]:
        """URL -> canonical key for the URL forms the catalog remembers (one query per 500 URLs)."""
        by_hash: dict[str, list[str]] = {}
        for url in urls:
            form = alias_form(url)
            if form:
                by_hash.setdefault(url_sha1(form), []).append(url)
        found: dict[str, str] = {}
        if not by_hash:
            return found
        with _storage_errors("catalog read failed"), self._session() as session:
            for batch in _batches(sorted(by_hash)):
                for sha, key in session.execute(select(UrlAlias.url_sha1, UrlAlias.canonical_key).where(
                        UrlAlias.url_sha1.in_(batch))):
                    found.update(dict.fromkeys(by_hash[sha], key))
        return found

    # -- a crawl's frontier ---------------------------------------------------------------------
    def frontier_add(self, crawl_id: str, entries: Iterable[tuple[str, str, str, dict[str, Any] | None]],
                     repeated: Callable[[str, str], None] | None = None) -> int:
        """Append ``(url, platform, workflow_id, listing)`` entries to a crawl's frontier, in order,
        in batches; an entry the crawl holds already (its workflow id) is left out, and told to
        ``repeated`` (its URL and workflow id). Idempotent: a retried call adds nothing twice.
        Returns how many rows were added."""
        insert = postgresql.insert if self.engine.dialect.name == "postgresql" else sqlite.insert
        added = 0
        batch: list[dict[str, Any]] = []

        def flush() -> int:
            if not batch:
                return 0
            with _storage_errors("catalog write failed"), self._session.begin() as session:
                stmt = insert(FrontierRow).values(batch).on_conflict_do_nothing(
                    index_elements=["crawl_id", "workflow_id"]).returning(FrontierRow.workflow_id)
                inserted = {row[0] for row in session.execute(stmt).all()}
            if repeated is not None:
                for entry in batch:
                    if entry["workflow_id"] not in inserted:
                        repeated(entry["url"], entry["workflow_id"])
            batch.clear()
            return len(inserted)

        seen: set[str] = set()  # one statement may not hold the same conflict key twice (PostgreSQL)
        for url, platform, workflow_id, listing in entries:
            if workflow_id in seen:
                if repeated is not None:
                    repeated(url, workflow_id)
                continue
            seen.add(workflow_id)
            batch.append(dict(crawl_id=crawl_id, workflow_id=workflow_id, url=url, platform=platform,
                              listing=listing, created_at=_now()))
            if len(batch) >= FRONTIER_INSERT_ROWS:
                added += flush()
                seen.clear()
        added += flush()
        self._frontier_unanalyzed += added
        if self._frontier_unanalyzed >= FRONTIER_ANALYZE_ROWS and self.engine.dialect.name == "postgresql":
            self._analyze_frontier()
        return added

    def analyze_stale(self) -> list[str] | None:
        """PostgreSQL: read again the statistics of the catalog's tables that autovacuum does not
        look after (it is off, or off for that table) and that changed by more than autovacuum's
        own rule would wait for (50 rows and a tenth of the table) since they were last read.
        Returns the tables read (none while another worker is reading them); None on SQLite.

        Without statistics PostgreSQL plans as for the tables it last saw, and keeps those plans:
        the foreign-key checks each commit makes, planned while ``items`` was near empty, read the
        whole table once per item (100,000 items: a crawl's every commit slower than the last;
        bench/bigcrawl.py). Each table in a transaction of its own (an ANALYZE holds its table's
        lock until its transaction ends); one worker at a time (an advisory lock)."""
        if self.engine.dialect.name != "postgresql":
            return None
        with _storage_errors("catalog write failed"), self.engine.connect() as conn:
            conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            if not conn.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": ANALYZE_LOCK}).scalar_one():
                return []
            try:
                stale = list(conn.execute(text(
                    "SELECT s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid "
                    "WHERE s.schemaname = current_schema() AND s.n_mod_since_analyze > 50 + 0.1 * s.n_live_tup "
                    "AND (current_setting('autovacuum') = 'off' OR EXISTS (SELECT 1 FROM unnest(c.reloptions) o "
                    "WHERE lower(o) IN ('autovacuum_enabled=false', 'autovacuum_enabled=off', "
                    "'autovacuum_enabled=0', 'autovacuum_enabled=no'))) ORDER BY s.relname")).scalars())
                for table in stale:
                    conn.execute(text('ANALYZE "{}"'.format(table.replace('"', '""'))))
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": ANALYZE_LOCK})
        return stale

    def _analyze_frontier(self) -> None:
        """Have PostgreSQL read the frontier's statistics again (FRONTIER_ANALYZE_ROWS). A catalog
        role that may not (not the tables' owner) leaves it to autovacuum: the crawl goes on."""
        try:
            with self.engine.begin() as conn:
                conn.execute(text("ANALYZE crawl_frontier"))
        except SQLAlchemyError as err:
            _log.warning("the frontier's statistics were not read again; autovacuum will",
                         error=str(err).splitlines()[0][:200])
        self._frontier_unanalyzed = 0

    def frontier_page(self, crawl_id: str, after: int, limit: int) -> list[FrontierEntry]:
        """The crawl's next ``limit`` entries after cursor ``after`` (an entry's ``seq``), in order."""
        with _storage_errors("catalog read failed"), self._session() as session:
            rows = session.execute(
                select(FrontierRow.id, FrontierRow.url, FrontierRow.platform, FrontierRow.workflow_id,
                       FrontierRow.listing)
                .where(FrontierRow.crawl_id == crawl_id, FrontierRow.id > after)
                .order_by(FrontierRow.id).limit(limit)).all()
        return [FrontierEntry(*row) for row in rows]

    def frontier_idle_crawls(self, before: datetime, limit: int = 100) -> list[str]:
        """Crawls whose frontier got its last entry before ``before`` (candidates for clean-up).

        Every worker asks this each clean-up round, so it must not read every entry of every crawl
        (a GROUP BY did: 0.24-1.6 s at 1,000,000 entries on SQLite, bench/frontier.py). It walks the
        distinct crawl ids through the ``(crawl_id, id)`` index, one probe each (a loose index
        scan), and reads each crawl's newest entry (the highest id: entries are appended) alone.
        """
        crawls = select(func.min(FrontierRow.crawl_id).label("crawl_id")).cte("crawls", recursive=True)
        after = aliased(FrontierRow)
        crawls = crawls.union_all(
            select(select(func.min(after.crawl_id)).where(after.crawl_id > crawls.c.crawl_id).scalar_subquery())
            .where(crawls.c.crawl_id.is_not(None)))
        newest = (select(FrontierRow.created_at).where(FrontierRow.crawl_id == crawls.c.crawl_id)
                  .order_by(FrontierRow.id.desc()).limit(1).scalar_subquery())
        with _storage_errors("catalog read failed"), self._session() as session:
            return list(session.scalars(select(crawls.c.crawl_id).where(crawls.c.crawl_id.is_not(None), newest < before)
                                        .limit(limit)))

    def frontier_drop(self, crawl_id: str) -> int:
        """Remove a crawl's frontier; returns how many entries it held.

        In batches of ``FRONTIER_DROP_ROWS``, each its own transaction: one DELETE of a million
        entries held SQLite's write lock for 13 s at load 27 (bench/frontier.py), every commit of
        every worker waiting behind it, and on PostgreSQL it could outlast statement_timeout. Each
        batch starts after the last one's highest id: a batch found from the crawl's first entry
        would walk the entries PostgreSQL has deleted but not yet vacuumed, more each time. A drop
        cut short leaves the rest for the next round."""
        dropped, after = 0, 0
        while True:
            rest = (FrontierRow.crawl_id == crawl_id, FrontierRow.id > after)
            with _storage_errors("catalog write failed"), self._session.begin() as session:
                upto = session.scalar(select(FrontierRow.id).where(*rest).order_by(FrontierRow.id)
                                      .offset(FRONTIER_DROP_ROWS - 1).limit(1))
                batch = delete(FrontierRow).where(*rest, *(() if upto is None else (FrontierRow.id <= upto,)))
                dropped += session.execute(batch).rowcount or 0
            if upto is None:
                return dropped
            after = upto

    def get(self, canonical_key: str) -> CatalogItem | None:
        with _storage_errors("catalog read failed"), self._session() as session:
            row = session.scalar(
                select(Item).options(selectinload(Item.assets)).where(Item.canonical_key == canonical_key))
            return _to_item(row) if row else None

    def list(self, *, platform: str | None = None, limit: int = 1000, offset: int = 0) -> list[CatalogItem]:
        with _storage_errors("catalog read failed"), self._session() as session:
            query = select(Item).options(selectinload(Item.assets)).order_by(Item.id).limit(limit).offset(offset)
            if platform:
                query = query.where(Item.platform == platform)
            return [_to_item(row) for row in session.scalars(query)]

    def committed(self, platform: str | None = None, page: int = 500) -> Iterator[CatalogItem]:
        """Committed items (of ``platform``, or all) in commit order, read ``page`` items at a time.

        Each page is its own short read after the last id seen, so a slow consumer (an export
        copying files) holds no session open between pages, and an item deleted meanwhile
        (``fsck --repair``) does not shift the pages as it would with an offset.
        """
        last = 0
        while True:
            query = (select(Item).options(selectinload(Item.assets))
                     .where(Item.status == "committed", Item.id > last).order_by(Item.id).limit(page))
            if platform:
                query = query.where(Item.platform == platform)
            with _storage_errors("catalog read failed"), self._session() as session:
                rows = list(session.scalars(query))
                items = [_to_item(row) for row in rows]
            if not rows:
                return
            yield from items
            last = rows[-1].id

    def delete(self, canonical_key: str) -> bool:
        """Forget an item (``trawl fsck --repair`` does, so it can be crawled again)."""
        with _storage_errors("catalog write failed"), self._session.begin() as session:
            row = session.scalar(select(Item).where(Item.canonical_key == canonical_key))
            if row is None:
                return False
            for asset in list(row.assets):
                session.delete(asset)
            session.execute(delete(MissingExtraRow).where(MissingExtraRow.item_id == row.id))
            session.delete(row)
            return True

    def count(self) -> int:
        with _storage_errors("catalog read failed"), self._session() as session:
            return session.scalar(select(func.count(Item.id))) or 0

    def library(self, query: LibraryQuery) -> LibraryPage:
        """A page of the library (``trawl.storage.library``): the items that match, how many do,
        and for those found by a line of their extras alone, that line (``LibraryPage.hits``)."""
        dialect = self.engine.dialect.name
        words = query.words()
        with _storage_errors("catalog read failed"), self._session() as session:
            if is_search(query):  # (on PostgreSQL it turns JIT off for its transaction)
                ids, total = search(session, Item, query, dialect)
                rows = {row.id: row for row in session.scalars(
                    select(Item).options(selectinload(Item.assets)).where(Item.id.in_(ids)))}
                found = [rows[i] for i in ids if i in rows]
            else:
                if dialect == "postgresql" and words:
                    # A search's plans are priced high (trawl_bucket_grams is, so that its index is
                    # used): JIT compiled each for 0.1-0.7 s, several times what running it takes.
                    session.execute(text("SET LOCAL jit = off"))
                page, count = library_statements(Item, query, dialect)
                found = list(session.scalars(page.options(selectinload(Item.assets))))
                total = session.scalar(count) or 0
            items = [_to_item(row) for row in found]
            hits: dict[str, ExtraHit] = {}
            if words:  # where the item's own text does not hold every word: the line that did
                elsewhere = [row.id for row, item in zip(found, items) if not _text_holds(item, words)]
                by_id = extras_search.first_hits(session, dialect, elsewhere, words)
                hits = {row.canonical_key: by_id[row.id] for row in found if row.id in by_id}
            return LibraryPage(items=items, total=total, query=query, hits=hits)

    def url_forms(self, canonical_key: str, limit: int = 100) -> list[str]:
        """The URL forms that led to an item (canonicalised), the first remembered first."""
        with _storage_errors("catalog read failed"), self._session() as session:
            return list(session.scalars(select(UrlAlias.url).where(UrlAlias.canonical_key == canonical_key)
                                        .order_by(UrlAlias.created_at, UrlAlias.url).limit(limit)))

    # -- what an archive is browsed by (migration 0008) -----------------------------------------
    def record_listing(self, kind: str, ident: str, entries: list[ListingEntry], title: str | None = None) -> str:
        """Record what one read of a listing gave, in its order: ``entries`` are its beginning
        (a read may stop at the first page it knows, or after ``max_pages``), or all of it. An
        entry seen before keeps its place; new ones go where the read puts them among those
        (before the first known one, between two, or after the last). Returns its key."""
        key = f"{kind}:{ident}"[:255]
        now = _now()
        with _storage_errors("catalog write failed"), self._session.begin() as session:
            listing = session.scalar(select(ListingRow).where(ListingRow.key == key))
            if listing is None:
                listing = ListingRow(key=key, kind=kind, ident=ident, title=title, updated_at=now)
                session.add(listing)
                session.flush()
            listing.updated_at = now
            if title:
                listing.title = title
            read: dict[str, ListingEntry] = {}
            for entry in entries:
                read.setdefault(url_sha1(alias_form(entry.url) or entry.url), entry)
            known: dict[str, ListingEntryRow] = {}
            for batch in _batches(list(read)):
                known.update((row.url_sha1, row) for row in session.scalars(select(ListingEntryRow).where(
                    ListingEntryRow.listing_id == listing.id, ListingEntryRow.url_sha1.in_(batch))))
            shas = list(read)
            for sha, rank in zip(shas, _ranks([known[s].rank if s in known else None for s in shas])):
                entry, row = read[sha], known.get(sha)
                if row is None:
                    session.add(ListingEntryRow(listing_id=listing.id, url=entry.url, url_sha1=sha, rank=rank,
                                                title=entry.title, gone=entry.gone, first_seen=now, last_seen=now))
                else:
                    row.last_seen, row.gone = now, entry.gone
                    row.title = entry.title or row.title
        return key

    def listing(self, key: str, limit: int = 100, offset: int = 0, newest_last: bool = False) -> Listing | None:
        """A listing and a page of its entries in its order (reversed with ``newest_last``), each
        with the committed item its URL led to, if any."""
        with _storage_errors("catalog read failed"), self._session() as session:
            row = session.scalar(select(ListingRow).where(ListingRow.key == key))
            if row is None:
                return None
            order = ListingEntryRow.rank.desc() if newest_last else ListingEntryRow.rank.asc()
            entries = list(session.scalars(select(ListingEntryRow).where(ListingEntryRow.listing_id == row.id)
                                           .order_by(order, ListingEntryRow.id).limit(limit).offset(offset)))
            total = session.scalar(select(func.count()).where(ListingEntryRow.listing_id == row.id)) or 0
            keys = dict(session.execute(select(UrlAlias.url_sha1, UrlAlias.canonical_key).where(
                UrlAlias.url_sha1.in_([e.url_sha1 for e in entries]))).all()) if entries else {}
            items = {i.canonical_key: _to_item(i) for i in session.scalars(
                select(Item).options(selectinload(Item.assets)).where(
                    Item.canonical_key.in_(list(keys.values())), Item.status == "committed"))} if keys else {}
            return Listing(key=row.key, kind=row.kind, ident=row.ident, title=row.title,
                           updated_at=_iso(row.updated_at) or "", total=total,
                           entries=[ListingEntry(e.url, e.title, e.gone, items.get(keys.get(e.url_sha1, "")))
                                    for e in entries])

    def listings_of(self, canonical_key: str, limit: int = 50) -> list[Listing]:
        """The listings that hold an item (by any URL form that led to it), without their entries."""
        with _storage_errors("catalog read failed"), self._session() as session:
            rows = session.scalars(select(ListingRow).join(ListingEntryRow, ListingEntryRow.listing_id == ListingRow.id)
                                   .join(UrlAlias, UrlAlias.url_sha1 == ListingEntryRow.url_sha1)
                                   .where(UrlAlias.canonical_key == canonical_key).distinct()
                                   .order_by(ListingRow.key).limit(limit))
            return [Listing(r.key, r.kind, r.ident, r.title, _iso(r.updated_at) or "") for r in rows]

    def all_listings(self, limit: int = 500) -> list[Listing]:
        """The listings trawl expanded, the latest read first, each with its number of entries."""
        with _storage_errors("catalog read failed"), self._session() as session:
            counts = (select(ListingEntryRow.listing_id, func.count().label("n"))
                      .group_by(ListingEntryRow.listing_id).subquery())
            rows = session.execute(select(ListingRow, counts.c.n).outerjoin(counts, counts.c.listing_id == ListingRow.id)
                                   .order_by(ListingRow.updated_at.desc(), ListingRow.id.desc()).limit(limit)).all()
            return [Listing(r.key, r.kind, r.ident, r.title, _iso(r.updated_at) or "", total=n or 0) for r, n in rows]

    def crawl_runs(self, prefix: str, runs: int = 20, per_run: int = 200) -> list[tuple[str, int, list[CatalogItem]]]:
        """What crawls whose id starts with ``prefix`` committed (a watch's runs: its schedule id and
        ``-``), the latest first: each crawl's id, how many items it brought and the newest
        ``per_run`` of them."""
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        with _storage_errors("catalog read failed"), self._session() as session:
            found = session.execute(
                select(CrawlItemRow.crawl_id, func.count(), func.max(CrawlItemRow.created_at))
                .where(CrawlItemRow.crawl_id.like(escaped + "%", escape="\\")).group_by(CrawlItemRow.crawl_id)
                .order_by(func.max(CrawlItemRow.created_at).desc()).limit(runs)).all()
            result = []
            for crawl_id, count, _ in found:
                rows = session.scalars(select(Item).options(selectinload(Item.assets))
                                       .join(CrawlItemRow, CrawlItemRow.item_id == Item.id)
                                       .where(CrawlItemRow.crawl_id == crawl_id).order_by(Item.id.desc())
                                       .limit(per_run))
                result.append((crawl_id, count, [_to_item(r) for r in rows]))
            return result

    def save_viewing(self, viewer: str, canonical_key: str, *, position: float | None = None,
                     watched: bool | None = None) -> bool:
        """Record where ``viewer`` stopped in an item (``position``, seconds) and/or whether they
        watched it; False when the catalog has no such item."""
        with _storage_errors("catalog write failed"), self._session.begin() as session:
            item_id = session.scalar(select(Item.id).where(Item.canonical_key == canonical_key))
            if item_id is None:
                return False
            row = session.get(ViewerState, (viewer[:64], item_id))
            if row is None:
                row = ViewerState(viewer=viewer[:64], item_id=item_id)
                session.add(row)
            if position is not None:
                row.position = position
            if watched is not None:
                row.watched_at = _now() if watched else None
            row.updated_at = _now()
            return True

    def viewing(self, viewer: str, keys: list[str]) -> dict[str, tuple[float | None, str | None]]:
        """Key -> (where the viewer stopped, when they watched it) for those of ``keys`` they have
        a state of."""
        if not keys:
            return {}
        with _storage_errors("catalog read failed"), self._session() as session:
            rows = session.execute(select(Item.canonical_key, ViewerState.position, ViewerState.watched_at)
                                   .join(ViewerState, ViewerState.item_id == Item.id)
                                   .where(ViewerState.viewer == viewer[:64], Item.canonical_key.in_(keys[:500])))
            return {key: (position, _iso(watched)) for key, position, watched in rows}

    def crawls_of(self, canonical_key: str) -> list[str]:
        """The crawls that brought an item (``crawl_items``)."""
        with _storage_errors("catalog read failed"), self._session() as session:
            return list(session.scalars(select(CrawlItemRow.crawl_id).join(Item, Item.id == CrawlItemRow.item_id)
                                        .where(Item.canonical_key == canonical_key).order_by(CrawlItemRow.crawl_id)))

    def items_of_runs(self, runs_like: str, since: datetime, limit: int) -> list[tuple[str, str]]:
        """``(canonical key, platform)`` of the committed items that crawls whose id is LIKE
        ``runs_like`` brought (a watch's runs, ``crawl_items``), published since ``since`` (those a
        platform gave no date: committed since), the youngest first, at most ``limit``."""
        from sqlalchemy import and_, or_  # here: this method alone needs them

        day = since.astimezone(UTC).date().isoformat()
        with _storage_errors("catalog read failed"), self._session() as session:
            brought = select(CrawlItemRow.item_id).where(CrawlItemRow.crawl_id.like(runs_like, escape="\\"))
            rows = session.execute(
                select(Item.canonical_key, Item.platform).where(
                    Item.status == "committed", Item.id.in_(brought),
                    or_(and_(Item.published_at.is_not(None), func.substr(Item.published_at, 1, 10) >= day),
                        and_(Item.published_at.is_(None), Item.created_at >= since)))
                .order_by(func.coalesce(func.substr(Item.published_at, 1, 10), "").desc(), Item.id.desc())
                .limit(max(0, limit)))
            return [(key, platform) for key, platform in rows]

    def uploader_facts(self, uploader: str) -> dict[str, Any]:
        """What the catalog knows of an uploader (by the name items give): how many items, their
        size, the first and last day, the platforms, the ids the platforms give them."""
        with _storage_errors("catalog read failed"), self._session() as session:
            where = [Item.status == "committed", func.substr(Item.uploader, 1, 200) == uploader[:200],
                     Item.uploader == uploader]
            count, size, first, last = session.execute(select(
                func.count(), func.sum(Item.size), func.min(Item.day), func.max(Item.day)).where(*where)).one()
            platforms = list(session.scalars(select(Item.platform).where(*where).distinct().order_by(Item.platform)))
            ids: set[str] = set()
            for metadata in session.scalars(select(Item.metadata_json).where(*where).order_by(Item.id.desc()).limit(200)):
                value = _metadata(metadata).get("uploader_id")
                if isinstance(value, (str, int)) and str(value):
                    ids.add(str(value)[:100])
            return {"items": count or 0, "size": size or 0, "first_day": first, "last_day": last,
                    "platforms": platforms, "uploader_ids": sorted(ids)[:20]}

    def record_check(self, canonical_key: str, gone: str | None, at: datetime) -> bool:
        """What a re-check found (``trawl.recheck``): ``gone`` upstream for that reason (the first
        time it was found so is kept), or there (None: an earlier mark is lifted). The item and its
        files stay either way. False when the catalog has no such item."""
        with _storage_errors("catalog write failed"), self._session.begin() as session:
            row = session.scalar(select(Item).where(Item.canonical_key == canonical_key))
            if row is None:
                return False
            row.checked_at = at
            if gone is None:
                row.gone_at = row.gone_reason = None
            else:
                row.gone_at = row.gone_at or at
                row.gone_reason = gone
            return True

    def listing_to_recheck(self, key: str, limit: int) -> list[CatalogItem]:
        """Up to ``limit`` committed items of the listing ``key`` (by any URL form that led to them),
        those never re-checked first, then those checked longest ago (a watch's re-check)."""
        with _storage_errors("catalog read failed"), self._session() as session:
            listing = session.scalar(select(ListingRow.id).where(ListingRow.key == key))
            if listing is None:
                return []
            keys = (select(UrlAlias.canonical_key).join(ListingEntryRow, ListingEntryRow.url_sha1 == UrlAlias.url_sha1)
                    .where(ListingEntryRow.listing_id == listing))
            rows = session.scalars(select(Item).options(selectinload(Item.assets))
                                   .where(Item.canonical_key.in_(keys), Item.status == "committed")
                                   .order_by(Item.checked_at.asc().nulls_first(), Item.id).limit(limit))
            return [_to_item(row) for row in rows]

    # -- blobs being committed (trawl.storage.orphans) -------------------------------------------
    def intend_blobs(self, keys: Iterable[str], workflow_id: str, run_id: str) -> list[int]:
        """Announce that ``workflow_id``'s run ``run_id`` is about to store and record ``keys``;
        the ids of the intents, for :meth:`release_intents` once the item's row names them."""
        now = _now()
        rows = [dict(key=key, workflow_id=workflow_id[:512], run_id=run_id[:64], created_at=now)
                for key in sorted(set(keys))]
        if not rows:
            return []
        intents = BlobIntent.__table__
        with _storage_errors("catalog write failed"), self._session.begin() as session:
            return list(session.scalars(sqlalchemy_insert(intents).returning(intents.c.id), rows))

    def release_intents(self, ids: list[int]) -> None:
        with _storage_errors("catalog write failed"), self._session.begin() as session:
            self._release(session, ids)

    @staticmethod
    def _release(session: Any, ids: Sequence[int], named: set[str] | None = None) -> None:
        """End the intents ``ids`` (of those, the ones whose blob is in ``named``, when given), in
        the caller's transaction: the commit that names their blobs ends them in its own (one
        transaction less an item, and no stale intent left when the process dies between the two).
        An intent of a blob no row names stays, so the clean-up reclaims that blob once it is old."""
        if not ids or named == set():
            return
        which = [BlobIntent.id.in_(list(ids))] + ([BlobIntent.key.in_(sorted(named))] if named is not None else [])
        session.execute(delete(BlobIntent).where(*which))

    def stale_intent_keys(self, before: datetime, limit: int = 1000) -> list[str]:
        """Keys announced before ``before`` by attempts that never released them (they died
        between their put and their row, or released nothing after it): the candidates for a
        reclaim, oldest first."""
        with _storage_errors("catalog read failed"), self._session() as session:
            return list(session.scalars(select(BlobIntent.key).group_by(BlobIntent.key)
                                        .having(func.min(BlobIntent.created_at) < before)
                                        .order_by(func.min(BlobIntent.created_at)).limit(limit)))

    def intended_since(self, keys: list[str], since: datetime) -> set[str]:
        """Which of ``keys`` an attempt announced at ``since`` or later (one query per 500 keys)."""
        found: set[str] = set()
        with _storage_errors("catalog read failed"), self._session() as session:
            for batch in _batches(sorted(set(keys))):
                found.update(session.scalars(select(BlobIntent.key).where(
                    BlobIntent.key.in_(batch), BlobIntent.created_at >= since)))
        return found

    def reclaim_blob(self, key: str, since: datetime, remove: Callable[[], object]) -> bool:
        """Call ``remove`` (which deletes the blob ``key`` from the store) when no asset row names
        the blob and no intent announced it at ``since`` or later, and forget its intents.

        The check and ``remove`` run inside one transaction that holds the lock every new intent
        needs (a table lock on PostgreSQL, the one write lock on SQLite): a commit announces a
        blob before it puts it, so it either announced it before the check (and the blob stays)
        or waits and then finds no blob (and uploads it again); a blob it is putting or about to
        record is never removed under it. True when ``remove`` ran.
        """
        with _storage_errors("catalog write failed"), self._session.begin() as session:
            if self.engine.dialect.name == "postgresql":
                # SHARE ROW EXCLUSIVE conflicts with the ROW EXCLUSIVE an INSERT takes (and with itself).
                session.execute(text("LOCK TABLE blob_intents IN SHARE ROW EXCLUSIVE MODE"))
            # On SQLite this write takes the database's write lock, even when it deletes nothing.
            session.execute(delete(BlobIntent).where(BlobIntent.key == key, BlobIntent.created_at < since))
            if session.scalar(select(AssetRow.id).where(AssetRow.key == key).limit(1)) is not None:
                return False
            if session.scalar(select(BlobIntent.id).where(BlobIntent.key == key).limit(1)) is not None:
                return False
            remove()
            return True


MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def migrate(engine: Engine, *, snapshot: bool = True) -> None:
    """``alembic upgrade head`` on ``engine``.

    A catalog created before migrations existed (tables, no ``alembic_version``) is stamped as
    the first revision, whose schema it has, and upgraded from there. A catalog at the newest
    revision already (every start but the first after an upgrade) costs one query, without
    loading Alembic: a command that writes a crawl's frontier starts that much sooner. A new
    SQLite catalog is made by the migrations' snapshot (:mod:`trawl.storage.sqlite_schema`), also
    without Alembic, unless ``snapshot`` is False.
    """
    revision = _revision(engine)
    if revision == newest_revision():
        return
    if snapshot and revision is None and engine.dialect.name == "sqlite" and _new_from_snapshot(engine):
        return
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import inspect

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        bounded = connection.connection.dbapi_connection
        if engine.dialect.name == "postgresql":
            # A migration may rewrite a large table, once, at start-up: longer than any query
            # should take. LOCAL: the connection goes back to the pool with its bound.
            connection.exec_driver_sql("SET LOCAL statement_timeout = 0")
            if hasattr(bounded, "answer_limit"):
                bounded.answer_limit = None
        try:
            config.attributes["connection"] = connection
            tables = set(inspect(connection).get_table_names())
            if "items" in tables and "alembic_version" not in tables:
                command.stamp(config, "0001")
            command.upgrade(config, "head")
        finally:
            if "answer_limit" in getattr(bounded, "__dict__", {}):
                del bounded.answer_limit  # the class's limit again (which a test may set)


def _new_from_snapshot(engine: Engine) -> bool:
    """Make the empty SQLite database of ``engine`` a catalog at the newest revision from the
    snapshot. False: there is no snapshot of that revision, or the database has tables already."""
    from trawl.storage import sqlite_schema

    if sqlite_schema.snapshot_revision() != newest_revision():
        return False
    with engine.connect() as connection:
        if connection.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar():
            return False
        connection.commit()
        try:
            sqlite_schema.create(connection.connection.dbapi_connection)  # type: ignore[arg-type]
        except sqlite3.OperationalError as exc:
            if "already exists" not in str(exc):
                raise
            # Another process made the catalog meanwhile: its transaction ended before ours began.
            return _revision(engine) == newest_revision()
    return True


def newest_revision() -> str:
    """The head revision: revisions are numbered, one after the other, and each file's name starts
    with its number (``0003_crawl_frontier.py``; a test holds Alembic's head to this)."""
    return max(p.name.split("_", 1)[0] for p in (MIGRATIONS / "versions").glob("[0-9]*_*.py"))


def _revision(engine: Engine) -> str | None:
    """The catalog's revision (None: no catalog yet, or one from before migrations)."""
    try:
        with engine.connect() as connection:
            return connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
    except SQLAlchemyError:
        return None


@contextlib.contextmanager
def _storage_errors(what: str) -> Iterator[None]:
    """Database failures leave the catalog as ``storage_error`` (retried), with the cause."""
    try:
        yield
    except SQLAlchemyError as exc:
        raise StorageError(f"{what}: {exc.__class__.__name__}: {str(exc).splitlines()[0]}") from None


# Keys or hashes per IN list: keeps every statement well under SQLite's and PostgreSQL's limits.
_IN_BATCH = 500


def _batches(values: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(values), _IN_BATCH):
        yield values[start:start + _IN_BATCH]


def _metadata(value: Any) -> dict[str, Any]:
    """The ``metadata`` column as a dict: the column allows null, readers expect a dict."""
    return value if isinstance(value, dict) else {}


def _to_item(row: Item) -> CatalogItem:
    return CatalogItem(
        canonical_key=row.canonical_key, platform=row.platform, canonical_url=row.canonical_url,
        source_url=row.source_url, title=row.title, uploader=row.uploader, duration=row.duration,
        published_at=row.published_at, status=row.status, workflow_id=row.workflow_id,
        created_at=row.created_at.isoformat() if row.created_at else "",
        assets=[CommittedAsset(a.name, a.kind, a.sha256, a.size, a.mime, a.key, a.source_url, a.language)
                for a in row.assets],
        metadata=_metadata(row.metadata_json),
        gone_at=_iso(row.gone_at), gone_reason=row.gone_reason, checked_at=_iso(row.checked_at),
    )


def newest_snapshots(assets: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Of an item's files of one kind (name, blob key), the newest snapshot of each: by the name
    before any ``@<snapshot>`` (``comments``, ``comments@20261205T130800Z``), the latest snapshot."""
    newest: dict[str, tuple[str, str]] = {}
    for name, key in assets:
        base, _, snapshot = name.partition("@")
        if base not in newest or snapshot > newest[base][0]:
            newest[base] = (snapshot, key)
    return {base: key for base, (_, key) in newest.items()}


def _text_holds(item: CatalogItem, words: list[str]) -> bool:
    """Whether the item's own searched text (title, uploader, tags, description) holds every word,
    in any case: else a search found it by its extras."""
    tags = item.metadata.get("tags")
    description = item.metadata.get("description")
    parts = [item.title or "", item.uploader or "", description if isinstance(description, str) else ""]
    parts += [str(tag) for tag in tags] if isinstance(tags, list) else []
    own = " ".join(parts).lower()
    return all(word.lower() in own for word in words)


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


def _ranks(known: list[float | None]) -> list[float]:
    """Ranks for a read of a listing, in its order: ``known`` holds the rank of each entry seen
    before (None: new). Known ones keep theirs; each run of new ones is spaced between its known
    neighbours (before the first, one apart; after the last, one apart; with none known, 0, 1, ...)."""
    ranks: list[float] = []
    at = 0
    while at < len(known):
        if known[at] is not None:
            ranks.append(known[at])  # type: ignore[arg-type]
            at += 1
            continue
        end = at
        while end < len(known) and known[end] is None:
            end += 1
        before = ranks[-1] if ranks else None
        after = known[end] if end < len(known) else None
        count = end - at
        for n in range(count):
            if before is None and after is None:
                ranks.append(float(at + n))
            elif before is None:
                ranks.append(after - (count - n))  # type: ignore[operator]
            elif after is None:
                ranks.append(before + n + 1)
            else:
                ranks.append(before + (after - before) * (n + 1) / (count + 1))
        at = end
    return ranks
