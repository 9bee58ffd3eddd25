"""The ``trawl`` command starts without the workers' heavy libraries and without the worker.

Every command pays for what ``trawl.cli`` imports before it parses its arguments; the catalog's
SQLAlchemy (about a quarter of that time) loads only in the commands that read the catalog, and
the worker, its workflows and its activities only in the commands that run one. Clients address
workflows by the names in ``trawl.contracts``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

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


def test_a_command_hands_itself_to_the_warm_process_before_loading_argparse_or_asyncio() -> None:
    # What `trawl crawl URL` and `trawl URL` run before trawl.cli.quick hands them over: 70 ms of
    # imports and two parsers' construction before 2026-12-07, in every such command.
    handed = ("from trawl.cli import yt_dlp_aliases\nimport trawl.cli.quick\n"
              "assert yt_dlp_aliases(['crawl', 'http://a/1']) == ['crawl', 'http://a/1']\n"
              "assert yt_dlp_aliases(['http://a/1', '-o', 'x']) == ['crawl', 'http://a/1', '-o', 'x']")
    assert loaded_after(handed, ("argparse", "asyncio")) == []
    # Not vacuous: options before the URL need the parser (which of them take a value).
    assert loaded_after("from trawl.cli import yt_dlp_aliases\nyt_dlp_aliases(['-o', 'x', 'http://a/1'])",
                        ("argparse", "asyncio")) == ["argparse"]


def test_the_warm_process_builds_the_parser_and_configures_the_catalogs_mappers_once() -> None:
    code = ("from sqlalchemy import inspect\nfrom trawl.cli.args import command_parser\n"
            "from trawl.storage.catalog import FrontierRow\nprint(inspect(FrontierRow).configured)\n"
            "from trawl.cli.zygote import _warm\n_warm()\n"
            "print(inspect(FrontierRow).configured, command_parser.cache_info().currsize, command_parser() is command_parser())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.split() == ["False", "True", "1", "True"]


# What `trawl --version` and `--help` must not load: they are answered by trawl.cli.args alone.
STARTUP = ("temporalio", "pydantic", "trawl.settings", "trawl.platforms", "httpx", "structlog", "asyncio")


def ran(argv: list[str], probed: tuple[str, ...], env: dict[str, str] | None = None) -> list[str]:
    """The probed modules loaded by running ``trawl ARGV`` in a fresh interpreter."""
    # It leaves with os._exit, as the installed command does (trawl.cli.console_main): the
    # Temporal SDK's native threads may still call into Python while an interpreter finalizes.
    code = ("import contextlib, io, os, sys\nfrom trawl.cli import main\n"
            "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
            f"    main({argv!r})\n"
            f"print(' '.join(m for m in {probed!r} if m in sys.modules), flush=True)\n"
            "sys.stderr.flush()\nos._exit(0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_version_and_help_load_nothing_but_the_parser() -> None:
    for argv in (["--version"], ["--help"], ["crawl", "--help"], ["export", "--help"], ["watch", "add", "--help"]):
        assert ran(argv, STARTUP) == [], argv
    # The probe is not vacuous: a command that runs loads what it needs.
    assert set(ran(["logs", "triage", os.devnull], STARTUP)) >= {"pydantic", "trawl.settings"}


def test_resolve_and_a_detached_crawl_load_no_worker(tmp_path: Path, temporal_address: str) -> None:
    env = {"TRAWL_DATA_DIR": str(tmp_path / "data"), "TRAWL_TEMPORAL__ADDRESS": temporal_address,
           "TRAWL_TEMPORAL__EMBEDDED": "false", "TRAWL_NET__ALLOW_PRIVATE": "true",
           "TRAWL_TEMPORAL__TASK_QUEUE_PREFIX": f"imports-{uuid.uuid4().hex[:8]}"}
    # Port 9 on loopback: nothing answers, the resolver fails at once.
    assert ran(["resolve", "http://127.0.0.1:9/clip.mp4"], WORKER, env) == []
    assert ran(["crawl", "--detach", "http://127.0.0.1:9/clip.mp4"], WORKER, env) == []
