"""What every blob store is, whichever holds the bytes: the keys (``sha256/ab/cd/<sha256>``), what
a store answers (:class:`BlobStat`, :class:`IncompleteUpload`, :class:`BlobNotFound`) and the
:class:`BlobStore` protocol. Both backends (:mod:`trawl.storage.blobs`' local directory and
:mod:`trawl.storage.s3`) build on it; :mod:`trawl.storage.blobs` hands its names on, and picks the
backend.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_KEY = re.compile(r"^sha256/([0-9a-f]{2})/([0-9a-f]{2})/([0-9a-f]{64})$")
READ_CHUNK = 1 << 20
# Every key of the store starts so; anything else beside it (in a shared bucket, say) is not ours.
BLOBS = "sha256/"


def blob_key(sha256: str) -> str:
    """The key of the blob whose bytes hash to ``sha256``: ``sha256/ab/cd/<sha256>``."""
    if not _SHA256.match(sha256):
        raise ValueError(f"not a sha256 hex digest: {sha256!r}")
    return f"sha256/{sha256[:2]}/{sha256[2:4]}/{sha256}"


def key_sha256(key: str) -> str | None:
    """The sha256 a blob key names, or None when ``key`` is not a well-formed blob key."""
    match = _KEY.match(key)
    if not match or match[3][:2] != match[1] or match[3][2:4] != match[2]:
        return None
    return match[3]


class BlobNotFound(FileNotFoundError):
    """No blob under this key."""


@dataclass(frozen=True)
class BlobStat:
    key: str
    size: int
    modified: datetime  # UTC


@dataclass(frozen=True)
class IncompleteUpload:
    """A multipart upload begun and neither completed nor aborted: its parts cost storage, and no
    key shows them. A worker killed mid-upload, or a store that died before the abort reached it,
    leaves one; so does an upload still running (hence the age)."""

    key: str  # the blob key it was uploading
    upload_id: str
    started: datetime  # UTC
    size: int  # bytes of the parts the store holds
    parts: int

    def age(self, now: datetime) -> timedelta:
        return now - self.started


class BlobReader(Protocol):
    """Bytes of one blob (or a range of it), read in order; close it (or use ``with``)."""

    def read(self, size: int = -1) -> bytes: ...

    def close(self) -> None: ...

    def __enter__(self) -> BlobReader: ...

    def __exit__(self, *exc: object) -> None: ...


class BlobStore(Protocol):
    """Where committed bytes live. Implementations are safe to share between threads."""

    def put(self, source: Path, sha256: str, size: int) -> str:
        """Store the local file ``source`` under ``blob_key(sha256)`` and return that key.

        Idempotent (a blob already there that hashes to its name is kept and ``source`` dropped), atomic
        (readers see the whole blob or none; an interrupted put leaves nothing under the key)
        and verified: ``source`` must be ``size`` bytes hashing to ``sha256``, or
        :class:`trawl.errors.ContentCorrupt` is raised and nothing is stored. ``source`` may be consumed
        (moved into the store); the caller must not use it afterwards.
        """

    def exists(self, key: str) -> bool: ...

    def stat(self, key: str) -> BlobStat | None:
        """The blob's size and time, or None when there is none under ``key``."""

    def open(self, key: str, start: int = 0, end: int | None = None) -> BlobReader:
        """Read bytes ``[start, end)`` (``end`` None: to the end); :class:`BlobNotFound` if absent."""

    def delete(self, key: str) -> bool:
        """Remove the blob; False when there was none."""

    def quarantine(self, key: str) -> str | None:
        """Move the object aside (fsck's repair), out of :meth:`iterate`; where it went, or None."""

    def iterate(self) -> Iterator[BlobStat]:
        """Every object under ``sha256/``: the blobs, and what else is there (an interrupted copy,
        say), for fsck. Objects outside ``sha256/`` are not the store's and never listed."""

    def location(self, key: str) -> str:
        """Where the object is, for people: a file path or an ``s3://`` URL."""

    def local_path(self, key: str) -> Path | None:
        """The blob's file for a local store (the CLI shows it); None for a remote one."""

    def incomplete_uploads(self) -> list[IncompleteUpload]:
        """Uploads under the store's prefix begun and not completed or aborted (none for a local
        store: its put is a rename, and an interrupted copy is an object :meth:`iterate` lists)."""

    def abort_upload(self, upload: IncompleteUpload) -> bool:
        """Drop an incomplete upload and its parts; False when it was gone already."""

    def close(self) -> None: ...
