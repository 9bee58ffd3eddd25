"""Live HLS streams served by the simulator: a sliding media playlist of real MPEG-TS segments.

A :class:`LiveStream` is a broadcast that starts at a moment (:meth:`LiveStream.start`, or its
first request) and publishes one segment every ``segment_seconds``: at ``t`` seconds after the
start, segments ``0 .. floor(t / segment_seconds) - 1`` are out, and the playlist names the last
``window`` of them, its ``EXT-X-MEDIA-SEQUENCE`` advancing with the wall clock. Once ``length``
seconds are out, the playlist gains ``EXT-X-ENDLIST`` (``length=None``: it never does). A
``stall_after`` freezes the playlist from that many seconds on (a broadcast whose packager hung).

Streams live under ``/live/<name>/``: ``index.m3u8``, ``seg-<sequence>.ts`` (and ``key.bin`` for an
AES-128 stream, each segment encrypted with its media sequence as IV); a master playlist naming
streams as variants is ``/live/<name>/master.m3u8``. A segment stays
served once published (as CDNs keep them for a while after they leave the window); one not yet
published, or past the end, is a 404; a ``Range`` is answered as for any media file. Faults use
the simulator's own rules on these paths (``sim.faults.add(r"/live/news/index\\.m3u8", stall(5))``),
and every request is counted in ``sim.stats`` as for any path; :meth:`LiveSite.segment_requests`
reads them by sequence. A ``restart_after`` restarts the origin: its media sequence starts over.

The segments are real media, made without ffmpeg: ``samples/live-1s.ts`` is one second of H.264
video (160x90, 10 frames, one GOP) in MPEG-TS, made once by::

    ffmpeg -f lavfi -i testsrc=size=160x90:rate=10 -t 1 -c:v libx264 -preset ultrafast \\
        -tune zerolatency -pix_fmt yuv420p -g 10 -bf 0 -x264-params keyint=10:min-keyint=10:scenecut=0 \\
        -bitexact -fflags +bitexact -flags +bitexact -f mpegts -muxdelay 0 -muxpreload 0 live-1s.ts

and segment ``n`` is that second with its timestamps (PTS, DTS, PCR) moved ``n`` seconds on and
its continuity counters carried on from segment ``n - 1``: consecutive segments concatenate
into one MPEG-TS stream that ffmpeg remuxes to MP4 lasting as many seconds as segments, and a
missing segment shows as a jump in the timestamps, as in a real broadcast.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from functools import lru_cache

from trawl.ranges import parse_range
from trawl.simulator.hls_site import encrypt
from trawl.simulator.media import SAMPLES
from trawl.simulator.server import Request, Response, Simulator

PREFIX = "/live"
TS_PACKET = 188
PLAYLIST_TYPE = "application/vnd.apple.mpegurl"
CLOCK = 90_000  # MPEG-TS PTS/DTS ticks per second (the PCR base counts the same)
SAMPLE = "live-1s.ts"
SAMPLE_SECONDS = 1.0


@lru_cache(maxsize=1)
def _sample() -> tuple[bytes, dict[int, int]]:
    """The sample second and, per PID, how many of its packets carry a payload (the continuity
    counter's step per segment)."""
    data = (SAMPLES / SAMPLE).read_bytes()
    steps: dict[int, int] = {}
    for pos in range(0, len(data), TS_PACKET):
        pid = ((data[pos + 1] & 0x1F) << 8) | data[pos + 2]
        if data[pos + 3] & 0x10:
            steps[pid] = steps.get(pid, 0) + 1
    return data, steps


def _read_ts(b: bytes | bytearray, at: int) -> int:
    return (((b[at] >> 1) & 0x07) << 30) | (b[at + 1] << 22) | (((b[at + 2] >> 1) & 0x7F) << 15) | \
        (b[at + 3] << 7) | ((b[at + 4] >> 1) & 0x7F)


def _write_ts(b: bytearray, at: int, value: int) -> None:
    """A 33-bit PTS/DTS in its 5 bytes, keeping the 4-bit prefix and the marker bits."""
    value %= 1 << 33
    b[at] = (b[at] & 0xF1) | (((value >> 30) & 0x07) << 1)
    b[at + 1] = (value >> 22) & 0xFF
    b[at + 2] = (((value >> 15) & 0x7F) << 1) | 1
    b[at + 3] = (value >> 7) & 0xFF
    b[at + 4] = ((value & 0x7F) << 1) | 1


@lru_cache(maxsize=256)
def live_segment(sequence: int) -> bytes:
    """Segment ``sequence`` of every simulated live stream: the sample second, ``sequence``
    seconds on (timestamps and continuity counters)."""
    data, steps = _sample()
    out = bytearray(data)
    shift = sequence * int(SAMPLE_SECONDS * CLOCK)
    for pos in range(0, len(out), TS_PACKET):
        pid = ((out[pos + 1] & 0x1F) << 8) | out[pos + 2]
        control = out[pos + 3]
        if control & 0x10:  # a payload: its counter goes on from the previous segment's
            cc = ((control & 0x0F) + sequence * steps[pid]) % 16
            out[pos + 3] = (control & 0xF0) | cc
        payload = pos + 4
        if control & 0x20:  # an adaptation field, maybe with a PCR
            length = out[pos + 4]
            if length and out[pos + 5] & 0x10:
                at = pos + 6
                base = (out[at] << 25) | (out[at + 1] << 17) | (out[at + 2] << 9) | (out[at + 3] << 1) | (out[at + 4] >> 7)
                base = (base + shift) % (1 << 33)
                out[at:at + 4] = (base >> 1).to_bytes(4, "big")
                out[at + 4] = ((base & 1) << 7) | (out[at + 4] & 0x7F)
            payload = pos + 5 + length
        unit_start = out[pos + 1] & 0x40
        if unit_start and out[payload:payload + 3] == b"\x00\x00\x01" and out[payload + 3] >= 0xC0:
            flags = out[payload + 7] >> 6  # PTS_DTS_flags: 2 = PTS, 3 = PTS and DTS
            if flags & 2:
                _write_ts(out, payload + 9, _read_ts(out, payload + 9) + shift)
            if flags == 3:
                _write_ts(out, payload + 14, _read_ts(out, payload + 14) + shift)
    return bytes(out)


@dataclass
class LiveStream:
    """One broadcast; see the module docstring for how its playlist moves."""

    length: float | None = 20.0  # seconds broadcast before EXT-X-ENDLIST; None: never ends
    window: int = 6  # segments the playlist names
    segment_seconds: float = SAMPLE_SECONDS  # the wall-clock pace (the media always lasts 1 s each)
    stall_after: float | None = None  # the playlist stops advancing this many seconds after the start
    started: float | None = None  # time.time() of the start; None: at the first request
    segment_base: str = ""  # prefix of the segment URIs (an absolute URL: segments on another host)
    key: bytes | None = None  # AES-128: segments encrypted, the IV their media sequence (key.bin)
    # The origin restarts this many seconds after the start: the segments published from then on
    # are a new run whose media sequence (and timestamps) start over at 0 (``seg-r1-<n>.ts``), and
    # the playlist names only the new run's segments.
    restart_after: float | None = None

    def start(self, at: float | None = None) -> LiveStream:
        self.started = time.time() if at is None else at
        return self

    @property
    def total(self) -> int | None:
        """The segments of the whole broadcast (None: it never ends)."""
        return None if self.length is None else max(1, round(self.length / self.segment_seconds))

    def published(self, now: float | None = None) -> int:
        """Segments out by ``now``: sequences ``0 .. published - 1``."""
        if self.started is None:
            self.start()
        assert self.started is not None
        elapsed = (time.time() if now is None else now) - self.started
        if self.stall_after is not None:
            elapsed = min(elapsed, self.stall_after)
        out = max(0, int(elapsed / self.segment_seconds))
        return out if self.total is None else min(out, self.total)

    def ended(self, now: float | None = None) -> bool:
        return self.total is not None and self.published(now) >= self.total

    @property
    def restart_segment(self) -> int | None:
        """The segment (counted from the start) that begins the run after the restart, if any."""
        return None if self.restart_after is None else round(self.restart_after / self.segment_seconds)

    def run_of(self, published: int) -> tuple[int, int]:
        """(run, the count published before it began) of the segments out when ``published`` are."""
        restart = self.restart_segment
        return (1, restart) if restart is not None and published > restart else (0, 0)

    def playlist(self, now: float | None = None) -> str:
        published = self.published(now)
        run, before = self.run_of(published)
        first = max(before, published - self.window)
        prefix = f"seg-r{run}-" if run else "seg-"
        lines = ["#EXTM3U", "#EXT-X-VERSION:3", f"#EXT-X-TARGETDURATION:{int(SAMPLE_SECONDS + 0.999)}",
                 f"#EXT-X-MEDIA-SEQUENCE:{first - before}"]
        if self.key is not None:
            lines.append('#EXT-X-KEY:METHOD=AES-128,URI="key.bin"')
        for count in range(first, published):
            lines += [f"#EXTINF:{SAMPLE_SECONDS:.3f},", f"{self.segment_base}{prefix}{count - before}.ts"]
        if self.ended(now):
            lines.append("#EXT-X-ENDLIST")
        return "\n".join(lines) + "\n"


@dataclass
class LiveSite:
    sim: Simulator
    streams: dict[str, LiveStream] = field(default_factory=dict)
    masters: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self) -> LiveSite:
        self.sim.add_route(rf"{PREFIX}/(?P<name>[\w-]+)/(?P<file>[\w.-]+)", self._serve)
        return self

    def add_stream(self, name: str, stream: LiveStream) -> str:
        """Serve ``stream`` as ``name``; returns its playlist URL."""
        with self._lock:
            self.streams[name] = stream
        return self.url(name)

    def url(self, name: str) -> str:
        return self.sim.url(f"{PREFIX}/{name}/index.m3u8")

    def add_master(self, name: str, variants: list[tuple[str, int, int]]) -> str:
        """A master playlist of ``(stream name, bandwidth, height)`` variants; returns its URL."""
        with self._lock:
            self.masters[name] = variants
        return self.sim.url(f"{PREFIX}/{name}/master.m3u8")

    def master(self, name: str) -> str:
        lines = ["#EXTM3U"]
        for stream, bandwidth, height in self.masters[name]:
            lines += [f"#EXT-X-STREAM-INF:BANDWIDTH={bandwidth},RESOLUTION={height * 16 // 9}x{height}",
                      f"../{stream}/index.m3u8"]
        return "\n".join(lines) + "\n"

    @staticmethod
    def segment_path(name: str, sequence: int) -> str:
        return f"{PREFIX}/{name}/seg-{sequence}.ts"

    def segment_requests(self, name: str, upto: int | None = None, run: int = 0) -> list[int]:
        """Requests each published segment of ``name`` got, by sequence (faulted ones included);
        ``run`` 1: of the run after its restart."""
        stream = self.streams.get(name)
        count = self.streams[name].published() if upto is None else upto
        restart = stream.restart_segment if stream is not None else None
        if restart is not None:
            count = min(count, restart) if run == 0 else max(0, count - restart)
        paths = [self.segment_path(name, s) if run == 0 else f"{PREFIX}/{name}/seg-r{run}-{s}.ts" for s in range(count)]
        return [self.sim.stats[path].requests if path in self.sim.stats else 0 for path in paths]

    def _serve(self, req: Request) -> Response:
        assert req.match is not None
        name, file = req.match.group("name"), req.match.group("file")
        with self._lock:
            stream = self.streams.get(name)
        if stream is None:
            if file == "master.m3u8" and name in self.masters:
                return Response(200, {"Content-Type": PLAYLIST_TYPE}, self.master(name).encode())
            return _not_found()
        if file == "index.m3u8":
            return Response(200, {"Content-Type": PLAYLIST_TYPE, "Cache-Control": "no-cache"},
                            stream.playlist().encode())
        restarted = file.startswith("seg-r1-") and stream.restart_segment is not None
        number = file[7:-3] if restarted else file[4:-3]
        if file.startswith("seg-") and file.endswith(".ts") and number.isdigit():
            sequence = int(number)
            published = stream.published()
            if restarted:  # the run after the restart: its own sequences, from 0
                published -= stream.restart_segment or 0
            elif stream.restart_segment is not None:
                published = min(published, stream.restart_segment)
            if sequence < published:
                data = live_segment(sequence)
                if stream.key is not None:
                    data = encrypt(data, stream.key, sequence.to_bytes(16, "big"))
                return ranged_segment(req, data)
        if file == "key.bin" and stream.key is not None:
            return Response(200, {"Content-Type": "application/octet-stream"}, stream.key)
        if file == "master.m3u8" and name in self.masters:
            return Response(200, {"Content-Type": PLAYLIST_TYPE}, self.master(name).encode())
        return _not_found()


def ranged_segment(req: Request, data: bytes) -> Response:
    """A segment's answer: whole, or the byte range asked for (as the simulator's media files)."""
    headers = {"Content-Type": "video/mp2t", "Accept-Ranges": "bytes"}
    wanted = parse_range(req.headers.get("range"), len(data))
    if wanted == "unsatisfiable":
        return Response(416, {**headers, "Content-Range": f"bytes */{len(data)}"}, b"")
    if wanted is None:
        return Response(200, headers, data)
    start, end = wanted
    return Response(206, {**headers, "Content-Range": f"bytes {start}-{end}/{len(data)}"}, data[start:end + 1])


def _not_found() -> Response:
    return Response(404, {"Content-Type": "text/html"}, b"<html><body>Not Found</body></html>")


def install_live_site(sim: Simulator) -> LiveSite:
    """The standard live stream (``trawl simulator`` serves it): ``news``, a 12-second broadcast
    (a window of 6 one-second segments) that starts at its first request."""
    site = LiveSite(sim).install()
    site.add_stream("news", LiveStream(length=12.0))
    return site
