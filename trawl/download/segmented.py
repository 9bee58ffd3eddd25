"""One file over several connections, each fetching its own byte range into the same file.

Throttled CDNs limit each connection, not each client; N ranges in parallel go about N times
as fast. :class:`trawl.download.http.HttpDownloader` starts a run once a ``Range: bytes=0-`` request was
answered 206 with the size and a strong validator; the first connection keeps that answer for
segment 0, the others ask ``Range: bytes=<from>-<to>`` with ``If-Range``.

- Each segment is ``[start, end, done]`` in :attr:`ResumeState.segments`; a resumed segment
  asks only for ``start + done`` onwards. The state is saved and heartbeated after an
  ``fdatasync``, so a recorded byte is a byte on disk even after the machine crashes (the file
  is written in place, so its size proves nothing).
- A fresh run opens its extra connections only once the first one proves slow
  (:func:`worth_splitting`, judged every :data:`SPLIT_TICK` from the first connection's rate
  since the run began: a throttled server is found out within tens of milliseconds): while the
  rest of the file would take it less than ``split_after_s``, the answer to ``bytes=0-`` reads
  on from one segment into the next (the state still records each segment), so a server fast
  enough for one connection costs no more requests or threads than a download without segments.
- When the run splits, what the first answer has not reached is shared out afresh
  (:func:`plan_rounds`): every connection, the first one included, gets the same number of bytes,
  so that they end together. The hasher can follow only the contiguous prefix, so the bytes of
  segments that end together are read back and hashed after the last one ends (three quarters
  of the file over four connections: 35-40 ms for 96 MiB here); where a request costs less, each
  connection's share comes as a large piece and then smaller ones, and the large pieces are
  hashed while the small ones download.
- A connection with no segment left takes part of what another still has to read
  (:func:`steal`, a new segment at the end of the list, as aria2c does): of the segment that
  would end last at its reader's pace, what that reader would not reach while the taker reads
  the rest at its own. Connections of unequal speed, or a split that came late, end together
  instead of waiting for the slowest one. A reader so slow that it would end after this
  connection alone could read every segment still pending is taken from before those
  (:meth:`SegmentedRun._behind`): it keeps a margin after each cut, so it must be cut early.
  The segments then no longer lie in the list in file order; the prefix hasher sorts them.
- sha256 follows the contiguous prefix: a piece written right at the end of the hashed prefix
  is hashed from memory by its writer; a thread hashes what lies beyond, from the prefix up to
  the first gap, reading back what the other segments wrote (from the page cache): no second
  full read after the download, and on resume the kept bytes are hashed the same way.
- Answers that say the resource changed (a 200 or 206 with another ETag, a 416, another
  size) raise :class:`RestartAll`; a server that honoured one Range but answers another with
  a 200 of the same resource raises :class:`Fallback` (go on over one connection from the
  contiguous prefix). A segment that fails for a transient reason is asked again a few times
  in place; a permanent failure (404, expired URL...) stops the run and is raised as is.
- Extra connections take a slot from :class:`HostSlots`; without a free slot the run uses
  fewer connections (the first one never waits).

A run asks of the downloader that starts it only what :class:`Owner` lists, so this module never
imports the single-connection downloader.
"""

from __future__ import annotations

import collections
import hashlib
import math
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

import httpx

from trawl.download.fastpath import PIECE, RawBody
from trawl.download.state import WRITE_BATCH, ResumeState, Stopped, Writeback, pwrite_all, strong_validator
from trawl.errors import NetworkError, Truncated, TrawlError, classify_exception, classify_response
from trawl.ranges import parse_content_range

