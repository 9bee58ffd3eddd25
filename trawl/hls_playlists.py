"""HLS playlists (RFC 8216): what a master or media playlist says, in trawl's terms.

Parsing is the ``m3u8`` package's; this module turns its model into the few facts a download
needs and refuses what trawl cannot download:

- a master playlist gives :class:`Variant`\\ s; :func:`choose_variant` picks one by height;
- a media playlist gives :class:`Segment`\\ s, each with its absolute URL, its byte range
  (``EXT-X-BYTERANGE``, the offset carried over from the previous range of the same URL), its
  init section (``EXT-X-MAP``), its AES-128 key and IV (``EXT-X-KEY``; without an IV, the media
  sequence number), and whether a discontinuity precedes it;
- a media playlist says whether it is live (no ``EXT-X-ENDLIST``: :func:`require_vod` refuses
  it where a finished stream is needed, :mod:`trawl.download.live` records it), its media
  sequence and target duration; SAMPLE-AES or any other key method is
  :class:`~trawl.errors.UnsupportedUrl`; text that is not a playlist is
  :class:`~trawl.errors.ParseError`; a playlist of more than :data:`MAX_SEGMENTS` segments or
  :data:`MAX_KEY_TAGS` distinct keys is :class:`~trawl.errors.TooLarge`; blank and comment lines
  are dropped before parsing and more than :data:`MAX_PLAYLIST_LINES` other lines is a
  :class:`~trawl.errors.ParseError` (the parser's work is bounded by the line count).

:class:`Aes128Decryptor` decrypts one segment as it streams (CBC, PKCS#7 padding).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import urlsplit

import m3u8

from trawl.errors import ContentCorrupt, ParseError, TooLarge, UnsupportedUrl

HLS_MIME_TYPES = frozenset({"application/vnd.apple.mpegurl", "application/x-mpegurl", "audio/mpegurl",
                            "audio/x-mpegurl"})
AES_BLOCK = 16
# Segments a playlist may name: hours of 1-second segments. Counted before parsing, because the
# parser builds several objects per segment and a hostile playlist could name millions.
MAX_SEGMENTS = 50_000
# Byte offsets past this cannot be asked for in a Range header a server would honour.
MAX_BYTE_OFFSET = 2**63
# Tag and URI lines a playlist may have (blank and comment lines are dropped before counting):
# room for several tags per segment. The parser spends ~20 string tests on every line, so this
# bounds its work on a hostile playlist well below a heartbeat timeout.
MAX_PLAYLIST_LINES = 6 * MAX_SEGMENTS
# Distinct EXT-X-KEY tags: the parser looks each key and each segment's key up in the list of
# keys so far, so distinct keys (one IV per segment) cost their square.
MAX_KEY_TAGS = 2000


def is_hls_url(url: str) -> bool:
    """Whether a URL's path names an HLS playlist (``.m3u8``)."""
    return url.split("#", 1)[0].split("?", 1)[0].lower().endswith(".m3u8")


def is_hls_type(content_type: str | None) -> bool:
    return (content_type or "").split(";", 1)[0].strip().lower() in HLS_MIME_TYPES


@dataclass(frozen=True)
class Variant:
    """One stream of a master playlist (``EXT-X-STREAM-INF``)."""

    url: str
    bandwidth: int
    width: int | None = None
    height: int | None = None
    codecs: str | None = None

    @property
    def audio_only(self) -> bool:
        codecs = [c.strip().lower() for c in (self.codecs or "").split(",") if c.strip()]
        return self.height is None and bool(codecs) and all(c.startswith(("mp4a", "ac-3", "ec-3", "opus"))
                                                            for c in codecs)


@dataclass(frozen=True)
class ByteRange:
    start: int
    length: int

    @property
    def header(self) -> str:
        return f"bytes={self.start}-{self.start + self.length - 1}"


@dataclass(frozen=True)
class InitSection:
    """An ``EXT-X-MAP``: the fMP4 header the segments after it need."""

    url: str
    byterange: ByteRange | None = None


