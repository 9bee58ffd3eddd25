"""Recording a live HLS stream into one file, from now until the broadcast ends (``hls-live``).

The media playlist (a master's variant chosen as for VOD) is read again about every target
duration (half of it when nothing was new, RFC 8216 6.3.4); each media sequence not yet held is
fetched once and appended in order, through the VOD downloader's segment code
(:class:`~trawl.download.hls.HlsDownloader`: status, length and first-bytes checks, ``EXT-X-MAP``,
AES-128, in-place retries), so the same address guard, size cap and rate limit apply.

State (:class:`LiveState`) is the last media sequence held and the bytes before the next one;
it is saved beside the file after every segment (``fdatasync`` first) and heartbeated. Another
attempt (a worker killed, a heartbeat timeout) takes the fresher of the heartbeat and the saved
record, cuts the file back to it and goes on with the next sequence: nothing is fetched twice
and nothing between is lost while the playlist still names it. The item gives a recording a
heartbeat timeout of seconds, so a thread heartbeats for it while a slow answer holds it
(:data:`KEEPALIVE_GRACE`). Attempts of one recording take
turns on the file (an exclusive lock): an attempt the server gave up on stops at its next
heartbeat, and only then does the next one write.

A sequence the playlist no longer names when it is wanted (the window slid past: a worker
change that took too long, a playlist that could not be read) is a *gap*: recorded in the state
and the recording's record with its sequence numbers, when it was noticed, where it falls in
the recording and about how long it lasts; the file goes on with the next sequence held (its
timestamps jump; nothing is spliced over it). A segment the server answers 404/410 for is a gap
of one. A transient failure of a segment is asked again while the playlist names it.

The recording ends when the playlist gains ``EXT-X-ENDLIST`` (``endlist``), when it holds
``max_duration`` seconds of media (``max_duration``), when the next segment would take it past
``max_file_size`` (``max_file_size``), or when the playlist has given no new
segment (or could not be read) for ``stall_timeout`` seconds (``stalled``); a recording that
holds nothing then fails as :class:`~trawl.errors.NotFound`. The file is remuxed to MP4 as a VOD
stream is, and the record (:func:`recording`: sequences, seconds, gaps, why it ended) is written
beside the result (:func:`record_path`), where the commit puts it into the item's metadata.

In parts (``live_part``: the item asks for one part at a time, :class:`~trawl.contracts.LivePart`),
part ``k`` is written to its own file (:func:`part_file`), cut at the first segment boundary at
or past the part's length or size, finished (remuxed) and returned with its record
(:func:`part_record`) while the state beside the asset's ``.part`` goes on counting the whole
recording; the next part goes on from the next sequence. A host that does not hold that state
(the item moved) goes on from the record of the last part committed, and what the lost host held
is a gap (``lost with its host``).

A playlist whose media sequence goes back (the origin restarted the stream: :func:`restarted`)
is a new run of segments, recorded on from its first segment the playlist names; the restart is
noted in the record (``restarts``), and in parts the new run begins a part of its own (its
timestamps start over too; the restart is in that part's record), unless the part is the last
one allowed.
"""

from __future__ import annotations

import contextvars
import fcntl
import hashlib
import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import urlsplit

import httpx

from trawl.download.hls import (
    _TRANSIENT,
    HlsDownloader,
    _concatenation_format,
    _StreamTooLarge,
    load_stream_state,
    remux_output,
    stream_state,
)
from trawl.download.state import DownloadOutcome, Stopped, discard, hash_into, save_state
from trawl.errors import (
    NetworkError,
    NotFound,
    SegmentMissing,
    StorageError,
    TooLarge,
    TrawlError,
    UnsupportedUrl,
    UrlExpired,
    classify_exception,
)
from trawl.hls_playlists import InitSection, MediaPlaylist, Segment
from trawl.logs import get_logger
from trawl.models import LIVE_PROTOCOL

if TYPE_CHECKING:
    from trawl.contracts import LivePart
    from trawl.settings import DownloadSettings

log = get_logger("trawl.live")

DEFAULT_MAX_DURATION = 4 * 3600.0
DEFAULT_STALL_TIMEOUT = 60.0
# Without EXT-X-TARGETDURATION (a broken playlist), the playlist is read this often.
DEFAULT_POLL = 2.0
# Between the playlist reads, the heartbeat and the stop check run this often at least.
STEP = 0.2
# A recording's heartbeat timeout is short (seconds), so that a dead worker is noticed within the
# playlist's window; a live worker waiting on a slow answer (a playlist read may take up to
# net.read_timeout) must not look dead meanwhile. A thread heartbeats the last state every
# KEEPALIVE_EVERY seconds while the recording's own heartbeats pause, for at most KEEPALIVE_GRACE
# seconds after its last one: a stuck recording is still noticed, a minute later.
KEEPALIVE_EVERY = 1.0
KEEPALIVE_GRACE = 60.0


