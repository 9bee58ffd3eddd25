"""What every downloader shares: resume state, partial files, hashing, the stop and outcome types.

A download writes ``<work_dir>/<workflow>/<asset>.part`` and keeps its state record beside it
(``<asset>.part.json``, :func:`state_path`): a :class:`ResumeState` for HTTP, the HLS
downloader's own dataclass for a stream. The record is replaced at once (:func:`save_state`), so
a crash never leaves half of one. The bytes are written with :func:`pwrite_all`, their writeback
started as they are written (:class:`Writeback`) so committing the file (an fsync) is short, and
the kept prefix of a resumed file is hashed again (:func:`hash_prefix`) so the streamed sha256
covers the whole file. Bytes that never pass through Python (spliced from the socket into the
file) are hashed by reading the file back as it grows (:class:`ReadBackHasher`).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

HASH_CHUNK = 1 << 20
WRITE_BATCH = 1 << 20
# Writeback of a file being written is started every KICK bytes and waited for WINDOW behind.
WRITEBACK_KICK = 8 << 20
WRITEBACK_WINDOW = 64 << 20


@dataclass
class ResumeState:
    """What is known about a partial file; sent as heartbeat details and kept beside the file."""

    offset: int = 0
    total: int | None = None
    etag: str | None = None
    last_modified: str | None = None
    url: str | None = None
    # Downloads in segments: ``[start, end (exclusive), bytes done]`` each; ``offset`` is then the
    # sum of the bytes done (for progress), and the file is ``total`` bytes long (sparse).
    segments: list[list[int]] | None = None

    @property
    def estimated_total(self) -> int | None:
        """The file's size as far as known (for progress; the HLS state extrapolates its own)."""
        return self.total

    @classmethod
    def of(cls, details: object) -> ResumeState | None:
        """The state in heartbeat details, or None when they hold no (or another kind of) state."""
        if not isinstance(details, dict):
            return None
        try:
            return cls(**details)
        except TypeError:
            return None


@dataclass
class DownloadOutcome:
    path: str
    size: int
    sha256: str
    total: int | None
    etag: str | None
    url: str
    mime: str | None
    resumed_from: int  # bytes kept from earlier attempts
    transferred: int  # bytes received in this attempt
    connections: int = 1  # the most connections used at once
    live: dict[str, Any] | None = None  # a live recording's part: its record (trawl.download.live.part_record)


class Stopped(Exception):
    """The caller asked the download to stop (pause, cancel, shutdown); the partial file is kept."""

    def __init__(self, message: str, offset: int = 0) -> None:
        super().__init__(message)
        self.offset = offset  # bytes safely on disk


# -- state records beside the partial file ------------------------------------------------------
def state_path(part: Path) -> Path:
    return part.with_name(part.name + ".json")


def load_state(part: Path) -> ResumeState | None:
    try:
        return ResumeState(**json.loads(state_path(part).read_text()))
    except (OSError, ValueError, TypeError):
        return None


R = TypeVar("R")  # a download's state record: ResumeState, an HLS state


def fresher(heartbeat: R | None, saved: R | None) -> R | None:
    """The record to resume a partial file from: the one beside it when there is one, else the
    last heartbeat's.

    The record beside the file is written before a download writes its first byte (a 200 or a new
    segmented run included) and at every heartbeat call, and removed when it cannot be, so it
    describes the bytes on this disk. A heartbeat that says otherwise was sent before: by an
    attempt on another host (whose file is not here), by an attempt before a restart, or before
    a new segmented run gave the file its length. Resuming this file's bytes under its record
    (another version, or segments "done" that are holes here) would splice two versions into one
    file or commit zeros; under their own record, a server of another version answers 200 and
    the download starts over.
    """
    return saved if saved is not None else heartbeat


def save_state(part: Path, state: object) -> None:
    """Write a download's state record (a dataclass: :class:`ResumeState`, an HLS state) beside
    ``part``, replacing the old one at once so a crash never leaves half a record."""
    tmp = state_path(part).with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state)))
    os.replace(tmp, state_path(part))


def verified_path(part: Path) -> Path:
    """Where a file downloaded and verified waits for its commit: its download's record
    (trawl.activities.small), so that a retry after a failed commit does not download it again."""
    return part.with_name(part.name + ".verified.json")


def discard(part: Path) -> None:
    """Remove a partial file, its state and its record as verified."""
    for path in (part, state_path(part), verified_path(part)):
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def strong_validator(etag: str | None, last_modified: str | None) -> str | None:
    """What If-Range may carry: a strong ETag, else Last-Modified, else None."""
    return etag if etag and not etag.startswith("W/") else last_modified


# -- writing the partial file -------------------------------------------------------------------
def pwrite_all(fd: int, chunks: list[bytes], offset: int) -> None:
    """Write ``chunks`` at ``offset`` with as few system calls as the kernel allows."""
    written = os.pwritev(fd, chunks, offset)
    total = sum(len(c) for c in chunks)
    if written < total:  # a short write (rare on regular files): finish it piece by piece
        rest = memoryview(b"".join(chunks))[written:]
        offset += written
        while rest:
            n = os.pwrite(fd, rest, offset)
            rest, offset = rest[n:], offset + n


