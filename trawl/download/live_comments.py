"""A live recording's comments, recorded beside its media by a sidecar of its download.

A platform whose live recordings have comments (a live room's bullet comments) offers a hook,
``Platform.live_comments(settings, canonical_url)``, giving a :class:`CommentSource` for the
recording (None for one without comments). The download activity wraps a live recording's
download in :meth:`LiveCommentSidecars.around`: while the recording runs, a thread runs the
source, and every message it receives is appended to a JSON-lines log beside the ``.part`` file
(``<asset>.comments.jsonl``), flushed at once. The log is the sidecar's durable state, as the
saved :class:`~trawl.download.live.LiveState` is the recording's: the next attempt of the
download (another worker after a kill, a resume after a pause) opens it again, reads the keys it
holds and appends, so a message received again after a reconnect is not stored twice (the
source's :meth:`CommentSource.key`: a comment's id). Attempts take turns on the log (a lock, as
the recording's file). A message that comes while no attempt is connected (a worker change, a
dropped stream) is not in the log: the stream does not replay.

Times: the log keeps when each message was received (Unix seconds), and, while the recording
runs, *anchors*: a wall time and the media seconds the recording held then. The recording is never
ahead of the live edge, so each anchor bounds the wall time the media's second 0 stands for from
above (``wall - media_seconds``); the lowest bound (an anchor taken when the recording had caught
up with the live edge) is the one kept, and a comment is shown that many seconds after it
(:attr:`CommentLog.media_zero`). A gap in the recording (the window slid past) changes nothing:
its file keeps the broadcast's timeline.

When the recording ends (the download returns), the sidecar stops, and the source renders the
log into its platform's files (a danmaku file players read); they and a copy of the log as
``live-messages`` are listed in a manifest (``<asset>.comments.json``: name, kind, mime, size,
sha256, and a summary), which the commit reads (:func:`comment_files`, by the work directory) to
store them as assets of the item. A recording committed in parts runs the sidecar with each
part's download (the log goes on; the stream reconnects between parts), and when a part's
download returns, the messages received while that part's media was live become that part's
files, timed from its start (:meth:`LiveCommentsSidecar.finish_part`), listed in the part's own
manifest (:func:`part_manifest_path`) that the part's commit reads (:func:`part_comment_files`):
a crash loses at most the part in progress, its comments with its media. The sidecar never
fails or delays the media: a source that cannot connect retries with backoff until the
recording ends, and the files are written with what it got.
"""

from __future__ import annotations

import contextlib
import contextvars
import fcntl
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from trawl.download.live import LiveState, load_live_state
from trawl.logs import get_logger
from trawl.models import LIVE_PROTOCOL, Asset

if TYPE_CHECKING:
    import httpx

    from trawl.settings import Settings

log = get_logger("trawl.live.comments")

MAX_LINE = 1024 * 1024  # one message as a JSON line; a longer one is not kept
MAX_MESSAGES = 2_000_000  # per recording (a danmaku file's own bound); past it, nothing more is kept
SYNC_EVERY = 2.0  # seconds between fdatasyncs of the log (each line is flushed to the OS at once)
ANCHOR_EVERY = 0.25  # how often the sidecar looks at the recording's media seconds
ANCHOR_STEP = 0.05  # a new anchor is written when it places media second 0 this much earlier
ALIVE_EVERY = 2.0  # while connected, a line says so this often (where a dead worker's gap begins)
LOCK_WAIT = 30.0  # how long an attempt waits for the previous one to let go of the log
STOP_WAIT = 5.0  # how long the end of a recording waits for the source's thread to stop
# A broadcast that ended (its playlist's ENDLIST, or its source said so) leaves its comment stream
# open this long at most for the platform's own end notice, which may come a moment after the last
# segment was read (short of the recording's heartbeat timeout: nothing heartbeats meanwhile).
END_NOTICE_WAIT = 1.5
ENDS_NOTICED = frozenset({"endlist", "source_ended"})
# A recording's first part holds the messages received from this long before it began (its
# stream connects as the recording's first playlist read goes out; started_at has whole seconds).
BEFORE_START = 5.0
MESSAGES_NAME, MESSAGES_KIND, MESSAGES_MIME = "live-messages", "messages", "application/x-ndjson"


