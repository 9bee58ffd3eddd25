"""The private library internals trawl relies on, checked against the versions pyproject.toml pins.

- :mod:`trawl.download.fastpath` walks from an httpx response through httpx's, httpcore's and
  h11's private objects to the socket, and raises httpcore's ``READ_NUM_BYTES``;
- the API's Range answers (:func:`trawl.api.items.blob_response`) call Starlette's
  ``FileResponse._parse_range_header``;
- the address guard (:func:`trawl.http_client.guard_connections`) swaps the network backend in
  httpx's pools;
- the catalog's bound on a PostgreSQL server's answer (:mod:`trawl.storage.catalog`) overrides
  psycopg's ``Connection.wait(gen, interval, timeout)`` and catches ``errors._WaitTimeout``;
- the workers' type-hint cache (:mod:`trawl.worker.type_hints`) replaces the ``get_type_hints``
  that temporalio's payload converter calls as a module global.

A failure here after an upgrade names the library and what changed in it. Adapt the code to the
new internals (and the pin), or turn the feature off until then: for the fast path
``fastpath.ENABLED = False`` (downloads then read every body through httpx, as without it), for
the catalog's answer bound ``catalog.BOUND_ANSWERS = False`` (a frozen server is then waited on
until TCP gives up). Both also turn themselves off when the internals they find are not the shape
checked here.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import re
import socket
import struct
import threading
import time
import tomllib
import typing
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from trawl.download import fastpath
from trawl.http_client import make_client
from trawl.settings import NetSettings
from trawl.storage import catalog

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
LIBRARIES = ("httpx", "httpcore", "h11", "starlette", "psycopg", "temporalio")
BODY = bytes(range(256)) * 1200  # 300 kB: more than h11 buffers with the headers


def version(library: str) -> str:
    return importlib.metadata.version(library)


def changed(library: str, what: str) -> str:
    return f"{library} {version(library)} changed: {what} (trawl was written against the version pyproject.toml pins)"


def test_the_libraries_are_exactly_the_pinned_versions() -> None:
    pins = {}
    for requirement in tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]:
        name, _, pinned = requirement.partition("==")
        pins[re.split(r"[\[<>=~ ]", name)[0].lower()] = pinned
    for library in LIBRARIES:
        assert library in pins, f"pyproject.toml does not pin {library} (its private internals are used)"
        assert version(library) == pins[library], (
            f"{library} {version(library)} is installed, pyproject.toml pins {pins[library]}: the internals "
            "checked below were written against the pinned version")


# -- the fast path --------------------------------------------------------------------------------
def test_httpcore_reads_its_read_size_from_the_class_attribute() -> None:
    from httpcore._sync.http11 import HTTP11Connection

    assert isinstance(getattr(HTTP11Connection, "READ_NUM_BYTES", None), int), changed(
        "httpcore", "httpcore._sync.http11.HTTP11Connection.READ_NUM_BYTES is gone (the read-size patch)")
    assert "self.READ_NUM_BYTES" in inspect.getsource(HTTP11Connection._receive_event), changed(
        "httpcore", "HTTP11Connection._receive_event no longer reads self.READ_NUM_BYTES (the read-size patch)")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.send_header("Content-Type", "video/mp4")
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's name
        pass


@pytest.fixture
def url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/f.mp4"
    finally:
        server.shutdown()
        server.server_close()


def hop(obj: object, attribute: str, library: str, what: str) -> object:
    assert hasattr(obj, attribute), changed(library, f"{type(obj).__module__}.{type(obj).__name__} has no "
                                                     f"{attribute} ({what})")
    return getattr(obj, attribute)


@pytest.mark.parametrize("guarded", [True, False], ids=["guarded client", "plain httpx client"])
def test_the_chain_from_an_httpx_response_to_its_socket(url: str, guarded: bool) -> None:
    import h11
    from httpcore._backends.sync import SyncStream
    from httpcore._sync.http11 import HTTP11Connection, HTTP11ConnectionByteStream

    client = make_client(NetSettings(allowed_networks=["127.0.0.0/8"])) if guarded else httpx.Client()
    with client, client.stream("GET", url) as response:
        bound = hop(response, "stream", "httpx", "a response's stream")
        transport_stream = hop(bound, fastpath.CHAIN[0], "httpx", "BoundSyncStream wraps the transport's stream")
        pool_stream = hop(transport_stream, fastpath.CHAIN[1], "httpx",
                          "the HTTP transport's ResponseStream wraps httpcore's stream")
        stream = hop(pool_stream, fastpath.CHAIN[0], "httpcore", "PoolByteStream wraps the connection's stream")
        assert isinstance(stream, HTTP11ConnectionByteStream), changed(
            "httpcore", f"the pool's stream wraps a {type(stream).__name__}, not an HTTP11ConnectionByteStream")
        connection = hop(stream, "_connection", "httpcore", "HTTP11ConnectionByteStream's connection")
        assert isinstance(connection, HTTP11Connection), changed("httpcore", "the stream's _connection")
        state = hop(connection, "_h11_state", "httpcore", "HTTP11Connection's h11 state machine")
        assert isinstance(state, h11.Connection), changed("httpcore", "HTTP11Connection._h11_state is not h11's")
        network = hop(connection, "_network_stream", "httpcore", "HTTP11Connection's network stream")
        assert type(network) is SyncStream, changed(
            "httpcore", f"the connection's network stream is a {type(network).__name__}, not the sync backend's")
        sock = hop(network, "_sock", "httpcore", "SyncStream's socket")
        assert isinstance(sock, socket.socket), changed("httpcore", "SyncStream._sock is not a socket")
        assert state.their_state is h11.SEND_BODY, changed("h11", "their_state is not SEND_BODY once the headers are in")
        leading, closed = state.trailing_data
        assert isinstance(leading, (bytes, bytearray)) and closed is False, changed(
            "h11", "Connection.trailing_data is not (buffered bytes, closed)")
        assert response.request.extensions.get("timeout", {}).get("read") is not None, changed(
            "httpx", "a request's extensions carry no read timeout")

        raw = fastpath.RawBody.of(response)
        assert raw is not None, "fastpath.RawBody.of refused a response whose whole chain checked out above"
        body = bytearray(len(BODY))
        filled, error = raw.fill(body, 5.0)
        assert error is None and filled == len(BODY) and bytes(body) == BODY and raw.done


def test_the_switch_turns_the_fast_path_off(url: str) -> None:
    from httpcore._sync.http11 import HTTP11Connection

    original, widened = HTTP11Connection.READ_NUM_BYTES, fastpath._widened  # as other tests left them
    try:
        fastpath.set_enabled(True)
        fastpath.widen_http_reads()
        assert HTTP11Connection.READ_NUM_BYTES == max(original, fastpath.HTTP_READ_SIZE)
        fastpath.set_enabled(False)
        with httpx.Client() as client, client.stream("GET", url) as response:
            assert fastpath.RawBody.of(response) is None
        fastpath.widen_http_reads()
        assert HTTP11Connection.READ_NUM_BYTES <= original
    finally:
        fastpath.ENABLED, fastpath._widened = True, widened
        HTTP11Connection.READ_NUM_BYTES = original


# -- the API's Range answers ----------------------------------------------------------------------
def test_starlettes_range_parser_keeps_its_shape() -> None:
    from starlette.responses import FileResponse, MalformedRangeHeader, RangeNotSatisfiable

    parse = getattr(FileResponse, "_parse_range_header", None)
    assert callable(parse), changed("starlette", "FileResponse._parse_range_header is gone")
    assert list(inspect.signature(parse).parameters) == ["http_range", "file_size"], changed(
        "starlette", f"FileResponse._parse_range_header takes {inspect.signature(parse)}")
    cases = {"bytes=0-9": [(0, 10)], "bytes=0-9,20-29": [(0, 10), (20, 30)], "bytes=-10": [(90, 100)],
             "bytes=90-": [(90, 100)], "bytes=0-9,5-14": [(0, 15)]}
    for header, ranges in cases.items():
        assert parse(header, 100) == ranges, changed(
            "starlette", f"_parse_range_header({header!r}, 100) gives {parse(header, 100)}, not [start, end) pairs "
                         f"{ranges}")
    with pytest.raises(RangeNotSatisfiable):
        parse("bytes=200-", 100)
    for header in ("items=0-1", "bytes=x", "bytes=9-0"):
        with pytest.raises(MalformedRangeHeader) as raised:
            parse(header, 100)
        assert isinstance(raised.value.content, str), changed("starlette", "MalformedRangeHeader has no .content text")


# -- the address guard ----------------------------------------------------------------------------
def test_httpx_keeps_the_network_backend_where_the_guard_swaps_it() -> None:
    with httpx.Client() as client:
        assert isinstance(getattr(client, "_mounts", None), dict), changed("httpx", "Client._mounts is not a dict")
        transport = getattr(client, "_transport", None)
        assert isinstance(transport, httpx.HTTPTransport), changed("httpx", "Client._transport")
        pool = hop(transport, "_pool", "httpx", "HTTPTransport's connection pool")
        hop(pool, "_network_backend", "httpcore", "ConnectionPool's network backend")
    # net.proxies: each proxy's own transport (trawl.http_client._rotating) swaps it the same way.
    with httpx.HTTPTransport(proxy="http://127.0.0.1:9") as proxied:
        pool = hop(proxied, "_pool", "httpx", "a proxy HTTPTransport's connection pool")
        hop(pool, "_network_backend", "httpcore", "HTTPProxy's network backend")


# -- the catalog's answer bound -------------------------------------------------------------------
def _message(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


@pytest.fixture
def silent_postgres() -> Iterator[int]:
    """A loopback server that speaks PostgreSQL's start-up (no TLS, no password) and then never
    answers, as a frozen server would: its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)
            while True:
                length, code = struct.unpack("!ii", conn.recv(8, socket.MSG_WAITALL))
                conn.recv(length - 8, socket.MSG_WAITALL)
                if code not in (80877103, 80877104):  # SSLRequest, GSSENCRequest: declined
                    break
                conn.sendall(b"N")
            conn.sendall(_message(b"R", struct.pack("!i", 0)) + _message(b"S", b"server_version\x0015.0\x00")
                         + _message(b"S", b"client_encoding\x00UTF8\x00") + _message(b"K", struct.pack("!ii", 1, 2))
                         + _message(b"Z", b"I"))

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
        for conn in held:
            conn.close()


