"""The simulator's HTTP server: stdlib threads, real sockets, byte-level control of answers."""

from __future__ import annotations

import collections
import json
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from trawl.ranges import parse_range
from trawl.simulator.faults import ERROR_PAGE, Faults
from trawl.simulator.media import MediaFile

LAST_MODIFIED = formatdate(1_700_000_000, usegmt=True)


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-cased names
    match: re.Match[str] | None = None

    def arg(self, name: str, default: str | None = None) -> str | None:
        values = self.query.get(name)
        return values[0] if values else default


@dataclass
class Response:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | Iterable[bytes] = b""
    # Close the connection after this many body bytes, mid-body (a cut transfer).
    cut_at: int | None = None
    # Limit this connection to this many bytes per second.
    throttle_bps: int | None = None
    # Drop the connection without answering (a TCP reset).
    reset: bool = False


@dataclass
class FileBehaviour:
    """How a media file misbehaves; every field off by default."""

    throttle_bps: int | None = None
    cut_at: int | None = None  # absolute byte offset where the body is cut
    cut_times: int = 1  # how many responses are cut; then answers are whole
    ignore_range: bool = False
    change_each_request: bool = False
    expires_at: float | None = None  # epoch seconds; later requests get 403 "signature expired"
    require_referer: str | None = None
    statuses: collections.deque[int] = field(default_factory=collections.deque)  # served first, in order
    first_byte_delay: float = 0.0
    validators: bool = True  # False: no ETag and no Last-Modified (nothing to validate a resume with)


Handler = Callable[[Request], Response]


@dataclass
class PathStats:
    requests: int = 0
    bytes_sent: int = 0
    ranges: list[str | None] = field(default_factory=list)
    times: list[float] = field(default_factory=list)  # time.time() of each request


