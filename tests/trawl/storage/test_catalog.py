"""The catalog on SQLite and, when TRAWL_TEST_POSTGRES_URL is set, on PostgreSQL."""

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import event, text, update
from sqlalchemy.engine.interfaces import CacheStats

from tests.conftest import new_postgres_database
from tests.tcpproxy import TcpProxy
from trawl.errors import StorageError
from trawl.storage import catalog as catalog_module
from trawl.storage.catalog import Catalog, CommittedAsset, Item, _answer_bounded_connection
from trawl.storage.library import SEARCH_TABLES


def _commit(catalog: Catalog, key: str = "web:abc", workflow_id: str = "wf-1", sha: str = "a" * 64,
            platform: str = "generic", metadata: dict[str, Any] | None = None) -> bool:
    return catalog.commit_item(
        canonical_key=key, platform=platform, canonical_url="https://e.com/x", source_url="https://e.com/x?utm=1",
        title="T\nwith newline", uploader=None, duration=12.5, published_at=None,
        metadata={"k": "v"} if metadata is None else metadata,
        workflow_id=workflow_id,
        assets=[CommittedAsset("video", "video", sha, 10, "video/mp4", f"sha256/{sha[:2]}/{sha[2:4]}/{sha}")],
    )


def test_an_item_s_commit_compiles_no_statement_again(catalog_url: str) -> None:
    """Every statement of an item's commit is served from SQLAlchemy's compiled cache after the
    first commit: one it cannot cache (an INSERT of several VALUES rows written into the
    statement, the item's URL forms) was compiled again for every item."""
    catalog = Catalog(catalog_url)
    catalog.create_schema()
    assert _commit(catalog, key="web:warm", workflow_id="wf-warm", sha="f" * 64)
    compiled: list[tuple[str, str]] = []

    def seen(conn: Any, cursor: Any, statement: str, params: Any, context: Any, executemany: bool) -> None:
        if context is not None and context.compiled is not None and context.cache_hit is not CacheStats.CACHE_HIT:
            compiled.append((context.cache_hit.name, statement))

    event.listen(catalog.engine, "before_cursor_execute", seen)
    try:
        for n in range(3):
            assert _commit(catalog, key=f"web:{n}", workflow_id=f"wf-{n}", sha=str(n) * 64)
    finally:
        event.remove(catalog.engine, "before_cursor_execute", seen)
    assert compiled == []
    assert catalog.key_for_url("https://e.com/x?utm=1") == "web:warm"  # remembered; the first mapping stays


def test_commit_is_idempotent(catalog_url: str) -> None:
    catalog = Catalog(catalog_url)
    catalog.create_schema()
    catalog.create_schema()  # twice is harmless
    assert not catalog.is_committed("web:abc")
    assert _commit(catalog) is True
    assert _commit(catalog) is False
    assert catalog.is_committed("web:abc")
    assert catalog.count() == 1
    item = catalog.get("web:abc")
    assert item is not None and item.title == "T\nwith newline" and item.duration == 12.5
    assert [(a.name, a.size) for a in item.assets] == [("video", 10)]
    catalog.close()


