"""The error taxonomy: every failure trawl meets is classified once, here.

Hierarchy (``error_class`` in brackets; R = retried by the activity's retry policy)::

    TrawlError
    +-- NetworkTimeout        [network_timeout]  R  connect/read timeout, a stalled body
    +-- NetworkError          [network_error]    R  reset, refused, DNS failure
    +-- Http5xx               [http_5xx]         R  500-599
    +-- RateLimited           [rate_limited]     R  429, Bilibili 412/-412/-352, Weibo ok:-100;
    |                                               waits Retry-After or minutes
    +-- UrlExpired            [url_expired]         403/410 on a signed media URL; the workflow
    |                                               fetches fresh URLs and resumes
    +-- Truncated             [truncated]        R  body shorter than announced; resumed
    +-- ContentCorrupt        [content_corrupt]     verify mismatch; the workflow re-downloads
    |                                               a bounded number of times
    +-- NotFound              [not_found]           404, platform "deleted" codes
    +-- LoginRequired         [login_required]      login wall
    +-- Forbidden             [forbidden]           private, geo-blocked, 401/403 on a page
    +-- UnsupportedUrl        [unsupported_url]     no resolver claims the URL, malformed URL
    +-- ParseError            [parse_error]         a response without the fields we need
    +-- TooLarge              [too_large]           over max_file_size or a page limit
    +-- BlockedAddress        [blocked_address]     a private-network target
    +-- StorageError          [storage_error]    R  disk full, database unavailable
    +-- InternalError         [internal_error]   R  an unexpected exception (a bug)

:func:`classify_response` and :func:`classify_exception` are the only places that decide which
class a failure belongs to; activities turn the result into a Temporal ``ApplicationError``
with ``type=error_class``, and the retry policies list the non-retryable classes from
:data:`NON_RETRYABLE`. Nothing else decides retrying.
"""

from __future__ import annotations

import errno
import json
import re
import socket
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import ClassVar

import httpx

# Rate limiting without a Retry-After waits minutes: platforms escalate bans on quick retries.
RATE_LIMIT_DEFAULT_DELAY = 120.0


class TrawlError(Exception):
    """Base of every classified failure.

    Attributes:
        error_class: the taxonomy name, used as the Temporal ``ApplicationError`` type.
        retryable: whether the activity's retry policy may try again.
        retry_after: seconds to wait before the next attempt, when the failure says so.
    """

    error_class: ClassVar[str] = "internal_error"
    retryable: ClassVar[bool] = True

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


class InternalError(TrawlError):
    error_class = "internal_error"


ALL_ERRORS: tuple[type[TrawlError], ...] = (
    NetworkTimeout, NetworkError, Http5xx, RateLimited, UrlExpired, Truncated, ContentCorrupt,
    NotFound, LoginRequired, Forbidden, UnsupportedUrl, ParseError, TooLarge, BlockedAddress,
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


def _platform_code(body: bytes | None) -> tuple[int | None, int | None]:
    """The Bilibili ``code`` and Weibo ``ok`` fields of a JSON body, when present."""
    if not body or len(body) > 1_000_000 or body.lstrip()[:1] != b"{":
        return None, None
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return None, None
    if not isinstance(doc, dict):
        return None, None
    code = doc.get("code")
    ok = doc.get("ok")
    return (code if isinstance(code, int) else None), (ok if isinstance(ok, int) else None)


_BILIBILI_CODES: dict[int, type[TrawlError]] = {
    -404: NotFound, 62002: NotFound, 62004: NotFound, -403: Forbidden,
    -412: RateLimited, -352: RateLimited, -101: LoginRequired,
}


def classify_response(
    status: int,
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    *,
    url: str = "",
    signed_media: bool = False,
) -> TrawlError | None:
    """Classify an HTTP answer; None means it is a success the caller can use.

    Args:
        status: the HTTP status code.
        headers: response headers (case-insensitive mapping preferred).
        body: the first bytes of the body, for platform JSON codes and error texts.
        url: the requested URL, quoted in messages.
        signed_media: the URL is a signed media URL that worked before, so 403/410 means it
            expired rather than that access is forbidden.
    """
    headers = headers or {}
    where = f" for {url}" if url else ""
    bili_status = headers.get("bili-status-code") or headers.get("Bili-Status-Code")
    if bili_status and bili_status.strip() in ("-352", "-412"):
        return RateLimited(f"Bilibili risk control {bili_status.strip()}{where}")
    if status == 429 or status == 412:
        retry_after = parse_retry_after(headers.get("retry-after") or headers.get("Retry-After"))
        return RateLimited(f"HTTP {status}{where}", retry_after=retry_after)
    if status == 503 and (headers.get("retry-after") or headers.get("Retry-After")):
        retry_after = parse_retry_after(headers.get("retry-after") or headers.get("Retry-After"))
        return Http5xx(f"HTTP 503{where}", retry_after=retry_after)
    if 500 <= status <= 599:
        return Http5xx(f"HTTP {status}{where}")
    text = (body or b"")[:4096].decode("utf-8", "replace").lower()
    if status in (403, 410) and (signed_media or "signature expired" in text or "url expired" in text):
        return UrlExpired(f"HTTP {status}: media URL expired{where}")
    if status in (401, 403, 451):
        return Forbidden(f"HTTP {status}{where}")
    if status in (404, 410):
        return NotFound(f"HTTP {status}{where}")
    if 400 <= status <= 499:
        return Forbidden(f"HTTP {status}{where}") if status != 400 else ParseError(f"HTTP 400{where}")
    code, ok = _platform_code(body)
    if code is not None and code != 0:
        cls = _BILIBILI_CODES.get(code)
        if cls is not None:
            return cls(f"platform code {code}{where}")
    if ok == -100:
        return RateLimited(f"Weibo ok:-100 (captcha){where}")
    return None


def classify_exception(exc: BaseException) -> TrawlError:
    """Classify any exception raised while working on an item."""
    if isinstance(exc, TrawlError):
        return exc
    if isinstance(exc, httpx.TimeoutException):
        return NetworkTimeout(f"timeout: {type(exc).__name__} {exc}".strip())
    if isinstance(exc, httpx.TooManyRedirects):
        return Forbidden(f"redirect loop or too many redirects: {exc}")
    if isinstance(exc, httpx.RemoteProtocolError) and "too long" in str(exc).lower():
        # h11 refuses a header block past its buffer limit: a hostile or broken server.
        return TooLarge(f"response headers too large: {exc}")
    if isinstance(exc, (httpx.InvalidURL, httpx.UnsupportedProtocol)):
        return UnsupportedUrl(f"invalid URL: {exc}")
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