@dataclass(frozen=True)
class Key:
    """AES-128 key in force for a segment: where to fetch it and the segment's IV."""

    url: str
    iv: bytes


@dataclass(frozen=True)
class Segment:
    index: int  # position in the playlist, from 0
    url: str
    duration: float
    byterange: ByteRange | None = None
    init: InitSection | None = None
    key: Key | None = None
    discontinuity: bool = False


@dataclass(frozen=True)
class MasterPlaylist:
    url: str
    variants: list[Variant]


@dataclass(frozen=True)
class MediaPlaylist:
    url: str
    segments: list[Segment]
    endlist: bool
    media_sequence: int = 0  # EXT-X-MEDIA-SEQUENCE: the sequence number of ``segments[0]``
    target_duration: float | None = None  # EXT-X-TARGETDURATION: how often a live playlist is read again

    def sequence(self, segment: Segment) -> int:
        """The media sequence number of ``segment`` (its place in the stream, not the playlist)."""
        return self.media_sequence + segment.index

    @property
    def duration(self) -> float:
        return sum(s.duration for s in self.segments)

    # Cached: both scan every segment, and a download reads them for each segment it fetches.
    @cached_property
    def fragmented(self) -> bool:
        """fMP4 segments (an init section), else MPEG-TS."""
        return any(s.init is not None for s in self.segments)

    @cached_property
    def fingerprint(self) -> str:
        """Identifies the stream across fresh signatures of its URLs: segment count, durations,
        byte ranges, whether each is encrypted, and each segment's URL path. The path (never the
        query, where signatures live) tells apart the variants of one master, which often have
        the same shape; a resumed download checks the fingerprint still holds."""
        shape = [(urlsplit(s.url).path, round(s.duration, 3), s.byterange and (s.byterange.start, s.byterange.length),
                  s.key is not None, s.init is not None, s.discontinuity) for s in self.segments]
        return hashlib.sha1(repr(shape).encode()).hexdigest()[:16]

    @cached_property
    def least_bytes(self) -> int:
        """The fewest bytes the stream's byte ranges can decrypt to (0 without ranges): what a
        download will write at least, known before fetching any segment."""
        ranged = sum(s.byterange.length - (AES_BLOCK if s.key is not None else 0)  # PKCS#7 pads 1-16 bytes
                     for s in self.segments if s.byterange is not None)
        inits = {s.init for s in self.segments if s.init is not None and s.init.byterange is not None}
        return ranged + sum(i.byterange.length for i in inits if i.byterange is not None)


def parse_playlist(text: str, url: str) -> MasterPlaylist | MediaPlaylist:
    """Parse a playlist fetched from ``url`` (relative URIs resolve against it).

    Raises:
        ParseError: not an HLS playlist, a finished one without segments or variants, more than
            :data:`MAX_PLAYLIST_LINES` tag and URI lines, or a media sequence that cannot be the
            IV it stands for.
        UnsupportedUrl: segments encrypted other than with AES-128 (SAMPLE-AES, DRM key formats).
        TooLarge: more than :data:`MAX_SEGMENTS` segments or :data:`MAX_KEY_TAGS` distinct keys.
    """
    if not text.lstrip("\ufeff \t\r\n").startswith("#EXTM3U"):
        raise ParseError(f"{url}: not an HLS playlist (no #EXTM3U)")
    if (count := text.count("#EXTINF")) > MAX_SEGMENTS:
        raise TooLarge(f"{url}: HLS playlist names {count} segments; trawl downloads at most {MAX_SEGMENTS}")
    lines = _meaningful_lines(text, url)
    try:
        parsed = m3u8.loads("\n".join(lines) + "\n", uri=url)
    except Exception as exc:  # noqa: BLE001 - the parser raises KeyError/ValueError/... on broken tags
        raise ParseError(f"{url}: broken HLS playlist: {type(exc).__name__} {exc}") from None
    if parsed.is_variant:
        return MasterPlaylist(url, _variants(parsed, url))
    segments = _segments(parsed, url)
    if not segments and parsed.is_endlist:  # without ENDLIST it is a live playlist not yet started
        raise ParseError(f"{url}: HLS playlist without segments")
    target = parsed.target_duration
    return MediaPlaylist(url, segments, bool(parsed.is_endlist), int(parsed.media_sequence or 0),
                         float(target) if target else None)


