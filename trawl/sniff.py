"""Content sniffing: what the first bytes of a file say it is."""

from __future__ import annotations

SNIFF_BYTES = 512

# Which sniffed types are acceptable for each asset kind.
KIND_TYPES: dict[str, frozenset[str]] = {
    "video": frozenset({"mp4", "webm", "flv", "mpegts", "ogg", "mov"}),
    "audio": frozenset({"m4a", "mp4", "mp3", "ogg", "webm", "flac", "wav"}),
    "image": frozenset({"jpeg", "png", "gif", "webp"}),
    "thumbnail": frozenset({"jpeg", "png", "gif", "webp"}),
}

MIME_BY_TYPE = {
    "mp4": "video/mp4", "mov": "video/quicktime", "m4a": "audio/mp4", "webm": "video/webm",
    "flv": "video/x-flv", "mpegts": "video/mp2t", "ogg": "application/ogg", "mp3": "audio/mpeg",
    "flac": "audio/flac", "wav": "audio/wav", "jpeg": "image/jpeg", "png": "image/png",
    "gif": "image/gif", "webp": "image/webp", "html": "text/html", "json": "application/json",
}


# The ffmpeg demuxer that reads each sniffed type; a type without one is never handed to ffmpeg.
# None of them opens another input (mov's external data references stay off, see ffmpeg_input).
FFMPEG_DEMUXERS = {
    "mp4": "mp4", "m4a": "mp4", "mov": "mp4", "webm": "matroska", "flv": "flv", "mpegts": "mpegts",
    "ogg": "ogg", "mp3": "mp3", "flac": "flac", "wav": "wav",
}


def ffmpeg_input(path: object, demuxer: str) -> list[str]:
    """ffmpeg (or ffprobe) options that read ``path`` with ``demuxer`` and nothing else.

    Left to probe, ffmpeg takes bytes it is handed for whatever format scores best: after an ID3
    tag an HLS playlist or an ffconcat list, whose demuxers open the local files and URLs the
    text names. So the demuxer is named (no probing), ``file`` is the only protocol (no
    ``data:``, ``http:`` ...; the path is given as a ``file:`` URL so a colon in it is not taken
    for another protocol), and the MP4 demuxer's external data references are kept off.
    """
    options = ["-protocol_whitelist", "file", "-f", demuxer]
    if demuxer == "mp4":
        options += ["-enable_drefs", "0"]
    return [*options, "-i", f"file:{path}"]


def sniff(head: bytes) -> str:
    """Name the format of a file from its first bytes (at least :data:`SNIFF_BYTES` when available).

    Returns one of the keys of :data:`MIME_BY_TYPE`, or ``"unknown"``.
    """
    if len(head) >= 12 and head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in (b"M4A ", b"M4B "):
            return "m4a"
        if brand == b"qt  ":
            return "mov"
        return "mp4"
    if len(head) >= 8 and head[4:8] in (b"moov", b"mdat", b"free", b"wide", b"skip"):
        return "mp4"
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return "webm"
    if head.startswith(b"FLV\x01"):
        return "flv"
    if len(head) >= 377 and head[0] == 0x47 and head[188] == 0x47 and head[376] == 0x47:
        return "mpegts"
    if head.startswith(b"OggS"):
        return "ogg"
    if head.startswith(b"fLaC"):
        return "flac"
    if head.startswith(b"RIFF") and head[8:12] == b"WAVE":
        return "wav"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "webp"
    if head.startswith(b"ID3") or (len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return "mp3"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<?xml", b"<!--", b"<title")):
        return "html"
    if text.startswith((b"{", b"[")):
        return "json"
    return "unknown"


def matches_kind(sniffed: str, kind: str) -> bool:
    """Whether a file sniffed as ``sniffed`` may be saved as an asset of ``kind``."""
    return sniffed in KIND_TYPES.get(kind, frozenset())
