"""Commands that only read never start a server nor create files (issue 24, item 5); an explicit
``temporal.address`` is never swapped for another server (same item); a notice on a stderr that is
not a terminal is JSON like the lines around it (item 13). Real ``trawl`` subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_cli import TRAWL, run, trawl_env
from tests.ports import free_port
from tests.e2e.test_cli_mistakes import one_line_error
from tests.ports import closed_address
from tests.e2e.test_lifecycle import Command, commands  # noqa: F401 - a fixture
from tests.starter.test_embedded import DEADLINE, dev_servers, wait_until
from trawl.simulator import MediaFile, Simulator

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="scans /proc")

READ_ONLY = [["status", "url-abc"], ["crawls"], ["crawl-status", "crawl-abc"], ["watch", "list"]]


def files_under(path: Path) -> set[Path]:
    return {p.relative_to(path) for p in path.rglob("*")}


@pytest.mark.parametrize("command", READ_ONLY, ids=lambda c: " ".join(c))
def test_a_read_only_command_in_an_empty_directory_starts_nothing(tmp_path: Path, command: list[str]) -> None:
    address = closed_address()
    # Embedded servers on (the default): what a person has when nothing is configured.
    env = trawl_env(tmp_path, TRAWL_TEMPORAL__ADDRESS=address, TRAWL_TEMPORAL__UI_PORT=str(free_port()))
    before = files_under(tmp_path)
    line = one_line_error(run(command, env, tmp_path, timeout=DEADLINE))
    data_dir = str((tmp_path / "data").resolve())
    assert address in line and data_dir in line and "TRAWL_DATA_DIR" in line, line
    assert "starts none" in line, line
    assert files_under(tmp_path) == before
    assert not dev_servers(tmp_path / "data" / "temporal.db")


def test_items_in_an_empty_directory_creates_no_catalog(tmp_path: Path) -> None:
    env = trawl_env(tmp_path)
    env.pop("TRAWL_CATALOG__URL", None)  # the catalog file a directory does not have: SQLite's
    before = files_under(tmp_path)
    line = one_line_error(run(["items"], env, tmp_path))
    assert str((tmp_path / "data" / "catalog.db").resolve()) in line and "TRAWL_DATA_DIR" in line, line
    assert files_under(tmp_path) == before


def test_logs_triage_creates_no_files(tmp_path: Path) -> None:
    env = trawl_env(tmp_path)
    before = files_under(tmp_path)
    done = subprocess.run([TRAWL, "logs", "triage"], env=env, cwd=tmp_path, input="", capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert files_under(tmp_path) == before


def test_a_read_only_command_uses_the_data_directorys_running_server(tmp_path: Path,
                                                                     commands: list[Command]) -> None:  # noqa: F811
    port = free_port()
    env = trawl_env(tmp_path, TRAWL_TEMPORAL__ADDRESS=f"127.0.0.1:{port}", TRAWL_TEMPORAL__UI_PORT=str(free_port()))
    server = Command(tmp_path, ["server"], env)
    commands.append(server)
    wait_until(lambda: "Ctrl-C stops" in server.err.read_text() or server.proc.poll() is not None, "the server")
    done = run(["crawls"], env, tmp_path, timeout=DEADLINE)
    assert done.returncode == 0 and done.stderr.strip() == "no crawls", done.stderr
    assert len(dev_servers(tmp_path / "data" / "temporal.db")) == 1


# -- 13: a notice among JSON lines is JSON ----------------------------------------------------------
def test_the_workers_already_polling_notice_is_a_plain_line_on_a_pipe_and_json_when_asked(
        sim: Simulator, tmp_path: Path, temporal_address: str, commands: list[Command]) -> None:  # noqa: F811
    sim.add_file("/n.mp4", MediaFile("mp4", "notice", 20_000))
    sim.add_file("/m.mp4", MediaFile("mp4", "notice-json", 20_000))
    env = trawl_env(tmp_path, temporal_address, TRAWL_WORKER__METRICS_PORT="0")
    worker = Command(tmp_path, ["worker"], env, name="worker")
    commands.append(worker)
    wait_until(lambda: "worker started" in worker.output() or worker.proc.poll() is not None, "the worker")
    done = run(["crawl", sim.url("/n.mp4")], env, tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    notices = [line for line in lines if "already polling" in line]
    assert len(notices) == 1 and notices[0].startswith("trawl: the workers already polling"), lines
    assert not [line for line in lines if line.startswith("{")], lines  # a person's stream, piped or not

    asked = run(["--log-json", "crawl", sim.url("/m.mp4")], env, tmp_path)
    assert asked.returncode == 0, asked.stderr
    lines = [line for line in asked.stderr.splitlines() if line.strip()]
    notices = [json.loads(line) for line in lines if "already polling" in line]
    assert len(notices) == 1 and notices[0]["level"] == "warning", lines
    assert notices[0]["workers"], notices
    for line in lines:
        json.loads(line)  # every line: no plain text between the JSON lines