def test_psycopgs_wait_and_its_timeout_keep_their_shape() -> None:
    import psycopg

    timeout = getattr(psycopg.errors, "_WaitTimeout", None)
    assert isinstance(timeout, type), changed("psycopg", "psycopg.errors._WaitTimeout is gone (the catalog's answer bound)")
    assert issubclass(timeout, psycopg.OperationalError), changed(
        "psycopg", "errors._WaitTimeout is no longer an OperationalError")
    parameters = list(inspect.signature(psycopg.Connection.wait).parameters)
    assert parameters == ["self", "gen", "interval", "timeout"], changed(
        "psycopg", f"Connection.wait takes {parameters}, not (self, gen, interval, timeout)")
    assert catalog._psycopg_wait_timeout() is timeout  # so the bound is on


def test_a_server_that_never_answers_is_given_up_on_at_the_answer_bound(silent_postgres: int) -> None:
    """The behaviour the override relies on: every wait for an answer passes through
    Connection.wait, and its timeout ends in _WaitTimeout (turned into an OperationalError)."""
    import psycopg

    bounded = catalog._answer_bounded_connection()
    assert bounded is not None
    conn = bounded.connect(host="127.0.0.1", port=silent_postgres, user="trawl", dbname="trawl",
                           sslmode="disable", connect_timeout=5)
    conn.answer_limit = 0.5
    began = time.monotonic()
    with pytest.raises(psycopg.OperationalError, match="did not answer within 0.5 s") as raised:
        conn.execute("SELECT 1")
    took = time.monotonic() - began
    assert not isinstance(raised.value, psycopg.errors._WaitTimeout), changed(  # noqa: SLF001
        "psycopg", "the answer bound's timeout escaped as _WaitTimeout: Connection.wait raises something else")
    assert took < 5, changed("psycopg", f"a statement waited {took:.1f} s: Connection.execute no longer waits "
                                        "through Connection.wait with its timeout")
    assert conn.closed, "the connection a frozen server holds is dropped"


