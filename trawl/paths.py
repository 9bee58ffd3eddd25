"""Where trawl looks for its files before any setting is read: the config files and the default
data directory. Standard library only: the ``trawl`` command reads these before it loads the
settings model (:mod:`trawl.cli.quick`)."""

from __future__ import annotations

import os
from pathlib import Path


def config_file() -> Path:
    """The project's TOML file: ``TRAWL_CONFIG``, else ``trawl.toml`` here (it need not exist)."""
    return Path(os.environ.get("TRAWL_CONFIG", "trawl.toml"))


def user_config_file() -> Path:
    """The user's own TOML file, read beneath the project's: ``$XDG_CONFIG_HOME/trawl/trawl.toml``."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "trawl" / "trawl.toml"


def config_files() -> list[Path]:
    """The TOML files settings are read from, weakest first (missing ones are skipped)."""
    return [user_config_file(), config_file()]


def configured_data_dir() -> Path | None:
    """``data_dir`` as the settings will read it (``TRAWL_DATA_DIR``, else the config files), without
    loading them; None when unset, or when a file cannot be read (the settings will say why)."""
    import tomllib

    value = os.environ.get("TRAWL_DATA_DIR")
    if value:
        return Path(value)
    found = None
    for path in config_files():
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return None
        if isinstance(table.get("data_dir"), str):
            found = Path(table["data_dir"])
    return found


# The default data directory as the reference shows it (its value depends on the environment).
DEFAULT_DATA_DIR_SHOWN = "$XDG_DATA_HOME/trawl (~/.local/share/trawl)"
OLD_DEFAULT = Path("data")  # the earlier default: ./data of whatever directory a command ran in


def default_data_dir() -> Path:
    """The data directory when none is set: ``$XDG_DATA_HOME/trawl``, i.e. ``~/.local/share/trawl``
    (one archive wherever a command runs)."""
    base = os.environ.get("XDG_DATA_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: a relative value is ignored
        base = os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "trawl"


def old_archive_here(data_dir: Path) -> Path | None:
    """``./data`` when it holds an archive of an older trawl and the settings use another data
    directory by default: the command says how to keep using it."""
    if not (OLD_DEFAULT / "catalog.db").is_file():
        return None
    try:
        if OLD_DEFAULT.resolve() == data_dir.resolve():
            return None
    except OSError:
        return None
    return OLD_DEFAULT.resolve()


def data_dir() -> Path:
    """The data directory the settings will use (see :func:`configured_data_dir`)."""
    return configured_data_dir() or default_data_dir()
