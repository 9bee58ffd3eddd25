"""Sizes with units anywhere a size is set, and the layered config files (user, project, env)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trawl.settings import ConfigError, load_settings
from trawl.sizes import parse_size


@pytest.mark.parametrize("text, size", [
    ("1048576", 1 << 20), ("10G", 10 << 30), ("500MiB", 500 << 20), ("1.5M", 3 << 19), ("64K", 64 << 10),
    ("64KB", 64_000), ("2GB", 2_000_000_000), ("10 gib", 10 << 30), ("512B", 512), (4096, 4096),
])
def test_sizes_read_as_people_write_them(text: str | int, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "x", "10Q", "-1", "1.2.3", "GB", "10Mbit", "ten megs"])
def test_what_is_not_a_size_is_said(text: str) -> None:
    with pytest.raises(ValueError, match="not a size"):
        parse_size(text)


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), "9" * 400 + "G"])
def test_a_size_beyond_any_number_is_not_a_size(value: float | str) -> None:
    with pytest.raises(ValueError, match="not a size: .*a size is a finite number of bytes"):
        parse_size(value)


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("TRAWL_CONFIG", "TRAWL_DOWNLOAD__MAX_FILE_SIZE", "TRAWL_DOWNLOAD__LIMIT_RATE", "TRAWL_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (tmp_path / "project").mkdir()
    monkeypatch.chdir(tmp_path / "project")
    return tmp_path


def test_sizes_with_units_in_files_and_environment(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (isolated / "project" / "trawl.toml").write_text(
        '[download]\nmax_file_size = "10G"\nsegment_min_size = "64MiB"\n[storage]\ns3_part_size = "16M"\n')
    monkeypatch.setenv("TRAWL_DOWNLOAD__LIMIT_RATE", "500K")
    settings = load_settings()
    assert settings.download.max_file_size == 10 << 30 and settings.download.segment_min_size == 64 << 20
    assert settings.storage.s3_part_size == 16 << 20 and settings.download.limit_rate == 500 << 10
    monkeypatch.setenv("TRAWL_DOWNLOAD__MAX_FILE_SIZE", "lots")
    with pytest.raises(ConfigError, match=r"download\.max_file_size: Value error, not a size: 'lots'"):
        load_settings()


def test_user_file_then_project_file_then_environment(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = isolated / "xdg" / "trawl" / "trawl.toml"
    user.parent.mkdir(parents=True)
    user.write_text('data_dir = "/srv/user-data"\n[download]\nlimit_rate = "1M"\nmax_redownloads = 5\n'
                    '[export]\ntemplate = "{uploader}/{title}.{ext}"\n')
    settings = load_settings()
    assert str(settings.data_dir) == "/srv/user-data" and settings.download.limit_rate == 1 << 20
    assert settings.export.template == "{uploader}/{title}.{ext}"

    (isolated / "project" / "trawl.toml").write_text('[download]\nlimit_rate = "2M"\n')
    settings = load_settings()  # merged table by table: the project's rate, the user's other values
    assert settings.download.limit_rate == 2 << 20 and settings.download.max_redownloads == 5
    assert str(settings.data_dir) == "/srv/user-data"

    named = isolated / "named.toml"
    named.write_text('[download]\nlimit_rate = "3M"\n')
    monkeypatch.setenv("TRAWL_CONFIG", str(named))  # instead of ./trawl.toml, as before
    assert load_settings().download.limit_rate == 3 << 20
    monkeypatch.setenv("TRAWL_DOWNLOAD__LIMIT_RATE", "4M")
    assert load_settings().download.limit_rate == 4 << 20


@pytest.mark.parametrize("toml", ["inf", "nan", "1e999"])
def test_an_infinite_size_in_a_file_is_a_config_error(isolated: Path, toml: str) -> None:
    (isolated / "project" / "trawl.toml").write_text(f"[download]\nmax_file_size = {toml}\n")
    with pytest.raises(ConfigError, match=r"download\.max_file_size: Value error, not a size: (inf|nan)"):
        load_settings()


def test_a_broken_user_file_is_named(isolated: Path) -> None:
    user = isolated / "xdg" / "trawl" / "trawl.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[download\n")
    with pytest.raises(ConfigError, match=r"xdg/trawl/trawl\.toml: line 1, column \d+: not valid TOML"):
        load_settings()


def test_a_bad_export_template_is_a_config_error(isolated: Path) -> None:
    (isolated / "project" / "trawl.toml").write_text('[export]\ntemplate = "{titel}.{ext}"\n')
    with pytest.raises(ConfigError, match=r"export\.template: Value error, .*unknown field \{titel\}"):
        load_settings()
