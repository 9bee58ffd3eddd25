"""The workers' scratch directories: one per item workflow, holding its partial files.

A directory names its owner in a small file, so a clean-up can ask Temporal whether the item
still runs before removing what it left (the directory name itself is a shortened, hashed form of
the workflow id).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

OWNER_FILE = "workflow-id"


def workdir_name(workflow_id: str) -> str:
    """A file-system-safe directory name for one workflow's partial files: its id made safe and
    cut, then a hash of the whole id, so two ids cut alike still name two directories."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", workflow_id)[:80]
    return f"{safe}-{hashlib.sha1(workflow_id.encode()).hexdigest()[:12]}"


def mark_owner(directory: Path, workflow_id: str) -> None:
    """Record which workflow the partial files in ``directory`` belong to (once)."""
    directory.mkdir(parents=True, exist_ok=True)
    owner = directory / OWNER_FILE
    if not owner.exists():
        owner.write_text(workflow_id, encoding="utf-8")


@dataclass(frozen=True)
class WorkDir:
    path: Path
    workflow_id: str | None  # None: made before owners were recorded
    idle_s: float  # seconds since anything in it last changed


def _newest_mtime(directory: Path) -> float:
    newest = directory.stat().st_mtime
    for entry in directory.iterdir():
        try:
            newest = max(newest, entry.stat().st_mtime)
        except FileNotFoundError:
            continue
    return newest


def idle_work_dirs(work_dir: Path, idle_for_s: float, now: float) -> Iterator[WorkDir]:
    """Work directories in which nothing changed for ``idle_for_s`` seconds."""
    if not work_dir.is_dir():
        return
    for directory in work_dir.iterdir():
        if not directory.is_dir():
            continue
        try:
            idle = now - _newest_mtime(directory)
            owner = directory / OWNER_FILE
            workflow_id = owner.read_text(encoding="utf-8").strip() if owner.exists() else None
        except (FileNotFoundError, NotADirectoryError):
            continue  # removed meanwhile (another process's clean-up)
        if idle >= idle_for_s:
            yield WorkDir(directory, workflow_id or None, idle)


def remove_work_dir(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)
    if directory.exists():  # something reappeared mid-removal: leave it for the next round
        os.utime(directory)
