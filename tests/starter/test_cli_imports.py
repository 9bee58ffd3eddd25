"""The ``trawl`` command starts without the workers' heavy libraries and without the worker.

Every command pays for what ``trawl.cli`` imports before it parses its arguments; the catalog's
SQLAlchemy (about a quarter of that time) loads only in the commands that read the catalog, and
the worker, its workflows and its activities only in the commands that run one. Clients address
workflows by the names in ``trawl.contracts``.
"""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("sqlalchemy", "alembic", "trawl.storage.catalog")
WORKER = ("trawl.worker.main", "trawl.workflows", "trawl.activities", "temporalio.worker")


def loaded_after(statement: str, probed: tuple[str, ...] = HEAVY) -> list[str]:
    code = f"import sys\n{statement}\nprint(' '.join(m for m in {probed!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return done.stdout.split()


def test_the_cli_loads_without_the_catalog() -> None:
    assert loaded_after("import trawl.cli") == []


def test_the_workflow_models_load_without_the_catalog() -> None:
    # What clients decode results with (ItemResult, StoredAsset) and the activities' inputs.
    assert loaded_after("import trawl.contracts, trawl.contracts, trawl.export") == []


def test_a_worker_loads_the_catalog_when_it_builds_one() -> None:
    # The check above is not vacuous: the same probe sees SQLAlchemy once the catalog is opened.
    assert loaded_after("from trawl.storage.catalog import Catalog") == list(HEAVY[:1]) + [HEAVY[2]]


def test_clients_load_without_the_worker() -> None:
    assert loaded_after("import trawl.cli, trawl.api", WORKER) == []


def test_the_worker_probe_sees_the_worker() -> None:
    assert loaded_after("import trawl.worker.main", WORKER) == list(WORKER)
