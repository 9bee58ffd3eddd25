"""Verification of a downloaded file before it may enter the store."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from trawl.errors import ContentCorrupt
from trawl.sniff import MIME_BY_TYPE, SNIFF_BYTES, matches_kind, sniff

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
) -> Verified:
    """Check a finished download.

    Checks, in order: the file exists with the size the download reported (and the size the
    server or platform announced), its sha256 recomputed from disk equals the streamed one, the
    platform's md5 when given, and its first bytes are a format fitting ``kind``.

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
    sha = hashlib.sha256()
    md5 = hashlib.md5(usedforsecurity=False) if expected_md5 else None
    head = b""
    with open(path, "rb") as src:
        while block := src.read(READ_CHUNK):
            if len(head) < SNIFF_BYTES:
                head += block[: SNIFF_BYTES - len(head)]
            sha.update(block)
            if md5 is not None:
                md5.update(block)
    if sha.hexdigest() != sha256:
        raise ContentCorrupt(f"{path.name}: sha256 on disk {sha.hexdigest()[:12]} != streamed {sha256[:12]}")
    if md5 is not None and expected_md5 and md5.hexdigest() != expected_md5.lower():
        raise ContentCorrupt(f"{path.name}: md5 {md5.hexdigest()} != platform's {expected_md5}")
    kind_found = sniff(head)
    if not matches_kind(kind_found, kind):
        raise ContentCorrupt(f"{path.name}: content is {kind_found}, expected a {kind} file")
    return Verified(kind_found, MIME_BY_TYPE.get(kind_found, "application/octet-stream"))
