"""Property-based tests of the pure parts: URLs, ranges, error classification, resolvers on mangled input.

Each test is named for the property it checks. The bugs these properties found are fixed and kept
as regression tests in the last section; the generators still avoid a few inputs they were
narrowed for at the time (infinite floats, unsplittable URLs in Weibo statuses, non-decimal
digit characters in headers) and could be widened.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import functools
import html
import json
import re
import socket
import string
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

import httpx
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from trawl.activities.application_errors import to_application_error
from trawl.errors import (
    ALL_ERRORS,
    BY_CLASS,
    NON_RETRYABLE,
    RATE_LIMIT_DEFAULT_DELAY,
    Http5xx,
    NetworkTimeout,
    RateLimited,
    TrawlError,
    UnsupportedUrl,
    classify_exception,
    classify_response,
)
from trawl.platforms.base import Page
from trawl.platforms.bilibili.resolver import BilibiliResolver
from trawl.platforms.facebook.resolver import FacebookResolver, canonical_url
from trawl.platforms.generic import GenericResolver, parse_page_meta
from trawl.platforms.weibo.resolver import WeiboResolver, mblogid_to_mid
from trawl.ranges import ContentRange, parse_content_range, parse_range
from trawl.platforms.bilibili import BilibiliSettings
from trawl.platforms.facebook import FacebookSettings
from trawl.platforms.weibo import WeiboSettings
from trawl.simulator.references import reference_bytes, reference_json
from trawl.urls import DEFAULT_PORTS, TRACKING_PARAMS, canonicalize, validate_url, web_key

# No example database: the file runs from a shared checkout, and every run starts fresh.
PROPS = settings(max_examples=200, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
HTML_HEADERS = httpx.Headers({"content-type": "text/html"})

# -- JSON values ----------------------------------------------------------------------------
# Integers stay within what real APIs send, and floats are finite: an infinite float (Python's
# json reads ``1e400`` and ``Infinity`` as one) and a 400-digit integer crash the coercion helpers
# (see test_int_or_none_tolerates_json_infinity and test_float_or_none_tolerates_huge_json_ints).
JSON_LEAVES = (st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64)
               | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20))


def json_values(leaves: st.SearchStrategy[Any] = JSON_LEAVES, keys: st.SearchStrategy[str] | None = None,
                max_leaves: int = 12) -> st.SearchStrategy[Any]:
    keys = keys if keys is not None else st.text(max_size=8)
    return st.recursive(
        leaves,
        lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
        max_leaves=max_leaves,
    )


JSON = json_values()


def _strings(doc: Any) -> list[str]:
    if isinstance(doc, str):
        return [doc]
    if isinstance(doc, dict):
        return [s for k, v in doc.items() for s in _strings(k) + _strings(v)]
    if isinstance(doc, list):
        return [s for v in doc for s in _strings(v)]
    return []


def _has_unsplittable_url(doc: Any) -> bool:
    """A string ``urlsplit`` refuses with ValueError (an unbalanced IPv6 bracket, a netloc that
    NFKC-normalises to a delimiter): resolvers that split URLs outside a ``try`` then raise it
    (see test_weibo_tolerates_unsplittable_url and test_generic_tolerates_unsplittable_url)."""
    for text in _strings(doc):
        try:
            urlsplit(text.strip())
        except ValueError:
            return True
    return False


# -- mutating reference documents -----------------------------------------------------------
Path = tuple[str | int, ...]


def _paths(doc: Any, prefix: Path = ()) -> list[Path]:
    """Every path to a value inside ``doc`` (not ``doc`` itself)."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    out: list[Path] = []
    for key, value in items:
        out.append(prefix + (key,))
        out += _paths(value, prefix + (key,))
    return out


def mutations(doc: Any) -> st.SearchStrategy[list[tuple[str, Path, Any]]]:
    """Lists of edits to ``doc``: delete a key, replace a value (by another type too), nest it in
    a list or an object, or cut a string and append text (which keeps a URL's scheme)."""
    where = st.sampled_from(_paths(doc))
    tail = st.text(max_size=10)
    edit = st.one_of(
        st.tuples(st.just("delete"), where, st.none()),
        st.tuples(st.just("replace"), where, JSON),
        st.tuples(st.just("nest"), where, st.sampled_from(["list", "dict"])),
        st.tuples(st.just("splice"), where, st.tuples(st.integers(0, 60), tail)),
    )
    return st.lists(edit, max_size=8)


def _holder(doc: Any, path: Path) -> Any:
    """The dict or list holding the value at ``path``, or None when an earlier edit removed it."""
    holder = doc
    for step in path:
        if isinstance(holder, dict) and isinstance(step, str) and step in holder:
            parent, holder = holder, holder[step]
        elif isinstance(holder, list) and isinstance(step, int) and step < len(holder):
            parent, holder = holder, holder[step]
        else:
            return None
    return parent


def mutated(doc: Any, edits: list[tuple[str, Path, Any]]) -> Any:
    doc = copy.deepcopy(doc)
    for op, path, arg in edits:
        parent = _holder(doc, path)
        if parent is None:
            continue
        key = path[-1]
        if op == "delete":
            del parent[key]
        elif op == "replace":
            parent[key] = arg
        elif op == "nest":
            parent[key] = [parent[key]] if arg == "list" else {"data": parent[key]}
        else:  # splice
            cut, text = arg
            old = parent[key]
            parent[key] = (old if isinstance(old, str) else json.dumps(old))[:cut] + text
    return doc


def mutated_docs(seeds: list[Any]) -> st.SearchStrategy[Any]:
    return st.one_of([mutations(seed).map(functools.partial(mutated, seed)) for seed in seeds])