@dataclass
class LiveState:
    """Where a recording stands; heartbeated and saved beside the ``.part`` file.

    ``last_sequence`` is the resume point: the last media sequence the file holds, and
    ``offset`` the file's bytes up to its end.
    """

    protocol: str = LIVE_PROTOCOL
    url: str | None = None  # the media playlist recorded
    started_at: str = ""  # ISO UTC: when the recording began
    first_sequence: int | None = None
    last_sequence: int | None = None
    segments: int = 0  # media sequences held (in every part)
    seconds: float = 0.0  # their duration, as the playlist gave it
    offset: int = 0  # the bytes of the file being written (the part's)
    last_new: float = 0.0  # time.time() when the recording last gained a segment (or began)
    init: list[Any] | None = None  # the EXT-X-MAP last written: [url, start, length] (None: none)
    gaps: list[dict[str, Any]] = field(default_factory=list)  # noticed during this part (or the one file)
    ended: str | None = None  # endlist | max_duration | max_file_size | stalled
    ended_at: str = ""
    done: bool = False  # the file (this part's) is finished
    total: int | None = None  # the result's size, once done
    result: str | None = None  # the remuxed file's name, when remuxed
    # In parts: the part being recorded (0: the recording is one file), what its file holds
    # (the one file's counts without parts), and the missing segments of the parts before it.
    part: int = 0
    part_first_sequence: int | None = None
    part_segments: int = 0
    part_seconds: float = 0.0
    part_started_at: str = ""  # ISO UTC: when its first segment came
    missing_before: int = 0
    cut: bool = False  # the part reached its length: only its file is left to finish
    bytes_before: int = 0  # the bytes of the parts before this one
    window: list[int] | None = None  # [first, last] media sequence the playlist named when last read
    host_lost: bool = False  # gone on from the last part committed: the next gap is the lost host's
    next_gap: str = ""  # the reason of the next gap, when it is not the window's (after an earlier recording)
    restarts: list[dict[str, Any]] = field(default_factory=list)  # media sequence started over, during this part
    last_name: str = ""  # the file name of the last segment held (segment_name): a restart names another

    @property
    def estimated_total(self) -> int | None:
        """Unknown until the broadcast ends (progress reports go by bytes alone)."""
        return self.total

    @classmethod
    def of(cls, details: object) -> LiveState | None:
        """The state in heartbeat details or a saved file; None for anything else."""
        return stream_state(cls, details)

    @property
    def missing(self) -> int:
        """Media sequences the recording misses (gaps), in every part."""
        return self.missing_before + sum(int(g.get("segments", 0)) for g in self.gaps)


def load_live_state(part: Path) -> LiveState | None:
    return load_stream_state(LiveState, part)


def fresher_live(heartbeat: LiveState | None, saved: LiveState | None) -> LiveState | None:
    """The more advanced record of one recording (the saved file is written at every segment;
    the heartbeat RPC is throttled); a record of another recording never replaces the heartbeat's.

    Unlike :func:`trawl.download.state.fresher`, which trusts the file's own record: a recording
    runs on the queue of the host it claimed, and on another host it is a new activity with no
    heartbeat, so a heartbeat of this activity is of the files on this disk, this attempt's or an
    earlier one's."""
    if heartbeat is None or saved is None or heartbeat.url is None:  # None: beaten before it began
        return saved or heartbeat
    same = (saved.url, saved.started_at) == (heartbeat.url, heartbeat.started_at)
    if same and (saved.part > heartbeat.part or (saved.part == heartbeat.part and (
            saved.done or saved.segments > heartbeat.segments or len(saved.gaps) > len(heartbeat.gaps)
            or len(saved.restarts) > len(heartbeat.restarts)))):
        return saved
    return heartbeat


def part_file(anchor: Path, part: int) -> Path:
    """Where part ``part`` of the recording whose asset's file is ``anchor`` is written
    (``video.part`` -> ``video-part002.part``); part 0 (no parts) is ``anchor`` itself."""
    return anchor if part == 0 else anchor.with_name(f"{anchor.name.removesuffix('.part')}-part{part:03d}.part")


def record_path(result: Path) -> Path:
    """Where the record of the recording whose file is ``result`` is kept until its commit."""
    return result.with_name(result.name + ".live.json")


