"""One archive wherever you are (issue 43, point 2): the data directory defaults to
``$XDG_DATA_HOME/trawl``, an old ``./data`` is named in one line with how to keep using it, and
``trawl config`` prints the settings in effect and the paths. Every test sets its own HOME and
XDG_DATA_HOME: none writes into the real home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_cli import TRAWL, trawl_env
from trawl.paths import default_data_dir
from trawl.settings import load_settings
from trawl.simulator import MediaFile, Simulator


def home_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A command's environment with this test's HOME and XDG_DATA_HOME, and no TRAWL_DATA_DIR."""
    env = trawl_env(tmp_path, **extra)
    env.pop("TRAWL_DATA_DIR")
    env.pop("TRAWL_CATALOG__URL", None)  # the default catalog (SQLite in the data directory), on every pass
    env.update(HOME=str(tmp_path / "home"), XDG_DATA_HOME=str(tmp_path / "share"))
    return env


def trawl(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run([TRAWL, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_default_is_the_users_data_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no project trawl.toml
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TRAWL_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    assert default_data_dir() == tmp_path / "share" / "trawl"
    assert load_settings().data_dir == tmp_path / "share" / "trawl"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/share")  # the XDG spec: a relative value is ignored
    assert default_data_dir() == tmp_path / "home" / ".local" / "share" / "trawl"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_data_dir() == tmp_path / "home" / ".local" / "share" / "trawl"
    monkeypatch.setenv("TRAWL_DATA_DIR", str(tmp_path / "mine"))  # the setting still wins
    assert load_settings().data_dir == tmp_path / "mine"


def test_a_crawl_from_any_directory_lands_in_one_archive(tmp_path: Path, sim: Simulator, temporal_address: str) -> None:
    sim.add_file("/media/one.mp4", MediaFile("mp4", "one-archive", 200_000))
    env = home_env(tmp_path, TRAWL_TEMPORAL__ADDRESS=temporal_address, TRAWL_TEMPORAL__EMBEDDED="false")
    crawled = trawl(["crawl", "--json", sim.url("/media/one.mp4")], env, tmp_path / "Downloads")
    assert crawled.returncode == 0, crawled.stderr
    assert not (tmp_path / "Downloads" / "data").exists()  # nothing left where the command ran
    listed = trawl(["items", "--json"], env, tmp_path / "elsewhere")
    assert listed.returncode == 0, listed.stderr
    assert [item["canonical_url"] for item in map(json.loads, listed.stdout.splitlines())] == [sim.url("/media/one.mp4")]
    assert (tmp_path / "share" / "trawl" / "catalog.db").is_file()


def test_an_old_data_directory_here_is_named_with_how_to_keep_using_it(tmp_path: Path) -> None:
    old = tmp_path / "project" / "data"
    old.mkdir(parents=True)
    (old / "catalog.db").write_bytes(b"")
    env = home_env(tmp_path)
    told = trawl(["config"], env, tmp_path / "project")
    assert told.returncode == 0, told.stderr
    lines = [line for line in told.stderr.splitlines() if "earlier trawl" in line]
    assert len(lines) == 1 and f"TRAWL_DATA_DIR={old}" in lines[0] and str(tmp_path / "share" / "trawl") in lines[0]
    kept = trawl(["config", "--json"], {**env, "TRAWL_DATA_DIR": "data"}, tmp_path / "project")
    assert "earlier trawl" not in kept.stderr  # chosen: nothing to say
    assert json.loads(kept.stdout)["paths"]["data_dir"] == str(old)


def test_config_prints_the_settings_in_effect_and_the_paths(tmp_path: Path) -> None:
    env = home_env(tmp_path, TRAWL_API__TOKEN="sekrit-token", TRAWL_NET__USER_AGENT="mine/1")
    shown = trawl(["config"], env, tmp_path / "here")
    assert shown.returncode == 0, shown.stderr
    assert f"data dir    {tmp_path / 'share' / 'trawl'}  (the default" in shown.stdout
    assert str(tmp_path / "here" / "trawl.toml") in shown.stdout and "nothing running" in shown.stdout
    full = json.loads(trawl(["config", "--json"], env, tmp_path / "here").stdout)
    assert full["settings"]["net"]["user_agent"] == "mine/1"
    assert full["settings"]["api"]["token"] == "***" and "sekrit" not in json.dumps(full)
    assert full["paths"]["catalog"] == f"sqlite:///{tmp_path / 'share' / 'trawl' / 'catalog.db'}"
    assert not (tmp_path / "share").exists()  # it only reads


def test_the_suite_itself_keeps_out_of_the_real_home() -> None:
    home = Path(os.path.expanduser("~")).resolve()
    assert not default_data_dir().resolve().is_relative_to(home) or "trawl-suite-home-" in str(default_data_dir())
    assert "trawl-suite-home-" in os.environ["XDG_CONFIG_HOME"] and sys.platform
