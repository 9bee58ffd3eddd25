"""Downloading a VOD HLS stream into one file, resumable segment by segment.

The playlist is fetched (a master playlist: the variant :func:`trawl.hls_playlists.choose_variant` picks,
then its media playlist), refused when live, and its segments are appended in order to the
asset's ``.part`` file, each verified before the next: the status (200, or a 206 whose
``Content-Range`` is the ``EXT-X-BYTERANGE`` asked for), the length (``Content-Length`` or the
byte range, all of it), and the first bytes (MPEG-TS sync bytes, fMP4 boxes; never an HTML or
JSON page, nor an ID3 tag: packed-audio segments are refused, as ID3 is also how a playlist text
passes a sniffer). An ``EXT-X-MAP`` init section is written before the first segment that needs it;
AES-128 segments are decrypted as they stream, with the key fetched once per attempt through
the same client (keys are never written down).

Resume state (:class:`HlsState`) is the next segment's index and the bytes before it. It is saved
beside the file after every segment, once the segment's bytes are on disk (``fdatasync``), and
heartbeated; a retry keeps that prefix, re-hashes it and goes on with the next segment, so a
killed worker costs at most the segment that was in flight. A retry meets the same stream only
when the playlist's :attr:`~trawl.hls_playlists.MediaPlaylist.fingerprint` is unchanged (fresh URL
signatures do not change it); anything else starts over.

A segment failing for a transient reason (network, 5xx, a cut body, a page instead of media) is
asked again in place a few times; then its classified error is raised for the download policy,
which resumes from that segment. A segment that answers 404/410 is
:class:`~trawl.errors.SegmentMissing`: the policy asks on a few attempts, then the item fails.
No segment is ever skipped.

When every segment is in, the file is remuxed to MP4 with ``ffmpeg -c copy`` if ffmpeg was
given and manages; otherwise the concatenation (MPEG-TS, or fragmented MP4) is the result. ffmpeg
is named the input's demuxer (``mpegts`` or ``mp4``, from the file's first bytes) and may open
that one file only (:func:`trawl.sniff.ffmpeg_input`); its stderr is drained as it runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

import httpx

from trawl.download.state import (DownloadOutcome, Stopped, discard, file_sha256, fresher, hash_into, save_state,
                                  state_path)
from trawl.download.throttle import Throttle
from trawl.errors import (
    ContentCorrupt,
    Http5xx,
    NetworkError,
    NetworkTimeout,
    ParseError,
    SegmentMissing,
    StorageError,
    TooLarge,
    Truncated,
    TrawlError,
    UnsupportedUrl,
    UrlExpired,
    classify_exception,
    classify_response,
)
from trawl.hls_playlists import (
    Aes128Decryptor,
    ByteRange,
    MasterPlaylist,
    MediaPlaylist,
    Segment,
    choose_variant,
    parse_playlist,
    require_vod,
)
from trawl.http_client import read_limited
from trawl.logs import get_logger
from trawl.ranges import parse_content_range
from trawl.sniff import SNIFF_BYTES, ffmpeg_input, sniff

if TYPE_CHECKING:
    from trawl.settings import DownloadSettings

log = get_logger("trawl.hls")

MAX_PLAYLIST_BYTES = 2 << 20  # a playlist is held and parsed whole; this holds tens of thousands of segments
MAX_KEY_BYTES = 1024
# The longest an ffmpeg remux may run, as trawl.merge gives ffmpeg; then it counts as failed.
REMUX_TIMEOUT = 3600.0
SEGMENT_RETRIES = 2  # transient failures of one segment asked again in place, then raised
RETRY_DELAY = 0.5  # seconds before the first in-place retry; doubled each time
# Classes worth asking again at once: the next answer may well be whole.
_TRANSIENT = (NetworkError, NetworkTimeout, Http5xx, Truncated, ContentCorrupt)
# fMP4 boxes a segment or an init section may start with.
_FMP4_BOXES = frozenset({b"ftyp", b"styp", b"sidx", b"moof", b"moov", b"prft", b"emsg", b"free", b"skip", b"mdat"})


@dataclass
class HlsState:
    """Where an HLS download stands; heartbeated and saved beside the ``.part`` file.

    ``offset`` is the bytes of the file before segment ``segment`` (init sections included), the
    same key a plain download's progress is read from.
    """

    protocol: str = "hls"
    url: str | None = None  # the media playlist
    fingerprint: str | None = None
    segment: int = 0  # the next segment to fetch
    segments: int = 0
    offset: int = 0
    total: int | None = None  # the result's size, once done
    done: bool = False
    result: str | None = None  # the remuxed file's name, when the stream was remuxed

    @property
    def estimated_total(self) -> int | None:
        """The stream's size extrapolated from the segments so far (for progress only)."""
        if self.total is not None:
            return self.total
        if self.segment and self.segments:
            return self.offset * self.segments // self.segment
        return None

    @classmethod
    def of(cls, details: object) -> HlsState | None:
        """The state in heartbeat details or a saved file, or None when it is not an HLS state."""
        return stream_state(cls, details)