def load_record(result: Path) -> dict[str, Any] | None:
    """The record written beside ``result`` by a finished recording, or None."""
    try:
        record = json.loads(record_path(result).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def discard_live(part: Path) -> None:
    """Remove what a recording leaves besides ``part``, its state and its remux: its lock, records
    and the files of its parts not committed."""
    for path in (part.with_name(part.name + ".lock"), record_path(part), record_path(remux_output(part)),
                 *part.parent.glob(f"{part.name.removesuffix('.part')}-part[0-9][0-9][0-9]*.part")):
        path.unlink(missing_ok=True)


def recording(state: LiveState) -> dict[str, Any]:
    """What the catalog keeps of a recording (the item's ``metadata.live``)."""
    return {
        "playlist": state.url, "started_at": state.started_at, "ended_at": state.ended_at, "ended": state.ended,
        "first_sequence": state.first_sequence, "last_sequence": state.last_sequence,
        "segments": state.segments, "seconds": round(state.seconds, 3), "gaps": state.gaps,
        "missing_segments": state.missing, **({"restarts": state.restarts} if state.restarts else {}),
    }


def part_record(state: LiveState) -> dict[str, Any]:
    """A part's record (:attr:`trawl.contracts.DownloadResult.live`): its sequences and seconds,
    where it starts (``start_seconds``: the media recorded before it; ``started_at``: when its first
    segment came, ISO UTC), the gaps noticed while it recorded, why the recording ended if it did
    (``ended``), and the whole recording's counts so far (where a host without its state goes on)."""
    return {
        "part": state.part, "first_sequence": state.part_first_sequence, "last_sequence": state.last_sequence,
        "segments": state.part_segments, "seconds": round(state.part_seconds, 3),
        "start_seconds": round(state.seconds - state.part_seconds, 3), "started_at": state.part_started_at,
        "gaps": state.gaps, "restarts": state.restarts, "ended": state.ended, "ended_at": state.ended_at,
        "playlist": state.url, "recording_started_at": state.started_at,
        "recording_first_sequence": state.first_sequence, "total_segments": state.segments,
        "total_seconds": round(state.seconds, 3), "missing_segments": state.missing,
        "total_bytes": state.bytes_before + (state.total if state.total is not None else state.offset),
    }


def recording_view(details: object) -> dict[str, Any] | None:
    """What a recording's heartbeat (a :class:`LiveState`) says where people look: the media
    recorded in every part (``seconds``, ``segments``, ``missing``), its ``bytes``, the ``part``,
    the playlist's ``window`` ([first, last] media sequence) and the sequence it waits for
    (``next``); None for any other download's heartbeat."""
    state = LiveState.of(details)
    if state is None:
        return None
    return {"seconds": round(state.seconds, 3), "segments": state.segments, "missing": state.missing,
            "bytes": state.bytes_before + (state.total if state.done and state.total is not None else state.offset),
            "part": state.part, "window": state.window, "started_at": state.started_at, "ended": state.ended,
            "next": state.last_sequence + 1 if state.last_sequence is not None else None}


def after_part(record: dict[str, Any]) -> LiveState:
    """The state a recording goes on from, on a host that lacks it: the end of the part ``record``
    says (the last one committed); the next gap is what the lost host held."""
    def number(key: str, default: float = 0) -> Any:
        value = record.get(key)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else default

    playlist, started = record.get("playlist"), record.get("recording_started_at")
    return LiveState(url=playlist if isinstance(playlist, str) else None,
                     started_at=started if isinstance(started, str) else "",
                     first_sequence=number("recording_first_sequence", None), last_sequence=number("last_sequence", None),
                     segments=int(number("total_segments")), seconds=float(number("total_seconds")),
                     missing_before=int(number("missing_segments")), part=int(number("part")), done=True, host_lost=True,
                     total=int(number("total_bytes")))


def resume_point(live: object) -> dict[str, Any] | None:
    """Where a recording the catalog holds part of stopped (an item's ``metadata.live``, whose
    recording never ended): its playlist and the last media sequence committed; None for anything
    else. A new recording of the broadcast goes on after it (:attr:`trawl.models.Asset.live_after`)."""
    if not isinstance(live, dict) or live.get("ended"):
        return None
    playlist, last = live.get("playlist"), live.get("last_sequence")
    if not isinstance(playlist, str) or not isinstance(last, int) or isinstance(last, bool):
        return None
    return {"playlist": playlist, "last_sequence": last}


def gap(first: int, last: int, state: LiveState, seconds_each: float, reason: str,
        now: float | None = None) -> dict[str, Any]:
    """A gap of media sequences ``first..last`` noticed now: where it falls in the recording
    (``at_seconds``: the media held before it), when (``noticed_at``, ISO UTC) and about how long
    it lasts (``seconds``: its segments at ``seconds_each``)."""
    count = last - first + 1
    when = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    return {"first_sequence": first, "last_sequence": last, "segments": count,
            "seconds": round(count * seconds_each, 3), "at_seconds": round(state.seconds, 3),
            "noticed_at": when.isoformat(timespec="seconds"), "reason": reason}


def restarted(playlist: MediaPlaylist, state: LiveState) -> bool:
    """Whether ``playlist``'s media sequence went back (the origin restarted the stream): the
    sequence held last is named by another file than the one recorded (its name, not its
    directory or query, which a fresh address may change), or the playlist's last segment comes
    before the window the recording last read (a lagging copy of the same playlist is rarely a
    whole window behind; one only a little behind is waited out)."""
    if not playlist.segments or state.last_sequence is None:
        return False
    held = next((s for s in playlist.segments if playlist.sequence(s) == state.last_sequence), None)
    if held is not None:
        return bool(state.last_name) and segment_name(held) != state.last_name
    before = state.window[0] if state.window else state.last_sequence
    return playlist.sequence(playlist.segments[-1]) < min(before, state.last_sequence)


def segment_name(segment: Segment) -> str:
    """The file name of a segment's URL (what tells one run's segment from another's)."""
    return urlsplit(segment.url).path.rsplit("/", 1)[-1]


def plan(playlist: MediaPlaylist, last_sequence: int | None) -> tuple[list[Segment], tuple[int, int] | None]:
    """The segments of ``playlist`` to append after ``last_sequence`` (all of them when nothing is
    held yet), and the sequences between that the playlist no longer names (a gap), if any."""
    if last_sequence is None:
        return list(playlist.segments), None
    new = [s for s in playlist.segments if playlist.sequence(s) > last_sequence]
    if new and playlist.sequence(new[0]) > last_sequence + 1:
        return new, (last_sequence + 1, playlist.sequence(new[0]) - 1)
    return new, None


class LiveHlsRecorder:
    """Records a live HLS playlist (protocol ``hls-live``): a :class:`~trawl.download.Downloader`."""

    def __init__(self, client: httpx.Client, *, max_file_size: int, quality: int = 1080,
                 heartbeat: Callable[[LiveState], None] = lambda state: None,
                 should_stop: Callable[[], bool] = lambda: False, ffmpeg: str | None = None,
                 max_duration: float = DEFAULT_MAX_DURATION, stall_timeout: float = DEFAULT_STALL_TIMEOUT,
                 limit_rate: int = 0, retry_delay: float = 0.5, heartbeat_every: float = 0.2,
                 clock: Callable[[], float] = time.time) -> None:
        """
        Args:
            max_duration: seconds of media after which the recording ends.
            stall_timeout: seconds without a new segment after which it ends.
            ffmpeg: remuxes the result to MP4; None keeps the concatenated segments.
        """
        self.segments = HlsDownloader(client, max_file_size=max_file_size, quality=quality, heartbeat=heartbeat,
                                      should_stop=should_stop, ffmpeg=ffmpeg, limit_rate=limit_rate,
                                      retry_delay=retry_delay, heartbeat_every=heartbeat_every)
        self.heartbeat = heartbeat
        self.should_stop = should_stop
        self.ffmpeg = ffmpeg
        self.max_duration = max_duration
        self.stall_timeout = stall_timeout
        self.clock = clock
        self._latest: LiveState | None = None  # what the keepalive heartbeats

    @classmethod
    def from_settings(cls, client: httpx.Client, settings: DownloadSettings, *, heartbeat: Callable[[Any], None],
                      should_stop: Callable[[], bool], platform: str = "", quality: int = 0, limit_rate: int = 0,
                      host_slots: object = None) -> LiveHlsRecorder:
        """As :meth:`HlsDownloader.from_settings`, bounded by ``download.live_max_duration`` and
        ``download.live_stall_timeout``."""
        return cls(client, max_file_size=settings.max_file_size, quality=quality or settings.hls_quality,
                   heartbeat=heartbeat, should_stop=should_stop, ffmpeg=shutil.which("ffmpeg"),
                   max_duration=settings.live_max_duration.total_seconds(),
                   stall_timeout=settings.live_stall_timeout.total_seconds(),
                   limit_rate=limit_rate or settings.limit_rate)

    @staticmethod
    def previous_state(details: object, urls: list[str]) -> LiveState | None:
        return LiveState.of(details)

    def download(self, urls: list[str], part: Path, *, headers: dict[str, str] | None = None,
                 expected_size: int | None = None, previous: LiveState | None = None,
                 live_part: LivePart | None = None) -> DownloadOutcome:
        """Record the stream of the first playlist URL that works into ``part`` (or its remux);
        with ``live_part``, that part of the recording into its own file (:func:`part_file`).

        Raises:
            TrawlError: classified (:class:`UrlExpired` first, so the caller fetches fresh URLs and
                the next attempt goes on with the recording).
            Stopped: ``should_stop`` turned true; the state was saved and heartbeated first.
        """
        part.parent.mkdir(parents=True, exist_ok=True)
        with self._keepalive(), self._turn(part, previous):
            chosen = fresher_live(previous, load_live_state(part))
            state = LiveState(**asdict(chosen)) if chosen is not None else LiveState()
            if live_part is not None:
                state = self._for_part(state, live_part, part)
            finished = self._already_done(part, state)
            if finished is not None:
                return finished
            if live_part is not None and live_part.end:
                return self._ended(part, state, live_part.end)
            failures: list[TrawlError] = []
            for url in dict.fromkeys(urls):
                try:
                    return self._record(url, part, dict(headers or {}), state, live_part)
                except Stopped:
                    raise
                except Exception as exc:  # noqa: BLE001 - classified, then the next URL tried
                    error = classify_exception(exc)
                    if isinstance(error, (TooLarge, StorageError, UnsupportedUrl, _Offline)):
                        raise error from None
                    failures.append(error)
                    state = load_live_state(part) or state
            if not failures:
                raise NetworkError("no playlist URL to record")
            raise next((f for f in failures if isinstance(f, UrlExpired)), failures[0])

    # -- parts -------------------------------------------------------------------------------
    def _for_part(self, state: LiveState, wanted: LivePart, anchor: Path) -> LiveState:
        """The state to record part ``wanted.index`` from: this part's own (begun here before),
        the end of the part committed last when this host recorded it, else that part's record
        (the recording moved here, or this host holds a part the item gave up on)."""
        if state.part == wanted.index:
            return state
        after = wanted.after
        if after is None:
            return self._after_earlier(self._begin_part(LiveState(), wanted.index, anchor), wanted.earlier)
        same = (state.part == after.get("part") and state.done and state.started_at == after.get(
            "recording_started_at") and state.last_sequence == after.get("last_sequence"))
        if not same:
            if state.part:
                log.warning("live recording: going on from the last part committed", held_part=state.part,
                            committed_part=after.get("part"))
            if state.part:
                part_file(anchor, state.part).unlink(missing_ok=True)
            state = after_part(after)
        return self._begin_part(state, wanted.index, anchor)

    def _after_earlier(self, state: LiveState, earlier: dict[str, Any] | None) -> LiveState:
        """A new recording of a broadcast an earlier one recorded part of (:func:`resume_point`):
        it goes on after the last sequence the earlier one committed, from the same playlist (the
        sequences between, which the window lost meanwhile, are a gap: ``between recordings``)."""
        playlist, last = (earlier or {}).get("playlist"), (earlier or {}).get("last_sequence")
        if not isinstance(playlist, str) or not isinstance(last, int) or isinstance(last, bool):
            return state
        state.url, state.last_sequence, state.next_gap = playlist, last, "between recordings"
        state.started_at = datetime.fromtimestamp(self.clock(), UTC).isoformat(timespec="seconds")
        return state

    def _begin_part(self, state: LiveState, index: int, anchor: Path) -> LiveState:
        state.missing_before = state.missing
        state.bytes_before += state.total if state.total is not None else state.offset
        state.gaps, state.restarts = [], []
        state.part, state.part_first_sequence, state.part_segments, state.part_seconds = index, None, 0, 0.0
        state.part_started_at = ""
        state.offset, state.init, state.done, state.total, state.result, state.cut = 0, None, False, None, None, False
        part_file(anchor, index).unlink(missing_ok=True)  # a file an attempt left before this state was saved
        return state

    @staticmethod
    def _cut(state: LiveState, wanted: LivePart | None) -> bool:
        """Whether the part being recorded has reached its length or size (the last one never does)."""
        if wanted is None or wanted.last:
            return False
        return state.part_seconds >= wanted.seconds or (wanted.bytes > 0 and state.offset >= wanted.bytes)

    # -- the recording ---------------------------------------------------------------------
    def _record(self, url: str, anchor: Path, headers: dict[str, str], state: LiveState,
                wanted: LivePart | None) -> DownloadOutcome:
        headers.setdefault("Accept-Encoding", "identity")
        part = part_file(anchor, state.part)
        playlist: MediaPlaylist | None = None
        try:
            if not ((state.ended or state.cut) and state.url):  # else only its file is left to finish
                playlist = self.segments.media_playlist(url, headers, signed=state.segments > 0, vod=False)
        except Exception as exc:  # noqa: BLE001 - a recording under way waits out a transient failure
            error = classify_exception(exc)
            if isinstance(error, NotFound) and state.segments > 0 and url == state.url:
                # The address that worked answers 404 (see _reload); a fresh one that does is the end.
                raise UrlExpired(f"{url}: the live playlist answered 404; resolving the source again") from None
            if state.url is None or state.done or not isinstance(error, _TRANSIENT):
                raise
        state = self._continued(state, playlist.url if playlist is not None else state.url, part)
        self._beat(state, force=True)
        resumed_from = state.offset
        transferred = 0
        fd = os.open(part, os.O_RDWR | os.O_CREAT, 0o644)
        with os.fdopen(fd, "r+b") as out:
            out.truncate(state.offset)
            digest = hashlib.sha256()
            hash_into(digest, out, state.offset)
            out.seek(state.offset)
            save_state(anchor, state)
            while not (state.ended or state.cut):  # an attempt whose predecessor ended the file only finishes it
                appended = 0
                if playlist is not None:
                    got, appended, digest = self._append(playlist, state, out, digest, headers, anchor, wanted)
                    transferred += got
                    if state.ended or state.cut:
                        break
                    if playlist.endlist and not plan(playlist, state.last_sequence)[0]:
                        state.ended = "endlist"
                        break
                if self.clock() - state.last_new >= self.stall_timeout:
                    state.ended = "stalled"
                    break
                # RFC 8216 6.3.4: a playlist that gave nothing new is asked again after half its
                # target duration, one that did after its target duration.
                target = (playlist.target_duration if playlist is not None else None) or DEFAULT_POLL
                self._wait(target if appended else target / 2, state)
                playlist = self._reload(state, headers)
            if state.ended:
                state.ended_at = state.ended_at or datetime.fromtimestamp(self.clock(), UTC).isoformat(
                    timespec="seconds")
            save_state(anchor, state)
            self._beat(state, force=True)
        if state.segments == 0:
            discard(part)
            raise _Offline(f"{state.url}: the live stream gave no segment for {self.stall_timeout:g} s (offline?)")
        log.info("live recording ended" if state.ended else "live recording: part recorded", ended=state.ended,
                 part=state.part, segments=state.segments, seconds=round(state.seconds, 1), gaps=len(state.gaps),
                 missing=state.missing)
        return self._finish(anchor, state, digest, resumed_from, transferred)

    def _continued(self, state: LiveState, url: str | None, part: Path) -> LiveState:
        """The state to go on from: ``state`` when it records this stream and its file's bytes are
        on disk; without its file, the same recording less what that file held (a gap); else a
        fresh recording."""
        size_on_disk = part.stat().st_size if part.exists() else 0
        same = (state.url is not None and url is not None and urlsplit(state.url).path == urlsplit(url).path
                and not state.done)
        now = self.clock()
        if same and state.offset <= size_on_disk:
            state.url = url  # fresh signatures
            state.last_new = max(state.last_new, now)  # each attempt's stall clock starts when it does
            return state
        if not same:
            return LiveState(url=url, started_at=datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds"),
                             last_new=now, part=state.part, missing_before=state.missing_before)
        # This file's bytes stayed on another host (or were lost): what it held is a gap.
        lost = replace(state, url=url, last_new=now, offset=0, init=None, segments=state.segments - state.part_segments,
                       seconds=state.seconds - state.part_seconds, part_first_sequence=None, part_segments=0,
                       part_seconds=0.0, part_started_at="", gaps=list(state.gaps))
        if state.part_first_sequence is not None and state.last_sequence is not None:
            lost.gaps.append(gap(state.part_first_sequence, state.last_sequence, lost,
                                 state.part_seconds / max(1, state.part_segments), "lost with the partial file", now))
            log.warning("live recording: its partial file is not here; going on from the next sequence",
                        held=state.offset, on_disk=size_on_disk)
        return lost

    def _append(self, playlist: MediaPlaylist, state: LiveState, out: BinaryIO, digest: hashlib._Hash,
                headers: dict[str, str], anchor: Path, wanted: LivePart | None) -> tuple[int, int, hashlib._Hash]:
        """Append the segments of ``playlist`` not held yet, until the part is full; returns the
        bytes written, the segments appended and the digest. A transient failure leaves the rest
        for the next read of the playlist."""
        if restarted(playlist, state):
            if wanted is not None and not wanted.last and state.part_segments > 0:
                # The new run begins the next part (each part's timestamps run on), which notes
                # the restart as it finds it again.
                state.cut = True
                save_state(anchor, state)
                return 0, 0, digest
            self._restart(playlist, state, anchor)
        new, missed = plan(playlist, state.last_sequence)
        if playlist.segments:  # what the recording waits in (shown while it records)
            state.window = [playlist.media_sequence, playlist.sequence(playlist.segments[-1])]
        seconds_each = playlist.target_duration or (playlist.duration / max(1, len(playlist.segments)))
        if missed is not None:
            reason = state.next_gap or ("lost with its host" if state.host_lost else "window slid past")
            self._gap(state, missed[0], missed[1], seconds_each, reason, anchor)
        state.host_lost, state.next_gap = False, ""
        written_all = appended = 0
        for seg in new:
            if state.seconds >= self.max_duration:
                state.ended = "max_duration"
                break
            sequence = playlist.sequence(seg)
            previous = Segment(-1, "", 0.0, init=_init_of(state.init))
            try:
                digest, written = self.segments._segment(playlist, seg, previous, out, digest, state,  # type: ignore[arg-type]
                                                         headers, signed=state.segments > 0)
            except Stopped:
                raise
            except SegmentMissing as missing:
                log.warning("live segment missing; recorded as a gap", sequence=sequence, error=str(missing))
                self._gap(state, sequence, sequence, seg.duration or seconds_each, "segment missing (404/410)", anchor)
                continue
            except _StreamTooLarge:  # the segment that would pass the cap is not kept
                log.warning("live recording reached max_file_size; it ends here", size=state.offset)
                state.ended = "max_file_size"
                break
            except Exception as exc:  # noqa: BLE001 - classified: transient ones wait for the next read
                error = classify_exception(exc)
                if not isinstance(error, _TRANSIENT):
                    raise error from None
                log.info("live segment failed; asked again after the next playlist read", sequence=sequence,
                         error_class=error.error_class, error=str(error))
                break
            written_all += written
            appended += 1
            now = self.clock()
            state.last_new = now
            if state.first_sequence is None:
                state.first_sequence = sequence
            if state.part_first_sequence is None:
                state.part_first_sequence = sequence
                state.part_started_at = datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds")
            state.last_sequence = sequence
            state.last_name = segment_name(seg)
            state.segments += 1
            state.part_segments += 1
            state.seconds += seg.duration
            state.part_seconds += seg.duration
            state.offset += written
            if seg.init is not None:
                state.init = [seg.init.url, *(
                    (seg.init.byterange.start, seg.init.byterange.length) if seg.init.byterange else (None, None))]
            state.cut = self._cut(state, wanted)
            out.flush()
            os.fdatasync(out.fileno())  # a recorded segment is on disk, even after a crash
            save_state(anchor, state)
            self._beat(state, force=True)
            if state.cut:
                break
            if self.should_stop():
                raise Stopped(f"stopped after media sequence {sequence}", state.offset)
        if state.seconds >= self.max_duration:
            state.ended, state.cut = "max_duration", False
        return written_all, appended, digest

    def _restart(self, playlist: MediaPlaylist, state: LiveState, anchor: Path) -> None:
        """The stream started over (:func:`restarted`): its new run of segments is recorded on, from
        its first one the playlist names; the restart is noted (``restarts``: the sequence held
        last, the new run's first, where it falls in the recording and when it was noticed)."""
        when = datetime.fromtimestamp(self.clock(), UTC).isoformat(timespec="seconds")
        found = {"after_sequence": state.last_sequence, "first_sequence": playlist.media_sequence,
                 "at_seconds": round(state.seconds, 3), "noticed_at": when, "reason": "media sequence restarted"}
        state.restarts.append(found)
        state.last_sequence = playlist.media_sequence - 1
        state.window, state.last_name = None, ""
        log.warning("live recording: the stream's media sequence started over; recording its new run",
                    **{k: v for k, v in found.items() if k != "noticed_at"})
        save_state(anchor, state)

    def _gap(self, state: LiveState, first: int, last: int, seconds_each: float, reason: str, anchor: Path) -> None:
        found = gap(first, last, state, seconds_each, reason, self.clock())
        state.gaps.append(found)
        state.last_sequence, state.last_name = last, ""  # a sequence not held: no file to tell a restart by
        if state.first_sequence is None:
            state.first_sequence = first
        log.warning("live recording gap", **{k: v for k, v in found.items() if k != "noticed_at"})
        save_state(anchor, state)

    def _reload(self, state: LiveState, headers: dict[str, str]) -> MediaPlaylist | None:
        """The playlist read again; None when that failed for a transient reason (the stall
        timeout bounds how long that may go on)."""
        assert state.url is not None
        try:
            return self.segments.media_playlist(state.url, headers, signed=True, vod=False)
        except Exception as exc:  # noqa: BLE001 - classified below
            error = classify_exception(exc)
            if isinstance(error, (NotFound, SegmentMissing)):
                # A playlist that worked answers 404: its address is stale (a CDN node dropped it, a
                # signature no longer honoured) or the broadcast is over. The item resolves the
                # source again: fresh URLs go on from the next sequence, an ended source ends it.
                raise UrlExpired(f"{state.url}: the live playlist answered 404; resolving the source again") from None
            if isinstance(error, _TRANSIENT):
                log.info("live playlist read failed; trying again", error_class=error.error_class, error=str(error))
                return None
            raise error from None

    def _wait(self, seconds: float, state: LiveState) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, STEP))
            self._beat(state)
            if self.should_stop():
                raise Stopped("stopped between playlist reads", state.offset)

    def _beat(self, state: LiveState, force: bool = False) -> None:
        self._latest = state  # the segment code beats this same object as it changes
        self.segments._beat(state, force)  # type: ignore[arg-type] - it copies whatever state it is given

    @contextmanager
    def _keepalive(self) -> Iterator[None]:
        """Heartbeat the latest state while the recording's own heartbeats pause (see
        :data:`KEEPALIVE_GRACE`), from a thread that carries the caller's context (an activity's)."""
        done = threading.Event()
        context = contextvars.copy_context()

        def run() -> None:
            while not done.wait(KEEPALIVE_EVERY / 2):
                quiet = time.monotonic() - self.segments._last_beat
                if KEEPALIVE_EVERY / 2 <= quiet <= KEEPALIVE_GRACE and self._latest is not None:
                    self.heartbeat(replace(self._latest))

        thread = threading.Thread(target=context.run, args=(run,), name="live-keepalive", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()

    # -- the end ---------------------------------------------------------------------------
    def _already_done(self, anchor: Path, state: LiveState) -> DownloadOutcome | None:
        """The result of a recording (or part) that finished but whose answer was lost."""
        if state.done and state.part and state.total == 0:  # a part that ended with the broadcast, empty
            return self._empty(anchor, state, 0)
        outcome = self.segments._already_done(part_file(anchor, state.part), state, _mime)
        return replace(outcome, live=part_record(state)) if outcome is not None and state.part else outcome

    def _finish(self, anchor: Path, state: LiveState, digest: hashlib._Hash, resumed_from: int,
                transferred: int) -> DownloadOutcome:
        part = part_file(anchor, state.part)
        if state.part and state.part_segments == 0:
            return self._empty(anchor, state, transferred)

        def with_record(result: Path) -> None:
            if not state.part:  # one file: its record beside it, for the commit
                record_path(result).write_text(json.dumps(recording(state)))

        outcome = self.segments.finish_file(part, state, digest, state.url or "", _mime(part), resumed_from,
                                            transferred, state_beside=anchor, before_done=with_record)
        return replace(outcome, live=part_record(state)) if state.part else outcome

    def _ended(self, anchor: Path, state: LiveState, why: str) -> DownloadOutcome:
        """The recording ends now (the item says why: its source ended, or no working address is to
        be had): the part held is finished as it is, without reading the playlist."""
        state.ended = state.ended or why
        state.ended_at = state.ended_at or datetime.fromtimestamp(self.clock(), UTC).isoformat(timespec="seconds")
        if state.segments == 0:
            discard(part_file(anchor, state.part))
            raise _Offline(f"{state.url}: the live stream ended ({why}) before it gave a segment")
        save_state(anchor, state)
        part = part_file(anchor, state.part)
        if state.part_segments == 0 or not part.exists() or part.stat().st_size < state.offset:
            return self._empty(anchor, state, 0)
        with open(part, "r+b") as out:
            out.truncate(state.offset)
            digest = hashlib.sha256()
            hash_into(digest, out, state.offset)
        log.info("live recording ended", ended=state.ended, part=state.part, segments=state.segments)
        return self._finish(anchor, state, digest, state.offset, 0)

    def _empty(self, anchor: Path, state: LiveState, transferred: int) -> DownloadOutcome:
        """A part that holds no segment (the broadcast ended, or its gaps filled it): no file, only
        its record (the recording's end, its gaps), which the item commits without a file."""
        part_file(anchor, state.part).unlink(missing_ok=True)
        state.done, state.total, state.result = True, 0, None
        save_state(anchor, state)
        self._beat(state, force=True)
        return DownloadOutcome("", 0, hashlib.sha256().hexdigest(), 0, None, state.url or "", None, 0, transferred,
                               live=part_record(state))

    # -- attempts take turns ---------------------------------------------------------------
    @contextmanager
    def _turn(self, part: Path, previous: LiveState | None) -> Iterator[None]:
        """Hold the recording's lock while recording: an attempt the server gave up on (no
        heartbeat in time) may still be writing until its next heartbeat tells it to stop."""
        lock = part.with_name(part.name + ".lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            deadline = time.monotonic() + max(self.stall_timeout, 10.0)
            waiting = fresher_live(previous, load_live_state(part)) or LiveState()  # what the heartbeat keeps saying
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise StorageError(f"{part}: another attempt of this recording still holds its file") from None
                    self._wait(STEP, waiting)
            yield
        finally:
            os.close(fd)  # releases the lock


class _Offline(NotFound):
    """The playlist gave no segment at all before the stall timeout: nothing to commit."""


def _init_of(saved: list[Any] | None) -> InitSection | None:
    if not saved:
        return None
    from trawl.hls_playlists import ByteRange

    url, start, length = (list(saved) + [None, None])[:3]
    return InitSection(url, ByteRange(start, length) if start is not None and length is not None else None)


def _mime(path: Path) -> str:
    with open(path, "rb") as src:
        return "video/mp4" if _concatenation_format(src.read(512)) == "mp4" else "video/mp2t"


__all__ = ["LIVE_PROTOCOL", "LiveHlsRecorder", "LiveState", "after_part", "recording_view", "discard_live", "gap", "load_live_state",
           "load_record", "part_file", "part_record", "plan", "record_path", "recording", "restarted", "resume_point",
           "segment_name"]
