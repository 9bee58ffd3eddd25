"""The error taxonomy: every failure trawl meets is classified once, here.

Hierarchy (``error_class`` in brackets; R = retried by the activity's retry policy, B = retried
briefly: a few attempts, then final)::

    TrawlError
    +-- NetworkTimeout        [network_timeout]  R  connect/read timeout, a stalled body, HTTP 408,
    |                                               no free connection in trawl's own pool
    |                                               (net.max_connections)
    +-- NetworkError          [network_error]    R  reset, refused, a transient resolver failure
    +-- NameNotFound          [name_not_found]   B  the host name does not resolve (NXDOMAIN);
    |                                               NAME_NOT_FOUND_ATTEMPTS attempts, then final
    +-- Http5xx               [http_5xx]         R  500-599, Bilibili server codes (-500, -503...)
    +-- RateLimited           [rate_limited]     R  429, 412, Weibo's 418/432, Bilibili -412/-352/
    |                                               -509/-799, Weibo ok:-100 captcha, Weibo's
    |                                               visitor-system redirect, Facebook's block page;
    |                                               waits Retry-After or minutes
    +-- UrlExpired            [url_expired]         403/410 on a signed media URL; the workflow
    |                                               fetches fresh URLs and resumes
    +-- Truncated             [truncated]        R  body shorter than announced; resumed
    +-- SegmentMissing        [segment_missing]  B  an HLS segment answers 404/410: asked again on
    |                                               SEGMENT_MISSING_ATTEMPTS attempts, then final
    +-- ContentCorrupt        [content_corrupt]     verify mismatch; the workflow re-downloads
    |                                               a bounded number of times
    +-- NotFound              [not_found]           404/410, platform "deleted" codes (Bilibili
    |                                               -404/62002/62004, Weibo ok:0)
    +-- LoginRequired         [login_required]      login wall: Weibo ok:-100 with a login page,
    |                                               Bilibili -101, Facebook's login page
    +-- Forbidden             [forbidden]           401/403/451 on a page or API, Bilibili
    |                                               -403/62012/-688/-689 (private, geo-blocked)
    +-- PreviewOnly           [preview_only]        the platform offers only a preview or trailer
    |                                               of the item (a supporter-only video's 试看)
    +-- PlatformError         [platform_error]      an error the site states that has no class
    |                                               above: an unlisted platform code, another 4xx
    +-- UnsupportedUrl        [unsupported_url]     no resolver claims the URL, malformed URL
    +-- ParseError            [parse_error]         a response without the fields we need (never
    |                                               an answer that states an error)
    +-- TooLarge              [too_large]           over max_file_size or a page limit
    +-- BlockedAddress        [blocked_address]     a private-network target
    +-- StorageError          [storage_error]    R  disk full, database unavailable
    +-- InternalError         [internal_error]   R  an unexpected exception (a bug)

:func:`classify_response` and :func:`classify_exception` are the only places that decide which
class a failure belongs to, with the platform tables they share with the resolvers
(:func:`classify_bilibili_code`, :func:`classify_weibo_answer`, :func:`classify_weibo_redirect`,
:func:`classify_facebook_page`); activities turn the result into a Temporal ``ApplicationError``
with ``type=error_class``, and the retry policies list the non-retryable classes from
:data:`NON_RETRYABLE`. A class with ``max_attempts`` (B above) is retried by the policy and made
final by the activity at that attempt. Nothing else decides retrying.

A platform's answer that states an error becomes an error carrying the platform's code, its own
words and the URL the user gave; which codes mean what is documented, not captured (Bilibili:
bilibili-API-collect ``docs/misc/errcode.md`` and ``docs/video/info.md``; Weibo and Facebook:
public issue threads, see the simulator's docstrings), except the -412/-352 bodies, which are
real captures.
"""

from __future__ import annotations

import errno
import html
import json
import re
import socket
import time
from collections.abc import Iterator, Mapping
from email.utils import parsedate_to_datetime
from dataclasses import dataclass
from typing import ClassVar
from urllib.parse import urlsplit

import httpx