@dataclass(frozen=True)
class LoggedMessage:
    received: float  # Unix seconds
    message: dict[str, Any]


@dataclass(frozen=True)
class CommentFile:
    """A file a source renders from its log, stored as an asset named ``name``."""

    name: str
    kind: str
    mime: str
    body: bytes
    count: int = 0  # the comments it holds


@dataclass
class CommentContext:
    """What a source runs with: where messages go, when to stop, the address guard's settings."""

    client: httpx.Client
    sink: Callable[[dict[str, Any]], None]
    stopping: threading.Event
    allow_private: bool = False
    allowed_networks: tuple[str, ...] = ()
    connected: Callable[[], None] = lambda: None  # called at each connection made (and authenticated)
    proxy: str = ""  # net.proxy: the stream goes through it as every request does
    disconnected: Callable[[], None] = lambda: None  # called when a connection made ends


class CommentSource(Protocol):
    """A recording's comment stream, as its platform reads it."""

    def run(self, ctx: CommentContext) -> None:
        """Receive messages into ``ctx.sink`` until ``ctx.stopping`` is set (reconnecting as needed)."""
        ...

    def key(self, message: dict[str, Any]) -> str | None:
        """What tells ``message`` from another across a reconnect; None: kept each time it comes."""
        ...

    def keep(self, message: dict[str, Any]) -> bool:
        """Whether ``message`` belongs in the log."""
        ...

    def render(self, logged: list[LoggedMessage], media_zero: float | None) -> list[CommentFile]:
        """The platform's files of the recording's comments (its danmaku format)."""
        ...

    def summary(self) -> dict[str, Any]:
        """What the catalog keeps of the stream (JSON values)."""
        ...

    def ends(self, message: dict[str, Any]) -> bool:
        """Whether ``message`` is the platform's notice that the broadcast is over."""
        ...


# (the platform's settings section, the recording's canonical URL) -> its comments, or None.
LiveCommentsHook = Callable[[Any, str], "CommentSource | None"]


def log_path(part: Path) -> Path:
    return part.with_name(part.name.removesuffix(".part") + ".comments.jsonl")


def manifest_path(part: Path) -> Path:
    return part.with_name(part.name.removesuffix(".part") + ".comments.json")


def part_manifest_path(part: Path, index: int) -> Path:
    """The manifest of part ``index``'s comment files, beside the recording's ``part`` file."""
    return part.with_name(f"{part.name.removesuffix('.part')}.comments-part{index:03d}.json")