# ============================================================================================
# trawl/urls.py
# ============================================================================================
def any_case(text: str) -> st.SearchStrategy[str]:
    return st.lists(st.booleans(), min_size=len(text), max_size=len(text)).map(
        lambda upper: "".join(c.upper() if u else c.lower() for c, u in zip(text, upper)))


HEX = "0123456789abcdefABCDEF"
ESCAPES = st.tuples(st.sampled_from(HEX), st.sampled_from(HEX)).map(lambda h: "%" + h[0] + h[1])
# Path characters that quoting leaves as they are, so the expected path is known exactly.
PLAIN_SEGMENTS = st.lists(st.sampled_from("aBcDxYZ09-._~") | ESCAPES, max_size=6).map("".join)
# Anything but what ends a path (? #) and what validate_url refuses (controls); no surrogates.
WILD_SEGMENTS = st.text(alphabet=st.characters(exclude_characters="?#/", exclude_categories=["Cs", "Cc"]),
                        max_size=6)
HOST_LABELS = st.text(alphabet="abcxyzABCXYZ0189-", min_size=1, max_size=6)
# Query names that are not tracking parameters (no underscore, none of the tracking names).
PLAIN_NAMES = (st.sampled_from(["p", "id", "v", "Page", "q", "t", "bvid"])
               | st.text("abcdXYZ09.-", min_size=1, max_size=5))
TRACKING_NAMES = st.one_of(
    st.sampled_from(sorted(TRACKING_PARAMS)).flatmap(any_case),
    st.tuples(st.sampled_from(["utm_", "UTM_", "share_", "Share_", "__cft__"]), st.text("abcxyz_[]0", max_size=5))
    .map("".join),
)
VALUES = st.text(max_size=6)


SAME = object()


@dataclass(frozen=True)
class UrlParts:
    scheme: str  # as typed, in any case
    host: str
    port: int | None
    path: str
    query: tuple[tuple[str, str], ...]  # decoded pairs, in the order typed
    fragment: str | None

    def render(self, query: tuple[tuple[str, str], ...] | None = None, *, scheme: str | None = None,
               host: str | None = None, port: Any = SAME, fragment: Any = SAME) -> str:
        """The URL as typed; keyword arguments replace one part (None removes port or fragment)."""
        query = self.query if query is None else query
        port = self.port if port is SAME else port
        fragment = self.fragment if fragment is SAME else fragment
        url = f"{scheme or self.scheme}://{host or self.host}" + (f":{port}" if port is not None else "") + self.path
        if query:
            url += "?" + "&".join(f"{quote(n, safe='')}={quote(v, safe='')}" for n, v in query)
        if fragment is not None:
            url += "#" + fragment
        return url

    @property
    def canonical_host(self) -> str:
        return self.host.lower().rstrip(".")


@st.composite
def url_parts(draw: st.DrawFn, segments: st.SearchStrategy[str] = PLAIN_SEGMENTS,
              tracking: bool = True) -> UrlParts:
    scheme = draw(st.sampled_from(["http", "https"]).flatmap(any_case))
    # A trailing dot is allowed; a host of dots only is not (test_canonical_url_of_dots_only_host_is_valid).
    host = ".".join(draw(st.lists(HOST_LABELS, min_size=1, max_size=3))) + draw(st.sampled_from(["", "."]))
    port = draw(st.none() | st.sampled_from(sorted(DEFAULT_PORTS.values())) | st.integers(1, 65535))
    path = "".join("/" + s for s in draw(st.lists(segments, max_size=4)))
    names = PLAIN_NAMES | TRACKING_NAMES if tracking else PLAIN_NAMES
    query = tuple(draw(st.lists(st.tuples(names, VALUES), max_size=5)))
    fragment = draw(st.none() | st.text(alphabet=st.characters(exclude_categories=["Cs", "Cc"]), max_size=6))
    return UrlParts(scheme, host, port, path, query, fragment)


def is_tracking(name: str) -> bool:
    lowered = name.lower()
    return lowered in TRACKING_PARAMS or lowered.startswith(("utm_", "share_", "__cft__"))


@PROPS
@given(url_parts(WILD_SEGMENTS) | url_parts())
def test_canonicalize_is_idempotent_and_gives_a_valid_url(parts: UrlParts) -> None:
    once = canonicalize(parts.render())
    assert validate_url(once) == once
    assert canonicalize(once) == once


@PROPS
@given(url_parts())
def test_canonicalize_lowercases_scheme_and_host_and_drops_default_port_and_fragment(parts: UrlParts) -> None:
    result = urlsplit(canonicalize(parts.render()))
    scheme = parts.scheme.lower()
    assert result.scheme == scheme
    assert result.hostname == parts.canonical_host
    assert result.netloc.split(":")[0] == parts.canonical_host  # lower-cased as typed, not just as parsed
    kept_port = parts.port if parts.port != DEFAULT_PORTS[scheme] else None
    assert result.port == kept_port
    assert result.fragment == ""
    assert "#" not in canonicalize(parts.render())


@PROPS
@given(url_parts(PLAIN_SEGMENTS))
def test_canonicalize_never_changes_the_case_of_the_path(parts: UrlParts) -> None:
    # Percent-escapes are normalised to upper-case hex (RFC 3986 6.2.2.1); nothing else changes.
    expected = re.sub(r"%[0-9a-fA-F]{2}", lambda m: m.group(0).upper(), parts.path) or "/"
    assert urlsplit(canonicalize(parts.render())).path == expected


@PROPS
@given(url_parts())
def test_canonicalize_drops_tracking_params_and_sorts_the_rest(parts: UrlParts) -> None:
    query = urlsplit(canonicalize(parts.render())).query
    pairs = parse_qsl(query, keep_blank_values=True)
    assert pairs == sorted((n, v) for n, v in parts.query if not is_tracking(n))
    assert not any(is_tracking(name) for name, _ in pairs)


