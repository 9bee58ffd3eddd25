"""Refused input as the ``trawl`` commands show it: escaped and cut, never echoed raw (issue 38, 14).

A URL file is whatever someone handed over: a line may carry terminal escape sequences, a bell, a
right-to-left override or ten megabytes. Each command that shows such a line runs here for real
and its output is checked character by character.
"""

from __future__ import annotations

import json
from pathlib import Path

from temporalio.client import Client

from tests.e2e.test_cli import run, trawl_env
from tests.e2e.test_crawl_cli import cli, env_for
from trawl.settings import Settings
from trawl.simulator import MediaFile, Simulator
from trawl.worker.main import running_worker

HUGE = "http://127.0.0.2/" + "a" * 10_000_000
ESCAPES = "http://127.0.0.2/\x1b]0;owned\x07\x1b[2J\x1b[31mred"  # sets the title, clears the screen
BIDI = "ftp://127.0.0.2/\u202egpj.exe"  # shows as "exe.jpg" where the override is honoured
LONGEST_LINE = 1000


def url_file(tmp_path: Path, *more: str) -> Path:
    path = tmp_path / "urls.txt"
    path.write_text("\n".join([HUGE, ESCAPES, BIDI, *more]) + "\n", encoding="utf-8")
    return path


def assert_shown_safely(text: str) -> None:
    """Nothing a terminal acts on, no line of megabytes, and the refused lines named, escaped and cut."""
    for ch in text:
        assert ch == "\n" or ch.isprintable(), f"{ch!r} reached the terminal"
    assert max(len(line) for line in text.splitlines()) < LONGEST_LINE
    assert "\\x1b]0;owned\\x07\\x1b[2J" in text and "\\u202egpj.exe" in text
    assert "(10000017 chars)" in text


def test_an_attached_crawl_shows_a_files_refused_lines_escaped_and_cut(tmp_path: Path,
                                                                        temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address)
    done = run(["crawl", "-a", str(url_file(tmp_path))], env, tmp_path)
    assert done.returncode == 1, done.stderr[:2000]
    assert_shown_safely(done.stdout + done.stderr)
    assert done.stdout.count("failed") == 3
    as_json = run(["crawl", "--json", "-a", str(url_file(tmp_path))], env, tmp_path)
    lines = as_json.stdout.splitlines()
    assert len(lines) == 3 and max(len(line) for line in lines) < LONGEST_LINE
    assert [json.loads(line)["outcome"] for line in lines] == ["failed"] * 3


def test_a_crawl_of_refused_lines_only_says_so_escaped_and_cut(tmp_path: Path, temporal_address: str) -> None:
    done = run(["crawl", "--detach", "-a", str(url_file(tmp_path))], trawl_env(tmp_path, temporal_address),
               tmp_path)
    assert done.returncode == 2 and "every URL was refused" in done.stderr, done.stderr[:2000]
    assert_shown_safely(done.stdout + done.stderr)


async def test_a_detached_crawl_and_its_status_show_refused_lines_escaped_and_cut(
        temporal_client: Client, settings: Settings, sim: Simulator, tmp_path: Path) -> None:
    sim.add_file("/ok.mp4", MediaFile("mp4", "refused-ok", 20_000))
    env = env_for(settings, tmp_path)
    async with running_worker(temporal_client, settings):
        started = await cli(["crawl", "--detach", "-a", str(url_file(tmp_path, sim.url("/ok.mp4")))], env, tmp_path)
        assert started.returncode == 0, started.stderr[:2000]
        assert_shown_safely(started.stdout + started.stderr)
        assert started.stderr.count("refused") == 3
        as_json = await cli(["crawl", "--detach", "--json", "-a", str(url_file(tmp_path, sim.url("/ok.mp4")))],
                            env, tmp_path)
        assert len(as_json.stdout) < 4 * LONGEST_LINE and len(json.loads(as_json.stdout)["refused"]) == 3
        status = await cli(["crawl-status", started.stdout.strip()], env, tmp_path)
        assert status.returncode == 0, status.stderr
        assert status.stdout.count("refused   ") == 3
        assert_shown_safely(status.stdout + status.stderr)
