"""The fast path: large HTTP/1.1 bodies read straight from the socket, and wider httpcore reads.

Everything here leans on private internals of httpx, httpcore and h11 (pinned exactly in
``pyproject.toml``; ``tests/trawl/test_pinned_internals.py`` fails loudly, naming the library,
when one of them changes shape), and :data:`ENABLED` is the one switch that turns all of it off:
every body is then read through httpx at httpcore's own read size, as it would be without this
module. Nothing else in trawl touches those internals.

Raw reads. httpx hands a body over as new ``bytes`` per read, each copied twice inside h11 on the
way: at a GiB per second that is most of a download's CPU time. Once httpx has parsed the status
and the headers of a ``Content-Length`` answer, the rest of the connection is exactly the body:
:class:`RawBody` takes the bytes h11 already buffered (``trailing_data``, its public hand-over)
and then ``recv_into``\\ s the socket. The connection can then not be reused (h11 never saw the
body), so closing the response closes it, which httpcore does by itself for a body it did not
finish. Only plain sockets and ``ssl.SSLSocket``\\ s of httpcore's sync backend qualify (not TLS
inside a TLS proxy tunnel, not chunked or compressed bodies, not HTTP/2); anything unexpected in
the private chain from the httpx response to the socket -> ``None``, and the caller reads through
httpx as before.

Splicing. A large body on a plain TCP socket (not TLS) need not pass through Python at all:
:meth:`RawBody.splice` moves it from the socket into a pipe and from the pipe into the file
(``splice(2)``), so the kernel copies each byte once (socket buffers -> page cache) where
``recv_into`` + ``pwrite`` copy it twice through a buffer of ours; its hash is then taken by
reading the file back (:class:`trawl.download.state.ReadBackHasher`, beside the socket reads).
512 MiB over loopback on the 2-core VM: 0.40-0.68 s against 0.99-1.19 s received and written
through buffers (and curl's 0.61-0.86 s), system CPU 0.14-0.36 s against 0.45-0.55 s.

Read size. :func:`widen_http_reads` lets httpcore read a body 256 KiB per call instead of 64 KiB
(a class attribute: it holds for every connection of the process).
"""

from __future__ import annotations

import errno
import fcntl
import os
import queue
import select
import socket
import ssl
import time
from collections.abc import Callable, Iterator

import httpx

from trawl.download.state import pwrite_all
from trawl.errors import TooLarge, Truncated

# The one switch: False reads every body through httpx, at httpcore's own read size.
ENABLED = True

PIECE = 64 * 1024  # bytes per read when pieces are handed over as they arrive (see fill)
# Bytes httpcore asks the socket for per read (its default is 64 KiB).
HTTP_READ_SIZE = 256 << 10
# Buffers a download read straight from the socket cycles through (written, then hashed).
RAW_BUFFERS = 4
# Bodies with at least this many bytes left are spliced (RawBody.splice) where they can be: below
# it, a pipe and a hashing thread of their own cost more than the copy they save.
SPLICE_MIN = 8 << 20
PIPE_BYTES = 1 << 20  # a pipe's capacity asked for (Linux's default limit for a process: 1 MiB)
_F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ (named in the fcntl module from Python 3.10 on Linux only)

# The private chain from an httpx response to httpcore's HTTP/1.1 stream: httpx's
# BoundSyncStream and ResponseStream, httpcore's PoolByteStream.
CHAIN = ("_stream", "_httpcore_stream")

_widened: tuple[type, int] | None = None  # httpcore's connection class and its own read size


def set_enabled(enabled: bool) -> None:
    """Turn the fast path on or off for the whole process; off gives httpcore back its read size."""
    global ENABLED, _widened
    ENABLED = enabled
    if not enabled and _widened is not None:
        cls, original = _widened
        cls.READ_NUM_BYTES = original
        _widened = None