@PROPS
@given(url_parts(tracking=False), st.data())
def test_equivalent_forms_have_one_canonical_url_and_web_key(parts: UrlParts, data: st.DataObject) -> None:
    plain = parts.render(tuple(sorted(parts.query)), scheme=parts.scheme.lower(), host=parts.canonical_host,
                         port=None if parts.port == DEFAULT_PORTS[parts.scheme.lower()] else parts.port,
                         fragment=None)
    noise = data.draw(st.lists(st.tuples(TRACKING_NAMES, VALUES), max_size=3), label="tracking")
    shuffled = tuple(data.draw(st.permutations(list(parts.query) + noise), label="query order"))
    variant = parts.render(  # the typed port stays, even when it is the default one
        shuffled,
        scheme=data.draw(any_case(parts.scheme), label="scheme"),
        host=data.draw(any_case(parts.host), label="host"),
        fragment=data.draw(st.none() | st.text(alphabet=string.ascii_letters + "=&?/", max_size=8), label="fragment"),
    )
    assert canonicalize(variant) == canonicalize(plain)
    assert web_key(canonicalize(variant)) == web_key(canonicalize(plain))


@PROPS
@given(url_parts(tracking=False), st.text(alphabet=string.ascii_letters, min_size=1, max_size=10))
def test_web_key_differs_when_the_case_of_an_id_differs(parts: UrlParts, ident: str) -> None:
    def with_id(last: str) -> str:
        return UrlParts(parts.scheme, parts.host, parts.port, f"{parts.path}/{last}", parts.query,
                        parts.fragment).render()

    assert web_key(canonicalize(with_id(ident))) != web_key(canonicalize(with_id(ident.swapcase())))


URL_PREFIXES = st.sampled_from(["http://", "https://", "HTTP://", "hTTps://", "http://a", "https://[", "http://u@",
                                "http://u:p@", "http://a:", "ftp://", "//", "http:", ""])


@PROPS
@given(st.text() | st.tuples(URL_PREFIXES, st.text()).map("".join)
       | st.tuples(URL_PREFIXES, st.text(alphabet=".:[]@%/?#aA1-_ ,\t\x00\x7f")).map("".join))
def test_malformed_urls_raise_only_unsupported_url(text: str) -> None:
    for check in (validate_url, canonicalize):
        try:
            result = check(text)
        except UnsupportedUrl:
            continue
        assert isinstance(result, str)


# ============================================================================================
# trawl/ranges.py
# ============================================================================================
BIG = 10**15
WS = st.sampled_from(["", " ", "  ", "\t"])


@st.composite
def content_ranges(draw: st.DrawFn) -> tuple[int, int, int]:
    total = draw(st.integers(1, BIG))
    start = draw(st.integers(0, total - 1))
    end = draw(st.integers(start, total - 1))
    return start, end, total


@PROPS
@given(content_ranges(), any_case("bytes"), WS, WS)
def test_content_range_round_trips(rng: tuple[int, int, int], unit: str, before: str, after: str) -> None:
    start, end, total = rng
    assert parse_content_range(f"{before}{unit} {start}-{end}/{total}{after}") == ContentRange(start, end, total)
    assert parse_content_range(f"{unit} {start}-{end}/*") == ContentRange(start, end, None)
    assert parse_content_range(f"{unit} */{total}") == ContentRange(None, None, total)


@PROPS
@given(st.integers(0, BIG), st.integers(0, BIG), st.integers(0, BIG))
def test_content_range_outside_its_total_or_inverted_is_refused(start: int, end: int, total: int) -> None:
    assume(end < start or end >= total)
    assert parse_content_range(f"bytes {start}-{end}/{total}") is None


# Near misses of the grammar: digits (Unicode ones too), dashes, slashes, stars, spaces, units.
RANGE_TEXT = st.one_of(
    st.text(),
    st.lists(st.sampled_from(["bytes", "BYTES", "items", " ", "=", "-", "/", "*", ",", "0", "7", "42", "\u0663",
                              "999999999999", "\t", "x"]), max_size=10).map("".join),
    st.from_regex(r"\s*bytes\s*[= ]\s*\d{0,20}\s*-\s*\d{0,20}(/(\d{0,20}|\*))?\s*", fullmatch=True),
)


def _is_content_range(result: object) -> bool:
    if result is None:
        return True
    assert isinstance(result, ContentRange)
    if result.start is None:
        return result.end is None and result.total is not None
    assert result.end is not None
    return 0 <= result.start <= result.end and (result.total is None or result.end < result.total)


@PROPS
@given(RANGE_TEXT)
def test_malformed_content_range_never_raises(value: str) -> None:
    assert _is_content_range(parse_content_range(value))


def _is_range_result(result: object, size: int) -> bool:
    if result is None or result == "unsatisfiable":
        return True
    assert isinstance(result, tuple)
    start, end = result
    return 0 <= start <= end <= size - 1


@PROPS
@given(RANGE_TEXT, st.integers(0, BIG))
def test_parse_range_never_raises_and_stays_within_the_resource(value: str, size: int) -> None:
    assert _is_range_result(parse_range(value, size), size)


@st.composite
def byte_ranges(draw: st.DrawFn) -> tuple[str, int, int | None]:
    """A syntactically valid single range ``bytes=first-[last]`` (last >= first when given)."""
    first = draw(st.integers(0, 2000))
    last = draw(st.none() | st.integers(first, 4000))
    text = (draw(any_case("bytes")) + draw(WS) + "=" + draw(WS) + str(first) + draw(WS) + "-" + draw(WS)
            + ("" if last is None else str(last)) + draw(WS))
    return text, first, last


