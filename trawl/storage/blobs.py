"""Content-addressed blob store: a blob's key is its sha256, so identical bytes are stored once.

Everything outside ``trawl/storage/`` speaks of a blob by its key, ``sha256/ab/cd/<sha256>``,
through :class:`BlobStore`; which backend holds the bytes is chosen by ``storage.url``
(:func:`open_blob_store`), as Scrapy picks its file stores by URI scheme:

- empty or a path: :class:`LocalBlobStore`, a directory (``data/blobs`` by default);
- ``s3://bucket/prefix``: :class:`trawl.storage.s3.S3BlobStore`, any S3-compatible store.

Errors: a key that is not a blob key is a ``ValueError``; a blob that is not there is
:class:`BlobNotFound` (a ``FileNotFoundError``); bytes that do not hash to the name they are put
under are :class:`trawl.errors.ContentCorrupt`; the store failing (disk full, the object store
down, credentials refused) is :class:`trawl.errors.StorageError`.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from trawl.errors import ContentCorrupt
from trawl.storage.protocol import (  # noqa: F401  (handed on: the store's names are read from here too)
    BLOBS,
    READ_CHUNK,
    BlobNotFound,
    BlobReader,
    BlobStat,
    BlobStore,
    IncompleteUpload,
    blob_key,
    key_sha256,
)

if TYPE_CHECKING:
    from trawl.settings import Settings


def hash_blob(store: BlobStore, key: str) -> tuple[str, int]:
    """The sha256 and size of a stored blob, streamed from the store (never held in memory)."""
    digest = hashlib.sha256()
    size = 0
    with store.open(key) as reader:
        while block := reader.read(READ_CHUNK):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def read_blob(store: BlobStore, key: str, limit: int) -> bytes:
    """A stored blob's first ``limit`` bytes (a small file read whole: an extra's text)."""
    blocks: list[bytes] = []
    size = 0
    with store.open(key, 0, limit) as reader:
        while size < limit and (block := reader.read(min(READ_CHUNK, limit - size))):
            blocks.append(block)
            size += len(block)
    return b"".join(blocks)


def abandoned_uploads(uploads: Iterable[IncompleteUpload], older_than: timedelta,
                      now: datetime | None = None) -> list[IncompleteUpload]:
    """Those of ``uploads`` begun at least ``older_than`` ago: abandoned (an upload running that
    long would have its commit's start_to_close to answer for)."""
    now = now or datetime.now(UTC)
    return [upload for upload in uploads if upload.age(now) >= older_than]


def abort_uploads(store: BlobStore, uploads: Iterable[IncompleteUpload]) -> list[IncompleteUpload]:
    """Abort ``uploads``; the ones this call aborted (another worker may be quicker)."""
    return [upload for upload in uploads if store.abort_upload(upload)]


def reclaim_uploads(store: BlobStore, older_than: timedelta, now: datetime | None = None) -> list[IncompleteUpload]:
    """Abort the store's abandoned uploads; the ones this call aborted."""
    return abort_uploads(store, abandoned_uploads(store.incomplete_uploads(), older_than, now))


def open_blob_store(settings: Settings) -> BlobStore:
    """The blob store ``storage.url`` names: a local directory, or an S3 bucket and prefix."""
    if settings.storage.url.startswith("s3://"):
        from trawl.storage.s3 import S3BlobStore  # boto3 is imported only by those who use it

        return S3BlobStore.from_settings(settings.storage)
    return LocalBlobStore(settings.blobs_dir, quarantine_dir=settings.data_dir / "quarantine")


class _FileRange:
    """A file read from ``start`` up to ``end``."""

    def __init__(self, handle: BinaryIO, start: int, end: int | None) -> None:
        self._handle = handle
        handle.seek(start)
        self._left = None if end is None else max(0, end - start)

    def read(self, size: int = -1) -> bytes:
        if self._left is None:
            return self._handle.read(size)
        want = self._left if size < 0 else min(size, self._left)
        data = self._handle.read(want)
        self._left -= len(data)
        return data

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> _FileRange:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalBlobStore:
    """Blobs at ``<root>/sha256/ab/cd/<sha256>``; fsck's quarantine in ``quarantine_dir``."""

    def __init__(self, root: Path, quarantine_dir: Path | None = None) -> None:
        self.root = Path(root)
        self.quarantine_dir = Path(quarantine_dir) if quarantine_dir else self.root.parent / "quarantine"

    def _file(self, key: str) -> Path:
        if key_sha256(key) is None and not _is_relative_name(key):
            raise ValueError(f"not a key in the store: {key!r}")
        return self.root / key

    def local_path(self, key: str) -> Path | None:
        return self._file(key)

    def location(self, key: str) -> str:
        return str(self._file(key))

    def exists(self, key: str) -> bool:
        return self._file(key).is_file()

    def stat(self, key: str) -> BlobStat | None:
        try:
            st = os.stat(self._file(key))
        except FileNotFoundError:
            return None
        return BlobStat(key, st.st_size, datetime.fromtimestamp(st.st_mtime, UTC))

    def open(self, key: str, start: int = 0, end: int | None = None) -> BlobReader:
        try:
            handle = open(self._file(key), "rb")  # noqa: SIM115 - closed by the reader
        except FileNotFoundError:
            raise BlobNotFound(f"no blob {key} in {self.root}") from None
        return _FileRange(handle, start, end)

    def delete(self, key: str) -> bool:
        try:
            self._file(key).unlink()
        except FileNotFoundError:
            return False
        return True

    def quarantine(self, key: str) -> str | None:
        path = self._file(key)
        if not path.exists():
            return None
        self.quarantine_dir.mkdir(parents=True, exist_ok=True)
        target = self.quarantine_dir / path.name
        shutil.move(str(path), target)
        return str(target)

    def incomplete_uploads(self) -> list[IncompleteUpload]:
        return []

    def abort_upload(self, upload: IncompleteUpload) -> bool:
        return False

    def iterate(self) -> Iterator[BlobStat]:
        top = self.root / BLOBS
        if not top.exists():
            return
        for path in sorted(p for p in top.rglob("*") if p.is_file()):
            st = path.stat()
            yield BlobStat(path.relative_to(self.root).as_posix(), st.st_size,
                           datetime.fromtimestamp(st.st_mtime, UTC))

    def close(self) -> None:
        pass

    def put(self, source: Path, sha256: str, size: int) -> str:
        """Move ``source`` into the store; if the blob is there already, drop ``source``.

        The bytes are fsynced, then renamed into place in one step: at every instant either the
        source or the complete blob exists, so a process killed anywhere in here loses nothing.
        A rename keeps the very file verify hashed, so its size is checked; a copy to another
        filesystem is hashed on the way. The blob is made read-only (0444) and its directory
        fsynced after the rename.
        """
        key = blob_key(sha256)
        target = self.root / key
        actual = os.stat(source).st_size
        if actual != size:
            raise ContentCorrupt(f"{source} is {actual} bytes, verify saw {size}: not stored")
        # A blob already there is trusted only once it hashes to its name: one of the right size
        # but damaged (bit rot, an edited hard link) would otherwise stay for ever.
        if target.is_file() and target.stat().st_size == size and _file_sha256(target) == sha256:
            source.unlink(missing_ok=True)
            return key
        created = _make_dirs(target.parent)
        with open(source, "rb") as handle:
            os.fsync(handle.fileno())
        try:
            os.replace(source, target)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            # Another filesystem: copy beside the target, rename, and only then drop the source.
            staging = target.with_name(f".{sha256}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
            try:
                copied = _copy_hashing(source, staging)
                if copied != sha256:
                    raise ContentCorrupt(f"{source} hashes to {copied[:16]}..., not to {sha256[:16]}...: not stored")
                os.replace(staging, target)
            finally:
                staging.unlink(missing_ok=True)
            source.unlink(missing_ok=True)
        # Read-only, so that editing a blob (or an export hard-linked to it) takes intent.
        os.chmod(target, 0o444)
        # Its time is when it was stored, not when the download last wrote (a rename keeps that):
        # an unreferenced blob is judged by it (trawl.storage.orphans).
        os.utime(target)
        # The rename (and any directory made for it) reaches the disk before the commit is
        # recorded: a power cut must not lose a blob the catalog names.
        for directory in (target.parent, *created):
            _fsync_dir(directory)
        return key


def _make_dirs(path: Path) -> list[Path]:
    """``mkdir -p path``; the parents of the directories it created (whose entries are new)."""
    missing: list[Path] = []
    while not path.is_dir():
        missing.append(path)
        path = path.parent
    for directory in reversed(missing):
        directory.mkdir(exist_ok=True)
    return [d.parent for d in missing]


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(READ_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _copy_hashing(source: Path, target: Path) -> str:
    """Copy ``source`` to ``target`` (fsynced), returning the sha256 of what was written."""
    digest = hashlib.sha256()
    with open(source, "rb") as src, open(target, "wb") as dst:
        while block := src.read(READ_CHUNK):
            digest.update(block)
            dst.write(block)
        dst.flush()
        os.fsync(dst.fileno())
    return digest.hexdigest()


def _is_relative_name(key: str) -> bool:
    """A relative path inside the store (what :meth:`LocalBlobStore.iterate` lists), never escaping it."""
    parts = key.split("/")
    return bool(key) and not key.startswith("/") and all(p not in ("", ".", "..") for p in parts)