S = TypeVar("S")


def stream_state(cls: type[S], details: object) -> S | None:
    """A stream downloader's state (a dataclass whose ``protocol`` field names its protocol) in
    heartbeat details or a saved record; None for another protocol's, or for anything else.
    Fields it does not know (a newer version's) are left out."""
    protocol = next((f.default for f in fields(cls) if f.name == "protocol"), None)  # type: ignore[arg-type]
    if not isinstance(details, dict) or details.get("protocol") != protocol:
        return None
    known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    try:
        return cls(**{k: v for k, v in details.items() if k in known})
    except TypeError:
        return None


def load_stream_state(cls: type[S], part: Path) -> S | None:
    """The state record saved beside ``part`` (:func:`stream_state`), or None."""
    try:
        return stream_state(cls, json.loads(state_path(part).read_text()))
    except (OSError, ValueError):
        return None


def load_hls_state(part: Path) -> HlsState | None:
    return load_stream_state(HlsState, part)


def remux_output(part: Path) -> Path:
    """Where the MP4 remux of ``part`` is written (``video.part`` -> ``video.mp4.part``)."""
    return part.with_name(part.name.removesuffix(".part") + ".mp4.part")


def discard_hls(part: Path) -> None:
    """Remove what an HLS download leaves besides ``part`` and its state (the remux output)."""
    for path in (remux_output(part), remux_output(part).with_name(remux_output(part).name + ".tmp")):
        path.unlink(missing_ok=True)


Heartbeat = Callable[[HlsState], None]


class _StreamTooLarge(TooLarge):
    """The stream itself passes max_file_size: its partial file can never become the result.
    Other TooLarge answers (a playlist or key over its cap, a server ignoring Range far into a
    file) say nothing about the stream, so they keep the resumable partial file."""