@PROPS
@given(byte_ranges(), st.integers(0, 3000))
def test_parse_range_is_unsatisfiable_exactly_when_start_is_beyond_the_size(
    spec: tuple[str, int, int | None], size: int,
) -> None:
    text, first, last = spec
    result = parse_range(text, size)
    if first >= size:
        assert result == "unsatisfiable"
    else:
        assert result == (first, size - 1 if last is None else min(last, size - 1))


@PROPS
@given(st.integers(0, 5000), st.integers(0, 3000), WS)
def test_suffix_range_is_the_last_n_bytes(length: int, size: int, space: str) -> None:
    result = parse_range(f"bytes={space}-{space}{length}", size)
    if length == 0 or size == 0:
        assert result == "unsatisfiable"
    else:
        assert result == (size - min(length, size), size - 1)


# ============================================================================================
# trawl/errors.py
# ============================================================================================
def _avoids_non_decimal_digits(value: str) -> bool:
    """Retry-After values like ``²`` pass ``str.isdigit`` but not ``float`` (see
    test_retry_after_with_superscript_digits_does_not_raise)."""
    stripped = value.strip()
    return not (stripped.isdigit() and not stripped.isdecimal())


HEADER_NAMES = st.sampled_from(["retry-after", "Retry-After", "bili-status-code", "Bili-Status-Code",
                                "content-type", "x-cache"]) | st.text(max_size=12)
HEADER_VALUES = (st.sampled_from(["-352", " -412 ", "-101", "0", "120", "  7 ", "Wed, 21 Oct 2015 07:28:00 GMT",
                                  "Mon, 01 Jan 0001 00:00:00 +1400", "Fri, 31 Dec 9999 23:59:59 -2359", ""])
                 | st.text(max_size=30).filter(_avoids_non_decimal_digits))
HEADERS = st.dictionaries(HEADER_NAMES, HEADER_VALUES, max_size=5)
CODES = st.sampled_from([0, 1, -1, -404, 62002, 62004, -403, -412, -352, -101, -100, 200]) | st.integers() | JSON
OKS = st.sampled_from([1, 0, -100, -1]) | st.integers() | JSON
PLATFORM_DOCS = st.fixed_dictionaries({}, optional={"code": CODES, "ok": OKS, "message": st.text(max_size=10),
                                                    "msg": st.text(max_size=10), "data": JSON})
BODIES = st.one_of(
    st.none(),
    st.binary(max_size=64),
    st.tuples(WS, PLATFORM_DOCS.map(json.dumps)).map(lambda p: (p[0] + p[1]).encode()),
    JSON.map(lambda v: json.dumps(v).encode()),
    st.sampled_from([b"signature expired", b"URL Expired", b"{", b'{"code": 1e400}', b"\xff\xfe{"]),
)


# The classes marked R (retried) in the hierarchy drawn in trawl/errors.py's docstring.
RETRYABLE_AS_DOCUMENTED = frozenset({"network_timeout", "network_error", "name_not_found", "http_5xx", "rate_limited",
                                     "truncated", "storage_error", "internal_error"})


def _assert_in_taxonomy(error: TrawlError) -> None:
    assert type(error) in ALL_ERRORS
    assert BY_CLASS[error.error_class] is type(error)
    assert error.retryable == (error.error_class not in NON_RETRYABLE)
    assert error.retryable == (error.error_class in RETRYABLE_AS_DOCUMENTED)
    assert error.retry_after is None or error.retry_after >= 0


@PROPS
@given(st.integers(100, 599), HEADERS, BODIES, st.booleans())
def test_classify_response_never_raises_and_answers_in_the_taxonomy(
    status: int, headers: dict[str, str], body: bytes | None, signed: bool,
) -> None:
    error = classify_response(status, headers, body, url="https://example.com/x", signed_media=signed)
    if error is not None:
        _assert_in_taxonomy(error)


def _platform_error_code(body: bytes | None) -> bool:
    """Whether ``body`` is a JSON object with a Bilibili error code (any but 0) or Weibo's ``ok: -100``."""
    try:
        doc = json.loads(body or b"")
    except ValueError:
        return False
    if not isinstance(doc, dict):
        return False
    code, ok = doc.get("code"), doc.get("ok")
    bilibili = type(code) is int and code != 0
    return bilibili or (type(ok) is int and ok == -100)


@PROPS
@given(st.integers(100, 599), HEADERS, BODIES)
def test_classify_response_is_none_only_below_400_without_platform_error_codes(
    status: int, headers: dict[str, str], body: bytes | None,
) -> None:
    bili = headers.get("bili-status-code") or headers.get("Bili-Status-Code") or ""
    risk = bili.strip() in ("-352", "-412")
    expect_none = status < 400 and not risk and not _platform_error_code(body)
    assert (classify_response(status, headers, body) is None) == expect_none


@PROPS
@given(st.sampled_from([429, 412, 503]), st.integers(0, 10**8), WS, WS,
       st.sampled_from(["retry-after", "Retry-After", "RETRY-AFTER", "rEtRy-aFtEr"]), BODIES)
def test_retry_after_digits_are_honoured(status: int, seconds: int, before: str, after: str, name: str,
                                         body: bytes | None) -> None:
    headers = httpx.Headers({name: f"{before}{seconds}{after}"})
    error = classify_response(status, headers, body)
    assert isinstance(error, Http5xx if status == 503 else RateLimited)
    assert error.retry_after == float(seconds)
    _assert_in_taxonomy(error)


@PROPS
@given(st.sampled_from([429, 412]), BODIES)
def test_rate_limiting_without_retry_after_waits_the_default_delay(status: int, body: bytes | None) -> None:
    error = classify_response(status, {}, body)
    assert isinstance(error, RateLimited)
    assert error.retry_after == RATE_LIMIT_DEFAULT_DELAY


