"""HLS streams served by the simulator: master and media playlists, MPEG-TS and fMP4 segments.

Streams live under ``/hls/<name>/``: ``index.m3u8`` (the media playlist), ``seg-<i>.ts`` or
``seg-<i>.m4s``, ``init.mp4`` (``EXT-X-MAP``), ``key.bin`` (AES-128), and for byte-range streams
one ``all.ts``/``all.mp4`` holding the init section and every segment; a master playlist is
``/hls/<name>/master.m3u8`` naming variants by relative URI. Segments are encrypted on the way out
when the stream has a key. A live stream's playlist has no ``EXT-X-ENDLIST``.

Faults use the simulator's own rules (``sim.faults.add(r"/hls/vod-720/seg-3\\.ts", status(404, 5))``).
:meth:`HlsSite.segment_requests` counts the requests each segment got at the origin (faulted ones
included), so tests can tell exactly which segments were fetched again.

The default segments are synthetic: MPEG-TS null packets and fMP4 boxes with deterministic
payload, enough for sniffing and for the bytes to be checked; tests that need a real stream
(ffmpeg's remux) pass segments ffmpeg made.
"""

from __future__ import annotations

import collections
import hashlib
import struct
import threading
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from trawl.ranges import parse_range
from trawl.simulator.server import Request, Response, Simulator

PREFIX = "/hls"
TS_PACKET = 188
PLAYLIST_TYPE = "application/vnd.apple.mpegurl"


def ts_segment(seed: str, packets: int = 24) -> bytes:
    """``packets`` MPEG-TS null packets (sync byte, PID 0x1FFF) with deterministic payload."""
    payload = hashlib.shake_256(seed.encode()).digest(packets * (TS_PACKET - 4))
    out = bytearray()
    for n in range(packets):
        out += bytes((0x47, 0x1F, 0xFF, 0x10 | (n & 0x0F)))
        out += payload[n * (TS_PACKET - 4):(n + 1) * (TS_PACKET - 4)]
    return bytes(out)