# Rate limiting without a Retry-After waits minutes: platforms escalate bans on quick retries.
RATE_LIMIT_DEFAULT_DELAY = 120.0
# A name that does not resolve is asked again a few times, seconds apart: a resolver that was
# briefly wrong recovers that fast, and a name that really does not exist never will.
NAME_NOT_FOUND_ATTEMPTS = 3
NAME_NOT_FOUND_RETRY_DELAY = 5.0
# An HLS segment that is missing from its server: asked on this many download attempts.
SEGMENT_MISSING_ATTEMPTS = 3


class TrawlError(Exception):
    """Base of every classified failure.

    Attributes:
        error_class: the taxonomy name, used as the Temporal ``ApplicationError`` type.
        retryable: whether the activity's retry policy may try again.
        max_attempts: for a retryable class, the attempt after which it is final anyway (None:
            the retry policy alone decides).
        give_up_hint: what the user should check when ``max_attempts`` ran out.
        retry_after: seconds to wait before the next attempt, when the failure says so.
    """

    error_class: ClassVar[str] = "internal_error"
    retryable: ClassVar[bool] = True
    max_attempts: ClassVar[int | None] = None
    give_up_hint: ClassVar[str] = ""
    # An infrastructure failure (disk full, catalog down) is no fault of the item: it is retried
    # until the stage's schedule_to_close, however many attempts that takes.
    patient: ClassVar[bool] = False

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after

    def __str__(self) -> str:
        return self.message


class NetworkTimeout(TrawlError):
    error_class = "network_timeout"


class NetworkError(TrawlError):
    error_class = "network_error"


class NameNotFound(TrawlError):
    """The host name does not resolve: retried a few times only (see NAME_NOT_FOUND_ATTEMPTS)."""

    error_class = "name_not_found"
    max_attempts = NAME_NOT_FOUND_ATTEMPTS
    give_up_hint = "check the host name in the URL"

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message, retry_after=NAME_NOT_FOUND_RETRY_DELAY if retry_after is None else retry_after)


class Http5xx(TrawlError):
    error_class = "http_5xx"


class RateLimited(TrawlError):
    error_class = "rate_limited"

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message, retry_after=RATE_LIMIT_DEFAULT_DELAY if retry_after is None else retry_after)


class UrlExpired(TrawlError):
    error_class = "url_expired"
    retryable = False  # retrying the same URL cannot help; the workflow fetches fresh ones


class Truncated(TrawlError):
    error_class = "truncated"


class SegmentMissing(TrawlError):
    """A segment of an HLS stream is gone (404/410) while its playlist still names it.

    A CDN may lag behind its playlist, so the download policy asks again a few times; a stream
    is never committed with a segment left out.
    """

    error_class = "segment_missing"
    max_attempts = SEGMENT_MISSING_ATTEMPTS
    give_up_hint = "the server no longer has this segment of the stream; trawl never skips one"


class ContentCorrupt(TrawlError):
    error_class = "content_corrupt"
    retryable = False  # the workflow deletes the file and downloads again, bounded


class NotFound(TrawlError):
    error_class = "not_found"
    retryable = False


class LoginRequired(TrawlError):
    error_class = "login_required"
    retryable = False


class Forbidden(TrawlError):
    error_class = "forbidden"
    retryable = False


class PreviewOnly(TrawlError):
    """The platform answered with a preview (a trailer, a supporter-only video's first minutes)
    instead of the item: stored under the item's key it would make the real one a duplicate for
    ever, so the item fails."""

    error_class = "preview_only"
    retryable = False


class PlatformError(TrawlError):
    """An error the site states that no other class describes (an unlisted code, a 405...).

    Not retried: the site said no, and trawl cannot tell whether asking again would help; the
    message quotes the site's code and words so the table can learn it.
    """

    error_class = "platform_error"
    retryable = False


class UnsupportedUrl(TrawlError):
    error_class = "unsupported_url"
    retryable = False


class ParseError(TrawlError):
    error_class = "parse_error"
    retryable = False


class TooLarge(TrawlError):
    error_class = "too_large"
    retryable = False


class BlockedAddress(TrawlError):
    error_class = "blocked_address"
    retryable = False


