import errno
from email.utils import formatdate

import httpx
import pytest

from trawl.errors import (
    NON_RETRYABLE,
    RATE_LIMIT_DEFAULT_DELAY,
    classify_exception,
    classify_response,
    parse_retry_after,
)
from tests.conftest import REFERENCE


@pytest.mark.parametrize(
    ("status", "headers", "body", "signed", "expected"),
    [
        (200, {}, b"", False, None),
        (206, {}, b"", False, None),
        (500, {}, b"", False, "http_5xx"),
        (503, {}, b"", False, "http_5xx"),
        (599, {}, b"", False, "http_5xx"),
        (429, {}, b"", False, "rate_limited"),
        (412, {}, b"", False, "rate_limited"),
        (404, {}, b"", False, "not_found"),
        (410, {}, b"", False, "not_found"),
        (410, {}, b"", True, "url_expired"),
        (403, {}, b"", False, "forbidden"),
        (403, {}, b"", True, "url_expired"),
        (403, {}, b"URL signature expired", False, "url_expired"),
        (401, {}, b"", False, "forbidden"),
        (200, {"bili-status-code": "-352"}, b"", False, "rate_limited"),
        (200, {}, b'{"ok":-100,"url":"https://m.weibo.cn/captcha"}', False, "rate_limited"),
        (200, {}, b'{"code":-404,"message":"\xe5\x95\x8a"}', False, "not_found"),
        (200, {}, b'{"code":62002,"message":"invisible"}', False, "not_found"),
        (200, {}, b'{"code":-403,"message":"access denied"}', False, "forbidden"),
        (200, {}, b'{"code":0,"data":{}}', False, None),
        (200, {}, b"<html>ok</html>", False, None),
    ],
)
def test_classify_response_table(status, headers, body, signed, expected) -> None:
    error = classify_response(status, headers, body, signed_media=signed)
    assert (error.error_class if error else None) == expected


@pytest.mark.parametrize("name", ["bilibili_error_-412.json", "bilibili_error_-352_vvoucher.json"])
def test_real_bilibili_block_bodies_are_rate_limited(name: str) -> None:
    error = classify_response(200, {}, (REFERENCE / name).read_bytes())
    assert error is not None and error.error_class == "rate_limited"
    assert error.retryable and error.retry_after == RATE_LIMIT_DEFAULT_DELAY


def test_retry_after_seconds_and_http_date() -> None:
    assert parse_retry_after("3") == 3.0
    now = 1_700_000_000
    assert parse_retry_after(formatdate(now + 90, usegmt=True), now=now) == pytest.approx(90, abs=1)
    assert parse_retry_after("soon") is None
    error = classify_response(429, {"retry-after": "7"}, b"")
    assert error is not None and error.retry_after == 7.0


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (httpx.ConnectTimeout("t"), "network_timeout"),
        (httpx.ReadTimeout("t"), "network_timeout"),
        (httpx.ConnectError("refused"), "network_error"),
        (httpx.RemoteProtocolError("peer closed connection without sending complete message body"), "truncated"),
        (OSError(errno.ENOSPC, "No space left on device"), "storage_error"),
        (ValueError("boom"), "internal_error"),
    ],
)
def test_classify_exception_table(exc: BaseException, expected: str) -> None:
    assert classify_exception(exc).error_class == expected


def test_non_retryable_classes_match_the_taxonomy() -> None:
    assert set(NON_RETRYABLE) == {
        "url_expired", "content_corrupt", "not_found", "login_required", "forbidden", "unsupported_url",
        "parse_error", "too_large", "blocked_address",
    }


def test_redact_removes_credentials_from_messages() -> None:
    from trawl.errors import redact

    text = redact("ProxyError http://bob:hunter2@proxy:3128/ failed; SESSDATA=abc123; /x?token=zzz&a=1")
    assert "hunter2" not in text and "abc123" not in text and "zzz" not in text
    assert "proxy:3128" in text and "a=1" in text