def test_concurrent_commits_of_one_key_make_one_row(catalog_url: str) -> None:
    Catalog(catalog_url).create_schema()
    results: list[bool] = []

    def commit() -> None:
        catalog = Catalog(catalog_url)
        results.append(_commit(catalog, workflow_id=threading.current_thread().name))
        catalog.close()

    threads = [threading.Thread(target=commit, name=f"wf-{i}") for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 5 + [True]
    catalog = Catalog(catalog_url)
    assert catalog.count() == 1
    assert len(catalog.get("web:abc").assets) == 1
    catalog.close()


def test_list_filters_by_platform_and_pages(catalog_url: str) -> None:
    catalog = Catalog(catalog_url)
    catalog.create_schema()
    for i in range(5):
        _commit(catalog, key=f"web:{i}", sha=f"{i}" * 64)
    assert [i.canonical_key for i in catalog.list(limit=2, offset=1)] == ["web:1", "web:2"]
    assert catalog.list(platform="bilibili") == []
    assert len(catalog.list(platform="generic")) == 5
    catalog.close()


# SQLAlchemy cannot reflect expression indexes (the prefixes of titles and uploaders); they are
# left out of the comparison by name below.
@pytest.mark.filterwarnings("ignore:Skipped unsupported reflection of expression-based index")
def test_migrations_build_exactly_the_models_schema(catalog_url: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from trawl.storage.catalog import Base

    catalog = Catalog(catalog_url)
    catalog.create_schema()
    with catalog.engine.connect() as connection:
        # Outside the models, made by migrations alone: search (0006: SQLite's FTS5 tables, their
        # shadow tables and window positions; PostgreSQL's GIN index over the text's pieces) and
        # the expression indexes on the first characters of titles and uploaders (0004); 0008's
        # search table and its bucketed index (PostgreSQL), and the live recordings' partial index.
        context = MigrationContext.configure(connection, opts={"include_name": _in_the_models})
        diff = compare_metadata(context, Base.metadata)
    assert diff == []
    catalog.close()


def _in_the_models(name: str | None, kind: str, _parent: object) -> bool:
    name = name or ""
    return not (kind == "table" and name.startswith((*SEARCH_TABLES, "items_search_positions", "items_search",
                                                    "extras_trigram", "extras_short"))
                or kind == "index" and (name in ("ix_items_grams", "ix_items_search_grams", "ix_items_live",
                                                 "ix_extras_lines_grams")
                                        or name.endswith("_prefix")))


def test_a_catalog_at_the_newest_revision_opens_without_alembic(tmp_path: Path) -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from trawl.storage.catalog import MIGRATIONS, newest_revision

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert newest_revision() == ScriptDirectory.from_config(config).get_current_head()  # the naming holds
    url = f"sqlite:///{tmp_path / 'catalog.db'}"
    Catalog(url).create_schema()
    probe = ("import sys\nfrom trawl.storage.catalog import Catalog\n"
             f"Catalog({url!r}).create_schema()\nprint('alembic' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr


def _schema_of(path: Path) -> tuple[list[tuple[str, ...]], str, list[tuple[str, ...]]]:
    """Every entry of ``sqlite_master`` (SQLite's own and the FTS5 shadow tables too), the rows of
    the ordinary tables, and those of the FTS5 tables' configuration."""
    import sqlite3

    from trawl.storage.sqlite_schema import dump

    connection = sqlite3.connect(path)
    try:
        entries = sorted(connection.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall(),
                         key=repr)
        configs = sorted(row for (name,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE name LIKE '%\\_config' ESCAPE '\\'")
            for row in connection.execute(f'SELECT \'{name}\', * FROM "{name}"'))
        return entries, dump(connection), configs
    finally:
        connection.close()


def test_the_sqlite_snapshot_is_what_the_migrations_build() -> None:
    from trawl.storage.sqlite_schema import SNAPSHOT
    from trawl.storage.sqlite_schema_writer import from_migrations

    assert from_migrations() == SNAPSHOT.read_text(encoding="utf-8"), (
        "the migrations changed: write the snapshot again with python -m trawl.storage.sqlite_schema_writer")


def test_a_new_sqlite_catalog_is_the_migrated_one_made_without_alembic(tmp_path: Path) -> None:
    from trawl.storage.catalog import make_engine, migrate

    migrated = tmp_path / "migrated.db"
    engine = make_engine(f"sqlite:///{migrated}")
    migrate(engine, snapshot=False)
    engine.dispose()
    new = tmp_path / "new.db"
    probe = ("import sys\nfrom trawl.storage.catalog import Catalog\n"
             f"Catalog({f'sqlite:///{new}'!r}).create_schema()\nprint('alembic' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr
    assert _schema_of(new) == _schema_of(migrated)
    catalog = Catalog(f"sqlite:///{new}")
    assert _commit(catalog) and catalog.count() == 1  # the search's triggers work on it
    catalog.close()


def test_several_processes_making_one_new_sqlite_catalog_make_it_once(tmp_path: Path) -> None:
    path = tmp_path / "catalog.db"
    probe = ("from trawl.storage.catalog import Catalog\n"
             f"c = Catalog({f'sqlite:///{path}'!r}); c.create_schema(); print(c.count())")
    procs = [subprocess.Popen([sys.executable, "-c", probe], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(4)]
    outcomes = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    assert all(code == 0 and out.strip() == "0" for code, out, _ in outcomes), outcomes
    migrated = tmp_path / "migrated.db"
    from trawl.storage.catalog import make_engine, migrate

    engine = make_engine(f"sqlite:///{migrated}")
    migrate(engine, snapshot=False)
    engine.dispose()
    assert _schema_of(path) == _schema_of(migrated)


def test_a_snapshot_of_another_revision_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trawl.storage import sqlite_schema

    monkeypatch.setattr(sqlite_schema, "snapshot_revision", lambda: "0001")  # as a newer migration leaves it
    catalog = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    catalog.create_schema()  # the migrations, with Alembic
    with catalog.engine.connect() as connection:
        assert connection.execute(text("select version_num from alembic_version")).scalar() \
            == catalog_module.newest_revision()
    catalog.close()
    from trawl.storage.sqlite_schema_writer import from_migrations

    assert _schema_of(tmp_path / "catalog.db")[1] == from_migrations().split("\n", 1)[1]


def test_a_catalog_from_before_migrations_is_adopted(catalog_url: str) -> None:
    from sqlalchemy import inspect, text

    from trawl.storage.catalog import Base, newest_revision

    catalog = Catalog(catalog_url)
    Base.metadata.create_all(catalog.engine)  # how catalogs were made before migrations
    assert _commit(catalog)
    catalog.create_schema()
    with catalog.engine.connect() as connection:
        assert "alembic_version" in inspect(connection).get_table_names()
        assert connection.execute(text("select version_num from alembic_version")).scalar() == newest_revision()
    assert catalog.count() == 1
    catalog.close()


def _fill_mixed(catalog: Catalog) -> None:
    """Five items of two platforms, each with its own metadata; web:2 is not committed."""
    catalog.create_schema()
    for i in range(5):
        _commit(catalog, key=f"web:{i}", sha=f"{i}" * 64, platform="weibo" if i % 2 else "generic",
                metadata={"part": i})
    with catalog.engine.begin() as connection:
        connection.execute(update(Item).where(Item.canonical_key == "web:2").values(status="failed"))


def test_committed_items_come_in_commit_order_page_by_page_with_their_metadata(catalog_url: str) -> None:
    catalog = Catalog(catalog_url)
    _fill_mixed(catalog)
    items = list(catalog.committed(page=2))  # pages of two: the paging crosses page ends
    assert [i.canonical_key for i in items] == ["web:0", "web:1", "web:3", "web:4"]
    assert [i.metadata for i in items] == [{"part": 0}, {"part": 1}, {"part": 3}, {"part": 4}]
    assert [i.canonical_key for i in catalog.committed("weibo", page=1)] == ["web:1", "web:3"]
    assert list(catalog.committed("facebook")) == []
    assert catalog.get("web:4").metadata == {"part": 4}
    catalog.close()


def test_committed_metadata_of_committed_keys_only(catalog_url: str) -> None:
    catalog = Catalog(catalog_url)
    _fill_mixed(catalog)
    many = ["web:3", "web:2", "web:0", "web:0", "web:nope"] + [f"web:x{i}" for i in range(600)]  # two batches
    assert catalog.committed_metadata(many) == {"web:0": {"part": 0}, "web:3": {"part": 3}}
    assert catalog.committed_metadata([]) == {}
    catalog.close()


def test_a_database_error_while_reading_items_is_a_storage_error(tmp_path: Path) -> None:
    catalog = Catalog(f"sqlite:///{tmp_path / 'no-schema.db'}")  # no tables: every read fails
    with pytest.raises(StorageError, match="^catalog read failed: OperationalError: .*no such table"):
        next(catalog.committed())
    with pytest.raises(StorageError, match="^catalog read failed: "):
        catalog.committed_metadata(["web:1"])
    catalog.close()


# -- issue 23, item 14: every connect and every statement is bounded -----------------------------
def test_every_statement_is_bounded(catalog_url: str) -> None:
    """PostgreSQL had no statement timeout: one slow query held its caller for good. SQLite waits
    for a lock at most its busy timeout. A migration, run at start-up, is exempt."""
    from sqlalchemy import text

    catalog = Catalog(catalog_url)
    catalog.create_schema()
    with catalog.engine.connect() as connection:
        if catalog.engine.dialect.name == "postgresql":
            assert connection.execute(text("show statement_timeout")).scalar() == "30s"
        else:
            assert connection.execute(text("pragma busy_timeout")).scalar() == 60_000
    catalog.close()


def test_the_catalog_url_may_set_its_own_bounds(catalog_url: str) -> None:
    from sqlalchemy import text

    if not catalog_url.startswith("postgresql"):
        return  # SQLite takes no bounds from its URL
    catalog = Catalog(catalog_url + "?options=-c%20statement_timeout%3D5s%20-c%20lock_timeout%3D2s")
    with catalog.engine.connect() as connection:
        assert connection.execute(text("show statement_timeout")).scalar() == "5s"
        assert connection.execute(text("show lock_timeout")).scalar() == "2s"
    catalog.close()


def test_connecting_to_a_postgresql_that_never_answers_is_bounded() -> None:
    """No connect timeout: a server that accepted the connection and never spoke held the caller
    (the API's event loop, a worker's activity) for ever. Now it is a StorageError after 10 s."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[socket.socket] = []
    outcome: list[BaseException | int] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                accepted.append(server.accept()[0])

    def count() -> None:
        try:
            outcome.append(catalog.count())
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)

    catalog = Catalog(f"postgresql+psycopg://trawl@127.0.0.1:{server.getsockname()[1]}/trawl")
    threading.Thread(target=accept, daemon=True).start()
    caller = threading.Thread(target=count, daemon=True)
    caller.start()
    caller.join(60)  # generous: the bound is 10 s
    try:
        assert not caller.is_alive(), "connecting to a silent server never gave up"
        assert isinstance(outcome[0], StorageError) and "timeout" in str(outcome[0]), outcome
    finally:
        server.close()
        for conn in accepted:
            conn.close()
        caller.join(10)
        catalog.close()


@pytest.mark.skipif(not os.environ.get("TRAWL_TEST_POSTGRES_URL"), reason="needs the test PostgreSQL")
def test_a_postgresql_that_freezes_mid_session_is_a_storage_error_and_the_next_call_reconnects(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A frozen server (its kernel takes every packet, the process answers none) ended neither by
    keepalives nor by its own statement_timeout (a pooled connection's wait never ended): the client
    gives up on the answer after ANSWER_LIMIT_S (1 s here), drops the connection, and the next
    call, the server back, works."""
    direct = urlsplit(new_postgres_database())
    monkeypatch.setattr(_answer_bounded_connection(), "answer_limit", 1.0)
    with TcpProxy(direct.port or 5432) as link:
        catalog = Catalog(direct._replace(netloc=f"{direct.username}@127.0.0.1:{link.port}").geturl())
        catalog.create_schema()
        assert catalog.count() == 0  # a pooled connection, open through the link
        link.freeze()
        # The pool's ping on the open connection gives up after 1 s; the new connection it then
        # tries meets the frozen server too, and its connect_timeout (10 s) ends that.
        with pytest.raises(StorageError, match="did not answer within 1.0 s|connection timeout expired"):
            catalog.count()
        link.thaw()
        assert catalog.count() == 0
        catalog.close()


@pytest.mark.skipif(not os.environ.get("TRAWL_TEST_POSTGRES_URL"), reason="needs the test PostgreSQL")
def test_a_frozen_postgresql_is_given_up_on_within_the_answer_limit_whatever_it_froze_in(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The docs' figure is the code's: a call meeting a frozen server ends within ANSWER_LIMIT_S
    (statement_timeout + 5 s, 35 s by default; 6 s here, with the connect and ping bounds scaled
    alike). It measured 40-45 s against a documented ~35 s: the pool's ping on an idle connection
    waited the whole answer limit, then the new connection it tried its connect_timeout."""
    direct = urlsplit(new_postgres_database())
    monkeypatch.setattr(_answer_bounded_connection(), "answer_limit", 6.0)
    monkeypatch.setattr(catalog_module, "CONNECT_TIMEOUT_S", 2)
    monkeypatch.setattr(catalog_module, "PING_LIMIT_S", 2.0, raising=False)
    with TcpProxy(direct.port or 5432) as link:
        catalog = Catalog(direct._replace(netloc=f"{direct.username}@127.0.0.1:{link.port}").geturl())
        catalog.create_schema()
        assert catalog.count() == 0  # a pooled connection, idle, open through the link
        link.freeze()
        began = time.monotonic()
        with pytest.raises(StorageError):
            catalog.count()
        idle = time.monotonic() - began
        link.thaw()
        assert catalog.count() == 0
        # Frozen while a statement runs: its answer is waited for the answer limit.
        with catalog.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
            threading.Timer(0.5, link.freeze).start()
            began = time.monotonic()
            with pytest.raises(Exception, match="did not answer within 6.0 s"):
                conn.execute(text("SELECT pg_sleep(1)"))
            mid_statement = time.monotonic() - began
        link.thaw()
        assert catalog.count() == 0
        catalog.close()
    assert idle < 6.0 + 1.0, f"an idle pooled connection to a frozen server was given up on after {idle:.1f} s"
    assert 6.0 <= mid_statement < 6.0 + 1.0, mid_statement
