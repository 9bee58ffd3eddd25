"""Small real filesystems for the tests of a full disk: a tmpfs of a few MiB.

:func:`small_filesystem` mounts one for the test process itself (mounting needs root: the tests
that use it skip otherwise, saying so); :func:`in_small_filesystem` prefixes a command so that it
runs in a mount namespace of its own with the tmpfs mounted there (``unshare`` from util-linux,
as root or wherever unprivileged user namespaces are allowed), which disappears with it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_filesystem(path: Path, size: int) -> Iterator[Path]:
    """A tmpfs of ``size`` bytes at ``path`` (created) for the duration of the block."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (CI runs as root)")
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "--lazy", str(path)], check=False)


def in_small_filesystem(path: Path, size: int, argv: list[str]) -> list[str]:
    """``argv`` run with a tmpfs of ``size`` bytes mounted at ``path`` that only it sees."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    path.mkdir(parents=True, exist_ok=True)
    script = 'mount -t tmpfs -o "size=$1" tmpfs "$2" && shift 2 && exec "$@"'
    return ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh", str(size), str(path), *argv]
