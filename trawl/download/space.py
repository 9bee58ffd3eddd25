"""Room on the work directory's filesystem, taken by a download of known size before its bytes.

A download that starts without room fills the disk part way and then holds that space while it
waits for more: a few of them hold the whole disk between them and none can finish, not even a
small one that would fit, and a file larger than the disk waits for ever. So a download whose
size is known:

- fails as ``too_large`` (final) when the file could not fit the filesystem even if it were empty
  (its size for unprivileged users, less ``download.keep_free``): no wait makes that room;
- allocates the rest of its file before writing a byte (:func:`reserve`: ``fallocate(2)`` with
  ``FALLOC_FL_KEEP_SIZE``, so the blocks are the file's while its size, which resuming trusts,
  stays the bytes written). The filesystem keeps the account of every download's room, across
  the worker processes of the host that share ``work_dir``, and a download that got its room
  cannot meet a full disk;
- without that room (too little free to begin with, the allocation fails, or it would leave less
  than ``keep_free`` free) writes nothing and fails as ``storage_error``, retried at most 5 s
  apart: while it waits, downloads that fit go on, and the room comes back as items commit (their
  partial files leave work_dir). No allocation is tried without the room for it, and a process
  tries one at a time: one that runs out fills the disk for a moment before it gives the blocks
  back, and another write then meets a full disk (across the processes of a host that can still
  happen, when two take the last room at once);
- gives back what it did not write when its attempt ends (:func:`give_back`), so a failed,
  paused or waiting item holds only the bytes it has.

The last of several interrupted downloads to have taken its room can always go on (the room it
gave back is what it still needs), so downloads of known size never wedge one another; bytes
written by others (downloads of unknown size, other programs) can still fill the disk, and then
every download waits as before until there is room. Where ``fallocate`` is missing (not Linux)
or refused by the filesystem, the free space is compared instead, without a reservation.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

from trawl.errors import StorageError, TooLarge

MiB = 1024 * 1024
_KEEP_SIZE = 0x01  # FALLOC_FL_KEEP_SIZE (linux/falloc.h)
# What fallocate answers where the filesystem (or the kernel) cannot preallocate.
_UNSUPPORTED = frozenset({errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL, errno.ENODEV})


def _libc_fallocate() -> Callable[[int, int, int, int], int] | None:
    """Linux's fallocate(2) through ctypes (the os module has only posix_fallocate, which cannot
    keep the size and which glibc emulates by writing zeros); None elsewhere."""
    try:
        function = ctypes.CDLL(None, use_errno=True).fallocate
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    function.restype = ctypes.c_int
    return function


_FALLOCATE = _libc_fallocate()
_reserving = threading.Lock()  # reserve()'s check and allocation, one download at a time


def _mib(size: int) -> str:
    return f"{size / MiB:.1f} MiB"


def capacity(path: Path | int) -> int | None:
    """Bytes an unprivileged process can ever have on ``path``'s filesystem (a path or an open
    descriptor): its size less the blocks kept for root; None for a filesystem without a size."""
    vfs = os.fstatvfs(path) if isinstance(path, int) else os.statvfs(path)
    if vfs.f_blocks == 0:
        return None  # a pseudo filesystem (/dev, /proc): nothing to plan with
    return (vfs.f_blocks - (vfs.f_bfree - vfs.f_bavail)) * vfs.f_frsize


def check_fits(path: Path | int, size: int, keep_free: int, what: str) -> None:
    """Raise :class:`TooLarge` when ``size`` bytes cannot fit ``path``'s filesystem even empty.

    Args:
        path: the work directory or a file in it (or an open descriptor of one).
        keep_free: bytes that stay free whatever the downloads (``download.keep_free``).
        what: the file, as the message names it.
    """
    room = capacity(path)
    if room is not None and size > room - keep_free:
        where = path if isinstance(path, Path) else "work_dir"
        raise TooLarge(f"{what} is {_mib(size)} ({size} bytes): it cannot fit the work directory's filesystem "
                       f"({where}: {_mib(room)} usable in all, {_mib(keep_free)} of it kept free by "
                       f"download.keep_free); give work_dir a larger filesystem")


def reserve(fd: int, start: int, end: int, keep_free: int, what: str) -> None:
    """Take the room of bytes ``[start, end)`` of the file open as ``fd`` before they are written.

    A regular file only (a device or a pipe is left alone). On failure nothing stays allocated
    beyond the file's size.

    Raises:
        TooLarge: ``end`` bytes cannot fit the filesystem even empty.
        StorageError: not enough room now (others' downloads hold it); worth retrying later.
    """
    if end <= start or not stat.S_ISREG(os.fstat(fd).st_mode):
        return
    if capacity(fd) is None:
        return
    check_fits(fd, end, keep_free, what)
    # What the file lacks of [0, end): a resumed sparse file (segments) has some of it already.
    need = max(0, end - os.fstat(fd).st_blocks * 512)
    # One reservation at a time in this process, and none tried without the room for it: an
    # allocation that runs out takes every free block before it fails and gives them back (tmpfs,
    # ext4), and in between any other write to the filesystem (another item's owner record or
    # state, the catalog when it lives there) met a full disk, which keep_free is there to spare.
    with _reserving:
        if _free(fd) - keep_free < need:
            raise _no_room(fd, need, keep_free, what)
        if _FALLOCATE is not None and _FALLOCATE(fd, _KEEP_SIZE, start, end - start) == 0:
            if _free(fd) >= keep_free:
                return
            give_back(fd)
            raise _no_room(fd, need, keep_free, what)
        code = ctypes.get_errno() if _FALLOCATE is not None else errno.ENOSYS
        if code not in _UNSUPPORTED:
            give_back(fd)  # some filesystems (ext4) keep what they allocated before running out
            if code in (errno.ENOSPC, errno.EDQUOT):
                raise _no_room(fd, need, keep_free, what)
            raise StorageError(f"storage: reserving room for {what}: {os.strerror(code)}")


def reserve_file(part: Path, end: int, keep_free: int, what: str) -> None:
    """:func:`reserve` the room of a file of ``end`` bytes at ``part`` (created when missing) from
    its first unallocated byte: what a download in segments (a sparse file written in place) takes
    before its connections start. The room stays with the file (the holes are its own) until it
    is complete or discarded."""
    fd = os.open(part, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        reserve(fd, 0, end, keep_free, what)
    finally:
        os.close(fd)


def room_now(part: Path, size: int, keep_free: int, what: str) -> None:
    """Before asking the server: raise :class:`StorageError` when the rest of a ``size``-byte file
    at ``part`` (its bytes on disk kept) could not be reserved now, so a waiting download costs the
    server no request; and :class:`TooLarge` when it can never fit."""
    check_fits(part.parent, size, keep_free, what)
    try:
        held = os.stat(part).st_blocks * 512
    except FileNotFoundError:
        held = 0
    vfs = os.statvfs(part.parent)
    if vfs.f_blocks and vfs.f_bavail * vfs.f_frsize - keep_free < size - held:
        raise _waiting(what, size - held, vfs.f_bavail * vfs.f_frsize, keep_free)


def give_back(fd: int) -> None:
    """Free what :func:`reserve` allocated beyond the bytes written (the file's size)."""
    with_size = os.fstat(fd)
    if stat.S_ISREG(with_size.st_mode):
        os.ftruncate(fd, with_size.st_size)


def _free(fd: int) -> int:
    vfs = os.fstatvfs(fd)
    return vfs.f_bavail * vfs.f_frsize


def _no_room(fd: int, need: int, keep_free: int, what: str) -> StorageError:
    return _waiting(what, need, _free(fd), keep_free)


def _waiting(what: str, need: int, free: int, keep_free: int) -> StorageError:
    return StorageError(f"No space left on device for {what}: it needs {_mib(need)} more, the work directory's "
                        f"filesystem has {_mib(free)} free and keeps {_mib(keep_free)} free (download.keep_free); "
                        f"waiting for other items to finish and free their room")
