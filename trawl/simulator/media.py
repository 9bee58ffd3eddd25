"""Generated media files: real container headers, deterministic pseudo-random payload.

Images are real pictures (``samples/``) followed by the payload, which image decoders skip
after the picture's end, so a browser shows them. A ``playable`` MP4 is a real three-second
clip (VP9 in MP4, which every browser plays) whose payload is a top-level ``free`` box, a
``playable`` WebM a three-second VP9 and Opus clip whose payload is a top-level ``Void``
element, and a ``playable`` MP3 a three-second tone after an ID3 tag whose private frame is the
payload: the library page plays them. Only the demo's own files ask for that, since a file that really lasts
three seconds fails verification against a platform that says it lasts longer.

A ``sample`` file is one of the clips the simulated platforms serve (``samples/make-clips.sh``
made them with ffmpeg; each lasts as long as its platform says): the clip whole when ``size`` is
its own size, else, for MP4, the clip followed by a ``free`` box of payload up to ``size`` (so a
stream keeps the size, and bytes of its own, that the tests cut and resume at).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

BLOCK = 1 << 20

CONTENT_TYPES = {
    "mp4": "video/mp4", "m4a": "audio/mp4", "webm": "video/webm", "flv": "video/x-flv",
    "jpeg": "image/jpeg", "png": "image/png", "mp3": "audio/mpeg", "html": "text/html; charset=utf-8",
}


@lru_cache(maxsize=64)
def _payload_block(seed: str) -> bytes:
    block = hashlib.shake_256(seed.encode()).digest(BLOCK)
    return block + block  # doubled, so any window of up to BLOCK bytes is one slice


SAMPLES = Path(__file__).resolve().parent / "samples"
REAL = {"mp4": "clip.mp4", "webm": "clip.webm", "mp3": "tone.mp3", "jpeg": "cover.jpg", "png": "cover.png"}
FREE_HEADER = 16  # a `free` box with a 64-bit size
VOID_HEADER = 9  # an EBML Void element with an 8-byte size
ID3_HEADERS = 20  # the ID3v2 tag's header and its PRIV frame's
ID3_OWNER = b"trawl-simulator\x00"


@lru_cache(maxsize=8)
def _sample(name: str) -> bytes:
    return (SAMPLES / name).read_bytes()


def _real_header(fmt: str, size: int) -> tuple[bytes, bytes] | None:
    """A real file's bytes to start with, or None when ``size`` has no room for them."""
    sample = _sample(REAL[fmt])
    if fmt == "mp4":
        if size < len(sample) + FREE_HEADER:
            return None
        return sample + struct.pack(">I4sQ", 1, b"free", size - len(sample)), b""
    if fmt == "webm":
        if size < len(sample) + VOID_HEADER:
            return None
        return sample + b"\xec\x01" + (size - len(sample) - VOID_HEADER).to_bytes(7, "big"), b""
    if fmt == "mp3":
        # An ID3v2.3 tag whose one private frame is the payload, then the real audio frames.
        frame = size - len(sample) - ID3_HEADERS
        if frame < len(ID3_OWNER) or size - len(sample) >= 1 << 28:
            return None
        tag = size - len(sample) - 10
        syncsafe = bytes((tag >> shift) & 0x7F for shift in (21, 14, 7, 0))
        return b"ID3\x03\x00\x00" + syncsafe + b"PRIV" + struct.pack(">I", frame) + b"\x00\x00" + ID3_OWNER, sample
    return (sample, b"") if size >= len(sample) else None


def sample_size(name: str) -> int:
    """The bytes of the sample clip ``name`` (``samples/<name>``)."""
    return len(_sample(name))


def _sample_header(fmt: str, name: str, size: int) -> tuple[bytes, bytes]:
    sample = _sample(name)
    if size == len(sample):
        return sample, b""
    if fmt == "mp4" and size >= len(sample) + FREE_HEADER:
        return sample + struct.pack(">I4sQ", 1, b"free", size - len(sample)), b""
    raise ValueError(f"{name} is {len(sample)} bytes: a {fmt} file of it takes that size"
                     + (f" or at least {len(sample) + FREE_HEADER}" if fmt == "mp4" else ""))