SEGMENT_RETRIES = 3  # transient failures of one segment retried in place before the run fails
TICK = 0.1  # seconds between the coordinator's checks for stop and errors
SPLIT_TICK = 0.02  # seconds between its checks of the first connection's pace, until it splits
NO_BYTE_SLOW = 0.25  # seconds without a byte on the first connection that make it slow
# A segment another connection takes part of still ends at least this far beyond the byte its
# reader has recorded: that reader may be filling a buffer of up to WRITE_BATCH bytes (through
# httpx, a batch of chunks) meant for the old, longer segment, and no byte it writes may fall
# into a segment another connection owns.
STEAL_MARGIN = 2 * WRITE_BATCH
MIN_STOLEN = 1 << 20  # bytes below which a connection with nothing left leaves instead of taking part
RATE_AFTER = 0.5  # seconds a segment's reader must have been reading before its pace counts
# sha256 of bytes read back from the page cache, bytes/s, as plan_rounds assumes it: a core with
# SHA extensions does about twice this (2.1 GB/s measured here); one without about half, and its
# later rounds then hide only part of the hashing of the round before.
HASH_RATE = 1_000_000_000
MIN_PIECE = 256 * 1024  # bytes below which a round of its own is not worth its requests
MIN_CHECKPOINT_EVERY = 0.5  # seconds between fdatasync + saved state, at least


class RestartAll(Exception):
    """The resource changed under the segments: every byte so far is of another version."""


class Fallback(Exception):
    """Range stopped working for this resource: go on over one connection from ``prefix``."""

    def __init__(self, message: str, prefix: int) -> None:
        super().__init__(message)
        self.prefix = prefix


class _Aborted(Exception):
    """The run is stopping; a segment thread leaves without writing."""


class HostSlots:
    """Caps the extra connections that segmented downloads open to one host, across downloads."""

    def __init__(self, per_host: int) -> None:
        self.per_host = per_host
        self._used: dict[str, int] = {}
        self._lock = threading.Lock()

    def take(self, host: str) -> bool:
        with self._lock:
            if self._used.get(host, 0) >= self.per_host:
                return False
            self._used[host] = self._used.get(host, 0) + 1
            return True

    def give(self, host: str) -> None:
        with self._lock:
            self._used[host] = max(0, self._used.get(host, 0) - 1)

    def in_use(self, host: str) -> int:
        with self._lock:
            return self._used.get(host, 0)


class Owner(Protocol):
    """What a run uses of the downloader that starts it (:class:`trawl.download.http.HttpDownloader`)."""

    client: httpx.Client
    segments: int  # connections wanted
    split_after_s: float
    heartbeat_every: float
    host_slots: HostSlots | None
    should_stop: Callable[[], bool]

    def record(self, part: Path, state: ResumeState) -> None:
        """Save ``state`` beside ``part`` and heartbeat it."""


