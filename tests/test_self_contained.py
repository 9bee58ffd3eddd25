"""The suite needs nothing outside the repository: a copy of it alone collects every test."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"""(parents?\[\d+\]|\.parent)\s*/\s*["']shared["']|["']\.\./shared""")


def repository_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True)
    return [name for name in listed.stdout.splitlines() if (REPO / name).is_file()]


def test_no_test_reads_beside_the_repository() -> None:
    offenders = [name for name in repository_files()
                 if name.startswith("tests/") and name.endswith(".py") and name != "tests/test_self_contained.py"
                 and OUTSIDE.search((REPO / name).read_text(encoding="utf-8"))]
    assert offenders == []


def test_a_lone_copy_of_the_repository_collects_every_test(tmp_path: Path) -> None:
    """No ``shared/`` beside this copy: collection (module-level reads included) must still work."""
    alone = tmp_path / "lone" / "trawl"
    for name in repository_files():
        target = alone / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    # The bytecode the suite has written, beside its sources (copied with their times, so it is
    # still valid): compiling every module and rewriting every test's asserts again cost 10 s of
    # CPU. Module-level code still runs at collection, and reads what it reads. A file being
    # written by another process (``x.pyc.<n>``, renamed when complete) is left out.
    for cache in [*REPO.glob("trawl/**/__pycache__"), *REPO.glob("tests/**/__pycache__")]:
        shutil.copytree(cache, alone / cache.relative_to(REPO), dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("*.pyc.*"))
    assert not (alone.parent / "shared").exists()
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                          cwd=alone, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"^\d+ tests? collected", done.stdout, re.M), done.stdout[-500:]