def _header(fmt: str, size: int, playable: bool = False, sample: str | None = None) -> tuple[bytes, bytes]:
    if sample is not None:
        return _sample_header(fmt, sample, size)
    if (playable or fmt in ("jpeg", "png")) and fmt in REAL and (real := _real_header(fmt, size)):
        return real
    if fmt in ("mp4", "m4a"):
        brands = b"isomiso2avc1mp41" if fmt == "mp4" else b"M4A isomiso2mp41"
        ftyp = struct.pack(">I4s4sI", 16 + len(brands), b"ftyp", brands[:4], 0x200) + brands
        mdat = struct.pack(">I4sQ", 1, b"mdat", size - len(ftyp))
        return ftyp + mdat, b""
    if fmt == "webm":
        return bytes.fromhex("1a45dfa39f4286810142f7810142f2810442f381084282847765626d"), b""
    if fmt == "flv":
        return b"FLV\x01\x05\x00\x00\x00\x09\x00\x00\x00\x00", b""
    if fmt == "jpeg":
        return b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00", b"\xff\xd9"
    if fmt == "png":
        ihdr = struct.pack(">I4sIIBBBBBI", 13, b"IHDR", 64, 64, 8, 2, 0, 0, 0, 0)
        return b"\x89PNG\r\n\x1a\n" + ihdr, b"\x00\x00\x00\x00IEND\xaeB`\x82"
    if fmt == "mp3":
        return b"ID3\x04\x00\x00\x00\x00\x00\x00", b""
    raise ValueError(f"unknown media format {fmt!r}")


@dataclass
class MediaFile:
    """A virtual file of ``size`` bytes; ``version`` changes its bytes and its ETag."""

    fmt: str
    seed: str
    size: int
    version: int = 0
    playable: bool = False  # an MP4 a browser plays (see the module's docstring)
    sample: str | None = None  # a clip of samples/ to serve (see the module's docstring)
    _parts: tuple[bytes, bytes] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        head, tail = _header(self.fmt, self.size, self.playable, self.sample)
        if self.size < len(head) + len(tail):
            raise ValueError(f"{self.fmt} file must be at least {len(head) + len(tail)} bytes")
        self._parts = (head, tail)

    @property
    def content_type(self) -> str:
        return CONTENT_TYPES[self.fmt]

    @property
    def etag(self) -> str:
        digest = hashlib.sha1(f"{self.seed}:{self.size}:{self.version}".encode()).hexdigest()[:16]
        return f'"{digest}"'

    def _block(self) -> bytes:
        return _payload_block(f"{self.seed}:{self.version}")

    def read(self, offset: int, length: int) -> bytes:
        """Bytes ``[offset, offset + length)``; at most :data:`BLOCK` bytes per call."""
        length = max(0, min(length, self.size - offset, BLOCK))
        head, tail = self._parts
        out = bytearray()
        pos, end = offset, offset + length
        payload_end = self.size - len(tail)
        while pos < end:
            if pos < len(head):
                piece = head[pos:min(end, len(head))]
            elif pos < payload_end:
                rel = (pos - len(head)) % BLOCK
                piece = self._block()[rel:rel + min(end, payload_end) - pos]
            else:
                piece = tail[pos - payload_end:end - payload_end]
            out += piece
            pos += len(piece)
        return bytes(out)

    def chunks(self, start: int, end: int, chunk: int = 256 * 1024):
        """Yield the bytes ``[start, end]`` (inclusive) in chunks."""
        pos = start
        while pos <= end:
            piece = self.read(pos, min(chunk, end - pos + 1))
            yield piece
            pos += len(piece)

    def sha256(self) -> str:
        digest = hashlib.sha256()
        for piece in self.chunks(0, self.size - 1, BLOCK):
            digest.update(piece)
        return digest.hexdigest()
