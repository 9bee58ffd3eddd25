"""Content-addressed blob store: a file's name is its sha256, so identical bytes are stored once."""

from __future__ import annotations

import errno
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

        The bytes are fsynced, then renamed into place in one step: at every instant either the
        source or the complete blob exists, so a process killed anywhere in here loses nothing.
        """
        target = self.path(sha256)
        if target.is_file():
            source.unlink(missing_ok=True)
            return self.relative(sha256)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(source, "rb") as handle:
            os.fsync(handle.fileno())
        try:
            os.replace(source, target)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            # Another filesystem: copy beside the target, rename, and only then drop the source.
            staging = target.with_name(f".{sha256}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
            shutil.copyfile(source, staging)
            with open(staging, "rb") as handle:
                os.fsync(handle.fileno())
            os.replace(staging, target)
            source.unlink(missing_ok=True)
        return self.relative(sha256)
