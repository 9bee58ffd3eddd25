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
    +-- Http5xx               [http_5xx]         R  500-599, a platform's server-error codes
    +-- RateLimited           [rate_limited]     R  429, 412, 418/432, a platform's throttling codes,
    |                                               captcha, redirect or block page; waits
    |                                               Retry-After or minutes
    +-- UrlExpired            [url_expired]         403/410 on a signed media URL; the workflow
    |                                               fetches fresh URLs and resumes
    +-- Truncated             [truncated]        R  body shorter than announced; resumed
    +-- SegmentMissing        [segment_missing]  B  an HLS segment answers 404/410: asked again on
    |                                               SEGMENT_MISSING_ATTEMPTS attempts, then final
    +-- ContentCorrupt        [content_corrupt]     verify mismatch; the workflow re-downloads
    |                                               a bounded number of times
    +-- NotFound              [not_found]           404/410, a platform's "deleted" codes
    +-- LoginRequired         [login_required]      a login wall: a platform's "not logged in" code
    |                                               or login page
    +-- Forbidden             [forbidden]           401/403/451 on a page or API, a platform's
    |                                               "private" or geo-blocking codes
    +-- PreviewOnly           [preview_only]        the platform offers only a preview or trailer
    |                                               of the item (a supporter-only video's 试看)
    +-- PaidOnly              [paid_only]           the item is sold or kept for paying members (a
    |                                               paid or member-only episode, a course not bought)
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
class a failure belongs to, with the rules each platform module keeps for its own answers
(:class:`AnswerRules`: its code table, its login and captcha pages, a refusal header), which its
resolvers use too; activities turn the result into a Temporal ``ApplicationError`` with
``type=error_class``, and the retry policies list the non-retryable classes from
:data:`NON_RETRYABLE`. A class with ``max_attempts`` (B above) is retried by the policy and made
final by the activity at that attempt. Nothing else decides retrying.

A platform's answer that states an error becomes an error carrying the platform's code, its own
words and the URL the user gave; which codes mean what is documented, not captured, except where
a platform module's docstring says otherwise (its sources are named there).
"""

from __future__ import annotations

import errno
import json
import re
import socket
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar

import httpx

# Rate limiting without a Retry-After waits minutes: platforms escalate bans on quick retries.
RATE_LIMIT_DEFAULT_DELAY = 120.0
# A name that does not resolve is asked again a few times, seconds apart: a resolver that was
# briefly wrong recovers that fast, and a name that really does not exist never will.
NAME_NOT_FOUND_ATTEMPTS = 3
NAME_NOT_FOUND_RETRY_DELAY = 5.0
STORAGE_RETRY_INTERVAL_S = 5.0  # the longest wait between attempts that met a storage_error
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
        own_wait: ``retry_after`` is trawl's own default, not a server's ``Retry-After``: it is
            spread (see ``trawl.activities.application_errors``), so that items that met a limit
            together do not all come back together.
    """

    error_class: ClassVar[str] = "internal_error"
    retryable: ClassVar[bool] = True
    max_attempts: ClassVar[int | None] = None
    give_up_hint: ClassVar[str] = ""
    # An infrastructure failure (disk full, catalog down) is no fault of the item: it is retried
    # until the stage's schedule_to_close, however many attempts that takes.
    patient: ClassVar[bool] = False
    # Seconds the stage's backoff may reach for this class at most (None: the stage's
    # maximum_interval): what waits for a store to come back should notice soon after it does.
    max_retry_interval: ClassVar[float | None] = None

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after
        self.own_wait = False

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
        self.own_wait = retry_after is None


class Http5xx(TrawlError):
    error_class = "http_5xx"


class RateLimited(TrawlError):
    error_class = "rate_limited"

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message, retry_after=RATE_LIMIT_DEFAULT_DELAY if retry_after is None else retry_after)
        self.own_wait = retry_after is None


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


class PaidOnly(TrawlError):
    """The platform sells the item, or keeps it for paying members (大会员, a course bought): no
    retry helps; the cookies of an account that has it do (``platforms.<name>.cookies_file``)."""

    error_class = "paid_only"
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
    # An outage of the object store or the catalog ends without a word to the items waiting for
    # it: each tries again this often at most, so the last of them resumes within this long (plus
    # its attempt) of the store's return, not after a backoff grown to the stage's 1-5 minutes.
    # The price: a waiting item asks a store that is down once per this interval.
    max_retry_interval = STORAGE_RETRY_INTERVAL_S


class InternalError(TrawlError):
    error_class = "internal_error"