class HlsDownloader:
    def __init__(
        self,
        client: httpx.Client,
        *,
        max_file_size: int,
        quality: int = 1080,
        heartbeat: Heartbeat = lambda state: None,
        should_stop: Callable[[], bool] = lambda: False,
        heartbeat_every: float = 0.2,
        ffmpeg: str | None = None,
        segment_retries: int = SEGMENT_RETRIES,
        retry_delay: float = RETRY_DELAY,
        limit_rate: int = 0,
        remux_timeout: float = REMUX_TIMEOUT,
    ) -> None:
        """
        Args:
            quality: the tallest variant at or below this many lines is taken (else the lowest).
            limit_rate: bytes per second over the whole stream (``download.limit_rate``); 0: none.
            ffmpeg: the ffmpeg executable that remuxes the result to MP4; None keeps the
                concatenated segments as they are.
            remux_timeout: seconds ffmpeg may take; a remux still running then is killed and
                the concatenation kept.
        """
        self.client = client
        self.max_file_size = max_file_size
        self.quality = quality
        self.heartbeat = heartbeat
        self.should_stop = should_stop
        self.heartbeat_every = heartbeat_every
        self.ffmpeg = ffmpeg
        self.remux_timeout = remux_timeout
        self.segment_retries = segment_retries
        self.retry_delay = retry_delay
        self.throttle = Throttle(limit_rate) if limit_rate else None
        self._keys: dict[str, bytes] = {}
        self._last_beat = 0.0

    @classmethod
    def from_settings(cls, client: httpx.Client, settings: DownloadSettings, *, heartbeat: Heartbeat,
                      should_stop: Callable[[], bool], platform: str = "", quality: int = 0, limit_rate: int = 0,
                      host_slots: object = None) -> HlsDownloader:
        """A downloader as ``settings`` set it up for one stream: the constructor every downloader of
        :data:`trawl.download.DOWNLOADERS` shares (``platform`` and ``host_slots`` are for plain
        HTTP's segments, unused here); the result is remuxed by the ``ffmpeg`` on the PATH, if any.

        Args:
            quality: the crawl's height; 0: ``settings.hls_quality``.
            limit_rate: the crawl's rate limit in bytes per second; 0: ``settings.limit_rate``.
        """
        return cls(client, max_file_size=settings.max_file_size, quality=quality or settings.hls_quality,
                   heartbeat=heartbeat, should_stop=should_stop, ffmpeg=shutil.which("ffmpeg"),
                   limit_rate=limit_rate or settings.limit_rate)

    @staticmethod
    def previous_state(details: object, urls: list[str]) -> HlsState | None:
        """The last attempt's state in its heartbeat ``details`` (checked against the playlist, not
        ``urls``: the state names the media playlist, which a master playlist URL leads to)."""
        return HlsState.of(details)

    def download(self, urls: list[str], part: Path, *, headers: dict[str, str] | None = None,
                 expected_size: int | None = None, previous: HlsState | None = None) -> DownloadOutcome:
        """Download the stream of the first playlist URL that works into ``part`` (or its remux).

        ``expected_size`` is taken for the shape every downloader shares and not used: a stream's
        size is known only from its playlist.

        Raises:
            TrawlError: classified; :class:`UrlExpired` wins so the caller fetches fresh URLs.
            Stopped: ``should_stop`` turned true; the state was saved and heartbeated first.
        """
        part.parent.mkdir(parents=True, exist_ok=True)
        # The record beside the file wins (saved at every segment, before the heartbeat); a
        # stream that is not the playlist's now starts over (_attempt).
        chosen = fresher(previous, load_hls_state(part))
        state = HlsState(**asdict(chosen)) if chosen is not None else HlsState()  # the caller's record stays as given
        finished = self._already_done(part, state)
        if finished is not None:
            return finished
        failures: list[TrawlError] = []
        for url in dict.fromkeys(urls):
            try:
                return self._attempt(url, part, dict(headers or {}), state)
            except Stopped:
                raise
            except Exception as exc:  # noqa: BLE001 - classified, then the next URL tried
                error = classify_exception(exc)
                if isinstance(error, _StreamTooLarge):
                    discard(part)
                    discard_hls(part)
                if isinstance(error, (TooLarge, StorageError, UnsupportedUrl)):
                    raise error from None
                failures.append(error)
                state = load_hls_state(part) or state
        if not failures:
            raise NetworkError("no playlist URL to download")
        raise next((f for f in failures if isinstance(f, UrlExpired)), failures[0])

    # -- playlists -------------------------------------------------------------------------
    def media_playlist(self, url: str, headers: dict[str, str], signed: bool = False,
                       state: HlsState | None = None, vod: bool = True) -> MediaPlaylist:
        """The VOD media playlist behind ``url`` (through the chosen variant of a master).

        ``signed``: the playlist worked before (a resumed download), so a 403/410 means its
        signature expired. ``state``: heartbeated before each playlist is parsed. ``vod``: a live
        playlist is refused (False: taken as it is, for :mod:`trawl.download.live`).
        """
        playlist = self._playlist(url, headers, signed, state)
        if isinstance(playlist, MasterPlaylist):
            variant = choose_variant(playlist.variants, self.quality)
            playlist = self._playlist(variant.url, headers, signed, state)
            if isinstance(playlist, MasterPlaylist):
                raise ParseError(f"{variant.url}: a master playlist names another master playlist")
        return require_vod(playlist) if vod else playlist

    def _playlist(self, url: str, headers: dict[str, str], signed: bool,
                  state: HlsState | None) -> MasterPlaylist | MediaPlaylist:
        with self.client.stream("GET", url, headers=headers) as resp:
            body = self._read_small(resp, MAX_PLAYLIST_BYTES, url, "playlist", signed)
            final_url = str(resp.url)
        if state is not None:  # a playlist at its caps takes seconds to parse
            self._beat(state, force=True)
        return parse_playlist(body.decode("utf-8", "replace"), final_url)

    def _key(self, url: str, headers: dict[str, str], signed: bool) -> bytes:
        """The key behind ``url`` (its length is checked by :class:`Aes128Decryptor`).

        ``signed``: segments of this stream worked before, so a 403/410 means its signature expired.
        """
        if url not in self._keys:
            with self.client.stream("GET", url, headers=headers) as resp:
                self._keys[url] = self._read_small(resp, MAX_KEY_BYTES, url, "key", signed)
        return self._keys[url]

    def _read_small(self, resp: httpx.Response, limit: int, url: str, what: str, signed: bool) -> bytes:
        if resp.status_code >= 400:
            body = b"".join(_limited(resp.iter_bytes(), 4096))
            raise classify_response(resp.status_code, resp.headers, body, url=url, signed_media=signed) or NetworkError(
                f"HTTP {resp.status_code} for {url}")
        try:
            return read_limited(resp, limit, url)
        except TooLarge as exc:
            raise TooLarge(f"HLS {what}: {exc}") from None

    # -- the stream ------------------------------------------------------------------------
    def _already_done(self, part: Path, state: Any, mime: Callable[[Path], str | None] = lambda path: None
                      ) -> DownloadOutcome | None:
        """The result of an attempt that finished but whose answer was lost (a kill, a timeout).

        ``state``: this downloader's or a live recording's (``done``, ``result``, ``total``,
        ``url``); ``mime``: the type of a result that was not remuxed."""
        if not state.done:
            return None
        result = part.with_name(state.result) if state.result else part
        if not result.is_file() or (state.total is not None and result.stat().st_size != state.total):
            return None
        size = result.stat().st_size
        return DownloadOutcome(str(result), size, file_sha256(result), size, None, state.url or "",
                               "video/mp4" if state.result else mime(result), size, 0)

    def _attempt(self, url: str, part: Path, headers: dict[str, str], state: HlsState) -> DownloadOutcome:
        headers.setdefault("Accept-Encoding", "identity")
        playlist = self.media_playlist(url, headers, signed=state.offset > 0, state=state)
        segments = playlist.segments
        if playlist.least_bytes > self.max_file_size:
            raise _StreamTooLarge(f"{playlist.url}: the HLS byte ranges add up to {playlist.least_bytes} bytes, over "
                                  f"max_file_size {self.max_file_size}")
        size_on_disk = part.stat().st_size if part.exists() else 0
        same = (state.fingerprint == playlist.fingerprint and not state.done and state.segment <= len(segments)
                and state.offset <= size_on_disk)
        if not same:
            state = HlsState(url=playlist.url, fingerprint=playlist.fingerprint, segments=len(segments))
        state.url, state.segments = playlist.url, len(segments)
        resumed_from = state.offset
        digest = hashlib.sha256()
        transferred = 0
        fd = os.open(part, os.O_RDWR | os.O_CREAT, 0o644)
        with os.fdopen(fd, "r+b") as out:
            out.truncate(state.offset)
            out.seek(0)
            hash_into(digest, out, state.offset)
            out.seek(state.offset)
            save_state(part, state)
            self._beat(state, force=True)
            for seg in segments[state.segment:]:
                previous = segments[seg.index - 1] if seg.index else None
                digest, written = self._segment(playlist, seg, previous, out, digest, state, headers)
                transferred += written
                state.segment, state.offset = seg.index + 1, state.offset + written
                out.flush()
                os.fdatasync(out.fileno())  # a recorded segment is on disk, even after a crash
                save_state(part, state)
                self._beat(state, force=True)
                if self.should_stop():
                    raise Stopped(f"stopped after segment {seg.index + 1} of {len(segments)}", state.offset)
        return self._finish(part, state, digest, playlist, resumed_from, transferred)

    def _segment(self, playlist: MediaPlaylist, seg: Segment, previous: Segment | None, out: BinaryIO,
                 digest: hashlib._Hash, state: HlsState, headers: dict[str, str],
                 signed: bool | None = None) -> tuple[hashlib._Hash, int]:
        """Append one segment (and the init section it starts using); returns the digest and the
        bytes written. On failure the file and the digest are as before the segment.

        ``signed``: earlier segments of this stream worked (None: the segment is not the
        playlist's first), so a 403 means the URL's signature expired."""
        start = state.offset
        where = f"segment {seg.index + 1} of {len(playlist.segments)} ({seg.url})"
        # A 403 once earlier segments of this stream worked means the URL's signature expired.
        signed = seg.index > 0 if signed is None else signed
        delay = self.retry_delay
        for attempt in range(self.segment_retries + 1):
            running = digest.copy()
            sink = _Sink(out, running, start, self.max_file_size)
            try:
                if seg.init is not None and (previous is None or previous.init != seg.init):
                    self._fetch(seg.init.url, seg.init.byterange, headers, sink, f"init section of {where}",
                                fmp4=True, decryptor=None, state=state, signed=signed)
                decryptor = None
                if seg.key is not None:
                    decryptor = Aes128Decryptor(self._key(seg.key.url, headers, signed), seg.key.iv, where)
                self._fetch(seg.url, seg.byterange, headers, sink, where, fmp4=playlist.fragmented,
                            decryptor=decryptor, state=state, signed=signed)
                return running, sink.written
            except Stopped:
                # The state saved after the last segment still holds; a paused file keeps whole
                # segments only, as that state says.
                out.truncate(start)
                raise
            except Exception as exc:  # noqa: BLE001 - classified below
                out.truncate(start)
                out.seek(start)
                error = classify_exception(exc)
                if isinstance(error, ContentCorrupt) and seg.key is not None:
                    # A wrong key shows as bad padding or as bytes that are not media: fetch it again.
                    self._keys.pop(seg.key.url, None)
                if not isinstance(error, _TRANSIENT) or attempt == self.segment_retries:
                    raise error from None
                log.info("hls segment retried", segment=seg.index, error_class=error.error_class, error=str(error))
                self._pause(delay, state)
                delay *= 2
        raise AssertionError("unreachable")

    def _fetch(self, url: str, byterange: ByteRange | None, headers: dict[str, str], sink: _Sink, where: str, *,
               fmp4: bool,
               decryptor: Aes128Decryptor | None, state: HlsState, signed: bool) -> None:
        asked = dict(headers)
        if byterange is not None:
            asked["Range"] = byterange.header
        with self.client.stream("GET", url, headers=asked) as resp:
            status = resp.status_code
            if status >= 400:
                body = b"".join(_limited(resp.iter_bytes(), 4096))
                error = classify_response(status, resp.headers, body, url=url, signed_media=signed)
                if status in (404, 410) and not isinstance(error, UrlExpired):
                    raise SegmentMissing(f"HLS {where}: HTTP {status}; the playlist names it but the server "
                                         "does not have it")
                raise error or NetworkError(f"HLS {where}: HTTP {status}")
            skip, length = 0, None
            if byterange is not None:
                length = byterange.length
                if status == 206:
                    got = parse_content_range(resp.headers.get("content-range"))
                    if got is None or got.start != byterange.start or got.end != byterange.start + length - 1:
                        raise NetworkError(f"HLS {where}: asked {byterange.header}, answered Content-Range "
                                           f"{resp.headers.get('content-range')!r}")
                elif status == 200:
                    if byterange.start > self.max_file_size:
                        raise TooLarge(f"HLS {where}: the server ignored Range; reaching {byterange.header} would "
                                       f"mean reading past max_file_size {self.max_file_size}")
                    skip = byterange.start  # Range ignored: the wanted bytes are read out of the whole body
                else:
                    raise NetworkError(f"HLS {where}: HTTP {status} for a byte range")
            elif status != 200:
                raise NetworkError(f"HLS {where}: HTTP {status}")
            declared = resp.headers.get("content-length", "")
            received = taken = 0  # bytes of the answer, and of them those wanted (before decryption)
            check = _HeadCheck(where, fmp4)
            for chunk in resp.iter_raw(self.throttle.batch_bytes if self.throttle is not None else None):
                received += len(chunk)
                if skip:
                    cut = min(skip, len(chunk))
                    chunk, skip = chunk[cut:], skip - cut
                if length is not None:
                    chunk = chunk[: length - taken]
                if chunk:
                    taken += len(chunk)
                    plain = decryptor.update(chunk) if decryptor is not None else chunk
                    check.feed(plain)
                    sink.write(plain)
                    if self.throttle is not None:
                        self.throttle.take(len(chunk), lambda: self._throttled(state, where))
                if length is not None and taken >= length:
                    break
                self._beat(state)
                if self.should_stop():
                    raise Stopped(f"stopped in {where}", state.offset)
            if length is not None and taken < length:
                raise Truncated(f"HLS {where}: body ended at {taken} of the {length} bytes of its range")
            if length is None and declared.isdigit() and received != int(declared):
                raise Truncated(f"HLS {where}: {received} of {declared} bytes")
            if decryptor is not None:
                tail = decryptor.finalize()
                check.feed(tail)
                sink.write(tail)
            if taken == 0:
                raise ContentCorrupt(f"HLS {where}: empty answer")
            check.finish()

    # -- the end ---------------------------------------------------------------------------
    def _finish(self, part: Path, state: HlsState, digest: hashlib._Hash, playlist: MediaPlaylist,
                resumed_from: int, transferred: int) -> DownloadOutcome:
        mime = "video/mp4" if playlist.fragmented else "video/mp2t"
        return self.finish_file(part, state, digest, playlist.url, mime, resumed_from, transferred)

    def finish_file(self, part: Path, state: Any, digest: hashlib._Hash, url: str, mime: str, resumed_from: int,
                    transferred: int, state_beside: Path | None = None,
                    before_done: Callable[[Path], None] = lambda result: None) -> DownloadOutcome:
        """The concatenation in ``part`` remuxed to MP4 (when ffmpeg is given and manages) or kept,
        and ``state`` (this downloader's or a live recording's) saved as done: the result.

        ``state_beside``: the file the state is saved beside (default ``part``);
        ``before_done``: called with the result's path before the state says it is done."""
        beside = state_beside or part
        result, size, sha = part, state.offset, digest.hexdigest()
        if self.ffmpeg:
            remuxed = remux_output(part)
            if self._remux(part, remuxed, state):
                result, size, sha, mime = remuxed, remuxed.stat().st_size, file_sha256(remuxed), "video/mp4"
                state.result = remuxed.name
        before_done(result)
        state.done, state.total = True, size
        save_state(beside, state)
        if result != part:
            part.unlink(missing_ok=True)
        self._beat(state, force=True)
        return DownloadOutcome(str(result), size, sha, size, None, url, mime, resumed_from, transferred)

    def _remux(self, src: Path, out: Path, state: HlsState) -> bool:
        """``ffmpeg -c copy`` the concatenation into MP4, heartbeating; False keeps the concatenation.

        ffmpeg is told the concatenation's format (MPEG-TS or MP4, from its first bytes; anything
        else is not remuxed) and may open that one file only: probing could take segment bytes
        for a playlist and open the files and URLs it names (see :func:`trawl.sniff.ffmpeg_input`).
        """
        with open(src, "rb") as head_of:
            head = head_of.read(SNIFF_BYTES)
        fmt = _concatenation_format(head)
        if fmt is None:
            log.warning("hls remux skipped: the segments are neither MPEG-TS nor MP4; keeping them as they are",
                        head=head[:8].hex())
            return False
        tmp = out.with_name(out.name + ".tmp")
        cmd = [self.ffmpeg or "ffmpeg", "-y", "-nostdin", "-v", "error", *ffmpeg_input(src, fmt), "-map", "0:v?",
               "-map", "0:a?", "-c", "copy", "-f", "mp4", f"file:{tmp}"]
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        except OSError as exc:
            log.warning("hls remux failed", error=str(exc))
            return False
        stderr = _Tail(proc.stderr)  # drained as ffmpeg writes: a full pipe would block it
        deadline = time.monotonic() + self.remux_timeout
        try:
            while True:
                try:
                    proc.wait(timeout=self.heartbeat_every)
                    break
                except subprocess.TimeoutExpired:
                    self._beat(state, force=True)
                    stop, late = self.should_stop(), time.monotonic() >= deadline
                    if stop or late:
                        proc.kill()
                        proc.wait()
                        tmp.unlink(missing_ok=True)
                    if stop:
                        raise Stopped("stopped while remuxing", state.offset) from None
                    if late:
                        log.warning("hls remux timed out; keeping the segments as they are",
                                    timeout=self.remux_timeout)
                        return False
        finally:
            errors = stderr.close()
        if proc.returncode != 0 or not tmp.is_file() or tmp.stat().st_size == 0:
            log.warning("hls remux failed; keeping the segments as they are", error=errors[-500:],
                        returncode=proc.returncode)
            tmp.unlink(missing_ok=True)
            return False
        os.replace(tmp, out)
        return True

    # -- helpers ---------------------------------------------------------------------------
    def _throttled(self, state: HlsState, where: str) -> None:
        """While the rate limit holds the stream: heartbeat, and stop when asked to."""
        self._beat(state)
        if self.should_stop():
            raise Stopped(f"stopped in {where}", state.offset)

    def _beat(self, state: HlsState, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_beat >= self.heartbeat_every:
            self._last_beat = now
            self.heartbeat(replace(state))  # a copy, of the caller's type (a live recording has its own)

    def _pause(self, seconds: float, state: HlsState) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, self.heartbeat_every))
            self._beat(state)
            if self.should_stop():
                raise Stopped("stopped before retrying a segment", state.offset)