class Simulator:
    """A loopback HTTP server with a route table.

    Usage::

        with Simulator() as sim:
            sim.add_file("/media/a.mp4", MediaFile("mp4", "a", 1_000_000))
            url = sim.url("/media/a.mp4")
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._routes: list[tuple[re.Pattern[str], Handler]] = []
        self._exact: dict[str, Handler] = {}
        self.files: dict[str, tuple[MediaFile, FileBehaviour]] = {}
        self.stats: dict[str, PathStats] = collections.defaultdict(PathStats)
        self.faults = Faults()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = _QuietServer((host, port), _make_handler(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None
        self._on_stop: list[Callable[[], None]] = []  # servers of its own a site runs beside it

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def start(self) -> Simulator:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="simulator", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        for stop in self._on_stop:
            stop()

    def on_stop(self, stop: Callable[[], None]) -> None:
        """Run ``stop`` when the simulator stops (a site's own server beside it: a WebSocket one)."""
        self._on_stop.append(stop)

    def __enter__(self) -> Simulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- routes ----------------------------------------------------------------------------
    def add_route(self, pattern: str, handler: Handler) -> None:
        """Serve paths matching the regular expression ``pattern`` (full match) with ``handler``."""
        self._routes.append((re.compile(pattern), handler))

    def add_exact(self, path: str, handler: Handler) -> None:
        self._exact[path] = handler

    def add_page(self, path: str, html: str, status: int = 200) -> None:
        body = html.encode("utf-8")
        self.add_exact(path, lambda req: Response(status, {"Content-Type": "text/html; charset=utf-8"}, body))

    def add_file(self, path: str, media: MediaFile, behaviour: FileBehaviour | None = None) -> FileBehaviour:
        behaviour = behaviour or FileBehaviour()
        self.files[path] = (media, behaviour)
        self.add_exact(path, lambda req: self.serve_media(req, media, behaviour))
        return behaviour

    def bytes_sent(self, path: str) -> int:
        with self._lock:
            return self.stats[path].bytes_sent

    # -- internals -------------------------------------------------------------------------
    def stats_snapshot(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {path: {"requests": s.requests, "bytes_sent": s.bytes_sent} for path, s in self.stats.items()}

    def _dispatch(self, req: Request) -> Response:
        if req.path == "/__stats__":  # for benchmarks that run the simulator in another process
            body = json.dumps(self.stats_snapshot()).encode()
            return Response(200, {"Content-Type": "application/json"}, body)
        step = self.faults.step_for(req.path)
        if step is not None:
            if step.kind == "reset":
                return Response(reset=True)
            if step.kind == "status":
                return Response(step.status, {"Content-Type": "text/plain", **dict(step.headers)},
                                f"simulated {step.status}".encode())
            if step.kind == "html":
                return Response(200, {"Content-Type": "text/html"}, ERROR_PAGE)
            if step.kind == "stall":
                self._stopping.wait(step.seconds)
        handler = self._exact.get(req.path)
        if handler is None:
            for pattern, candidate in self._routes:
                match = pattern.fullmatch(req.path)
                if match:
                    req.match = match
                    handler = candidate
                    break
        if handler is None:
            return Response(404, {"Content-Type": "text/html"}, b"<html><body>Not Found</body></html>")
        return handler(req)

    def serve_media(self, req: Request, media: MediaFile, how: FileBehaviour | None = None) -> Response:
        """Answer ``req`` with ``media``: Range, If-Range, HEAD and the behaviour's faults."""
        how = how or FileBehaviour()
        if how.statuses:
            status = how.statuses.popleft()
            return Response(status, {"Content-Type": "text/plain"}, f"simulated {status}".encode())
        if how.require_referer and not req.headers.get("referer", "").startswith(how.require_referer):
            return Response(403, {"Content-Type": "text/plain"}, b"Forbidden: missing Referer")
        if how.expires_at is not None and time.time() > how.expires_at:
            return Response(403, {"Content-Type": "text/plain"}, b"URL signature expired")
        if how.change_each_request:
            media.version += 1
        if how.first_byte_delay:
            time.sleep(how.first_byte_delay)
        headers = {
            "Content-Type": media.content_type,
            "Accept-Ranges": "none" if how.ignore_range else "bytes",
        }
        if how.validators:
            headers.update({"ETag": media.etag, "Last-Modified": LAST_MODIFIED})
        size = media.size
        start, end, status = 0, size - 1, 200
        if not how.ignore_range:
            if_range = req.headers.get("if-range")
            if if_range is None or if_range in (media.etag, LAST_MODIFIED):
                wanted = parse_range(req.headers.get("range"), size)
                if wanted == "unsatisfiable":
                    headers["Content-Range"] = f"bytes */{size}"
                    return Response(416, headers, b"")
                if wanted is not None:
                    start, end = wanted
                    status = 206
                    headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        headers["Content-Length"] = str(end - start + 1)
        cut_at = None
        if how.cut_at is not None and how.cut_times > 0 and start < how.cut_at <= end:
            how.cut_times -= 1
            cut_at = how.cut_at - start
        body = b"" if req.method == "HEAD" else media.chunks(start, end)
        return Response(status, headers, body, cut_at=cut_at, throttle_bps=how.throttle_bps)


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        # Clients hang up mid-answer on purpose (a resolver probing one byte, a paused download).
        pass


def _make_handler(sim: Simulator) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "trawl-simulator"
        # Headers and body leave in separate writes; without this, Nagle plus delayed ACKs
        # add 40 ms to every small answer on a kept-alive connection.
        disable_nagle_algorithm = True
        paced_until = 0.0  # a throttled connection's next byte may leave at this time.monotonic()

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
            pass

        def _handle(self) -> None:
            parts = urlsplit(self.path)
            req = Request(
                method=self.command,
                path=parts.path,
                query=parse_qs(parts.query, keep_blank_values=True),
                headers={k.lower(): v for k, v in self.headers.items()},
            )
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            try:
                resp = sim._dispatch(req)
            except Exception as exc:  # a broken route answers 500 instead of hanging the client
                resp = Response(500, {"Content-Type": "text/plain"}, f"simulator error: {exc}".encode())
            if req.path != "/__stats__":
                with sim._lock:
                    stats = sim.stats[req.path]
                    stats.requests += 1
                    stats.ranges.append(req.headers.get("range"))
                    stats.times.append(time.time())
            self._write(req, resp)

        def _write(self, req: Request, resp: Response) -> None:
            if resp.reset:
                # SO_LINGER with a zero timeout makes close() send RST instead of FIN.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()
                return
            body = resp.body
            if isinstance(body, bytes):
                resp.headers.setdefault("Content-Length", str(len(body)))
                chunks: Iterable[bytes] = [body] if body and req.method != "HEAD" else []
            else:
                chunks = body
            self.send_response(resp.status)
            for name, value in resp.headers.items():
                self.send_header(name, value)
            self.end_headers()
            sent = 0
            try:
                for chunk in chunks:
                    if sim._stopping.is_set():
                        raise ConnectionAbortedError
                    if resp.cut_at is not None and sent + len(chunk) >= resp.cut_at:
                        chunk = chunk[: resp.cut_at - sent]
                        self.wfile.write(chunk)
                        sent += len(chunk)
                        self._account(req.path, len(chunk))
                        self._abort()
                        return
                    if resp.throttle_bps:
                        # A limit on the connection, as a throttling CDN's: a hundredth of a
                        # second's worth at a time, each once the ones before on this connection
                        # have taken their time, whichever answer they were of. The clock carries
                        # over to the next request on a kept-alive connection and gives no credit
                        # for time between requests: asking more often gains nothing.
                        for piece in _split(chunk, max(1, resp.throttle_bps // 100)):
                            now = time.monotonic()
                            if self.paced_until > now:
                                time.sleep(self.paced_until - now)
                                now = self.paced_until
                            if sim._stopping.is_set():
                                raise ConnectionAbortedError
                            self.wfile.write(piece)
                            sent += len(piece)
                            self._account(req.path, len(piece))
                            self.paced_until = now + len(piece) / resp.throttle_bps
                        continue
                    self.wfile.write(chunk)
                    sent += len(chunk)
                    self._account(req.path, len(chunk))
            except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                self.close_connection = True

        def _account(self, path: str, n: int) -> None:
            with sim._lock:
                sim.stats[path].bytes_sent += n

        def _abort(self) -> None:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        do_GET = _handle
        do_HEAD = _handle
        do_POST = _handle

    return _Handler


def _split(chunk: bytes, size: int) -> Iterable[bytes]:
    view = memoryview(chunk)
    for pos in range(0, len(chunk), size):
        yield view[pos:pos + size]
