"""Streamed, resumable downloads to a ``.part`` file (the protocol in ARCHITECTURE.md).

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
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import BinaryIO

import httpx

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

HASH_CHUNK = 1 << 20
WRITE_BATCH = 1 << 20
# Bytes re-fetched before the offset to prove a resource without validators is unchanged.
OVERLAP = 64 * 1024


@dataclass
class ResumeState:
    """What is known about a partial file; sent as heartbeat details and kept beside the file."""

    offset: int = 0
    total: int | None = None
    etag: str | None = None
    last_modified: str | None = None
    url: str | None = None


@dataclass
class DownloadOutcome:
    path: str
    size: int
    sha256: str
    total: int | None
    etag: str | None
    url: str
    mime: str | None
    resumed_from: int  # bytes kept from earlier attempts
    transferred: int  # bytes received in this attempt


class Stopped(Exception):
    """The caller asked the download to stop (pause, cancel, shutdown); the partial file is kept."""

    def __init__(self, message: str, offset: int = 0) -> None:
        super().__init__(message)
        self.offset = offset  # bytes safely on disk


Heartbeat = Callable[[ResumeState], None]


def state_path(part: Path) -> Path:
    return part.with_name(part.name + ".json")


def load_state(part: Path) -> ResumeState | None:
    try:
        return ResumeState(**json.loads(state_path(part).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def fresher(heartbeat: ResumeState | None, saved: ResumeState | None) -> ResumeState | None:
    """The more advanced of two records of the same partial file.

    The state file is written at every heartbeat call; the heartbeat RPC is throttled, so after
    a crash the file is usually ahead. A record of another resource (different URL or validator)
    never replaces the heartbeat's.
    """
    if heartbeat is None or saved is None:
        return heartbeat or saved
    same = (saved.url, saved.etag, saved.last_modified) == (heartbeat.url, heartbeat.etag, heartbeat.last_modified)
    return saved if same and saved.offset > heartbeat.offset else heartbeat


def _save_state(part: Path, state: ResumeState) -> None:
    tmp = state_path(part).with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state)))
    os.replace(tmp, state_path(part))


def discard(part: Path) -> None:
    """Remove a partial file and its state."""
    for path in (part, state_path(part)):
        try:
            path.unlink()
        except FileNotFoundError:
            pass


class Downloader:
    def __init__(
        self,
        client: httpx.Client,
        *,
        max_file_size: int,
        heartbeat: Heartbeat = lambda state: None,
        should_stop: Callable[[], bool] = lambda: False,
        heartbeat_every: float = 0.2,
    ) -> None:
        self.client = client
        self.max_file_size = max_file_size
        self.heartbeat = heartbeat
        self.should_stop = should_stop
        self.heartbeat_every = heartbeat_every

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
                fetches fresh URLs, otherwise the primary URL's failure is raised.
            Stopped: ``should_stop`` turned true; the state was heartbeated first.
        """
        if expected_size is not None and expected_size > self.max_file_size:
            raise TooLarge(f"expected size {expected_size} exceeds max_file_size {self.max_file_size}")
        part.parent.mkdir(parents=True, exist_ok=True)
        state = fresher(previous, load_state(part)) or ResumeState()
        ordered = list(dict.fromkeys(([state.url] if state.url in urls else []) + urls))
        failures: list[TrawlError] = []
        for url in ordered:
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
        offset = min(state.offset, size_on_disk)
        validator = state.etag if state.etag and not state.etag.startswith("W/") else state.last_modified
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
        signed_before = state.url == url and state.offset > 0
        with self.client.stream("GET", url, headers=headers) as resp:
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
            else:
                offset = overlap = 0  # a 200 is the whole resource: the validator failed or Range is unsupported
                total = _content_length(resp)
            chunks: Iterable[bytes] = resp.iter_raw()
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
            digest = _hash_prefix(part, offset)
            transferred = self._stream(chunks, part, digest, new_state)
        if new_state.total is not None and new_state.offset < new_state.total:
            raise Truncated(f"{url}: body ended at byte {new_state.offset} of {new_state.total}")
        return self._finish(part, url, new_state.offset, new_state.total, etag, mime, offset, transferred, digest)

    def _restart(self, url: str, part: Path, headers: dict[str, str], expected_size: int | None) -> DownloadOutcome:
        discard(part)
        headers.pop("Range", None)
        headers.pop("If-Range", None)
        fresh = ResumeState(url=url)
        _save_state(part, fresh)
        return self._attempt(url, part, headers, fresh, expected_size, restarted=True)

    def _stream(self, chunks: Iterable[bytes], part: Path, digest: "hashlib._Hash", state: ResumeState) -> int:
        """Append the body to ``part``; the state advances only over bytes written to the file."""
        transferred = 0
        last_beat = time.monotonic()
        hasher = _HashThread(digest)
        # Socket reads come in 64 KiB pieces; writing and hashing them in 1 MiB batches saves
        # most of the per-chunk system calls and thread hand-offs.
        batch = bytearray()
        try:
            with open(part, "r+b" if state.offset else "wb") as out:
                if state.offset:
                    out.truncate(state.offset)
                    out.seek(state.offset)
                try:
                    for chunk in chunks:
                        batch += chunk
                        now = time.monotonic()
                        # A slow transfer still writes at every heartbeat, so the recorded
                        # offset never lags the bytes received by more than one interval.
                        if len(batch) < WRITE_BATCH and now - last_beat < self.heartbeat_every:
                            continue
                        transferred += self._write(out, hasher, batch, state)
                        batch = bytearray()
                        if now - last_beat >= self.heartbeat_every:
                            last_beat = now
                            out.flush()
                            self._beat(part, state)
                            if self.should_stop():
                                raise Stopped(f"stopped at byte {state.offset}", state.offset)
                finally:
                    # Bytes received before a failure are good data in order: keep them.
                    if batch:
                        transferred += self._write(out, hasher, batch, state)
                out.flush()
        except TooLarge:
            discard(part)
            raise
        finally:
            hasher.finish()
            if part.exists():
                self._beat(part, state)
        return transferred

    def _write(self, out: BinaryIO, hasher: _HashThread, data: bytearray, state: ResumeState) -> int:
        if state.offset + len(data) > self.max_file_size:
            raise TooLarge(f"{state.url}: body passed max_file_size {self.max_file_size}")
        out.write(data)
        hasher.update(data)
        state.offset += len(data)
        return len(data)

    def _beat(self, part: Path, state: ResumeState) -> None:
        try:
            _save_state(part, state)
        except OSError:
            pass  # the heartbeat below still records the offset
        self.heartbeat(ResumeState(**asdict(state)))

    def _finish(
        self, part: Path, url: str, size: int, total: int | None, etag: str | None, mime: str | None,
        resumed_from: int, transferred: int, digest: "hashlib._Hash | None" = None,
    ) -> DownloadOutcome:
        if digest is None:
            digest = _hash_prefix(part, size)
        return DownloadOutcome(str(part), size, digest.hexdigest(), total, etag, url, mime, resumed_from, transferred)