MESSAGES = st.sampled_from(["", "incomplete chunked read",
                            "peer closed connection without sending complete message body",
                            "line too long", "[Errno 28] No space left on device"]) | st.text(max_size=20)
_HTTPX_ERRORS = [
    httpx.ConnectTimeout, httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout, httpx.ConnectError,
    httpx.ReadError, httpx.WriteError, httpx.CloseError, httpx.RemoteProtocolError, httpx.LocalProtocolError,
    httpx.ProxyError, httpx.UnsupportedProtocol, httpx.TooManyRedirects, httpx.DecodingError, httpx.InvalidURL,
    httpx.CookieConflict, httpx.NetworkError, httpx.TransportError, httpx.TimeoutException, httpx.RequestError,
]
_PLAIN_ERRORS = [Exception, ValueError, KeyError, TypeError, RuntimeError, AssertionError, RecursionError,
                 ZeroDivisionError, MemoryError, NotImplementedError, KeyboardInterrupt, SystemExit, BaseException]
_OS_ERRORS = [OSError, PermissionError, FileNotFoundError, IsADirectoryError, ConnectionResetError,
              ConnectionRefusedError, BrokenPipeError, TimeoutError, InterruptedError, socket.gaierror]
_REQUEST = httpx.Request("GET", "https://example.com/x")
EXCEPTIONS = st.one_of(
    st.tuples(st.sampled_from(_HTTPX_ERRORS), MESSAGES).map(lambda p: p[0](p[1])),
    st.tuples(st.sampled_from(_PLAIN_ERRORS), st.lists(JSON, max_size=3)).map(lambda p: p[0](*p[1])),
    st.tuples(st.sampled_from(_OS_ERRORS), st.sampled_from(sorted(errno.errorcode)) | st.integers(-5, 200),
              MESSAGES).map(lambda p: p[0](p[1], p[2])),
    st.tuples(st.sampled_from(_OS_ERRORS), MESSAGES).map(lambda p: p[0](p[1])),
    st.builds(lambda m, code: httpx.HTTPStatusError(m, request=_REQUEST, response=httpx.Response(code,
              request=_REQUEST)), MESSAGES, st.integers(100, 599)),
    st.builds(lambda b: UnicodeDecodeError("utf-8", b, 0, max(len(b), 1), "invalid"), st.binary(max_size=4)),
    st.builds(lambda m: ExceptionGroup(m, [ValueError(m), OSError(errno.ENOSPC, m)]), MESSAGES),
)
TRAWL_ERRORS = st.builds(lambda cls, m, delay: cls(m, retry_after=delay), st.sampled_from(ALL_ERRORS),
                         MESSAGES, st.none() | st.floats(0, 3600))


@PROPS
@given(EXCEPTIONS)
def test_classify_exception_always_returns_a_trawl_error(exc: BaseException) -> None:
    error = classify_exception(exc)
    assert isinstance(error, TrawlError)
    _assert_in_taxonomy(error)
    if isinstance(exc, httpx.TimeoutException):
        assert isinstance(error, NetworkTimeout)


@PROPS
@given(TRAWL_ERRORS)
def test_classify_exception_keeps_a_trawl_error_as_it_is(exc: TrawlError) -> None:
    assert classify_exception(exc) is exc


# ============================================================================================
# Resolvers fed mangled platform JSON raise only TrawlError
# ============================================================================================
def _outcome(error: TrawlError | None) -> None:
    """Record what the example ended in (see ``pytest --hypothesis-show-statistics``)."""
    event("resolved" if error is None else error.error_class)


def _media_urls_ok(urls: list[str]) -> bool:
    return bool(urls) and all(isinstance(u, str) and u.lower().startswith(("http://", "https://")) for u in urls)


# -- Weibo ----------------------------------------------------------------------------------
WEIBO = WeiboResolver(WeiboSettings())
_STATUS = reference_json("weibo_mweibocn_statuses_show_1_noVideo.json")["data"]
_PLAYBACK = reference_json("weibo_ajax_page_info_playback_list_1.json")
_LEGACY = reference_json("weibo_mweibocn_page_info_urls_2023_1.json")
WEIBO_SEEDS: list[Any] = [
    _STATUS,
    {**_STATUS, "page_info": _PLAYBACK},
    {"mid": _STATUS["mid"], "page_info": _PLAYBACK, "user": _STATUS["user"], "text_raw": "a <b>post</b>"},
    {"mid": _STATUS["mid"], "page_info": _LEGACY, "created_at": _STATUS["created_at"]},
    {"bid": _STATUS["bid"],
     "page_info": {"media_info": {"playback_list": _PLAYBACK["media_info"]["playback_list"][:2]}}},
    # Pictures, desktop and mobile shapes (as documented in weibo.py).
    {"mblogid": _STATUS["bid"], "pic_ids": ["p1", "p2"],
     "pic_infos": {"p1": {"largest": {"url": "https://wx1.sinaimg.cn/large/p1.jpg"}},
                   "p2": {"original": {"url": "//wx2.sinaimg.cn/large/p2.jpg"}}}},
    {"id": int(_STATUS["mid"]), "pics": [{"url": "https://wx1.sinaimg.cn/orj360/p1.jpg",
                                          "large": {"url": "https://wx1.sinaimg.cn/large/p1.jpg"}}]},
]
WEIBO_STATUSES = mutated_docs(WEIBO_SEEDS) | JSON


