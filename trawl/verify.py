"""Verification of a downloaded file before it may enter the store."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from trawl.errors import ContentCorrupt
from trawl.sniff import FFMPEG_DEMUXERS, MIME_BY_TYPE, SNIFF_BYTES, ffmpeg_input, matches_kind, sniff

READ_CHUNK = 1 << 20


@dataclass
class Verified:
    sniffed: str
    mime: str


def verify_file(
    path: Path,
    *,
    kind: str,
    sha256: str,
    size: int,
    expected_size: int | None = None,
    expected_md5: str | None = None,
    expected_duration: float | None = None,
    rehash: bool = True,
) -> Verified:
    """Check a finished download.

    Checks, in order: the file exists with the size the download reported (and the size the
    server or platform announced), its sha256 recomputed from disk equals the streamed one (only
    when ``rehash``), the platform's md5 when given, its first bytes are a format fitting
    ``kind``, and, when ffprobe is installed and reads the file (as the format sniffed, opening
    nothing else), its duration is within tolerance of the platform's.

    Without ``rehash`` the whole file is read only for a platform md5: the sha256 hashed while
    streaming is of the very bytes written, the commit fsyncs them and checks the size, and
    fsck re-hashes stored blobs later; a second full read would catch only rot within minutes.

    Raises:
        ContentCorrupt: naming the first check that failed.
    """
    try:
        actual_size = path.stat().st_size
    except FileNotFoundError:
        raise ContentCorrupt(f"{path.name}: file is missing") from None
    if actual_size != size:
        raise ContentCorrupt(f"{path.name}: {actual_size} bytes on disk, download reported {size}")
    if expected_size is not None and actual_size != expected_size:
        raise ContentCorrupt(f"{path.name}: {actual_size} bytes, expected {expected_size}")
    if actual_size == 0:
        raise ContentCorrupt(f"{path.name}: empty file")
    sha = hashlib.sha256() if rehash else None
    md5 = hashlib.md5(usedforsecurity=False) if expected_md5 else None
    with open(path, "rb") as src:
        head = src.read(SNIFF_BYTES)
        if sha is not None or md5 is not None:
            src.seek(0)
            buffer = bytearray(READ_CHUNK)
            view = memoryview(buffer)
            while n := src.readinto(buffer):
                for digest in (sha, md5):
                    if digest is not None:
                        digest.update(view[:n])
    if sha is not None and sha.hexdigest() != sha256:
        raise ContentCorrupt(f"{path.name}: sha256 on disk {sha.hexdigest()[:12]} != streamed {sha256[:12]}")
    if md5 is not None and expected_md5 and md5.hexdigest() != expected_md5.lower():
        raise ContentCorrupt(f"{path.name}: md5 {md5.hexdigest()} != platform's {expected_md5}")
    kind_found = sniff(head)
    if not matches_kind(kind_found, kind):
        raise ContentCorrupt(f"{path.name}: content is {kind_found}, expected a {kind} file")
    if expected_duration and kind in ("video", "audio"):
        actual = probe_duration(path, kind_found)
        if actual is not None and abs(actual - expected_duration) > duration_tolerance(expected_duration):
            raise ContentCorrupt(f"{path.name}: lasts {actual:.1f} s, the platform says {expected_duration:.1f} s")
    return Verified(kind_found, mime_of(kind_found, kind))


# Containers that hold audio or video alike: sniffing does not read the tracks, the asset's kind
# says which (a DASH audio segment is an ISO file with a generic brand, not M4A).
AUDIO_MIME_BY_TYPE = {"mp4": "audio/mp4", "webm": "audio/webm", "ogg": "audio/ogg"}


def mime_of(sniffed: str, kind: str) -> str:
    """The MIME type to record for a file sniffed as ``sniffed`` and saved as ``kind``."""
    if kind == "audio" and sniffed in AUDIO_MIME_BY_TYPE:
        return AUDIO_MIME_BY_TYPE[sniffed]
    return MIME_BY_TYPE.get(sniffed, "application/octet-stream")


def duration_tolerance(expected: float) -> float:
    """Platforms round durations and containers pad them: 2 s or 5 %, whichever is larger."""
    return max(2.0, expected * 0.05)


def probe_duration(path: Path, sniffed: str) -> float | None:
    """The container's duration by ffprobe, or None when ffprobe is absent or cannot read the file.

    ffprobe reads the file as ``sniffed`` (a :func:`~trawl.sniff.sniff` type) and opens nothing
    else (:func:`~trawl.sniff.ffmpeg_input`); a type ffmpeg has no demuxer for is not probed.
    """
    ffprobe = shutil.which("ffprobe")
    demuxer = FFMPEG_DEMUXERS.get(sniffed)
    if ffprobe is None or demuxer is None:
        return None
    try:
        done = subprocess.run(
            [ffprobe, "-v", "error", "-show_entries", "format=duration", "-of", "default=nw=1:nk=1",
             *ffmpeg_input(path, demuxer)],
            capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    try:
        return float(done.stdout.strip().splitlines()[0]) if done.returncode == 0 else None
    except (ValueError, IndexError):
        return None