class _HashThread:
    """Feeds a digest from its own thread: hashlib releases the GIL on large buffers, so hashing
    overlaps with receiving and writing instead of adding to them. The queue bounds memory."""

    def __init__(self, digest: "hashlib._Hash", depth: int = 8) -> None:
        self.digest = digest
        self.queue: queue.Queue[bytes | bytearray | None] = queue.Queue(maxsize=depth)
        self.thread = threading.Thread(target=self._run, name="sha256", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (chunk := self.queue.get()) is not None:
            self.digest.update(chunk)

    def update(self, chunk: bytes | bytearray) -> None:
        self.queue.put(chunk)

    def finish(self) -> None:
        self.queue.put(None)
        self.thread.join()


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


def _hash_prefix(part: Path, length: int) -> "hashlib._Hash":
    """sha256 of the first ``length`` bytes of ``part`` (the kept prefix of a resumed file)."""
    digest = hashlib.sha256()
    if length == 0:
        return digest
    remaining = length
    with open(part, "rb") as src:
        while remaining:
            block = src.read(min(HASH_CHUNK, remaining))
            if not block:
                break
            digest.update(block)
            remaining -= len(block)
    return digest


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as src:
        while block := src.read(HASH_CHUNK):
            digest.update(block)
    return digest.hexdigest()