class StorageError(TrawlError):
    error_class = "storage_error"
    patient = True


class InternalError(TrawlError):
    error_class = "internal_error"


ALL_ERRORS: tuple[type[TrawlError], ...] = (
    NetworkTimeout, NetworkError, NameNotFound, Http5xx, RateLimited, UrlExpired, Truncated, SegmentMissing,
    ContentCorrupt,
    NotFound, LoginRequired, Forbidden, PreviewOnly, PlatformError, UnsupportedUrl, ParseError, TooLarge,
    BlockedAddress,
    StorageError, InternalError,
)
BY_CLASS: dict[str, type[TrawlError]] = {cls.error_class: cls for cls in ALL_ERRORS}
NON_RETRYABLE: tuple[str, ...] = tuple(cls.error_class for cls in ALL_ERRORS if not cls.retryable)


_CREDENTIALS = re.compile(r"(?<=//)[^/@\s:]+:[^/@\s]+@")
_SECRET_PARAMS = re.compile(r"(?i)\b(SESSDATA|SUB|token|access_token|password|passwd|c_user|xs)=([^&\s;\"']+)")


def redact(text: str) -> str:
    """Remove credentials a message might quote (proxy user:password, session cookies, tokens)."""
    return _SECRET_PARAMS.sub(r"\1=***", _CREDENTIALS.sub("***@", text))


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP-date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value) if len(value) < 12 else float("inf")
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


# -- platform answers ------------------------------------------------------------------------
@dataclass(frozen=True)
class PlatformAnswer:
    """The error fields of a platform's JSON answer (Bilibili ``code``, Weibo ``ok``)."""

    code: int | None = None  # Bilibili: 0 is success
    ok: int | None = None  # Weibo: 1 is success
    message: str | None = None  # Bilibili "message", Weibo "msg" or "message"
    page: str | None = None  # Weibo's "url": the captcha or login page it sends the client to


def _platform_answer(body: bytes | None) -> PlatformAnswer | None:
    """The error fields of a JSON object body, or None when the body is not one."""
    if not body or len(body) > 1_000_000 or body.lstrip()[:1] != b"{":
        return None
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    return PlatformAnswer(code=_int_field(doc.get("code")), ok=_int_field(doc.get("ok")),
                          message=_text_field(doc.get("message")) or _text_field(doc.get("msg")),
                          page=_text_field(doc.get("url")))


def _int_field(value: object) -> int | None:
    return value if type(value) is int else None  # not bool, not float


def _text_field(value: object) -> str | None:
    return (value.strip()[:200] or None) if isinstance(value, str) else None


def _where(url: str, item_url: str = "") -> str:
    """`` for <the user's URL> (answer of <the URL asked>)``: what a message says it is about."""
    if item_url and url and item_url != url:
        return f" for {item_url} (answer of {url})"
    return f" for {item_url or url}" if item_url or url else ""


def _quoted(message: str | None) -> str:
    return f' "{message}"' if message else ""


# Bilibili's codes (bilibili-API-collect docs/misc/errcode.md, docs/video/info.md): code -> class.
_BILIBILI_CODES: dict[int, type[TrawlError]] = {
    -404: NotFound, 62002: NotFound, 62004: NotFound,  # none; invisible; under review
    -403: Forbidden, 62012: Forbidden, -688: Forbidden, -689: Forbidden,  # no access; uploader only; geo; copyright
    -412: RateLimited, -352: RateLimited, -509: RateLimited, -799: RateLimited,  # risk control; too frequent
    -101: LoginRequired,  # not logged in
    -500: Http5xx, -503: Http5xx, -504: Http5xx, -8888: Http5xx,  # server error, overload, timeout
}


def classify_bilibili_code(code: int, message: str | None, where: str = "") -> TrawlError | None:
    """The error a Bilibili ``code`` states (None for 0); unlisted codes are PlatformError."""
    if code == 0:
        return None
    cls = _BILIBILI_CODES.get(code, PlatformError)
    text = f"bilibili: code {code}{_quoted(message)}{where}"
    if cls is LoginRequired:
        text += "; log in: give trawl a logged-in session's cookies in platforms.bilibili.cookies_file"
    elif cls is PlatformError:
        text += " (a code trawl has no entry for)"
    return cls(text)


