"""Content-addressed blob store: a file's name is its sha256, so identical bytes are stored once."""

from __future__ import annotations

import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Protocol

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class BlobStore(Protocol):
    def put(self, source: Path, sha256: str) -> str:
        """Store ``source`` (consumed) under ``sha256``; return the blob's relative path."""

    def exists(self, sha256: str) -> bool: ...

    def path(self, sha256: str) -> Path: ...


class LocalBlobStore:
    """Blobs at ``<root>/sha256/ab/cd/<sha256>``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @staticmethod
    def relative(sha256: str) -> str:
        if not _SHA256.match(sha256):
            raise ValueError(f"not a sha256 hex digest: {sha256!r}")
        return f"sha256/{sha256[:2]}/{sha256[2:4]}/{sha256}"

    def path(self, sha256: str) -> Path:
        return self.root / self.relative(sha256)

    def exists(self, sha256: str) -> bool:
        return self.path(sha256).is_file()

    def put(self, source: Path, sha256: str) -> str:
        """Move ``source`` into the store; if the blob exists already, drop ``source``.

        The file is fsynced and renamed into place, so a blob either is complete or absent.
        """
        target = self.path(sha256)
        if target.is_file():
            source.unlink(missing_ok=True)
            return self.relative(sha256)
        target.parent.mkdir(parents=True, exist_ok=True)
        # Unique per call: two workflows may commit the same bytes at the same moment.
        staging = target.with_name(f".{sha256}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
        try:
            os.replace(source, staging)
        except OSError:  # another filesystem: copy, then drop the source
            shutil.copyfile(source, staging)
            source.unlink(missing_ok=True)
        with open(staging, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(staging, target)
        return self.relative(sha256)