@PROPS
@given(WEIBO_STATUSES)
def test_weibo_from_status_raises_only_trawl_errors(status: Any) -> None:
    assume(not _has_unsplittable_url(status))
    try:
        item = WEIBO.from_status(status, "https://weibo.com/5973737418/HyhqEeOO4")
    except TrawlError as exc:
        _outcome(exc)
        return
    _outcome(None)
    mid = item.metadata["mid"]
    assert item.canonical_key == f"weibo:{mid}"
    assert mblogid_to_mid(item.metadata["mblogid"]) == mid
    assert item.assets and len({a.name for a in item.assets}) == len(item.assets)
    assert all(_media_urls_ok(a.urls) for a in item.assets)


# -- Facebook -------------------------------------------------------------------------------
FACEBOOK = FacebookResolver(FacebookSettings())
VIDEO_IDS = st.sampled_from(["10153231379946729", "1", "42"]) | st.integers(1, 10**17).map(str)
_FB_CDN = [line.strip() for line in reference_bytes("facebook_cdn_urls_real.txt").decode().splitlines()
           if line.strip().startswith("http")]
URLISH = st.one_of(
    st.sampled_from(_FB_CDN or ["https://video.xx.fbcdn.net/v/t42.1790-2/v.mp4?_nc_cat=1"]),
    st.sampled_from(["/relative/v.mp4", "//cdn.example.com/v.mp4", "", "  ", "javascript:alert(1)",
                     "https://u:p@video.example.com/v.mp4", "ftp://example.com/v.mp4", "http://[::1]/v.mp4",
                     "http://[x/v.mp4", "https://example.com:99999/v.mp4", "data:video/mp4;base64,AAAA"]),
    st.tuples(st.sampled_from(["https://", "http://", "//", "/"]), st.text(max_size=15)).map("".join),
    JSON_LEAVES,
)


@st.composite
def facebook_nodes(draw: st.DrawFn, video_id: str) -> dict[str, Any]:
    ids = st.sampled_from([video_id, int(video_id), "0", 0]) | JSON_LEAVES
    node_json = json_values(max_leaves=4)
    return draw(st.fixed_dictionaries({}, optional={
        "videoId": ids, "id": ids, "__typename": st.just("Video"),
        "playable_url": URLISH, "playable_url_quality_hd": URLISH,
        "browser_native_hd_url": URLISH, "browser_native_sd_url": URLISH,
        "progressive_urls": st.lists(st.fixed_dictionaries({}, optional={
            "progressive_url": URLISH,
            "metadata": st.fixed_dictionaries(
                {}, optional={"quality": st.sampled_from(["HD", "SD", "hd"]) | node_json}),
        }) | node_json, max_size=3) | node_json,
        "name": st.text(max_size=10) | node_json,
        "title": st.fixed_dictionaries({"text": st.text(max_size=10) | node_json}) | node_json,
        "owner": st.fixed_dictionaries({"name": st.text(max_size=10) | node_json}) | node_json,
        "playable_duration_in_ms": JSON_LEAVES, "length_in_second": JSON_LEAVES,
        "dash_manifest": st.text(max_size=10),
    }))


@st.composite
def facebook_pages(draw: st.DrawFn) -> tuple[Page, str]:
    video_id = draw(VIDEO_IDS, label="video id")
    docs = json_values(JSON_LEAVES | facebook_nodes(video_id), max_leaves=6)
    open_tags = st.sampled_from([
        '<script type="application/json" data-sjs>', "<SCRIPT data-sjs TYPE='application/json'>",
        '<script type=application/json data-sjs="">',
        '<script type="application/json">', '<script data-sjs type="text/javascript">',  # not data blocks
    ])
    blocks = st.one_of(
        st.tuples(open_tags, docs.map(json.dumps), st.sampled_from(["</script>", "</SCRIPT >", ""]))
        .map("".join),
        URLISH.map(lambda u: f'<meta property="og:video" content="{html.escape(str(u))}">'),
        st.tuples(st.sampled_from(["og:video:type", "og:video:secure_url", "og:title"]), st.text(max_size=12))
        .map(lambda p: f'<meta property="{p[0]}" content="{html.escape(p[1])}">'),
        st.sampled_from(['<form id="login_form"></form>', "You must log in to continue.",
                         "This content isn&#039;t available right now", "Content isn\u2019t available"]),
        st.text(max_size=30),
    )
    body = "".join(draw(st.lists(blocks, max_size=5), label="page"))
    page_url = draw(st.sampled_from([canonical_url(video_id), f"https://www.facebook.com/reel/{video_id}",
                                     f"https://m.facebook.com/watch/?v={video_id}"]), label="page url")
    return Page(page_url, 200, HTML_HEADERS, body.encode("utf-8")), video_id


@PROPS
@given(facebook_pages())
def test_facebook_from_page_raises_only_trawl_errors(page_and_id: tuple[Page, str]) -> None:
    page, video_id = page_and_id
    assume("<![" not in page.text())  # test_parse_page_meta_tolerates_marked_sections
    try:
        item = FACEBOOK.from_page(page, video_id)
    except TrawlError as exc:
        _outcome(exc)
        return
    _outcome(None)
    assert item.canonical_key == f"facebook:{video_id}"
    assert item.canonical_url == canonical_url(video_id)
    assert len(item.assets) == 1 and item.assets[0].urls
    assert all(validate_url(u) == u for u in item.assets[0].urls)


# -- Bilibili -------------------------------------------------------------------------------
BILIBILI = BilibiliResolver(BilibiliSettings())
BILI_HEADERS = {"Referer": "https://www.bilibili.com/", "User-Agent": "trawl-test"}
_DASH = reference_json("bilibili_playurl_dash_1.json")["data"]["dash"]
# The DASH capture has no durl; the progressive (durl) capture is its own reference file.
_DURL = reference_json("bilibili_playurl_durl_1.json")["data"]["durl"]