def plan_segments(total: int, count: int) -> list[list[int]]:
    """``count`` nearly equal ``[start, end, 0]`` segments covering ``total`` bytes."""
    bounds = [total * i // count for i in range(count + 1)]
    return [[bounds[i], bounds[i + 1], 0] for i in range(count) if bounds[i + 1] > bounds[i]]


class SegmentedRun:
    """Downloads ``state.segments`` of ``url`` into ``part`` and returns the file's sha256."""

    def __init__(self, downloader: Owner, url: str, part: Path, headers: dict[str, str], state: ResumeState,
                 first: httpx.Response | None, first_wait: float = 0.0) -> None:
        """``first_wait``: seconds the first answer took to come after its request (what one more
        request on a connection costs, at most: it also opened the connection)."""
        self.dl = downloader
        self.first_wait = first_wait
        self.url = url
        self.host = urlsplit(url).netloc
        self.part = part
        self.headers = headers
        self.state = state
        self.total = state.total or 0
        self.validator = strong_validator(state.etag, state.last_modified)
        self.first = first
        self.mime = _mime(first) if first is not None else None
        self.segments = [list(seg) for seg in state.segments or []]
        self.cond = threading.Condition()
        self.pending = collections.deque(i for i, (s, e, d) in enumerate(self.segments) if s + d < e)
        self.aborted = False
        self.error: BaseException | None = None
        self.hashed = 0
        self.hash_reading = False  # the prefix hasher is reading back [hashed, its frontier)
        self.transferred = 0
        self.connections = 0
        self._active = 0
        self.closing = False
        self.reading: set[RawBody] = set()  # sockets segments read from, interrupted on abort
        self.chaining = False  # until the run splits, the first answer reads on into the next segments
        # The open-ended first answer is still being read: the segment it reads may be lengthened.
        self.first_open = first is not None
        self.began: dict[int, tuple[float, int]] = {}  # segment -> (when its reader began it, bytes done then)
        self.digest = hashlib.sha256()
        self.fd = -1

    # -- the coordinator (the caller's thread) ---------------------------------------------
    def run(self) -> hashlib._Hash:
        """Raises: Stopped, RestartAll, Fallback, or the TrawlError that failed a segment."""
        fresh = not any(seg[2] for seg in self.segments)
        self.fd = os.open(self.part, os.O_RDWR | os.O_CREAT, 0o644)
        if fresh:
            os.ftruncate(self.fd, self.total)
        threads = [threading.Thread(target=self._hash, name="sha256-prefix", daemon=True)]
        wanted = min(max(self.dl.segments, 1), len(self.pending))
        # A fresh run opens its extra connections only once the first one proves slow.
        deferred = fresh and self.first is not None and wanted > 1 and self.dl.split_after_s > 0
        self.chaining = deferred
        started = time.monotonic()
        workers = self._start_workers(1 if deferred else 1 + self._take_slots(wanted - 1))
        threads[0].start()
        every = max(self.dl.heartbeat_every, MIN_CHECKPOINT_EVERY)
        last = time.monotonic()
        stop: BaseException | None = None
        try:
            while True:
                with self.cond:
                    if not self._finished() and self.error is None:
                        self.cond.wait(SPLIT_TICK if deferred else TICK)
                    error, finished = self.error, self._finished()
                if error is not None:
                    stop = error
                    break
                if finished:
                    break
                # Even once the first answer has read on into the last segment: the others
                # then take part of what it has left (steal).
                elapsed = time.monotonic() - started
                if deferred and worth_splitting(done := self._done(), self.total, elapsed, self.dl.split_after_s):
                    deferred = False
                    workers += self._split(wanted, done / elapsed)
                if self.dl.should_stop():
                    stop = Stopped(f"stopped with {self._done()} bytes", 0)
                    break
                if time.monotonic() - last >= every:
                    last = time.monotonic()
                    self._checkpoint()
        finally:
            with self.cond:
                self.aborted = self.aborted or stop is not None
                reading = list(self.reading) if self.aborted else []
                self.cond.notify_all()
            for raw in reading:
                raw.interrupt()  # a segment waiting on its socket wakes up now
            threads[0].join()
            deadline = time.monotonic() + 2.0
            for thread in workers:
                # A segment blocked on a stalled socket httpx reads leaves at its read timeout;
                # it can no longer write (aborted), so the state below is final without it.
                thread.join(timeout=max(0.0, deadline - time.monotonic()))
            try:
                if not isinstance(stop, (RestartAll, Fallback)):
                    self._checkpoint()
            finally:
                with self.cond:
                    self.closing = True
                    self._close_when_idle()
        if isinstance(stop, Stopped):
            stop.offset = self._done()
        if stop is not None:
            raise stop
        return self.digest

    def _finished(self) -> bool:
        return self.hashed >= self.total and all(s + d >= e for s, e, d in self.segments)

    def _done(self) -> int:
        with self.cond:
            return sum(d for _, _, d in self.segments)

    def _checkpoint(self) -> None:
        """Make the bytes written so far durable, then record them (state file and heartbeat)."""
        with self.cond:
            snapshot = [list(seg) for seg in self.segments]
        os.fdatasync(self.fd)
        self.state.segments = snapshot
        self.state.offset = sum(d for _, _, d in snapshot)
        self.dl.record(self.part, self.state)

    def _close_when_idle(self) -> None:
        # Called with the lock held; workers still alive close the file when they leave.
        if self._active == 0 and self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _split(self, wanted: int, pace: float) -> list[threading.Thread]:
        """Open the extra connections of a run that has been reading on over the first one (at
        ``pace`` bytes/s): every one wanted and free, even beyond the segments left, with what the
        first has not reached shared out among them all (:meth:`_share_out`)."""
        slots = self._take_slots(wanted - 1)
        with self.cond:
            self.chaining = False  # from here the first answer stops at its segment's end
            if slots:
                self._share_out(1 + slots, pace)
        return self._start_workers(1 + slots, first=1)

    def _share_out(self, connections: int, pace: float) -> None:
        """With the lock held, as the run splits: the bytes from the first answer's position on,
        planned again as :func:`plan_rounds` says, the first answer's own segment cut to its
        first piece. Left as planned when the first answer is not reading the first unfinished
        segment with only untouched ones after it, when its piece would be under
        :data:`STEAL_MARGIN` (it may be filling a buffer meant for the longer segment), or would
        end past the segment's end while its reader is on a request of its own (asked again
        after a failure: that answer ends there)."""
        index = next((i for i, (s, e, d) in enumerate(self.segments) if s + d < e), None)
        if index is None:
            return
        later = range(index + 1, len(self.segments))
        if list(self.pending) != list(later) or any(self.segments[i][2] for i in later):
            return
        start, _, done = self.segments[index]
        at = start + done
        rounds = plan_rounds(self.total - at, connections, pace, self.first_wait)
        if rounds[0] < STEAL_MARGIN or (at + rounds[0] > self.segments[index][1] and not self.first_open):
            return
        pieces = []
        cursor = at + rounds[0]  # the first answer's own first piece
        for number, size in enumerate(rounds):
            for _ in range(1 if number == 0 else 0, connections):
                pieces.append([cursor, cursor + size, 0])
                cursor += size
        pieces[-1][1] = self.total  # what the shares' rounding left
        self.segments[index][1] = at + rounds[0]
        del self.segments[index + 1:]
        self.segments.extend(pieces)
        self.pending = collections.deque(range(index + 1, len(self.segments)))

    def _take_slots(self, most: int) -> int:
        """Host slots for up to ``most`` extra connections: as many as are free."""
        if self.dl.host_slots is None:
            return most
        for taken in range(most):
            if not self.dl.host_slots.take(self.host):
                return taken
        return most

    def _start_workers(self, wanted: int, first: int = 0) -> list[threading.Thread]:
        """Segment threads ``first`` .. ``wanted - 1``; thread 0 takes the first answer, the
        others (extra connections) each hold a host slot the caller took (:meth:`_take_slots`)."""
        workers = []
        for n in range(first, wanted):
            extra = n > 0
            answer = self.first if n == 0 else None
            thread = threading.Thread(target=self._work, args=(answer, extra), name=f"segment-{n}", daemon=True)
            with self.cond:
                self._active += 1
            workers.append(thread)
        self.connections += len(workers)
        for thread in workers:
            thread.start()
        return workers

    # -- segment threads -------------------------------------------------------------------
    def _work(self, first: httpx.Response | None, extra: bool) -> None:
        own_rate: float | None = None  # this connection's pace over its last segment
        try:
            while True:
                with self.cond:
                    if self.aborted:
                        return
                    index = self._behind(own_rate) if self.pending else None
                    if index is None:
                        index = self.pending.popleft() if self.pending else self._steal(own_rate)
                    if index is None:
                        return
                    self.began[index] = (time.monotonic(), self.segments[index][2])
                self._segment(index, first if index == 0 else None)
                first = None
                with self.cond:
                    # A piece too short to show its pace (a later round's) keeps the one before's.
                    own_rate = self._rates(time.monotonic()).get(index) or own_rate
        except _Aborted:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the coordinator, which raises it
            with self.cond:
                if self.error is None:
                    self.error = exc if isinstance(exc, (RestartAll, Fallback, TrawlError)) else classify_exception(exc)
                self.aborted = True
                self.cond.notify_all()
        finally:
            if extra and self.dl.host_slots is not None:
                self.dl.host_slots.give(self.host)
            with self.cond:
                self._active -= 1
                if self.closing:
                    self._close_when_idle()  # the coordinator left before this thread did
                self.cond.notify_all()

    def _segment(self, index: int, first: httpx.Response | None) -> None:
        failures = 0
        while True:
            start, end, done = self._seg(index)
            if start + done >= end:
                return
            try:
                if first is not None:
                    response, first = first, None
                    try:
                        self._consume(index, response, start + done)
                    finally:
                        with self.cond:
                            self.first_open = False
                    continue
                headers = {**self.headers, "Range": f"bytes={start + done}-{end - 1}", "If-Range": self.validator or ""}
                with self.dl.client.stream("GET", self.url, headers=headers) as response:
                    self._check(response, start + done)
                    self._consume(index, response, start + done)
            except (RestartAll, Fallback, _Aborted):
                raise
            except Exception as exc:  # noqa: BLE001 - classified: transient ones are asked again
                error = classify_exception(exc)
                failures += 1
                if not error.retryable or failures > SEGMENT_RETRIES:
                    raise error from None
                with self.cond:
                    if self.cond.wait_for(lambda: self.aborted, timeout=0.25 * failures):
                        raise _Aborted from None

    def _steal(self, own_rate: float | None) -> int | None:
        """With the lock held and no segment pending: part of the segment that would end last, as a
        new segment (its reader stops at the new end); None if none has enough left. Not while
        the first answer reads on (one connection: nobody to take from)."""
        if self.chaining:
            return None
        rates = self._rates(time.monotonic())
        known = [rates.get(i) for i in range(len(self.segments))]
        taken = steal(self.segments, STEAL_MARGIN, MIN_STOLEN, known, own_rate)
        if taken is None:
            return None
        return self._cut(*taken)

    def _behind(self, own_rate: float | None) -> int | None:
        """With the lock held and segments pending: part of the segment of a reader that would end
        after this connection alone could read every pending one (a slow connection), as a new
        segment, taken before them: a reader keeps :data:`STEAL_MARGIN` after the last cut of its
        segment, so a slow one ends that much after it is cut, and the sooner the better. None
        when no reader is that far behind, its pace or this one's is not known yet, or it has too
        little left to share (:func:`steal`)."""
        if self.chaining or not own_rate:
            return None
        rates = self._rates(time.monotonic())
        waiting = sum(self._left(i) for i in self.pending)
        pending = set(self.pending)
        reading = [(i, rate) for i, rate in rates.items() if i not in pending and self._left(i) > 0]
        if not reading:
            return None

        def ends_in(item: tuple[int, float]) -> float:  # a stalled reader never ends
            return self._left(item[0]) / item[1] if item[1] > 0 else float("inf")

        index, rate = max(reading, key=ends_in)
        if ends_in((index, rate)) <= waiting / own_rate:
            return None
        taken = steal([self.segments[index]], STEAL_MARGIN, MIN_STOLEN, [rate], own_rate)
        return None if taken is None else self._cut(index, taken[1])

    def _cut(self, index: int, cut: int) -> int:
        """With the lock held: segment ``index`` from ``cut`` on as a new segment (its reader stops
        at the new end); the new one's number."""
        self.segments.append([cut, self.segments[index][1], 0])
        self.segments[index][1] = cut
        return len(self.segments) - 1

    def _left(self, index: int) -> int:
        start, end, done = self.segments[index]
        return end - start - done

    def _rates(self, now: float) -> dict[int, float]:
        """With the lock held: bytes per second of each segment whose reader began it at least
        :data:`RATE_AFTER` ago (a younger one has not shown its pace yet)."""
        rates = {}
        for index, (when, done) in self.began.items():
            if now - when >= RATE_AFTER:
                rates[index] = (self.segments[index][2] - done) / (now - when)
        return rates

    def _seg(self, index: int) -> list[int]:
        with self.cond:
            return list(self.segments[index])

    def _check(self, response: httpx.Response, start: int) -> None:
        status = response.status_code
        if status >= 400 and status != 416:
            body = response.read()[:4096] if int(response.headers.get("content-length") or 0) <= 65536 else b""
            raise classify_response(status, response.headers, body, url=self.url, signed_media=True) or NetworkError(
                f"HTTP {status} for {self.url}")
        etag = response.headers.get("etag")
        if self.state.etag and etag and etag != self.state.etag:
            raise RestartAll(f"ETag changed from {self.state.etag} to {etag}")
        if status == 200:
            if not self.state.etag and response.headers.get("last-modified") != self.state.last_modified:
                raise RestartAll("Last-Modified changed")
            raise Fallback(f"{self.url}: answered a range with the whole file", self._prefix())
        if status == 416:
            raise RestartAll("a range inside the file is unsatisfiable: the file changed size")
        if status != 206:
            raise NetworkError(f"{self.url}: HTTP {status} for a range")
        content_range = parse_content_range(response.headers.get("content-range"))
        if content_range is None or content_range.total not in (None, self.total):
            raise RestartAll(f"Content-Range {response.headers.get('content-range')!r} is not of a {self.total}-byte file")
        if content_range.start != start:
            raise Fallback(f"{self.url}: asked for byte {start}, got {content_range.start}", self._prefix())
        if self.mime is None:
            self.mime = _mime(response)

    def _consume(self, index: int, response: httpx.Response, pos: int) -> None:
        """Write the body at ``pos`` up to the segment's end; raises Truncated when it ends early."""
        end = self._seg(index)[1]
        writeback = Writeback(self.fd, pos)
        raw = RawBody.of(response)
        if raw is not None:
            # A large body on a plain socket is spliced into the file, never copied through
            # Python; the prefix hasher then reads it back (fastpath's docstring).
            splicing = raw.can_splice
            buffer: bytearray | None = None  # written before the next fill: one per segment thread
            with self.cond:
                if self.aborted:
                    raise _Aborted
                self.reading.add(raw)
            taken = index  # the segment this call was given; later ones it took on the same answer
            try:
                while True:
                    while pos < end and not raw.done:
                        if splicing and raw.spliceable:
                            # At most a batch a call, as fill's buffer: a segment another
                            # connection cut (STEAL_MARGIN) is seen to end before it is passed.
                            filled, error = raw.splice(
                                self.fd, pos, self.dl.heartbeat_every, limit=min(end - pos, WRITE_BATCH),
                                guard=lambda at, n, write, seg=index: self._write(seg, None, at, n, write))
                        else:
                            buffer = buffer if buffer is not None else bytearray(WRITE_BATCH)
                            # Each piece is written (and counted) as it arrives, still in the CPU's cache.
                            filled, error = raw.fill(
                                buffer, self.dl.heartbeat_every, limit=end - pos,
                                on_piece=lambda piece, start, at=pos, seg=index: self._write(
                                    seg, [piece], at + start, len(piece)))
                        pos += filled
                        if filled:
                            writeback.written(pos)
                        if error is not None:
                            raise error
                        end = self._seg(index)[1]  # another connection may have taken part of it
                    following = self._chained(index) if pos >= end and not raw.done else None
                    if following is None:
                        break
                    index, end = following
                if pos < end:
                    raise Truncated(f"{self.url}: segment body ended at byte {pos}, before {end}")
            except BaseException:
                if index != taken:
                    with self.cond:  # unfinished: any thread asks for the rest of it again
                        self.pending.appendleft(index)
                raise
            finally:
                with self.cond:
                    self.reading.discard(raw)
                writeback.written(pos, final=True)
            return
        batch: list[bytes] = []
        batched = 0
        last = time.monotonic()
        try:
            for chunk in response.iter_raw():
                end = self._seg(index)[1]  # another connection may have taken part of it
                room = end - pos - batched
                if len(chunk) > room:
                    chunk = chunk[:room]
                batch.append(chunk)
                batched += len(chunk)
                now = time.monotonic()
                if batched < WRITE_BATCH and batched < room and now - last < self.dl.heartbeat_every:
                    continue
                self._write(index, batch, pos, batched)
                pos, batch, batched, last = pos + batched, [], 0, now
                writeback.written(pos)
                if pos >= end:
                    return  # segment 0 may be on an open-ended answer: leave the rest unread
        finally:
            # Bytes received before a failure are good data in order: keep them.
            if batch:
                try:
                    self._write(index, batch, pos, batched)
                    pos += batched
                except _Aborted:
                    pass
            writeback.written(pos, final=True)
        if pos < end:
            raise Truncated(f"{self.url}: segment body ended at byte {pos}, before {end}")

    def _chained(self, index: int) -> tuple[int, int] | None:
        """The segment right after ``index`` (its number and end), taken by the calling thread, while
        the run has not split: the open-ended first answer goes on into it, with no new request."""
        with self.cond:
            if not self.chaining or not self.pending or self.pending[0] != index + 1:
                return None
            start, end, done = self.segments[index + 1]
            if done or start != self.segments[index][1]:
                return None
            self.pending.popleft()
            self.began[index + 1] = (time.monotonic(), 0)
            return index + 1, end

    def _write(self, index: int, batch: list[bytes] | None, pos: int, size: int,
               write: Callable[[], None] | None = None) -> None:
        """Write ``batch`` at ``pos`` (or, without one, have ``write`` put the ``size`` bytes there:
        a splice) and count it for segment ``index``."""
        # Under the lock: once the coordinator aborts, no segment writes another byte, so the
        # state it records last is final (the kernel serialises writes to one file anyway).
        with self.cond:
            if self.aborted:
                raise _Aborted
            if batch is None:
                assert write is not None
                write()
            else:
                pwrite_all(self.fd, batch, pos)
            self.segments[index][2] += size
            self.transferred += size
            if batch is not None and pos == self.hashed and not self.hash_reading:
                # The piece goes on from the hashed prefix: hashed from memory, never read back
                # (the first connection, and the only one of a run that did not split).
                for chunk in batch:
                    self.digest.update(chunk)
                self.hashed += size
                if self.hashed >= self.total:
                    self.cond.notify_all()
            else:
                self.cond.notify_all()

    def _prefix(self) -> int:
        """Bytes from 0 up to the first gap."""
        pos = 0
        for start, end, done in sorted(self.segments):  # taken halves lie at the list's end
            if start != pos:
                break
            pos = start + done
            if pos < end:
                break
        return pos

    # -- the prefix hasher -----------------------------------------------------------------
    def _hash(self) -> None:
        buffer = bytearray(PIECE)  # read back and hashed while in the CPU's cache (see RawBody.fill)
        view = memoryview(buffer)
        try:
            while True:
                with self.cond:
                    while not self.aborted and (frontier := self._prefix()) <= self.hashed and self.hashed < self.total:
                        self.cond.wait(TICK)
                    if self.aborted or self.hashed >= self.total:
                        return
                    self.hash_reading = True  # the writers leave the digest alone meanwhile
                    hashed = self.hashed
                try:
                    while hashed < frontier:
                        n = os.preadv(self.fd, [view[: min(len(buffer), frontier - hashed)]], hashed)
                        if n <= 0:
                            raise NetworkError(f"{self.part}: read back {n} bytes at {hashed}")
                        self.digest.update(view[:n])
                        hashed += n
                finally:
                    with self.cond:
                        self.hashed = hashed
                        self.hash_reading = False
                        self.cond.notify_all()
        except BaseException as exc:  # noqa: BLE001 - handed to the coordinator
            with self.cond:
                self.error = self.error or classify_exception(exc)
                self.aborted = True
                self.cond.notify_all()


def steal(segments: list[list[int]], margin: int, least: int, rates: list[float | None] | None = None,
          own_rate: float | None = None) -> tuple[int, int] | None:
    """Which segment a connection with nothing left takes part of, and where: ``(index, cut)``, the
    new segment being ``[cut, end)`` of it. Pure: the caller cuts under the run's lock.

    Every unfinished segment is being read (a run with segments pending takes those first). With
    the pace of the readers (``rates``, bytes/s; 0 for one stalled, None for one too young to
    tell, taken to go at ``own_rate`` or the others' mean), the victim is the one that would end
    last and keeps what it would read while the taker, at ``own_rate``, reads the rest (half when
    the taker's pace is unknown; almost all of a stalled one's); with no pace known, the one with
    the most bytes left, halved, as aria2c does. The victim keeps at least ``margin`` beyond
    its recorded byte (it may be filling a buffer); None when the taker would get under ``least``.
    """
    open_ = [(i, e - s - d) for i, (s, e, d) in enumerate(segments) if e - s - d > 0]
    if not open_:
        return None
    known = [rate for rate in (rates or []) if rate is not None]
    # A reader too young to have shown its pace is taken to go at the taker's, or the others' mean.
    guess = own_rate or (sum(known) / len(known) if known else None)
    paced = rates is not None and guess is not None

    def pace(index: int) -> float | None:
        if not paced or rates is None:
            return None
        return rates[index] if rates[index] is not None else guess

    def last_to_end(item: tuple[int, int]) -> tuple[float, int]:
        index, left = item
        rate = pace(index)
        return (left / rate if rate else float("inf")) if paced else 0.0, left

    index, left = max(open_, key=last_to_end)
    rate = pace(index)
    if rate == 0:
        keep = 0  # stalled: the taker asks for everything past the margin
    elif rate and own_rate:
        keep = int(left * rate / (rate + own_rate))
    else:
        keep = left - left // 2
    cut = segments[index][0] + segments[index][2] + max(keep, margin)
    if segments[index][1] - cut < least:
        return None
    return index, cut


def plan_rounds(rest: int, connections: int, pace: float, request_s: float) -> list[int]:
    """Each connection's share of ``rest`` bytes as the pieces it reads one after another: their
    sizes, one per round, largest first (every connection takes a piece of each round, in file
    order; the pieces of a round end about together).

    A round's pieces but the one at the hashed prefix are hashed after they end, from the page
    cache; the last round's after the download. A round after the first is sized to last, at
    ``pace`` bytes/s per connection, twice as long as hashing the round before takes (it hides
    that), at least :data:`MIN_PIECE`; it is taken from the first round, and added only while it
    takes more time off the hashing at the end than a request costs (``request_s``).
    """
    rounds = [rest // connections]
    ratio = 2 * pace * (connections - 1) / HASH_RATE
    while True:
        last = rounds[-1]
        piece = max(math.ceil(last * ratio), MIN_PIECE)
        if piece >= last or rounds[0] - piece < max(rounds[1:2] or [piece]) or \
                (connections - 1) * (last - piece) / HASH_RATE <= request_s:
            return rounds
        rounds[0] -= piece
        rounds.append(piece)


def worth_splitting(done: int, total: int, elapsed: float, after_s: float) -> bool:
    """Whether the first connection, at its pace so far, would need longer than ``after_s`` for
    the rest of the file (judged after one :data:`SPLIT_TICK`). Not a byte is slow only after
    :data:`NO_BYTE_SLOW`: a throttled server sends its first bytes at once, and on a loaded
    machine the reading thread may not have run yet in the first tick."""
    if elapsed < SPLIT_TICK:
        return False
    if done <= 0:
        return elapsed >= NO_BYTE_SLOW
    return (total - done) * elapsed / done > after_s


def _mime(response: httpx.Response) -> str | None:
    return response.headers.get("content-type", "").split(";", 1)[0].strip() or None