def _libc_sync_file_range() -> Callable[[int, int, int, int], int] | None:
    """Linux's sync_file_range(2) through ctypes (the os module lacks it); None elsewhere."""
    try:
        function = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


_SYNC_RANGE = _libc_sync_file_range()
# sync_file_range flags (linux/fs.h).
_WAIT_BEFORE, _WRITE, _WAIT_AFTER = 1, 2, 4


class Writeback:
    """Keeps a file's dirty pages few while it is written, so a later fsync is short.

    Writeback of what was written is started every :data:`WRITEBACK_KICK` bytes
    (``SYNC_FILE_RANGE_WRITE`` only queues it) and waited for :data:`WRITEBACK_WINDOW` behind the
    writer: the disk writes while the network reads, instead of all at the end. Not a durability
    promise (the commit's fsync is): where ``sync_file_range`` is missing or refused, a no-op.
    """

    def __init__(self, fd: int, start: int) -> None:
        self.fd = fd
        self.kicked = self.waited = start
        self.enabled = _SYNC_RANGE is not None

    def written(self, end: int, final: bool = False) -> None:
        if not self.enabled:
            return
        if end - self.kicked >= WRITEBACK_KICK or (final and end > self.kicked):
            self._call(self.kicked, end - self.kicked, _WRITE)
            self.kicked = end
        if self.kicked - self.waited >= 2 * WRITEBACK_WINDOW:
            upto = self.kicked - WRITEBACK_WINDOW
            self._call(self.waited, upto - self.waited, _WAIT_BEFORE | _WRITE | _WAIT_AFTER)
            self.waited = upto

    def _call(self, offset: int, length: int, flags: int) -> None:
        if self.enabled and _SYNC_RANGE(self.fd, offset, length, flags) != 0:
            self.enabled = False  # a file system that refuses it: the fsync at commit does it all


# -- hashing ------------------------------------------------------------------------------------
def hash_into(digest: hashlib._Hash, src: BinaryIO, length: int | None = None) -> int:
    """Feed ``digest`` from ``src`` (up to ``length`` bytes) through one reused buffer."""
    buffer = bytearray(HASH_CHUNK)
    view = memoryview(buffer)
    done = 0
    while length is None or done < length:
        want = HASH_CHUNK if length is None else min(HASH_CHUNK, length - done)
        n = src.readinto(view[:want])
        if not n:
            break
        digest.update(view[:n])
        done += n
    return done


# Bytes read back per call by ReadBackHasher: hashed while still in the CPU's cache.
READ_BACK = 256 << 10


class ReadBackHasher:
    """Feeds a digest from a file as it is written, on its own thread, a little behind the writer.

    For bytes that reach the file without passing through Python (``splice``): they are read
    back from the page cache right after they were written and hashed there, beside the socket
    reads (``preadv`` and hashlib release the GIL). What is hashed is what the file holds. The
    thread reads its own duplicate of the file descriptor, so the writer may close its own.
    """

    def __init__(self, digest: hashlib._Hash, fd: int, start: int) -> None:
        self.digest = digest
        self.fd = os.dup(fd)
        self.hashed = self.written = start
        self.closing = False
        self.error: BaseException | None = None
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._run, name="sha256-read-back", daemon=True)
        self.thread.start()

    def update(self, batch: list, release: Callable[[], None] | None = None, size: int = 0) -> None:
        """``size`` more bytes are in the file, after those before (``batch`` is not needed)."""
        with self.cond:
            self.written += size
            self.cond.notify()
        if release is not None:
            release()

    def _run(self) -> None:
        buffer = bytearray(READ_BACK)
        view = memoryview(buffer)
        try:
            while True:
                with self.cond:
                    while self.hashed >= self.written and not self.closing:
                        self.cond.wait()
                    upto = self.written
                    if self.hashed >= upto:
                        return
                hashed = self.hashed
                while hashed < upto:
                    n = os.preadv(self.fd, [view[: min(READ_BACK, upto - hashed)]], hashed)
                    if n <= 0:
                        raise OSError(f"read back {n} bytes at {hashed} of {upto} written")
                    self.digest.update(view[:n])
                    hashed += n
                with self.cond:
                    self.hashed = hashed
        except BaseException as exc:  # noqa: BLE001 - raised by finish, in the writer's thread
            self.error = exc
        finally:
            os.close(self.fd)

    def finish(self) -> None:
        """Wait until every byte written is hashed.

        Raises:
            OSError: the file could not be read back (its digest is then incomplete).
        """
        with self.cond:
            self.closing = True
            self.cond.notify()
        self.thread.join()
        if self.error is not None:
            raise self.error


def hash_prefix(part: Path, length: int) -> hashlib._Hash:
    """sha256 of the first ``length`` bytes of ``part`` (the kept prefix of a resumed file)."""
    digest = hashlib.sha256()
    if length == 0:
        return digest
    with open(part, "rb") as src:
        hash_into(digest, src, length)
    return digest


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as src:
        hash_into(digest, src)
    return digest.hexdigest()