def _avoids_scalar_stream_lists(dash: dict[str, Any]) -> bool:
    """``dash.video`` or ``dash.audio`` as a truthy number makes ``_dash`` iterate it (TypeError;
    see test_bilibili_dash_tolerates_scalar_stream_lists)."""
    return not any(isinstance(dash.get(k), (int, float)) and dash.get(k) for k in ("video", "audio"))


@PROPS
@given(mutated_docs([_DASH, {"video": _DASH["video"][:2]}, {"video": _DASH["video"][-1:], "audio": None}]))
def test_bilibili_dash_raises_only_trawl_errors(dash: dict[str, Any]) -> None:
    assume(_avoids_scalar_stream_lists(dash))
    try:
        assets = BILIBILI._dash("https://www.bilibili.com/video/BV1xx411c7mD", dash, BILI_HEADERS)
    except TrawlError as exc:
        _outcome(exc)
        return
    _outcome(None)
    assert [a.kind for a in assets] in (["video"], ["video", "audio"])
    assert all(a.urls and all(isinstance(u, str) and u for u in a.urls) for a in assets)


@PROPS
@given(mutated_docs([_DURL, _DURL[:1], _DURL + copy.deepcopy(_DURL)]))
def test_bilibili_durl_raises_only_trawl_errors(durl: list[Any]) -> None:
    segments = [s for s in durl if isinstance(s, dict)]  # as _streams passes them
    try:
        assets = BILIBILI._durl("https://www.bilibili.com/video/BV1xx411c7mD", segments, BILI_HEADERS)
    except TrawlError as exc:
        _outcome(exc)
        return
    _outcome(None)
    assert len(assets) == len(segments)
    assert len({a.name for a in assets}) == len(assets)
    assert all(a.urls and all(isinstance(u, str) and u for u in a.urls) for a in assets)


# -- Generic --------------------------------------------------------------------------------
GENERIC = GenericResolver()
# Attribute values urlsplit accepts: see _has_unsplittable_url.
SAFE_URLISH = URLISH.map(lambda u: u if isinstance(u, str) else json.dumps(u)).filter(
    lambda u: not _has_unsplittable_url(u))
META_PROPS = st.sampled_from([
    "og:video", "og:video:url", "og:video:secure_url", "og:video:type", "og:video:width", "og:video:duration",
    "og:image", "og:image:url", "og:image:secure_url", "og:image:type", "og:image:height", "og:title", "og:url",
    "og:site_name", "twitter:player:stream", "video:duration", "description",
])
META_VALUES = SAFE_URLISH | st.sampled_from(["video/mp4", "text/html", "application/x-mpegURL", "image/jpeg", "12.5",
                                             "1e400", "nan", "640"]) | st.text(max_size=12).filter(
    lambda s: not _has_unsplittable_url(s))
HTML_BLOCKS = st.one_of(
    st.tuples(st.sampled_from(["property", "name", "PROPERTY"]), META_PROPS, META_VALUES)
    .map(lambda p: f'<meta {p[0]}="{p[1]}" content="{html.escape(p[2])}">'),
    SAFE_URLISH.map(lambda u: f'<link rel="canonical alternate" href="{html.escape(u)}">'),
    st.text(max_size=20).map(lambda t: f"<title>{html.escape(t)}</title>"),
    json_values(JSON_LEAVES | st.fixed_dictionaries({"contentUrl": SAFE_URLISH}), max_leaves=5)
    .map(lambda d: f'<script type="application/ld+json">{json.dumps(d)}</script>'),
    st.sampled_from(["<meta>", "<meta property>", "<link rel=canonical>", "<title>", "</title>", "<script>", "<!-- x",
                     "<!DOCTYPE html>", "<?xml?>", "&amp;&#0;&#x110000;"]),
    st.text(max_size=20),
)
GENERIC_PAGE_URLS = st.sampled_from(["https://example.com/watch/Ab1", "http://example.com:8080/v?id=7",
                                     "https://video.example.org/", "https://example.com/a%2Fb/C"])


@PROPS
@given(st.text() | st.lists(HTML_BLOCKS, max_size=8).map("".join))
def test_parse_page_meta_never_raises(text: str) -> None:
    assume("<![" not in text)  # test_parse_page_meta_tolerates_marked_sections
    meta = parse_page_meta(text)
    assert all(v.url for v in meta.videos + meta.images)


@PROPS
@given(st.lists(HTML_BLOCKS, max_size=8).map("".join), GENERIC_PAGE_URLS)
def test_generic_from_page_raises_only_trawl_errors(text: str, page_url: str) -> None:
    assume("<![" not in text)  # test_parse_page_meta_tolerates_marked_sections
    try:
        item = GENERIC.from_page(Page(page_url, 200, HTML_HEADERS, text.encode("utf-8")))
    except TrawlError as exc:
        _outcome(exc)
        return
    _outcome(None)
    assert item.canonical_key == web_key(item.canonical_url)
    assert canonicalize(item.canonical_url) == item.canonical_url
    # A page names a canonical URL on its own host only, or it could shadow another site's item.
    assert urlsplit(item.canonical_url).hostname == urlsplit(page_url).hostname
    assert item.assets and all(validate_url(u) == u for a in item.assets for u in a.urls)


# ============================================================================================
# Bugs the properties above found (all fixed), kept as regression tests
# ============================================================================================
@pytest.mark.parametrize("url", ["http://./", "https://..//x", "HTTP://.:8080/a?b=1"])
def test_canonical_url_of_dots_only_host_is_valid(url: str) -> None:
    try:
        once = canonicalize(url)
    except UnsupportedUrl:
        return  # refusing a URL without a real host is fine
    assert validate_url(once) == once
    assert urlsplit(once).path == (urlsplit(url).path or "/")
    assert canonicalize(once) == once