# Weibo pages its API sends a client to: a login page means log in, a captcha means slow down.
_LOGIN_PATH = re.compile(r"/(?:login|signin)(?:[./]|$)", re.IGNORECASE)
_LOGIN_WORDS = ("登录", "login", "log in")
_THROTTLE_WORDS = ("频繁", "too frequent", "too many")


def classify_weibo_answer(ok: int, message: str | None = None, page: str | None = None,
                          where: str = "") -> TrawlError | None:
    """The error a Weibo ``ok`` value states (None for 1).

    ``ok: -100`` sends the client to a page: a login or passport page is a login wall (not
    retried), a captcha is rate limiting. ``ok: 0`` is Weibo's "no" (deleted, hidden, never
    existed) unless its words say "log in" or "too frequent"; other values have no class.
    """
    if ok == 1:
        return None
    said = f"weibo: ok:{ok}{_quoted(message)}"
    lowered = (message or "").lower()
    if (ok == -100 and page and _is_login_page(page)) or any(w in lowered for w in _LOGIN_WORDS):
        sent_to = f", sent to the login page {page.split('?', 1)[0]}" if page else ""
        return LoginRequired(f"{said}{sent_to}{where}: log in: give trawl a logged-in session's cookies in "
                             "platforms.weibo.cookies_file")
    if ok == -100 or any(w in lowered for w in _THROTTLE_WORDS):
        sent_to = f" (captcha {page.split('?', 1)[0]})" if page else ""
        return RateLimited(f"{said}{sent_to}{where}")
    if ok == 0:
        return NotFound(f"{said}{where}")
    return PlatformError(f"{said}{where} (a value trawl has no entry for)")


def classify_weibo_redirect(final_url: str, where: str = "") -> TrawlError | None:
    """The error a Weibo API states by redirecting instead of answering (None if it did not).

    The Sina Visitor System (``passport.weibo.com/visitor/...``) is where Weibo sends clients it
    does not know or throttles: rate limiting. A login or passport page is a login wall.
    """
    try:
        parts = urlsplit(final_url)
    except ValueError:
        return None
    page = f"{parts.hostname or ''}{parts.path}"
    if parts.path.startswith("/visitor/"):
        return RateLimited(f"weibo: sent to the Sina Visitor System ({page}){where}, as Weibo does to clients it "
                           "throttles; a logged-in session's cookies in platforms.weibo.cookies_file avoid it")
    if _is_login_page(final_url):
        return LoginRequired(f"weibo: sent to the login page {page}{where}: log in: give trawl a logged-in "
                             "session's cookies in platforms.weibo.cookies_file")
    return None


def _is_login_page(page: str) -> bool:
    """A passport or login host, or a ``login``/``signin`` path (the query, a return URL, is not read)."""
    try:
        parts = urlsplit(page)
    except ValueError:
        return False
    host = (parts.hostname or "").lower()
    return host.startswith(("passport.", "login.")) or bool(_LOGIN_PATH.search(parts.path))


# Facebook's pages that state why there is no video: (markers, class, what to tell the user).
# Explicit statements come before the bare login form, which anonymous pages carry in their
# header even when the video plays or is gone.
_FACEBOOK_PAGES: tuple[tuple[tuple[str, ...], type[TrawlError], str], ...] = (
    (("temporarily blocked", "going too fast"), RateLimited, ""),
    (("you must log in to continue",), LoginRequired,
     "; log in: give trawl a logged-in session's cookies in platforms.facebook.cookies_file"),
    (("content isn't available", "content isn\u2019t available", "video isn't available",
      "link you followed may be broken", "page isn't available", "page isn\u2019t available"), NotFound, ""),
    (('id="login_form"',), LoginRequired,
     "; log in: give trawl a logged-in session's cookies in platforms.facebook.cookies_file"),
)
_TAG = re.compile(r"<[^>]*>")