class CommentLog:
    """The JSON-lines log of one recording's messages (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.keys: set[str] = set()
        self.count = 0
        self.duplicates = 0
        self.connections = 0  # over every attempt
        self.offline: list[tuple[float, float]] = []  # (from, to): no connection, after the first (read())
        self.anchor: dict[str, float] | None = None
        # The recording whose media the anchors measure (LiveState.started_at; "" before any is
        # known): a log left by an earlier recording of the same item (a run that failed) keeps
        # its anchors and parts apart from this one's.
        self.recording = ""
        self.anchors: dict[str, dict[str, Any]] = {}  # each recording's lowest anchor
        self.bounds: dict[tuple[str, int], float] = {}  # (recording, part) -> until (wall): the part's comments end
        self._lock = threading.Lock()
        self._out: Any = None
        self._synced = time.monotonic()

    def open(self) -> CommentLog:
        """Read what earlier attempts kept (a torn last line, from a kill mid-write, is cut off) and
        open the log for appending."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for kind, when, entry in self._entries(truncate=True):
            if kind in ("anchor", "part"):
                self._mark(kind, when, entry)
            elif kind == "connected":
                self.connections += 1
            elif kind == "message":
                self.count += 1
                key = entry.get("key")
                if isinstance(key, str):
                    self.keys.add(key)
        self._out = open(self.path, "ab")  # noqa: SIM115 - closed by close()
        return self

    def _entries(self, truncate: bool = False) -> Iterator[tuple[str, float, dict[str, Any]]]:
        """(kind, when, line) for each line: ``message`` (the line), ``anchor`` (the anchor),
        ``connected``, ``disconnected`` and ``alive`` (the stream's state at a time)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        if truncate and end < len(data):
            with open(self.path, "r+b") as torn:
                torn.truncate(end)
        for line in data[:end].splitlines():
            if len(line) > MAX_LINE:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not isinstance(entry, dict):
                continue
            if isinstance(entry.get("anchor"), dict):
                yield "anchor", 0.0, entry
            elif isinstance(entry.get("part"), int) and isinstance(entry.get("until"), (int, float)):
                yield "part", float(entry["until"]), entry
            elif isinstance(entry.get("t"), (int, float)) and isinstance(entry.get("msg"), dict):
                yield "message", float(entry["t"]), entry
            else:
                for kind in ("connected", "disconnected", "alive"):
                    if isinstance(entry.get(kind), (int, float)):
                        yield kind, float(entry[kind]), entry

    def read(self) -> list[LoggedMessage]:
        """Every message the log holds, in order (its anchor into :attr:`anchor`, the connections
        into :attr:`connections`, the spans without one into :attr:`offline`)."""
        with self._lock:
            if self._out is not None:
                self._out.flush()
            logged: list[LoggedMessage] = []
            self.connections, self.offline = 0, []
            online, since = False, None  # since: when the stream was last known to be connected
            for kind, when, entry in self._entries():
                if kind in ("anchor", "part"):
                    self._mark(kind, when, entry)
                elif kind == "message":
                    logged.append(LoggedMessage(when, entry["msg"]))
                    since = when if online else since
                elif kind == "alive":
                    since = when
                elif kind == "disconnected":
                    online, since = False, when
                elif kind == "connected":
                    if self.connections and since is not None and when > since:
                        self.offline.append((since, when))  # a drop, or an attempt that died (no line says when)
                    self.connections += 1
                    online, since = True, when
            if not online and since is not None and self.connections:
                self.offline.append((since, time.time()))
            return logged

    def _mark(self, kind: str, when: float, entry: dict[str, Any]) -> None:
        """An anchor or a part's bound read from the log."""
        recording = entry.get("recording") if isinstance(entry.get("recording"), str) else ""
        if kind == "part":
            self.bounds[(recording, int(entry["part"]))] = when
            return
        lowest = _lower(self.anchors.get(recording), entry["anchor"])
        if lowest is not None:
            self.anchors[recording] = lowest
        self.anchor = self.anchors.get(self.recording) or self.anchors.get("")

    def follow(self, recording: str) -> None:
        """The anchors from now on measure ``recording`` (its state's ``started_at``)."""
        with self._lock:
            if recording != self.recording:
                self.recording = recording
                self.anchor = self.anchors.get(recording)

    def append(self, message: dict[str, Any], key: str | None, received: float) -> bool:
        """Keep ``message`` unless its key is held already (or the log is full); True when kept."""
        with self._lock:
            if key is not None and key in self.keys:
                self.duplicates += 1
                return False
            if self.count >= MAX_MESSAGES:
                return False
            line = json.dumps({"t": round(received, 3), "key": key, "msg": message}, ensure_ascii=False,
                              separators=(",", ":")).encode() + b"\n"
            if len(line) > MAX_LINE:
                log.info("live comment too long to keep", size=len(line))
                return False
            self._write(line)
            if key is not None:
                self.keys.add(key)
            self.count += 1
            return True

    def connected(self, when: float) -> None:
        """A connection of the stream was made (the summary counts them over every attempt)."""
        with self._lock:
            self.connections += 1
            self._write(json.dumps({"connected": round(when, 3)}).encode() + b"\n")

    def note(self, kind: str, when: float) -> None:
        """The stream ``disconnected``, or is still connected (``alive``: a worker that dies
        says nothing more, so the gap it leaves is known to begin no earlier than this)."""
        with self._lock:
            self._write(json.dumps({kind: round(when, 3)}).encode() + b"\n")

    def set_anchor(self, wall: float, media_seconds: float) -> None:
        """The recording held ``media_seconds`` at ``wall``: kept when it places media second 0
        earlier than the anchor held (by more than :data:`ANCHOR_STEP`)."""
        with self._lock:
            zero = self.media_zero
            if zero is None or wall - media_seconds < zero - ANCHOR_STEP:
                self.anchor = {"wall": round(wall, 3), "media_seconds": round(media_seconds, 3)}
                self.anchors[self.recording] = self.anchor
                self._write(json.dumps({"anchor": self.anchor, "recording": self.recording}).encode() + b"\n")

    def bound(self, recording: str, part: int, until: float) -> None:
        """Part ``part`` of ``recording`` holds the messages received before ``until`` (and after
        the part before it): written once, so every later rendering splits the log alike."""
        with self._lock:
            self.bounds[(recording, part)] = until
            line = json.dumps({"part": part, "until": round(until, 3), "recording": recording}).encode() + b"\n"
            if self._out is not None:
                self._write(line)
                return
            with open(self.path, "ab") as out:  # the stream's thread never took the log (another attempt held it)
                out.write(line)
                out.flush()
                os.fdatasync(out.fileno())

    @property
    def media_zero(self) -> float | None:
        """The wall time the recording's media second 0 stands for (None before it held media)."""
        if self.anchor is None:
            return None
        return float(self.anchor["wall"]) - float(self.anchor["media_seconds"])

    def _write(self, line: bytes) -> None:
        self._out.write(line)
        self._out.flush()  # in the OS at once: a killed worker loses nothing it received
        if time.monotonic() - self._synced >= SYNC_EVERY:
            os.fdatasync(self._out.fileno())
            self._synced = time.monotonic()

    def close(self) -> None:
        with self._lock:
            if self._out is not None:
                self._out.flush()
                os.fdatasync(self._out.fileno())
                self._out.close()
                self._out = None