def _box(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I4s", 8 + len(body), kind) + body


def fmp4_init(seed: str) -> bytes:
    """An fMP4 init section: ``ftyp`` and a ``moov`` box (placeholder contents)."""
    return _box(b"ftyp", b"iso6\x00\x00\x02\x00iso6mp41") + _box(b"moov", hashlib.shake_256(seed.encode()).digest(600))


def fmp4_fragment(seed: str, size: int = 4000) -> bytes:
    """An fMP4 media segment: ``moof`` then ``mdat`` with deterministic payload."""
    return _box(b"moof", hashlib.shake_256(f"{seed}:moof".encode()).digest(96)) + \
        _box(b"mdat", hashlib.shake_256(seed.encode()).digest(size))


def id3_playlist_segment(targets: list[str]) -> bytes:
    """A hostile "segment": an empty ID3v2 tag, then an HLS playlist naming ``targets`` (local
    paths, ``data:`` or other URLs). Sniffing sees an ID3-tagged MP3; an ffmpeg left to probe
    its input skips the tag, takes the text for a playlist and opens what it names."""
    tag = b"ID3\x04\x00\x00\x00\x00\x00\x00"  # version 2.4, no flags, size 0 (syncsafe)
    lines = ["#EXTM3U", "#EXT-X-TARGETDURATION:10", "#EXT-X-MEDIA-SEQUENCE:0"]
    for target in targets:
        lines += ["#EXTINF:2.0,", target]
    return tag + ("\n".join([*lines, "#EXT-X-ENDLIST"]) + "\n").encode()


def encrypt(data: bytes, key: bytes, iv: bytes) -> bytes:
    padder = padding.PKCS7(128).padder()
    plain = padder.update(data) + padder.finalize()
    cipher = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return cipher.update(plain) + cipher.finalize()


@dataclass
class HlsStream:
    """One media playlist and its segments (the plain bytes; encrypted when served with ``key``)."""

    segments: list[bytes]
    durations: list[float] | None = None  # default 2 s each
    init: bytes | None = None  # fMP4: the EXT-X-MAP init section
    key: bytes | None = None  # AES-128
    key_uri: str = "key.bin"  # as the playlist names it (relative to the playlist, or absolute)
    explicit_iv: bool = False  # IV attribute; without it the media sequence number is the IV
    byterange: bool = False  # init + segments in one file, named by EXT-X-BYTERANGE
    live: bool = False  # no EXT-X-ENDLIST
    discontinuity_at: tuple[int, ...] = ()
    media_sequence: int = 0
    throttle_bps: int | None = None  # segments served at this rate

    @property
    def ext(self) -> str:
        return "m4s" if self.init is not None else "ts"

    def iv(self, index: int) -> bytes:
        if self.explicit_iv:
            return hashlib.md5(b"trawl-iv", usedforsecurity=False).digest()
        # Wrapped so a hostile playlist (a negative or 60-digit media sequence) is still served.
        return ((self.media_sequence + index) % (1 << 128)).to_bytes(16, "big")

    def served(self, index: int) -> bytes:
        """Segment ``index`` as the origin sends it."""
        data = self.segments[index]
        return encrypt(data, self.key, self.iv(index)) if self.key is not None else data

    def plain(self) -> bytes:
        """The stream as one file: the init section, then every segment decrypted."""
        return (self.init or b"") + b"".join(self.segments)


@dataclass
class HlsSite:
    sim: Simulator
    streams: dict[str, HlsStream] = field(default_factory=dict)
    masters: dict[str, list[tuple[str, int, tuple[int, int] | None, str | None]]] = field(default_factory=dict)
    range_requests: collections.Counter[tuple[str, int]] = field(default_factory=collections.Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self) -> HlsSite:
        self.sim.add_route(rf"{PREFIX}/(?P<name>[\w-]+)/(?P<file>[\w.-]+)", self._serve)
        return self

    # -- building --------------------------------------------------------------------------
    def add_stream(self, name: str, stream: HlsStream) -> str:
        """Serve ``stream`` as ``name``; returns its media playlist URL."""
        self.streams[name] = stream
        return self.url(name)

    def add_master(self, name: str, variants: list[tuple[str, int, tuple[int, int] | None, str | None]]) -> str:
        """A master playlist of ``(stream name, bandwidth, (width, height) or None, codecs or None)``."""
        self.masters[name] = variants
        return self.sim.url(f"{PREFIX}/{name}/master.m3u8")

    def url(self, name: str) -> str:
        return self.sim.url(f"{PREFIX}/{name}/index.m3u8")

    def segment_path(self, name: str, index: int) -> str:
        return f"{PREFIX}/{name}/seg-{index}.{self.streams[name].ext}"

    def segment_requests(self, name: str) -> list[int]:
        """Requests each segment of ``name`` got at the origin, by index."""
        stream = self.streams[name]
        with self._lock:
            if stream.byterange:
                return [self.range_requests[(name, i)] for i in range(len(stream.segments))]
        return [self.sim.stats[self.segment_path(name, i)].requests for i in range(len(stream.segments))]

    # -- serving ---------------------------------------------------------------------------
    def playlist(self, name: str) -> str:
        stream = self.streams[name]
        durations = stream.durations or [2.0] * len(stream.segments)
        lines = ["#EXTM3U", "#EXT-X-VERSION:7" if stream.init is not None else "#EXT-X-VERSION:4",
                 f"#EXT-X-TARGETDURATION:{int(max(durations) + 0.999)}",
                 f"#EXT-X-MEDIA-SEQUENCE:{stream.media_sequence}"]
        if not stream.live:
            lines.append("#EXT-X-PLAYLIST-TYPE:VOD")
        offsets = self._offsets(stream)
        if stream.init is not None:
            if stream.byterange:
                lines.append(f'#EXT-X-MAP:URI="all.mp4",BYTERANGE="{len(stream.init)}@0"')
            else:
                lines.append('#EXT-X-MAP:URI="init.mp4"')
        for index, duration in enumerate(durations):
            if index in stream.discontinuity_at:
                lines.append("#EXT-X-DISCONTINUITY")
            if stream.key is not None and (index == 0 or stream.explicit_iv):
                iv = f",IV=0x{stream.iv(index).hex()}" if stream.explicit_iv else ""
                lines.append(f'#EXT-X-KEY:METHOD=AES-128,URI="{stream.key_uri}"{iv}')
            lines.append(f"#EXTINF:{duration:.3f},")
            if stream.byterange:
                start, end = offsets[index]
                # The first range states its offset; the others continue where the previous ended.
                lines.append(f"#EXT-X-BYTERANGE:{end - start}@{start}" if index == 0 else
                             f"#EXT-X-BYTERANGE:{end - start}")
                lines.append(f"all.{'mp4' if stream.init is not None else 'ts'}")
            else:
                lines.append(f"seg-{index}.{stream.ext}")
        if not stream.live:
            lines.append("#EXT-X-ENDLIST")
        return "\n".join(lines) + "\n"

    def master(self, name: str) -> str:
        lines = ["#EXTM3U"]
        for stream, bandwidth, resolution, codecs in self.masters[name]:
            attrs = [f"BANDWIDTH={bandwidth}"]
            if resolution:
                attrs.append(f"RESOLUTION={resolution[0]}x{resolution[1]}")
            if codecs:
                attrs.append(f'CODECS="{codecs}"')
            lines += [f"#EXT-X-STREAM-INF:{','.join(attrs)}", f"../{stream}/index.m3u8"]
        return "\n".join(lines) + "\n"

    @staticmethod
    def _offsets(stream: HlsStream) -> list[tuple[int, int]]:
        pos = len(stream.init or b"")
        out = []
        for index in range(len(stream.segments)):
            size = len(stream.served(index))
            out.append((pos, pos + size))
            pos += size
        return out

    def _serve(self, req: Request) -> Response:
        assert req.match is not None
        name, file = req.match.group("name"), req.match.group("file")
        if file == "master.m3u8" and name in self.masters:
            return Response(200, {"Content-Type": PLAYLIST_TYPE}, self.master(name).encode())
        stream = self.streams.get(name)
        if stream is None:
            return _not_found()
        if file == "index.m3u8":
            return Response(200, {"Content-Type": PLAYLIST_TYPE}, self.playlist(name).encode())
        if file == "key.bin" and stream.key is not None:
            return Response(200, {"Content-Type": "application/octet-stream"}, stream.key)
        if file == "init.mp4" and stream.init is not None and not stream.byterange:
            return Response(200, {"Content-Type": "video/mp4"}, stream.init)
        if file.startswith("all.") and stream.byterange:
            return self._ranged(req, name, stream)
        if file.startswith("seg-") and not stream.byterange:
            index_s = file[4:].split(".", 1)[0]
            if index_s.isdigit() and int(index_s) < len(stream.segments):
                content_type = "video/iso.segment" if stream.init is not None else "video/mp2t"
                return Response(200, {"Content-Type": content_type}, stream.served(int(index_s)),
                                throttle_bps=stream.throttle_bps)
        return _not_found()

    def _ranged(self, req: Request, name: str, stream: HlsStream) -> Response:
        whole = (stream.init or b"") + b"".join(stream.served(i) for i in range(len(stream.segments)))
        wanted = parse_range(req.headers.get("range"), len(whole))
        headers = {"Content-Type": "video/mp4" if stream.init is not None else "video/mp2t", "Accept-Ranges": "bytes"}
        if wanted == "unsatisfiable":
            return Response(416, {**headers, "Content-Range": f"bytes */{len(whole)}"}, b"")
        if wanted is None:
            return Response(200, headers, whole, throttle_bps=stream.throttle_bps)
        start, end = wanted
        for index, (seg_start, seg_end) in enumerate(self._offsets(stream)):
            if seg_start == start:
                with self._lock:
                    self.range_requests[(name, index)] += 1
        return Response(206, {**headers, "Content-Range": f"bytes {start}-{end}/{len(whole)}"}, whole[start:end + 1],
                        throttle_bps=stream.throttle_bps)


def _not_found() -> Response:
    return Response(404, {"Content-Type": "text/html"}, b"<html><body>Not Found</body></html>")


KEY = bytes(range(16))


def install_hls_site(sim: Simulator) -> HlsSite:
    """The standard streams: a master ``vod`` (360p/720p/1080p MPEG-TS variants and an audio-only
    one), ``fmp4`` (EXT-X-MAP), ``aes`` (AES-128, IV from the media sequence), ``aes-iv``
    (explicit IV), ``range`` and ``range-fmp4`` (EXT-X-BYTERANGE), ``disc`` (a discontinuity)
    and ``live`` (no ENDLIST)."""
    site = HlsSite(sim).install()
    for height in (360, 720, 1080):
        site.add_stream(f"vod-{height}", HlsStream([ts_segment(f"vod-{height}-{i}") for i in range(6)]))
    site.add_stream("vod-audio", HlsStream([ts_segment(f"vod-audio-{i}", 4) for i in range(6)]))
    site.add_master("vod", [("vod-360", 800_000, (640, 360), None), ("vod-1080", 5_000_000, (1920, 1080), None),
                            ("vod-720", 2_500_000, (1280, 720), "avc1.4d401f,mp4a.40.2"),
                            ("vod-audio", 64_000, None, "mp4a.40.2")])
    site.add_stream("fmp4", HlsStream([fmp4_fragment(f"fmp4-{i}") for i in range(5)], init=fmp4_init("fmp4")))
    site.add_stream("aes", HlsStream([ts_segment(f"aes-{i}") for i in range(5)], key=KEY, media_sequence=7))
    site.add_stream("aes-iv", HlsStream([ts_segment(f"aes-iv-{i}") for i in range(5)], key=KEY, explicit_iv=True))
    site.add_stream("range", HlsStream([ts_segment(f"range-{i}") for i in range(5)], byterange=True))
    site.add_stream("range-fmp4", HlsStream([fmp4_fragment(f"rf-{i}") for i in range(4)], init=fmp4_init("rf"),
                                            byterange=True))
    site.add_stream("disc", HlsStream([ts_segment(f"disc-{i}") for i in range(4)], discontinuity_at=(2,)))
    site.add_stream("live", HlsStream([ts_segment(f"live-{i}") for i in range(3)], live=True))
    return site