def classify_facebook_page(text: str, where: str = "") -> TrawlError | None:
    """The error a Facebook page without a video states, quoting the page; None if it states none."""
    unescaped = html.unescape(text)
    lowered = unescaped.lower()
    for markers, cls, advice in _FACEBOOK_PAGES:
        found = next(((lowered.find(m), m) for m in markers if m in lowered), None)
        if found is None:
            continue
        at, marker = found
        said = "a login form" if marker.startswith("id=") else f'"{_statement(unescaped, at)}"'
        return cls(f"facebook: the page says {said} instead of the video{where}{advice}")
    return None


def _statement(text: str, at: int) -> str:
    """The page's own words around ``text[at]``: the text of the element holding them."""
    start = max(text.rfind(">", 0, at) + 1, at - 200)
    stop = text.find("<", at, at + 300)
    return " ".join(text[start:stop if stop >= 0 else at + 300].split())


# -- HTTP answers ------------------------------------------------------------------------------
# Statuses Weibo answers when it throttles a client (432 has no reason phrase; 418 too).
_THROTTLE_STATUSES = frozenset({418, 432})


def classify_response(
    status: int,
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    *,
    url: str = "",
    item_url: str = "",
    platform: str = "",
    signed_media: bool = False,
) -> TrawlError | None:
    """Classify an HTTP answer; None means it is a success the caller can use.

    Args:
        status: the HTTP status code.
        headers: response headers (case-insensitive mapping preferred).
        body: the first bytes of the body, for platform JSON codes and error texts.
        url: the requested URL, quoted in messages.
        item_url: the URL the user gave, when ``url`` is an API call made for it.
        platform: whose answer this is: ``bilibili`` reads ``code``, ``weibo`` reads ``ok``, ""
            reads both; any other platform's body is not read for codes.
        signed_media: the URL is a signed media URL that worked before, so 403/410 means it
            expired rather than that access is forbidden.
    """
    headers = headers or {}
    where = _where(url, item_url)
    retry_after = parse_retry_after(headers.get("retry-after") or headers.get("Retry-After"))
    bili_status = headers.get("bili-status-code") or headers.get("Bili-Status-Code")
    if bili_status and bili_status.strip() in ("-352", "-412"):
        return RateLimited(f"Bilibili risk control {bili_status.strip()}{where}")
    if status in (429, 412) or status in _THROTTLE_STATUSES:
        why = " (the site throttles this client)" if status in _THROTTLE_STATUSES else ""
        return RateLimited(f"HTTP {status}{why}{where}", retry_after=retry_after)
    if status == 503 and retry_after is not None:
        return Http5xx(f"HTTP 503{where}", retry_after=retry_after)
    if 500 <= status <= 599:
        return Http5xx(f"HTTP {status}{where}")
    if 400 <= status <= 499:
        return _classify_4xx(status, body, where, platform, signed_media)
    return _classify_body(body, where, platform)


def _classify_4xx(status: int, body: bytes | None, where: str, platform: str, signed_media: bool) -> TrawlError:
    """A 4xx is forbidden only when it says so (401, 403, 451); others say what they are."""
    text = (body or b"")[:4096].decode("utf-8", "replace").lower()
    if status in (403, 410) and (signed_media or "signature expired" in text or "url expired" in text):
        return UrlExpired(f"HTTP {status}: media URL expired{where}")
    if status in (401, 403, 451):
        return Forbidden(f"HTTP {status}{where}")
    if status in (404, 410):
        return NotFound(f"HTTP {status}{where}")
    if status == 408:
        return NetworkTimeout(f"HTTP 408: the server timed out waiting for the request{where}")
    stated = _classify_body(body, where, platform)  # a platform may explain its 400 in its body
    return stated if stated is not None else PlatformError(f"HTTP {status}{where}")


def _classify_body(body: bytes | None, where: str, platform: str) -> TrawlError | None:
    """The error a platform's JSON body states, if it states one and is read for this platform."""
    answer = _platform_answer(body) if platform in ("", "bilibili", "weibo") else None
    if answer is None:
        return None
    if answer.code is not None and platform in ("", "bilibili"):
        stated = classify_bilibili_code(answer.code, answer.message, where)
        if stated is not None:
            return stated
    # Only -100 here: ok:0 also ends a feed's pages, so the resolvers judge it where it is an error.
    if answer.ok == -100 and platform in ("", "weibo"):
        return classify_weibo_answer(answer.ok, answer.message, answer.page, where)
    return None