def test_url_with_lone_surrogate_raises_unsupported_url() -> None:
    with pytest.raises(UnsupportedUrl):
        canonicalize("https://example.com/\ud800")


@pytest.mark.parametrize("call", [
    lambda: parse_content_range("bytes 0-0/" + "1" * 5000),
    lambda: parse_range("bytes=" + "1" * 5000 + "-", 10),
    lambda: parse_range("bytes=-" + "1" * 5000, 10),
], ids=["content-range-total", "range-first", "range-suffix"])
def test_range_headers_with_thousands_of_digits_do_not_raise(call: Any) -> None:
    assert call() in (None, "unsatisfiable")


def test_retry_after_with_superscript_digits_does_not_raise() -> None:
    error = classify_response(429, {"Retry-After": "\u00b2"}, b"")
    assert isinstance(error, RateLimited)


def test_classify_response_tolerates_deeply_nested_json() -> None:
    assert classify_response(200, {}, b'{"a":' + b"[" * 100_000) is None


@pytest.mark.parametrize("retry_after", ["100000000000000", "9" * 400])
def test_huge_retry_after_still_translates_to_an_application_error(retry_after: str) -> None:
    error = classify_response(429, {"Retry-After": retry_after}, b"")
    translated = to_application_error(error, timedelta(minutes=10))
    assert translated.next_retry_delay == timedelta(minutes=10)


@pytest.mark.parametrize(("exc", "expected"), [
    (ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"), "network_error"),
    (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "name_not_found"),
    (socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"), "network_error"),
    (TimeoutError("timed out"), "network_timeout"),
], ids=["reset", "dns", "dns-transient", "timeout"])
def test_builtin_network_errors_classify_as_network(exc: OSError, expected: str) -> None:
    assert classify_exception(exc).error_class == expected


@pytest.mark.parametrize("resolve", [
    lambda: WEIBO.from_status({"mid": _STATUS["mid"], "page_info": {**_PLAYBACK, "media_info": {
        "playback_list": [{"play_info": {**_PLAYBACK["media_info"]["playback_list"][0]["play_info"],
                                         "size": json.loads("1e400")}}]}}}, "https://weibo.com/1/x"),
    lambda: BILIBILI._dash("u", {"video": [{**_DASH["video"][0], "id": json.loads("Infinity")}]}, BILI_HEADERS),
    lambda: BILIBILI._durl("u", [{**_DURL[0], "size": json.loads("1e400")}], BILI_HEADERS),
], ids=["weibo-size", "bilibili-dash-id", "bilibili-durl-size"])
def test_int_or_none_tolerates_json_infinity(resolve: Any) -> None:
    with contextlib.suppress(TrawlError):
        resolve()


@pytest.mark.parametrize("resolve", [
    lambda: FACEBOOK.from_page(Page(canonical_url("1"), 200, HTML_HEADERS, (
        '<script type="application/json" data-sjs>{"videoId": "1", "playable_url": "https://a.example/v.mp4", '
        '"playable_duration_in_ms": 1' + "0" * 400 + "}</script>").encode()), "1"),
    lambda: WEIBO.from_status({"mid": _STATUS["mid"], "page_info": {**_LEGACY, "media_info": {
        **_LEGACY["media_info"], "duration": json.loads("1" + "0" * 400)}}}, "https://weibo.com/1/x"),
], ids=["facebook-duration", "weibo-duration"])
def test_float_or_none_tolerates_huge_json_ints(resolve: Any) -> None:
    with contextlib.suppress(TrawlError):
        resolve()


def test_weibo_tolerates_unsplittable_url() -> None:
    status = {"mid": _STATUS["mid"], "page_info": {"media_info": {"playback_list": [
        {"play_info": {"url": "http://[f.video.weibocdn.com/o0/v.mp4"}}]}}}
    with pytest.raises(TrawlError):
        WEIBO.from_status(status, "https://weibo.com/1/x")


@pytest.mark.parametrize("tag", [
    '<meta property="og:video" content="http://[x/a.mp4">',
    '<meta property="og:image" content="//[x">',
    '<meta property="og:image" content="https://e.com/i.jpg"><link rel="canonical" href="https://e.com]/">',
    '<meta property="og:video" content="https://e\uff0fx.com/v.mp4">',  # NFKC turns it into a '/'
], ids=["og-video", "og-image", "canonical", "nfkc"])
def test_generic_tolerates_unsplittable_url(tag: str) -> None:
    with contextlib.suppress(TrawlError):
        GENERIC.from_page(Page("https://e.com/p", 200, HTML_HEADERS, tag.encode()))


@pytest.mark.parametrize("text", ["<![x[ ]]>", "<p>a <![ b</p>"])
def test_parse_page_meta_tolerates_marked_sections(text: str) -> None:
    parse_page_meta(text)


def test_parse_page_meta_tolerates_deeply_nested_json_ld() -> None:
    parse_page_meta('<script type="application/ld+json">' + "[" * 100_000 + "</script>")


@pytest.mark.parametrize("dash", [{"video": 5}, {"video": _DASH["video"], "audio": True}], ids=["video", "audio"])
def test_bilibili_dash_tolerates_scalar_stream_lists(dash: dict[str, Any]) -> None:
    with contextlib.suppress(TrawlError):
        BILIBILI._dash("u", dash, BILI_HEADERS)


def test_canonical_link_never_makes_a_page_with_media_fail() -> None:
    page = Page("https://e.com/p", 200, HTML_HEADERS, (
        '<meta property="og:video" content="https://e.com/v.mp4">'
        '<link rel="canonical" href="https://user:pw@e.com/v">').encode())
    assert GENERIC.from_page(page).canonical_url == "https://e.com/p"