ALL_ERRORS: tuple[type[TrawlError], ...] = (
    NetworkTimeout, NetworkError, NameNotFound, Http5xx, RateLimited, UrlExpired, Truncated, SegmentMissing,
    ContentCorrupt,
    NotFound, LoginRequired, Forbidden, PreviewOnly, PaidOnly, PlatformError, UnsupportedUrl, ParseError, TooLarge,
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
# (a JSON object answer, where) -> the error it states, or None.
BodyReader = Callable[[dict[str, Any], str], "TrawlError | None"]
# (the answer's headers, where) -> the error a header states, or None.
HeaderReader = Callable[[Mapping[str, str], str], "TrawlError | None"]


@dataclass(frozen=True)
class AnswerRules:
    """How a platform states an error inside an answer, beyond its HTTP status.

    Each platform module holds its own (its code table and the words it uses); the platform's
    resolvers pass them to :func:`classify_response`, and an answer of unknown origin (a media
    URL) is read with every platform's. ``headers`` is read on every answer whoever sent it (a
    platform's refusal header is unmistakable); ``body`` on a JSON object body, a 200 included.
    """

    body: BodyReader | None = None
    headers: HeaderReader | None = None


NO_ANSWER_RULES = AnswerRules()  # a site that states errors only by its HTTP status


def _json_object(body: bytes | None) -> dict[str, Any] | None:
    """A JSON object body, or None when the body is not one (or too large to be an error)."""
    if not body or len(body) > 1_000_000 or body.lstrip()[:1] != b"{":
        return None
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def int_field(value: object) -> int | None:
    """An answer's integer field (a code): not a bool, not a float."""
    return value if type(value) is int else None


def text_field(value: object) -> str | None:
    """An answer's text field (a message), trimmed to what a message quotes."""
    return (value.strip()[:200] or None) if isinstance(value, str) else None


def _where(url: str, item_url: str = "") -> str:
    """`` for <the user's URL> (answer of <the URL asked>)``: what a message says it is about."""
    if item_url and url and item_url != url:
        return f" for {item_url} (answer of {url})"
    return f" for {item_url or url}" if item_url or url else ""


def quoted(message: str | None) -> str:
    """`` "<message>"`` as an error message quotes a platform's own words, or nothing."""
    return f' "{message}"' if message else ""


def cookies_advice(platform: str) -> str:
    """What a login wall's message tells the user to do."""
    return f"log in: give trawl a logged-in session's cookies in platforms.{platform}.cookies_file"


# Every platform's rules, for an answer of unknown origin. The platforms hold their own rules and
# import this module, so the registry hands them over when it loads (use_platform_rules).
_platform_rules: tuple[AnswerRules, ...] = ()


def use_platform_rules(rules: Iterable[AnswerRules]) -> None:
    """Read answers of unknown origin with ``rules`` (the registry's platforms', given when it loads)."""
    global _platform_rules
    _platform_rules = tuple(rules)


# -- HTTP answers ------------------------------------------------------------------------------
# Statuses some sites answer when they throttle a client (neither has a reason phrase).
_THROTTLE_STATUSES = frozenset({418, 432})


def classify_response(
    status: int,
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    *,
    url: str = "",
    item_url: str = "",
    answers: AnswerRules | None = None,
    signed_media: bool = False,
) -> TrawlError | None:
    """Classify an HTTP answer; None means it is a success the caller can use.

    Args:
        status: the HTTP status code.
        headers: response headers (case-insensitive mapping preferred).
        body: the first bytes of the body, for platform JSON codes and error texts.
        url: the requested URL, quoted in messages.
        item_url: the URL the user gave, when ``url`` is an API call made for it.
        answers: whose answer this is: the platform's rules read its body
            (:data:`NO_ANSWER_RULES`: none do); None, an answer of unknown origin, is read with
            every platform's rules.
        signed_media: the URL is a signed media URL that worked before, so 403/410 means it
            expired rather than that access is forbidden.
    """
    headers = headers or {}
    where = _where(url, item_url)
    retry_after = parse_retry_after(headers.get("retry-after") or headers.get("Retry-After"))
    rules = _platform_rules if answers is None else (answers, *_platform_rules)
    for rule in rules:
        stated = rule.headers(headers, where) if rule.headers is not None else None
        if stated is not None:
            return stated
    readers = _platform_rules if answers is None else (answers,)
    if status in (429, 412) or status in _THROTTLE_STATUSES:
        why = " (the site throttles this client)" if status in _THROTTLE_STATUSES else ""
        return RateLimited(f"HTTP {status}{why}{where}", retry_after=retry_after)
    if status == 503 and retry_after is not None:
        return Http5xx(f"HTTP 503{where}", retry_after=retry_after)
    if 500 <= status <= 599:
        return Http5xx(f"HTTP {status}{where}")
    if 400 <= status <= 499:
        return _classify_4xx(status, body, where, readers, signed_media)
    return _classify_body(body, where, readers)


def _classify_4xx(status: int, body: bytes | None, where: str, readers: tuple[AnswerRules, ...],
                  signed_media: bool) -> TrawlError:
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
    stated = _classify_body(body, where, readers)  # a platform may explain its 400 in its body
    return stated if stated is not None else PlatformError(f"HTTP {status}{where}")


def _classify_body(body: bytes | None, where: str, readers: tuple[AnswerRules, ...]) -> TrawlError | None:
    """The error a platform's JSON body states, if it states one and is read with these rules."""
    if not any(rule.body is not None for rule in readers):
        return None
    doc = _json_object(body)
    if doc is None:
        return None
    for rule in readers:
        stated = rule.body(doc, where) if rule.body is not None else None
        if stated is not None:
            return stated
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