def test_the_switch_turns_the_answer_bound_off(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "postgresql+psycopg://trawl@127.0.0.1:9/trawl"  # never connected to: the engine is only built
    engine = catalog.make_engine(url)
    assert len(engine.dialect.dispatch.do_connect) == 1  # connections are made by the bounded class
    engine.dispose()
    monkeypatch.setattr(catalog, "BOUND_ANSWERS", False)
    engine = catalog.make_engine(url)
    assert len(engine.dialect.dispatch.do_connect) == 0  # psycopg's own connection, unbounded
    engine.dispose()


def test_psycopg_internals_of_another_shape_turn_the_bound_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Failing closed: an upgraded psycopg whose internals differ is not overridden blindly."""
    import psycopg

    catalog._bounded_connection_class.cache_clear()
    try:
        monkeypatch.delattr(psycopg.errors, "_WaitTimeout")
        assert catalog._psycopg_wait_timeout() is None and catalog._answer_bounded_connection() is None
        monkeypatch.undo()
        catalog._bounded_connection_class.cache_clear()

        def wait(self: object, gen: object, timeout: float | None = None) -> object:  # the interval gone
            raise AssertionError("not called")

        monkeypatch.setattr(psycopg.Connection, "wait", wait)
        assert catalog._psycopg_wait_timeout() is None and catalog._answer_bounded_connection() is None
    finally:
        monkeypatch.undo()
        catalog._bounded_connection_class.cache_clear()
    assert catalog._answer_bounded_connection() is not None


def test_temporals_converter_calls_get_type_hints_as_a_module_global() -> None:
    from temporalio.converter import _payload_converter as converter

    from trawl.worker import type_hints

    source = inspect.getsource(converter.value_to_type)
    assert "get_type_hints(hint)" in source, "temporalio's value_to_type no longer asks get_type_hints(hint)"
    assert converter.get_type_hints in (typing.get_type_hints, type_hints.cached_type_hints)
    assert type_hints.install() and converter.get_type_hints is type_hints.cached_type_hints