def _meaningful_lines(text: str, url: str) -> list[str]:
    """The tag and URI lines of a playlist, stripped: what the parser needs, counted and bounded
    before it sees them (RFC 8216: blank lines are ignored, ``#`` lines not ``#EXT`` are comments).

    Raises:
        ParseError: more than :data:`MAX_PLAYLIST_LINES` lines.
        TooLarge: more than :data:`MAX_KEY_TAGS` distinct keys.
    """
    lines = [line for line in map(str.strip, text.lstrip("\ufeff").splitlines())
             if line and (not line.startswith("#") or line.startswith("#EXT"))]
    if len(lines) > MAX_PLAYLIST_LINES:
        raise ParseError(f"{url}: HLS playlist of {len(lines)} tag and URI lines; a playlist of "
                         f"{MAX_SEGMENTS} segments needs fewer than {MAX_PLAYLIST_LINES}")
    keys = len({line for line in lines if line.startswith("#EXT-X-KEY")})
    if keys > MAX_KEY_TAGS:
        raise TooLarge(f"{url}: HLS playlist names {keys} distinct keys; trawl takes at most {MAX_KEY_TAGS}")
    return lines


def require_vod(playlist: MediaPlaylist) -> MediaPlaylist:
    """The playlist when it is complete (VOD).

    Raises:
        UnsupportedUrl: a live playlist (no ``EXT-X-ENDLIST``): its segments keep changing.
    """
    if not playlist.endlist:
        raise UnsupportedUrl(f"{playlist.url}: a live HLS stream (the playlist has no #EXT-X-ENDLIST); trawl "
                             "downloads finished (VOD) streams only: crawl its replay once the broadcast has ended")
    return playlist


def choose_variant(variants: list[Variant], quality: int) -> Variant:
    """The variant to download: the tallest at or below ``quality`` lines, else the lowest.

    Among equal heights the higher bandwidth wins. Variants without a RESOLUTION count as fitting
    and rank below those with one (by bandwidth); audio-only variants are taken only when nothing
    else is offered.
    """
    if not variants:
        raise ParseError("HLS master playlist without variants")
    pool = [v for v in variants if not v.audio_only] or list(variants)
    fitting = [v for v in pool if v.height is None or v.height <= quality]
    if fitting:
        return max(fitting, key=lambda v: (v.height or 0, v.bandwidth))
    return min(pool, key=lambda v: (v.height or 0, -v.bandwidth))


class Aes128Decryptor:
    """Decrypts one AES-128 (CBC, PKCS#7) segment chunk by chunk."""

    def __init__(self, key: bytes, iv: bytes, where: str = "") -> None:
        if len(key) != AES_BLOCK:
            raise ContentCorrupt(f"{where}: AES-128 key is {len(key)} bytes, not 16")
        # Here, not at the top: every process that routes URLs imports this module, few decrypt.
        from cryptography.hazmat.primitives import padding
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        self._cipher = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
        self._unpad = padding.PKCS7(AES_BLOCK * 8).unpadder()
        self.where = where

    def update(self, data: bytes) -> bytes:
        return self._unpad.update(self._cipher.update(data))

    def finalize(self) -> bytes:
        """The last plain bytes.

        Raises:
            ContentCorrupt: the ciphertext is not whole blocks or its padding is wrong (a wrong
                key, or not an encrypted segment).
        """
        try:
            return self._unpad.update(self._cipher.finalize()) + self._unpad.finalize()
        except ValueError:
            raise ContentCorrupt(f"{self.where}: AES-128 decryption failed (wrong key or not encrypted)") from None