def classify_exception(exc: BaseException) -> TrawlError:
    """Classify any exception raised while working on an item."""
    if isinstance(exc, TrawlError):
        return exc
    if isinstance(exc, httpx.PoolTimeout):
        # No server was slow: every connection of trawl's own pool stayed busy. Retried like a
        # timeout (the slots free up), but said as what it is, so the fix is found.
        return NetworkTimeout("connection pool full: no connection of this process's HTTP client came free within "
                              "net.connect_timeout; raise net.max_connections (0 derives it from "
                              "worker.max_concurrent_activities and download.segments) or run fewer downloads at once")
    if isinstance(exc, httpx.TimeoutException):
        return NetworkTimeout(f"timeout: {type(exc).__name__} {exc}".strip())
    if isinstance(exc, httpx.TooManyRedirects):
        return Forbidden(f"redirect loop or too many redirects: {exc}")
    if isinstance(exc, httpx.RemoteProtocolError) and "too long" in str(exc).lower():
        # h11 refuses a header block past its buffer limit: a hostile or broken server.
        return TooLarge(f"response headers too large: {exc}")
    if isinstance(exc, (httpx.InvalidURL, httpx.UnsupportedProtocol)):
        return UnsupportedUrl(f"invalid URL: {exc}")
    unresolved = _name_not_found(exc)
    if unresolved is not None:
        return unresolved
    if isinstance(exc, httpx.RemoteProtocolError) and any(
        hint in str(exc).lower() for hint in ("incomplete", "complete message body")
    ):
        return Truncated(f"connection closed early: {exc}")
    if isinstance(exc, httpx.TransportError):
        return NetworkError(f"{type(exc).__name__}: {exc}")
    if isinstance(exc, TimeoutError):
        return NetworkTimeout(f"timeout: {exc}")
    if isinstance(exc, (ConnectionError, socket.gaierror, socket.herror)):
        return NetworkError(f"{type(exc).__name__}: {exc}")
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO):
        return StorageError(f"storage: {exc.strerror or exc}")
    if isinstance(exc, OSError):
        return StorageError(f"storage: {exc}")
    return InternalError(f"unexpected {type(exc).__name__}: {exc}")


# getaddrinfo's answers for a name that does not exist; EAI_AGAIN ("Temporary failure in name
# resolution") is a resolver in trouble, which stays a retried network_error.
_NXDOMAIN_ERRNOS = frozenset(code for code in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", None)) if code)
_NXDOMAIN_TEXTS = ("name or service not known", "nodename nor servname provided", "no address associated with hostname",
                   "name does not resolve")


def _name_not_found(exc: BaseException) -> NameNotFound | None:
    """NameNotFound when ``exc`` (or what it was raised from) says the host name does not exist."""
    if not isinstance(exc, (httpx.TransportError, socket.gaierror)):
        return None
    for link in _chain(exc):
        if isinstance(link, socket.gaierror):
            if link.errno not in _NXDOMAIN_ERRNOS:
                return None
            return NameNotFound(f"{_host_of(exc) or 'the host name'} does not resolve: {link.strerror or link}")
    # httpx may carry only the text of the resolver's answer (no chained gaierror).
    text = str(exc)
    if isinstance(exc, httpx.ConnectError) and any(hint in text.lower() for hint in _NXDOMAIN_TEXTS):
        return NameNotFound(f"{_host_of(exc) or 'the host name'} does not resolve: {text}")
    return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling, innermost last."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen and len(seen) < 16:
        seen.add(id(link))
        yield link
        link = link.__cause__ or link.__context__


def _host_of(exc: BaseException) -> str | None:
    """The host an httpx request error was about, when it says."""
    try:
        return exc.request.url.host or None  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):  # not an httpx error, or one raised without its request
        return None
