"""`pip install .` installs one top-level package, ``trawl``, that works without the repository.

The wheel is built offline (the pinned setuptools is in the test environment) and run from
where it was unpacked, outside the repository, before the repository's own copy on sys.path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.ports import free_port, free_ports

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Built from a copy: setuptools builds in the source tree (build/, *.egg-info), and the test
    # processes that each took one of this module's tests would otherwise build there at once.
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "trawl", source / "trawl", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                            "--wheel-dir", str(out), str(source)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    [wheel_file] = out.glob("trawl-*.whl")
    return wheel_file


def test_the_wheel_holds_one_top_level_package_and_its_data(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"trawl"}
    assert "trawl/storage/migrations/env.py" in names and "trawl/storage/migrations/versions/0001_initial.py" in names
    assert any(n.startswith("trawl/simulator/reference/") and n.endswith(".json") for n in names)
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "trawl = trawl.cli:console_main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_the_wheel_carries_its_licence(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: MIT" in metadata and "License-File: LICENSE" in metadata
    assert "MIT License" in zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("/LICENSE"))).decode()


def _dependencies() -> list[str]:
    """Where the test environment's dependencies are installed (its site-packages)."""
    found = list(dict.fromkeys(sysconfig.get_path(name) for name in ("purelib", "platlib")))
    assert all(Path(path).is_dir() for path in found), found
    return found


def _python_without_the_checkout(where: Path) -> str:
    """A Python whose paths hold the test environment's dependencies and not the checkout.

    The checkout's own install puts the repository on every path of the test environment's
    interpreter (a .pth line in its site-packages: docs/tests.md). A new environment (no system
    packages) is given those site-packages by a .pth line of its own, which adds the directory
    without reading the .pth files inside it; the ``temporal`` binary is linked beside its Python,
    where trawl looks for it first."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    [site_packages] = (where / "lib").glob("python3*/site-packages")
    (site_packages / "test-dependencies.pth").write_text("".join(f"{path}\n" for path in _dependencies()))
    (where / "bin" / "temporal").symlink_to(Path(sys.executable).parent / "temporal")
    return str(where / "bin" / "python")


def test_the_unpacked_wheel_crawls_without_the_repository(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    python = _python_without_the_checkout(tmp_path / "env")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRAWL_", "PYTHON"))}
    env.update(PYTHONPATH=str(site), HOME=str(tmp_path))
    work = tmp_path / "elsewhere"
    work.mkdir()
    where = subprocess.run([python, "-c", "import sys, trawl; print(trawl.__file__); print(*sys.path, sep='\\n')"],
                           cwd=work, env=env, capture_output=True, text=True, check=True)
    module, *path = where.stdout.splitlines()
    assert module.startswith(str(site))
    assert not [p for p in path if p and Path(p).resolve() == REPO], path
    version = subprocess.run([python, "-m", "trawl.cli", "--version"], cwd=work, env=env,
                             capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("trawl "), version.stderr
    # The demo crawls the simulated sites through an embedded server: migrations and the
    # simulator's captured answers come from the package.
    ports = {"TRAWL_TEMPORAL__ADDRESS": f"127.0.0.1:{free_port()}", "TRAWL_TEMPORAL__UI_PORT": str(free_port())}
    demo = subprocess.run([python, "-m", "trawl.cli", "demo", "--sim-port", str(free_ports(4))], cwd=work,
                          env={**env, **ports}, capture_output=True, text=True, timeout=240)
    assert demo.returncode == 0 and "demo OK" in demo.stdout, demo.stdout[-2000:] + demo.stderr[-2000:]