def _variants(parsed: m3u8.M3U8, url: str) -> list[Variant]:
    variants = []
    for playlist in parsed.playlists:
        info = playlist.stream_info
        width, height = info.resolution if info.resolution else (None, None)
        try:
            absolute = playlist.absolute_uri
        except ValueError:
            continue
        if absolute:
            variants.append(Variant(absolute, int(info.bandwidth or 0), width, height, info.codecs))
    if not variants:
        raise ParseError(f"{url}: HLS master playlist without variants")
    return variants


def _byterange(value: str | None, url: str, next_start: dict[str, int], where: str) -> ByteRange | None:
    """``n[@o]``; without ``o`` the range starts where the previous one of ``url`` ended."""
    if not value:
        return None
    length_s, _, start_s = value.strip().strip('"').partition("@")
    try:
        length = int(length_s)
        start = int(start_s) if start_s else next_start.get(url)
    except ValueError:
        raise ParseError(f"{where}: bad EXT-X-BYTERANGE {value!r}") from None
    if start is None or length <= 0 or start < 0:
        raise ParseError(f"{where}: EXT-X-BYTERANGE {value!r} without an offset to continue from")
    if start + length > MAX_BYTE_OFFSET:
        raise ParseError(f"{where}: EXT-X-BYTERANGE {value!r} ends past byte 2**63")
    next_start[url] = start + length
    return ByteRange(start, length)


def _segments(parsed: m3u8.M3U8, url: str) -> list[Segment]:
    out: list[Segment] = []
    next_start: dict[str, int] = {}
    init_ranges: dict[str, int] = {}
    sequence = int(parsed.media_sequence or 0)
    for index, seg in enumerate(parsed.segments):
        where = f"{url}: segment {index}"
        try:
            seg_url = seg.absolute_uri
        except ValueError:
            raise ParseError(f"{where}: relative URI without a base") from None
        if not seg_url:
            raise ParseError(f"{where}: no URI")
        init = None
        if seg.init_section is not None and seg.init_section.uri:
            init_url = seg.init_section.absolute_uri
            init = InitSection(init_url, _byterange(seg.init_section.byterange, init_url, init_ranges, where))
        out.append(Segment(
            index=index,
            url=seg_url,
            duration=float(seg.duration or 0.0),
            byterange=_byterange(seg.byterange, seg_url, next_start, where),
            init=init,
            key=_key(seg.key, sequence + index, where),
            discontinuity=bool(seg.discontinuity),
        ))
    return out


def _key(key: m3u8.Key | None, sequence: int, where: str) -> Key | None:
    if key is None or (key.method or "NONE").upper() == "NONE":
        return None
    method = key.method.upper()
    if method != "AES-128" or (key.keyformat and key.keyformat.lower() != "identity"):
        what = f"{method} with KEYFORMAT {key.keyformat}" if key.keyformat else method
        raise UnsupportedUrl(f"{where}: encrypted with {what}; trawl decrypts AES-128 only (no DRM)")
    if not key.uri:
        raise ParseError(f"{where}: EXT-X-KEY without a URI")
    return Key(key.absolute_uri, _iv(key.iv, sequence, where))


def _iv(value: str | None, sequence: int, where: str) -> bytes:
    """The explicit IV (``0x`` + 32 hex digits), else the media sequence number as 16 bytes."""
    if not value:
        if not 0 <= sequence < 1 << (8 * AES_BLOCK):
            raise ParseError(f"{where}: media sequence {sequence} does not fit a 128-bit IV (and no IV is given)")
        return sequence.to_bytes(AES_BLOCK, "big")
    text = value.strip()
    digits = text[2:] if text.lower().startswith("0x") else text
    try:
        iv = bytes.fromhex(digits.rjust(32, "0"))
    except ValueError:
        raise ParseError(f"{where}: bad IV {value!r}") from None
    if len(iv) != AES_BLOCK:
        raise ParseError(f"{where}: IV {value!r} is not 128 bits")
    return iv