class LiveCommentsSidecar:
    """Runs one recording's :class:`CommentSource` beside its download (a context manager:
    entered as the download begins, left as it returns or raises)."""

    def __init__(self, source: CommentSource, part: Path, client: httpx.Client, *, allow_private: bool = False,
                 allowed_networks: tuple[str, ...] = (), proxy: str = "",
                 clock: Callable[[], float] = time.time) -> None:
        self.source = source
        self.part = part
        self.client = client
        self.allow_private = allow_private
        self.allowed_networks = allowed_networks
        self.proxy = proxy
        self.clock = clock
        self.log = CommentLog(log_path(part))
        self.stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock_fd: int | None = None
        self._online = False
        self._end_heard = threading.Event()

    def __enter__(self) -> LiveCommentsSidecar:
        if self.recording_ended():
            return self  # an attempt after the end (its answer lost): only the files are left to write
        # The caller's context (an activity's: its log fields) goes with the thread.
        thread = threading.Thread(target=contextvars.copy_context().run, args=(self._run,), name="live-comments",
                                  daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is None and self._threads and self._online and not self._end_heard.is_set():
            state = load_live_state(self.part)
            if state is not None and state.ended in ENDS_NOTICED:
                self._end_heard.wait(END_NOTICE_WAIT)  # the broadcast's end notice, sent as it ended
        self.stopping.set()
        for thread in self._threads:
            thread.join(STOP_WAIT)
        if any(t.is_alive() for t in self._threads):
            log.warning("live comments: the stream's thread did not stop in time; writing what it got")
        try:
            # The download returned: a part of the recording is finished (its comments become
            # files for its commit), or the recording, kept as one file, ended.
            state = load_live_state(self.part) if exc_type is None else None
            if state is not None and state.part and state.done:
                self.finish_part(state)
            elif state is not None and state.ended and not state.part:
                self.finish()
        except Exception as exc:  # noqa: BLE001 - the comments never fail the media
            log.warning("live comments: files not written", error_class=type(exc).__name__, error=str(exc)[:300])
        finally:
            self.log.close()
            self._unlock()

    def recording_ended(self) -> bool:
        """Whether the recording's saved state says it ended (``ended``: why, once it has)."""
        state = load_live_state(self.part)
        return state is not None and bool(state.ended)

    # -- the thread ---------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            if not self._take_turn():
                return
            self.log.open()
            anchor = threading.Thread(target=contextvars.copy_context().run, args=(self._anchor,),
                                      name="live-comments-anchor", daemon=True)
            anchor.start()
            self._threads.append(anchor)
            log.info("live comments recording", log=self.log.path.name, held=self.log.count)
            self.source.run(CommentContext(self.client, self._sink, self.stopping, self.allow_private,
                                           self.allowed_networks, self._connected, self.proxy, self._disconnected))
        except Exception as exc:  # noqa: BLE001 - the comments never fail the media
            log.warning("live comments stopped", error_class=type(exc).__name__, error=str(exc)[:300])

    def _take_turn(self) -> bool:
        """The log's lock: an attempt the server gave up on may still hold it until its download stops."""
        lock = self.log.path.with_name(self.log.path.name + ".lock")
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + LOCK_WAIT
        while not self.stopping.is_set():
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._lock_fd = fd
                return True
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    log.warning("live comments: another attempt still holds the log; not recording")
                    break
                self.stopping.wait(0.2)
        os.close(fd)
        return False

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _connected(self) -> None:
        self._online = True
        self.log.connected(self.clock())

    def _disconnected(self) -> None:
        self._online = False
        if not self.stopping.is_set():  # the end of the recording is no gap
            self.log.note("disconnected", self.clock())

    def _sink(self, message: dict[str, Any]) -> None:
        if self.source.keep(message):
            self.log.append(message, self.source.key(message), self.clock())
        ends = getattr(self.source, "ends", None)  # a source written before the notice was asked for
        if ends is not None and ends(message):
            self._end_heard.set()

    def _anchor(self) -> None:
        """Anchors while the recording holds media, and while connected, a line every
        :data:`ALIVE_EVERY` seconds."""
        alive = time.monotonic()
        while not self.stopping.is_set():
            state = load_live_state(self.part)
            if state is not None and state.segments > 0 and not state.ended:
                self.log.follow(state.started_at)
                self.log.set_anchor(self.clock(), state.seconds)
            if self._online and time.monotonic() - alive >= ALIVE_EVERY:
                self.log.note("alive", self.clock())
                alive = time.monotonic()
            self.stopping.wait(ANCHOR_EVERY)

    # -- the end ------------------------------------------------------------------------------
    def finish(self) -> dict[str, Any]:
        """Render the log into the platform's files and a copy of it, and list them in the
        manifest the commit reads (a recording kept as one file: all of it, when it ended);
        idempotent (the same log gives the same files)."""
        state = load_live_state(self.part)
        self.log.follow(state.started_at if state is not None else "")
        logged = self.log.read()
        zero = self.log.media_zero
        manifest = self._render(logged, zero, zero, "")
        _write_atomically(manifest_path(self.part), json.dumps(manifest).encode())
        log.info("live comments written", messages=len(logged), comments=manifest["summary"]["comments"])
        return manifest

    def finish_part(self, state: LiveState) -> dict[str, Any]:
        """The files of one part of the recording (``state``: the part just finished), listed in
        the part's manifest (:func:`part_manifest_path`) for the part's commit: the messages
        received while the part's media was live, timed from the part's first second.

        A part holds the messages received after the part before it ended and before its own
        media's end reached the live edge (the last part: every message after the part before).
        That bound is written in the log the first time (:meth:`CommentLog.bound`), so an attempt
        whose answer was lost, or a later anchor, splits the log alike: no message is in two parts.
        A log left by an earlier recording of the item keeps its messages (those before this
        recording began) and its parts to itself."""
        recording, index = state.started_at, state.part
        self.log.follow(recording)
        logged = self.log.read()
        zero = self.log.media_zero
        start = state.seconds - state.part_seconds
        began = _wall(recording)
        earlier = [until for (rec, part), until in self.log.bounds.items()
                   if (rec == recording and part < index) or (rec != recording and began is not None and until <= began)]
        since = max([*earlier, *([began - BEFORE_START] if began is not None else [])], default=None)
        until = self.log.bounds.get((recording, index))
        if until is None and not state.ended:
            until = (zero if zero is not None else self.clock()) + state.seconds
            self.log.bound(recording, index, until)
        if zero is None:  # no anchor: the part's first message stands for its first second
            zero = next((m.received for m in logged if since is None or m.received >= since), self.clock()) - start
        chosen = [m for m in logged if (since is None or m.received >= since) and (until is None or m.received < until)]
        manifest = self._render(chosen, zero + start, zero, "" if index == 1 else f"-part{index:03d}")
        manifest["summary"]["part"] = index
        _write_atomically(part_manifest_path(self.part, index), json.dumps(manifest).encode())
        log.info("live comments of a part written", part=index, messages=len(chosen),
                 comments=manifest["summary"]["comments"])
        return manifest

    def _render(self, logged: list[LoggedMessage], zero: float | None, media_zero: float | None,
                suffix: str) -> dict[str, Any]:
        """Write the platform's files of ``logged`` (times from ``zero``) and the messages' copy,
        each asset's name ending in ``suffix``; the manifest that lists them (not yet written)."""
        files = self.source.render(logged, zero)
        copy = b"".join(json.dumps({"received": m.received,
                                    "seconds": round(m.received - zero, 3) if zero is not None else None,
                                    "message": m.message}, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
                        for m in logged)
        files.append(CommentFile(MESSAGES_NAME, MESSAGES_KIND, MESSAGES_MIME, copy, len(logged)))
        listed = []
        for file in files:
            name = file.name + suffix
            path = self.part.with_name(f"{self.part.name.removesuffix('.part')}.{name}{_extension(file.mime)}")
            _write_atomically(path, file.body)
            listed.append({"name": name, "kind": file.kind, "mime": file.mime, "path": path.name,
                           "size": len(file.body), "sha256": hashlib.sha256(file.body).hexdigest(),
                           "count": file.count})
        offline = [{"at_seconds": round(start - media_zero, 3) if media_zero is not None else None,
                    "seconds": round(stop - start, 3)} for start, stop in self.log.offline]
        summary = {**self.source.summary(), "connections": self.log.connections, "messages": len(logged),
                   "media_zero": media_zero, "offline": offline,
                   "offline_seconds": round(sum(o["seconds"] for o in offline), 3),
                   "comments": next((f.count for f in files if f.name != MESSAGES_NAME), 0)}
        return {"files": listed, "summary": summary}


def _wall(iso: str) -> float | None:
    """Unix seconds of an ISO time (a recording's ``started_at``); None for anything else."""
    try:
        return datetime.fromisoformat(iso).timestamp()
    except (TypeError, ValueError):
        return None


def _lower(held: dict[str, Any] | None, entry: dict[str, Any]) -> dict[str, Any] | None:
    """Of two anchors, the one that places media second 0 earlier (a malformed one is ignored)."""
    try:
        zero = float(entry["wall"]) - float(entry["media_seconds"])
    except (KeyError, TypeError, ValueError):
        return held
    if held is None or zero < float(held["wall"]) - float(held["media_seconds"]):
        return entry
    return held


def _extension(mime: str) -> str:
    return {"application/xml": ".xml", MESSAGES_MIME: ".jsonl"}.get(mime, ".bin")


def _write_atomically(path: Path, body: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as out:
        out.write(body)
        out.flush()
        os.fdatasync(out.fileno())
    os.replace(tmp, path)


@dataclass(frozen=True)
class ListedFile:
    """A comment file the manifest lists, as the commit stores it."""

    name: str
    kind: str
    mime: str
    path: Path
    size: int
    sha256: str


def comment_files(directory: Path) -> tuple[list[ListedFile], dict[str, Any] | None]:
    """The comment files (and the summary) the sidecars of recordings kept as one file left in a
    work directory (a recording's file's directory) when they ended: nothing where none did."""
    return _listed(sorted(directory.glob("*.comments.json")))


def part_comment_files(directory: Path, index: int) -> tuple[list[ListedFile], dict[str, Any] | None]:
    """The comment files (and the summary) of part ``index`` of a recording in ``directory``."""
    return _listed(sorted(directory.glob(f"*.comments-part{index:03d}.json")))


def _listed(manifests: list[Path]) -> tuple[list[ListedFile], dict[str, Any] | None]:
    files: list[ListedFile] = []
    summary = None
    for manifest in manifests:
        try:
            doc = json.loads(manifest.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict):
            continue
        for entry in doc.get("files") or []:
            try:
                files.append(ListedFile(str(entry["name"]), str(entry["kind"]), str(entry["mime"]),
                                        manifest.parent / Path(str(entry["path"])).name, int(entry["size"]),
                                        str(entry["sha256"])))
            except (KeyError, TypeError, ValueError):
                continue
        summary = summary or (doc.get("summary") if isinstance(doc.get("summary"), dict) else None)
    return files, summary


@dataclass
class LiveCommentSidecars:
    """The platforms' comment hooks, each with its settings: what the download activity asks."""

    hooks: Mapping[str, Callable[[str], CommentSource | None]] = field(default_factory=dict)
    allow_private: bool = False
    allowed_networks: tuple[str, ...] = ()
    proxy: str = ""

    @classmethod
    def from_settings(cls, settings: Settings) -> LiveCommentSidecars:
        from trawl.platforms.registry import PLATFORMS

        hooks: dict[str, Callable[[str], CommentSource | None]] = {}
        for platform in PLATFORMS:
            hook = getattr(platform, "live_comments", None)
            if hook is not None and platform.name in settings.platforms:
                section = settings.platforms[platform.name]
                hooks[platform.name] = (lambda url, hook=hook, section=section: hook(section, url))
        # A WebSocket takes the first of net.proxies (its connection lives as long as the recording).
        proxy = settings.net.proxy or next(iter(settings.net.proxies), "")
        return cls(hooks, settings.net.allow_private, tuple(settings.net.allowed_networks), proxy)

    def around(self, asset: Asset, platform: str, canonical_url: str, part: Path,
               client: httpx.Client) -> contextlib.AbstractContextManager[Any]:
        """The sidecar of a live recording with comments; a context that does nothing otherwise."""
        hook = self.hooks.get(platform)
        if asset.protocol != LIVE_PROTOCOL or asset.kind != "video" or hook is None:
            return contextlib.nullcontext()
        source = hook(canonical_url)
        if source is None:
            return contextlib.nullcontext()
        return LiveCommentsSidecar(source, part, client, allow_private=self.allow_private,
                                   allowed_networks=self.allowed_networks, proxy=self.proxy)


__all__ = ["CommentContext", "CommentFile", "CommentLog", "CommentSource", "ListedFile", "LiveCommentSidecars",
           "LiveCommentsHook", "LiveCommentsSidecar", "LoggedMessage", "comment_files", "log_path", "manifest_path",
           "part_comment_files", "part_manifest_path"]
