"""Plain HTTP: one file streamed to its ``.part`` file, resumably (the protocol in ARCHITECTURE.md).

On every attempt the kept prefix is the smaller of the last recorded offset and the file size;
it is re-hashed so the streamed sha256 covers the whole file. A resumed request sends
``Range: bytes=<offset>-`` with ``If-Range: <etag or last-modified>`` and appends only on a 206
whose ``Content-Range`` starts at the offset; a 200 restarts from zero; a 416 with the file
already complete finishes; a changed validator is never appended to.

Without a strong validator (no ETag or only a weak one, and no Last-Modified) the server cannot
be asked whether it still has the same resource, so a resume first proves it: the request starts
:data:`OVERLAP` bytes before the offset and those bytes must equal the kept ones, otherwise the
file is started again from zero (a file replaced by another of the same size would else be
spliced into one that matches neither).

Large files on servers that honour Range may be fetched in segments over several connections
(:mod:`trawl.download.segmented`); their state rides in :attr:`ResumeState.segments`.

The bytes are written with ``pwritev`` straight from the received chunks (no joining copy),
hashed on another thread, and their writeback is started as they are written (:class:`Writeback`)
so that the page cache holds little of the file by the end and committing it (an fsync) is short.
A large body is read straight from the socket when :mod:`trawl.download.fastpath` can, and one
of several MiB on a plain socket spliced from it into the file, its hash then taken by reading
the file back beside the socket reads (:class:`ReadBackHasher`).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from trawl.download.fastpath import RawBody, raw_batches, widen_http_reads
from trawl.download.segmented import Fallback, HostSlots, RestartAll, SegmentedRun, plan_segments
from trawl.download.space import give_back, reserve, reserve_file, room_now
from trawl.download.state import (
    WRITE_BATCH,
    DownloadOutcome,
    ReadBackHasher,
    ResumeState,
    Stopped,
    Writeback,
    discard,
    fresher,
    hash_prefix,
    load_state,
    pwrite_all,
    save_state,
    state_path,
    strong_validator,
)
from trawl.download.throttle import Throttle
from trawl.errors import (
    NetworkError,
    StorageError,
    TooLarge,
    Truncated,
    TrawlError,
    UrlExpired,
    classify_exception,
    classify_response,
)
from trawl.ranges import parse_content_range

if TYPE_CHECKING:
    from trawl.settings import DownloadSettings

# Bytes re-fetched before the offset to prove a resource without validators is unchanged.
OVERLAP = 64 * 1024
# More connections pay only when one would take a while: on a server that sends a GiB in about a
# second over one connection, four cost 0.6 s more end to end (threads, the prefix read back).
SPLIT_AFTER_S = 2.0


Heartbeat = Callable[[ResumeState], None]


def _save(part: Path, state: ResumeState) -> None:
    """Save ``state`` beside ``part``, or, when it cannot be, remove the record there: one left
    behind would describe the bytes as they were and be trusted over the heartbeats
    (:func:`trawl.download.state.fresher`). Without it a retry takes the last heartbeat the
    server holds, which may be older (an attempt's quiet first second sends none)."""
    try:
        save_state(part, state)
    except OSError:
        try:
            state_path(part).unlink(missing_ok=True)
        except OSError:
            pass


class HttpDownloader:
    """Plain HTTP (protocol ``http``): one file, resumed by range, split over several connections
    when that pays (:mod:`trawl.download.segmented`)."""

    def __init__(
        self,
        client: httpx.Client,
        *,
        max_file_size: int,
        heartbeat: Heartbeat = lambda state: None,
        should_stop: Callable[[], bool] = lambda: False,
        heartbeat_every: float = 0.2,
        segments: int = 1,
        segment_min_size: int = 64 << 20,
        host_slots: HostSlots | None = None,
        limit_rate: int = 0,
        split_after_s: float = SPLIT_AFTER_S,
        keep_free: int = 0,
    ) -> None:
        """
        Args:
            segments: connections for one file of at least ``segment_min_size`` bytes on a
                server that honours Range; 1 downloads every file over one connection.
            split_after_s: the extra connections open once the first one would need longer
                than this for the rest of the file (at once when 0); a server fast enough over
                one connection gets its segments one after another over that one.
            host_slots: caps the extra connections segments open per host (shared by all the
                downloads of the process); None: no cap beyond ``segments``.
            limit_rate: bytes per second for this download (over one connection); 0: no limit.
            keep_free: bytes of the work directory's filesystem a download never takes
                (:mod:`trawl.download.space`: the room of a file of known size is taken first).
        """
        widen_http_reads()
        self.client = client
        self.max_file_size = max_file_size
        self.heartbeat = heartbeat
        self.should_stop = should_stop
        self.heartbeat_every = heartbeat_every
        self.segments = 1 if limit_rate else max(1, segments)
        self.throttle = Throttle(limit_rate) if limit_rate else None
        self.segment_min_size = segment_min_size
        self.host_slots = host_slots
        self.split_after_s = split_after_s
        self.keep_free = keep_free
        self._restarts = 0
        self._single_only = False

    @classmethod
    def from_settings(cls, client: httpx.Client, settings: DownloadSettings, *, heartbeat: Heartbeat,
                      should_stop: Callable[[], bool], platform: str = "", quality: int = 0, limit_rate: int = 0,
                      host_slots: HostSlots | None = None) -> HttpDownloader:
        """A downloader as ``settings`` set it up for one asset: the constructor every downloader of
        :data:`trawl.download.DOWNLOADERS` shares (``quality`` is for HLS, unused here).

        Args:
            platform: the item's platform (its own ``segments`` setting, if any).
            limit_rate: the crawl's rate limit in bytes per second; 0: ``settings.limit_rate``.
            host_slots: the process's cap on extra connections per host.
        """
        return cls(client, max_file_size=settings.max_file_size, heartbeat=heartbeat, should_stop=should_stop,
                   segments=settings.segments_for(platform), segment_min_size=settings.segment_min_size,
                   host_slots=host_slots, limit_rate=limit_rate or settings.limit_rate,
                   split_after_s=settings.split_after.total_seconds(), keep_free=settings.keep_free)

    @staticmethod
    def previous_state(details: object, urls: list[str]) -> ResumeState | None:
        """The last attempt's state in its heartbeat ``details``, when it is of one of ``urls``: an
        activity that downloads several files in turn (small_item) heartbeats each one's state."""
        state = ResumeState.of(details)
        return state if state is not None and state.url in urls else None

    def download(
        self,
        urls: list[str],
        part: Path,
        *,
        headers: dict[str, str] | None = None,
        expected_size: int | None = None,
        previous: ResumeState | None = None,
    ) -> DownloadOutcome:
        """Download the first URL that works into ``part``; backups are tried in order.

        Raises:
            TrawlError: classified; :class:`UrlExpired` wins over other failures so the caller
                fetches fresh URLs, otherwise the primary URL's failure is raised. A file that
                cannot fit the work directory's filesystem is :class:`TooLarge`; one that has no
                room there now, a :class:`StorageError` (:mod:`trawl.download.space`).
            Stopped: ``should_stop`` turned true; the state was heartbeated first.
        """
        if expected_size is not None and expected_size > self.max_file_size:
            raise TooLarge(f"expected size {expected_size} exceeds max_file_size {self.max_file_size}")
        part.parent.mkdir(parents=True, exist_ok=True)
        if expected_size is not None:
            room_now(part, expected_size, self.keep_free, _what(part))  # before any request
        state = fresher(previous, load_state(part)) or ResumeState()
        ordered = list(dict.fromkeys(([state.url] if state.url in urls else []) + urls))
        failures: list[TrawlError] = []
        for url in ordered:
            self._restarts, self._single_only = 0, False
            try:
                return self._attempt(url, part, dict(headers or {}), state, expected_size)
            except Stopped:
                raise
            except Exception as exc:  # noqa: BLE001 - every failure is classified, then the next URL tried
                error = classify_exception(exc)
                if isinstance(error, (TooLarge, StorageError)):
                    raise error from None
                failures.append(error)
                state = load_state(part) or ResumeState()
        expired = next((f for f in failures if isinstance(f, UrlExpired)), None)
        if not failures:
            raise NetworkError("no URL to download")
        raise expired or failures[0]

    def _attempt(
        self, url: str, part: Path, headers: dict[str, str], state: ResumeState, expected_size: int | None,
        restarted: bool = False,
    ) -> DownloadOutcome:
        size_on_disk = part.stat().st_size if part.exists() else 0
        validator = strong_validator(state.etag, state.last_modified)
        if state.segments:
            if validator and state.total and size_on_disk == state.total:
                # Another URL (a re-fetch after url_expired, a backup CDN) keeps the segments: each
                # segment asks with If-Range, and an answer of another version (ETag, size) makes
                # the run start over, so no byte of two versions ends up in one file.
                reserve_file(part, state.total, self.keep_free, _what(part))  # the holes not yet written
                return self._segmented(url, part, headers, replace(state, url=url), None, expected_size)
            state = ResumeState(url=url)  # nothing to check the segments against
        offset = min(state.offset, size_on_disk)
        # A fresh download that may be segmented asks for "bytes=0-": a 206 says Range works
        # and gives the size, a 200 is the whole file over this one connection.
        may_segment = (self.segments > 1 and not self._single_only and not restarted and offset == 0
                       and (expected_size is None or expected_size >= self.segment_min_size))
        overlap = 0
        if offset and not validator:
            if state.total is None:
                offset = 0  # nothing to prove the server still has the same bytes
            else:
                overlap = min(offset, OVERLAP)
        headers["Accept-Encoding"] = "identity"
        if offset:
            headers["Range"] = f"bytes={offset - overlap}-"
            if validator:
                headers["If-Range"] = validator
        elif may_segment:
            headers["Range"] = "bytes=0-"
        signed_before = state.url == url and state.offset > 0
        asked = time.monotonic()
        with self.client.stream("GET", url, headers=headers) as resp:
            answered_in = time.monotonic() - asked  # what a request costs (segments plan by it)
            status = resp.status_code
            if status >= 400 and status != 416:
                body = resp.read()[:4096] if int(resp.headers.get("content-length") or 0) <= 65536 else b""
                raise classify_response(status, resp.headers, body, url=url, signed_media=signed_before) or NetworkError(
                    f"HTTP {status} for {url}")
            etag = resp.headers.get("etag")
            last_modified = resp.headers.get("last-modified")
            mime = resp.headers.get("content-type", "").split(";", 1)[0].strip() or None
            if status == 416:
                content_range = parse_content_range(resp.headers.get("content-range"))
                total = content_range.total if content_range else None
                if offset and total is not None and offset == total and (state.total in (None, total)):
                    return self._finish(part, url, offset, total, state.etag, mime, offset, 0)
                if restarted:
                    raise NetworkError(f"{url}: HTTP 416 for a request without Range")
                return self._restart(url, part, headers, expected_size)
            if status == 206:
                content_range = parse_content_range(resp.headers.get("content-range"))
                changed = bool(state.etag and etag and etag != state.etag)
                if content_range is None or content_range.start != offset - overlap or changed or (
                    state.total is not None and content_range.total not in (None, state.total)
                ):
                    if restarted:
                        raise NetworkError(f"{url}: unusable 206 for a request without Range")
                    return self._restart(url, part, headers, expected_size)
                total = content_range.total
                if (may_segment and total is not None and total >= self.segment_min_size
                        and strong_validator(etag, last_modified)):
                    if total > self.max_file_size:
                        discard(part)
                        raise TooLarge(f"{url} is {total} bytes, over max_file_size {self.max_file_size}")
                    plan = ResumeState(0, total, etag, last_modified, url, segments=plan_segments(total, self.segments))
                    discard(part)
                    # Recorded before the file exists at its full length: a crash before the first
                    # checkpoint must leave no record of segments done that are holes here.
                    _save(part, plan)
                    try:
                        reserve_file(part, total, self.keep_free, _what(part))
                    except TrawlError:
                        discard(part)
                        raise
                    return self._segmented(url, part, headers, plan, resp, expected_size, answered_in)
            else:
                offset = overlap = 0  # a 200 is the whole resource: the validator failed or Range is unsupported
                total = _content_length(resp)
            chunks: Iterable[bytes] = resp.iter_raw(self.throttle.batch_bytes if self.throttle is not None else None)
            raw = None if overlap else RawBody.of(resp)
            if overlap:
                confirmed = _after_overlap(iter(chunks), _read_range(part, offset - overlap, overlap), url)
                if confirmed is None:
                    return self._restart(url, part, headers, expected_size)
                chunks = confirmed
            limit_total = total or expected_size
            if limit_total is not None and limit_total > self.max_file_size:
                discard(part)
                raise TooLarge(f"{url} is {limit_total} bytes, over max_file_size {self.max_file_size}")
            new_state = ResumeState(offset, total, etag, last_modified, url)
            # Recorded before a byte is written: after a 200 the file is this version's from byte 0,
            # and a crash before the first heartbeat must not leave the record of the one before.
            _save(part, new_state)
            digest = hash_prefix(part, offset)
            transferred = self._stream(chunks, part, digest, new_state, raw)
        if new_state.total is not None and new_state.offset < new_state.total:
            raise Truncated(f"{url}: body ended at byte {new_state.offset} of {new_state.total}")
        return self._finish(part, url, new_state.offset, new_state.total, etag, mime, offset, transferred, digest)

    def _segmented(
        self, url: str, part: Path, headers: dict[str, str], state: ResumeState, first: httpx.Response | None,
        expected_size: int | None, first_wait: float = 0.0,
    ) -> DownloadOutcome:
        resumed = state.offset
        headers = {k: v for k, v in headers.items() if k.lower() not in ("range", "if-range")}
        run = SegmentedRun(self, url, part, headers, state, first, first_wait)
        try:
            digest = run.run()
        except RestartAll as changed:
            if self._restarts:
                raise NetworkError(f"{url}: {changed}; changed again after starting over") from None
            self._restarts += 1
            discard(part)
            fresh = ResumeState(url=url)
            save_state(part, fresh)
            return self._attempt(url, part, headers, fresh, expected_size)
        except Fallback as fallback:
            # Keep the contiguous prefix and go on over one connection (its own Range checks apply).
            self._single_only = True
            single = ResumeState(fallback.prefix, state.total, state.etag, state.last_modified, url)
            with open(part, "r+b") as out:
                out.truncate(fallback.prefix)
            save_state(part, single)
            return self._attempt(url, part, headers, single, expected_size)
        mime = run.mime
        return DownloadOutcome(str(part), state.total or 0, digest.hexdigest(), state.total, state.etag, url, mime,
                               resumed, run.transferred, run.connections)

    def _restart(self, url: str, part: Path, headers: dict[str, str], expected_size: int | None) -> DownloadOutcome:
        discard(part)
        headers.pop("Range", None)
        headers.pop("If-Range", None)
        fresh = ResumeState(url=url)
        save_state(part, fresh)
        return self._attempt(url, part, headers, fresh, expected_size, restarted=True)

    def _stream(self, chunks: Iterable[bytes], part: Path, digest: hashlib._Hash, state: ResumeState,
                raw: RawBody | None = None) -> int:
        """Append the body to ``part``; the state advances only over bytes written to the file.

        The body comes in batches of up to :data:`WRITE_BATCH` bytes (fewer thread hand-offs than
        per socket read), each hashed on another thread; through httpx each batch is written with
        one ``pwritev``, with ``raw`` the batches are reused buffers filled from the socket whose
        pieces were written as they arrived.
        """
        transferred = 0
        last_beat = time.monotonic()
        hasher: _HashThread | ReadBackHasher | None = None
        streamed = False  # the whole body is in the file: only then may the hash's failure be told
        try:
            fd = os.open(part, os.O_RDWR | os.O_CREAT | (0 if state.offset else os.O_TRUNC), 0o644)
            try:
                if state.offset:
                    os.ftruncate(fd, state.offset)
                if state.total is not None:
                    # After the truncation, which frees whatever lay beyond the kept bytes.
                    reserve(fd, state.offset, state.total, self.keep_free, _what(part))
                writeback = Writeback(fd, state.offset)
                # A large body on a plain socket goes from the socket to the file without passing
                # through Python, and is hashed by reading the file back (fastpath's docstring).
                hasher = ReadBackHasher(digest, fd, state.offset) if raw is not None and raw.can_splice \
                    else _HashThread(digest)
                batches = (raw_batches(raw, fd, state.offset, batch_bytes=self._batch_bytes,
                                       max_wait=self.heartbeat_every, max_file_size=self.max_file_size)
                           if raw is not None else _batches(chunks, self.heartbeat_every, self._batch_bytes))
                try:
                    # A failing body still yields what arrived before the failure: good data in
                    # order, kept; the batch source raises the failure after it.
                    for batch, size, release in batches:
                        transferred += self._write(fd, hasher, batch, size, state, release, written=raw is not None)
                        writeback.written(state.offset)
                        if self.throttle is not None:
                            self.throttle.take(size, lambda: self._throttled(part, state))
                        now = time.monotonic()
                        # A slow transfer still writes at every heartbeat, so the recorded
                        # offset never lags the bytes received by more than one interval.
                        if now - last_beat >= self.heartbeat_every:
                            last_beat = now
                            self.record(part, state)
                            if self.should_stop():
                                raise Stopped(f"stopped at byte {state.offset}", state.offset)
                finally:
                    batches.close()
                    writeback.written(state.offset, final=True)
                streamed = True
            finally:
                try:
                    give_back(fd)  # the room of bytes this attempt did not write goes back
                finally:
                    os.close(fd)
        except TooLarge:
            discard(part)
            raise
        finally:
            try:
                if hasher is not None:
                    hasher.finish()
            except OSError:
                if streamed:  # else the download's own failure is the one to tell
                    raise
            finally:
                if part.exists():
                    self.record(part, state)
        return transferred

    @property
    def _batch_bytes(self) -> int:
        # Throttled, bytes pass a small batch at a time: an even pace, not 1 MiB then a long wait.
        return min(WRITE_BATCH, self.throttle.batch_bytes) if self.throttle is not None else WRITE_BATCH

    def _write(self, fd: int, hasher: _HashThread | ReadBackHasher, batch: list, size: int, state: ResumeState,
               release: Callable[[], None] | None = None, written: bool = False) -> int:
        """Write ``batch`` at the state's offset (unless already ``written`` there), hash it, advance the state."""
        if state.offset + size > self.max_file_size:
            raise TooLarge(f"{state.url}: body passed max_file_size {self.max_file_size}")
        if not written:
            pwrite_all(fd, batch, state.offset)
        hasher.update(batch, release, size)
        state.offset += size
        return size

    def _throttled(self, part: Path, state: ResumeState) -> None:
        """While a rate limit holds the download: heartbeat, and stop when asked to."""
        self.record(part, state)
        if self.should_stop():
            raise Stopped(f"stopped at byte {state.offset}", state.offset)

    def record(self, part: Path, state: ResumeState) -> None:
        """Save ``state`` beside ``part`` and heartbeat it."""
        _save(part, state)  # if it cannot be, the heartbeat below still records the offset
        self.heartbeat(ResumeState(**asdict(state)))

    def _finish(
        self, part: Path, url: str, size: int, total: int | None, etag: str | None, mime: str | None,
        resumed_from: int, transferred: int, digest: hashlib._Hash | None = None,
    ) -> DownloadOutcome:
        if digest is None:
            digest = hash_prefix(part, size)
        return DownloadOutcome(str(part), size, digest.hexdigest(), total, etag, url, mime, resumed_from, transferred)


class _HashThread:
    """Feeds a digest from its own thread: hashlib releases the GIL on large buffers, so hashing
    overlaps with receiving and writing instead of adding to them. The queue bounds memory."""

    def __init__(self, digest: hashlib._Hash, depth: int = 8) -> None:
        self.digest = digest
        self.queue: queue.Queue[tuple[list, Callable[[], None] | None] | None] = queue.Queue(maxsize=depth)
        self.thread = threading.Thread(target=self._run, name="sha256", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (item := self.queue.get()) is not None:
            batch, release = item
            for chunk in batch:
                self.digest.update(chunk)
            if release is not None:
                release()

    def update(self, batch: list, release: Callable[[], None] | None = None, size: int = 0) -> None:
        """Hash ``batch`` (chunks in order; ``size`` is their length), then call ``release`` (its
        buffers may be reused)."""
        self.queue.put((batch, release))

    def finish(self) -> None:
        self.queue.put(None)
        self.thread.join()


def _batches(chunks: Iterable[bytes], every: float, most: int = WRITE_BATCH) -> Iterator[tuple[list[bytes], int, None]]:
    """The chunks in lists of about :data:`WRITE_BATCH` bytes, or what came in ``every`` seconds.

    When the chunks fail, the bytes received before are yielded first, then the failure raised.
    """
    batch: list[bytes] = []
    batched = 0
    last = time.monotonic()
    try:
        for chunk in chunks:
            batch.append(chunk)
            batched += len(chunk)
            now = time.monotonic()
            if batched >= most or now - last >= every:
                yield batch, batched, None
                batch, batched, last = [], 0, now
    except Exception:
        if batch:
            yield batch, batched, None
        raise
    if batch:
        yield batch, batched, None


def _what(part: Path) -> str:
    """The asset a partial file holds, as messages name it."""
    return part.name.removesuffix(".part")


def _read_range(part: Path, start: int, length: int) -> bytes:
    with open(part, "rb") as src:
        src.seek(start)
        return src.read(length)


def _after_overlap(chunks: Iterator[bytes], kept: bytes, url: str) -> Iterator[bytes] | None:
    """The body after its first ``len(kept)`` bytes, or None when those differ from ``kept``.

    Raises:
        Truncated: the body ended inside the overlap (the kept file is untouched; resume again).
    """
    received = bytearray()
    for chunk in chunks:
        received += chunk
        if len(received) >= len(kept):
            break
    if len(received) < len(kept):
        raise Truncated(f"{url}: body ended while checking the {len(kept)} bytes before the resume offset")
    if received[: len(kept)] != kept:
        return None
    rest = bytes(received[len(kept):])
    return itertools.chain([rest] if rest else [], chunks)


def _content_length(resp: httpx.Response) -> int | None:
    value = resp.headers.get("content-length")
    return int(value) if value and value.isdigit() else None