class _Sink:
    """Appends plain segment bytes to the file and the running digest, within the size limit."""

    def __init__(self, out: BinaryIO, digest: hashlib._Hash, start: int, limit: int) -> None:
        self.out = out
        self.digest = digest
        self.start = start
        self.limit = limit
        self.written = 0  # plain bytes written for this segment (init section included)

    def write(self, data: bytes) -> None:
        if not data:
            return
        if self.start + self.written + len(data) > self.limit:
            raise _StreamTooLarge(f"HLS stream passed max_file_size {self.limit}")
        self.out.write(data)
        self.digest.update(data)
        self.written += len(data)


class _HeadCheck:
    """Sniffs the first bytes of a segment: media of the playlist's kind, never a page."""

    def __init__(self, where: str, fmp4: bool) -> None:
        self.where = where
        self.fmp4 = fmp4
        self.head = bytearray()
        self.checked = False

    def feed(self, data: bytes) -> None:
        if not self.checked:
            self.head += data[: SNIFF_BYTES - len(self.head)]
            if len(self.head) >= SNIFF_BYTES:
                self.finish()

    def finish(self) -> None:
        if self.checked:
            return
        self.checked = True
        head = bytes(self.head)
        found = sniff(head)
        if found in ("html", "json"):
            raise ContentCorrupt(f"HLS {self.where}: the answer is an {found.upper()} page, not media")
        if head[4:8] in _FMP4_BOXES or found in ("mp4", "m4a"):
            return
        if not self.fmp4 and head[:1] == b"\x47" and (len(head) < 189 or head[188] == 0x47):
            return
        kind = "fMP4" if self.fmp4 else "MPEG-TS"
        if head.startswith(b"ID3"):
            # Packed audio (ID3-tagged AAC/MP3 segments) is not downloaded: its remux would need
            # ffmpeg to probe, and an ID3 tag is also how a playlist text gets past a sniffer.
            raise ContentCorrupt(f"HLS {self.where}: the answer starts with an ID3 tag (packed audio), not {kind}")
        raise ContentCorrupt(f"HLS {self.where}: the answer is not {kind} (starts {head[:8].hex()})")