def widen_http_reads(size: int = HTTP_READ_SIZE) -> None:
    """Let httpcore read HTTP/1.1 bodies ``size`` bytes per call instead of 64 KiB.

    Every read goes through h11 and a few Python frames; at a GiB per second on loopback that
    per-read cost was about 40 % of the download's CPU time. The setting is httpcore's class
    attribute, so it holds for every connection of the process (a read returns what the socket
    has, so small answers are unaffected; a read holds at most ``size`` bytes).
    """
    global _widened
    if not ENABLED:
        return
    try:
        from httpcore._sync.http11 import HTTP11Connection
    except ImportError:
        return
    current = getattr(HTTP11Connection, "READ_NUM_BYTES", None)
    if isinstance(current, int) and current < size:
        if _widened is None:
            _widened = (HTTP11Connection, current)
        HTTP11Connection.READ_NUM_BYTES = size


class RawBody:
    """The rest of a response body, read from its socket."""

    def __init__(self, sock: socket.socket, leading: bytes, remaining: int, timeout: float | None, url: str) -> None:
        self.sock = sock
        self.leading = leading  # body bytes h11 had already read
        self.remaining = remaining  # body bytes still in the socket
        self.timeout = timeout
        self.url = url

    @classmethod
    def of(cls, response: httpx.Response) -> RawBody | None:
        """A reader for ``response``'s body, or None when it cannot (or, switched off, may not) be read this way."""
        if not ENABLED:
            return None
        try:
            import h11
            from httpcore._backends.sync import SyncStream
            from httpcore._sync.http11 import HTTP11ConnectionByteStream
        except ImportError:
            return None
        if response.http_version != "HTTP/1.1" or "transfer-encoding" in response.headers:
            return None
        length = response.headers.get("content-length", "")
        if not length.isdigit():
            return None
        stream: object = response.stream
        for _ in range(6):
            if isinstance(stream, HTTP11ConnectionByteStream):
                break
            stream = next((getattr(stream, name) for name in CHAIN if hasattr(stream, name)), None)
        else:
            return None
        if not isinstance(stream, HTTP11ConnectionByteStream):
            return None
        connection = getattr(stream, "_connection", None)
        state = getattr(connection, "_h11_state", None)
        network = getattr(connection, "_network_stream", None)
        if not isinstance(state, h11.Connection) or type(network) is not SyncStream:
            return None
        sock = getattr(network, "_sock", None)
        if not isinstance(sock, (socket.socket, ssl.SSLSocket)) or state.their_state is not h11.SEND_BODY:
            return None
        leading, closed = state.trailing_data
        remaining = int(length) - len(leading)
        if remaining < 0 or (closed and remaining):
            return None
        timeout = (response.request.extensions.get("timeout") or {}).get("read")
        return cls(sock, bytes(leading), remaining, timeout, str(response.request.url))

    def fill(self, buffer: bytearray, max_wait: float, limit: int | None = None,
             on_piece: Callable[[memoryview, int], None] | None = None) -> tuple[int, Exception | None]:
        """Fill ``buffer`` (its first ``limit`` bytes) from the body: (bytes filled, failure).

        Returns early, partly filled, after ``max_wait`` seconds so a slow transfer still reaches
        its heartbeats, and at the end of the body. A failure comes back beside the bytes that
        arrived before it (good data in order, for the caller to keep before raising it): a
        :class:`Truncated` when the connection closed before the body's end, else the socket's
        own ``OSError`` (timeouts included) for the caller to classify.

        With ``on_piece``, the buffer fills :data:`PIECE` bytes at a time and each piece is handed
        over as it arrives, with its start in the buffer (a failure it raises comes back as the
        failure, the piece not counted), to be written to the file while it is still in the CPU's
        cache: a GiB received and written in 64 KiB pieces took 0.46-0.48 s on a 2-core VM, in
        1 MiB buffers 1.1-1.95 s (the kernel's copy into the page cache reading from memory).
        """
        view = memoryview(buffer)[: len(buffer) if limit is None else min(limit, len(buffer))]
        step = PIECE if on_piece is not None else len(view)
        filled = 0
        started = time.monotonic()
        try:
            while self.leading and filled < len(view):
                n = min(len(self.leading), len(view) - filled, step)
                view[filled:filled + n] = self.leading[:n]
                if on_piece is not None:
                    on_piece(view[filled:filled + n], filled)
                self.leading = self.leading[n:]
                filled += n
            self.sock.settimeout(self.timeout)
            while filled < len(view) and self.remaining:
                n = self.sock.recv_into(view[filled:], min(len(view) - filled, self.remaining, step))
                if n == 0:
                    raise Truncated(f"{self.url}: connection closed with {self.remaining} body bytes to come")
                self.remaining -= n
                if on_piece is not None:
                    on_piece(view[filled:filled + n], filled)
                filled += n
                if time.monotonic() - started >= max_wait:
                    break
        except Exception as exc:  # noqa: BLE001 - returned beside the bytes that did arrive
            return filled, exc
        return filled, None

    @property
    def can_splice(self) -> bool:
        """Whether :meth:`splice` may move the rest of this body: a plain TCP socket (TLS must be
        decrypted in Python), a kernel that splices, at least :data:`SPLICE_MIN` bytes to come."""
        return (self.spliceable and ENABLED and hasattr(os, "splice") and type(self.sock) is socket.socket
                and self.left >= SPLICE_MIN)

    spliceable = True  # until the kernel refuses a splice of this body's socket or file

    def splice(self, fd: int, at: int, max_wait: float, limit: int | None = None,
               guard: Callable[[int, int, Callable[[], None]], None] | None = None) -> tuple[int, Exception | None]:
        """Move the body (up to ``limit`` bytes) into ``fd`` at file offset ``at``: (bytes written, failure).

        The bytes go from the socket into a pipe and from the pipe into the file, never into a
        buffer of Python's; a pipe's worth (up to :data:`PIPE_BYTES`) at a time. Each is written
        through ``guard(offset, length, write)``, which calls ``write`` to put it in the file, or
        raises instead (to refuse it: a stopped run, a file over its size limit); the bytes h11
        had already read are written the same way. Returns as :meth:`fill` does: early after
        ``max_wait`` seconds, and a failure beside the bytes written before it (``Truncated``,
        the socket's own ``OSError``, a ``TimeoutError`` after the read timeout, what ``guard``
        raised). A kernel or file system that refuses to splice makes :attr:`can_splice` false
        (nothing lost: bytes already in the pipe are written from it); the caller goes on with
        :meth:`fill`.
        """
        guard = guard or (lambda start, n, write: write())
        want = self.left if limit is None else min(limit, self.left)
        filled = 0
        started = time.monotonic()
        pipe: tuple[int, int] | None = None
        try:
            if self.leading and want:
                piece = self.leading[:want]
                guard(at, len(piece), lambda: pwrite_all(fd, [piece], at))
                self.leading = self.leading[len(piece):]
                filled += len(piece)
            pipe = os.pipe()
            try:
                fcntl.fcntl(pipe[1], _F_SETPIPE_SZ, PIPE_BYTES)
            except OSError:
                pass  # the default capacity (64 KiB) works, with more calls
            source = self.sock.fileno()
            while filled < want and self.remaining:
                n = self._into_pipe(source, pipe[1], min(want - filled, self.remaining, PIPE_BYTES))
                if n is None:
                    break  # the socket cannot be spliced: nothing was taken from it
                if n == 0:
                    raise Truncated(f"{self.url}: connection closed with {self.remaining} body bytes to come")
                self.remaining -= n
                guard(at + filled, n, lambda n=n, offset=at + filled: self._out_of_pipe(pipe[0], fd, n, offset))
                filled += n
                if time.monotonic() - started >= max_wait:
                    break
        except Exception as exc:  # noqa: BLE001 - returned beside the bytes that were written
            return filled, exc
        finally:
            if pipe is not None:
                os.close(pipe[0])
                os.close(pipe[1])
        return filled, None

    def _into_pipe(self, source: int, pipe: int, most: int) -> int | None:
        """Bytes spliced from the socket into the (empty) pipe, waiting up to the read timeout;
        None when the kernel cannot splice this socket."""
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while True:
            try:
                return os.splice(source, pipe, most, flags=os.SPLICE_F_MOVE | os.SPLICE_F_NONBLOCK)
            except BlockingIOError:
                pass  # a socket with a timeout is non-blocking: wait for it below
            except OSError as exc:
                if exc.errno in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                    self.spliceable = False
                    return None
                raise
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(f"{self.url}: no body bytes for {self.timeout} s")
            poller = select.poll()
            poller.register(source, select.POLLIN | select.POLLPRI)
            poller.poll(None if left is None else max(1, int(left * 1000)))

    def _out_of_pipe(self, pipe: int, fd: int, n: int, offset: int) -> None:
        """Write the ``n`` bytes in the pipe to ``fd`` at ``offset``."""
        done = 0
        while done < n:
            try:
                moved = os.splice(pipe, fd, n - done, offset_dst=offset + done, flags=os.SPLICE_F_MOVE)
            except OSError as exc:
                if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                    raise
                self.spliceable = False  # a file system without splice: the rest through memory
                while done < n:
                    data = os.read(pipe, n - done)
                    if not data:
                        raise OSError(errno.EIO, f"the pipe held {done} bytes, not {n}") from exc
                    pwrite_all(fd, [data], offset + done)
                    done += len(data)
                return
            if moved <= 0:
                raise OSError(errno.EIO, f"splice wrote {moved} bytes of {n - done} left in the pipe")
            done += moved

    def interrupt(self) -> None:
        """Wake a ``fill`` waiting on the socket from another thread (it then ends truncated)."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    @property
    def done(self) -> bool:
        return not self.leading and not self.remaining

    @property
    def left(self) -> int:
        """Body bytes not yet filled into a buffer."""
        return len(self.leading) + self.remaining


def raw_batches(raw: RawBody, fd: int, offset: int, *, batch_bytes: int, max_wait: float,
                max_file_size: int) -> Iterator[tuple[list[memoryview], int, Callable[[], None] | None]]:
    """The body in buffers of up to ``batch_bytes``, each already written at its place in ``fd``
    piece by piece as it arrived (see :meth:`RawBody.fill`); the caller hashes the buffer, records
    it, then calls the release function handed with it so the buffer is filled again.

    A body that :attr:`RawBody.can_splice` is spliced into ``fd`` instead, ``batch_bytes`` at a
    time, each batch handed over empty (only its size): the caller hashes the file.
    """
    # Buffers no larger than the body, made only while the hash thread holds all the others:
    # for a file of a few kB, zeroing four 1 MiB buffers cost more CPU than the rest of its download.
    size = max(1, min(batch_bytes, raw.left))

    def guarded(at: int, n: int, write_it: Callable[[], None]) -> None:
        if at + n > max_file_size:
            raise TooLarge(f"{raw.url}: body passed max_file_size {max_file_size}")
        write_it()

    def write(piece: memoryview, start: int) -> None:
        guarded(offset + start, len(piece), lambda: pwrite_all(fd, [piece], offset + start))

    if raw.can_splice:
        # Nothing to hash from memory: the caller hashes what the file holds (ReadBackHasher).
        while not raw.done and raw.spliceable:
            filled, error = raw.splice(fd, offset, max_wait, limit=batch_bytes, guard=guarded)
            offset += filled
            if filled:
                yield [], filled, None
            if error is not None:
                raise error
    free: queue.Queue[bytearray] = queue.Queue()
    made = 0
    while not raw.done:
        try:
            buffer = free.get_nowait()  # the hash thread gives each buffer back once it has hashed it
        except queue.Empty:
            if made < RAW_BUFFERS:
                buffer, made = bytearray(size), made + 1
            else:
                buffer = free.get()
        filled, error = raw.fill(buffer, max_wait, on_piece=write)
        offset += filled
        if filled:
            yield [memoryview(buffer)[:filled]], filled, (lambda b=buffer: free.put(b))
        else:
            free.put(buffer)
        if error is not None:
            raise error