def _concatenation_format(head: bytes) -> str | None:
    """The ffmpeg demuxer for a concatenation of segments, by its first bytes: ``mpegts``,
    ``mp4`` (fMP4 or MP4 boxes), or None for anything else."""
    if head[:1] == b"\x47" and (len(head) < 189 or head[188] == 0x47):
        return "mpegts"
    if head[4:8] in _FMP4_BOXES or sniff(head) in ("mp4", "m4a", "mov"):
        return "mp4"
    return None


class _Tail:
    """Reads a pipe on a thread as it fills, keeping its last :data:`KEEP` bytes."""

    KEEP = 4096

    def __init__(self, pipe: BinaryIO | None) -> None:
        self.pipe = pipe
        self.kept = bytearray()
        self.thread = threading.Thread(target=self._drain, name="ffmpeg-stderr", daemon=True)
        if pipe is not None:
            self.thread.start()

    def _drain(self) -> None:
        assert self.pipe is not None
        for chunk in iter(lambda: self.pipe.read1(65536), b""):  # type: ignore[union-attr]
            self.kept += chunk
            del self.kept[:-self.KEEP]

    def close(self) -> str:
        """What was kept, once the writer has gone (or after a few seconds, should a child of the
        writer still hold the pipe open)."""
        if self.pipe is None:
            return ""
        self.thread.join(timeout=5)
        if not self.thread.is_alive():  # else the thread still reads it; it closes when collected
            self.pipe.close()
        return self.kept.decode("utf-8", "replace")


def _limited(chunks: Iterator[bytes], limit: int) -> Iterator[bytes]:
    taken = 0
    for chunk in chunks:
        yield chunk[: limit - taken]
        taken += len(chunk)
        if taken >= limit:
            return
