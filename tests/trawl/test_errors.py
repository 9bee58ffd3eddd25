import errno
import json
import socket
from datetime import timedelta
from email.utils import formatdate

import httpcore
import httpx
import pytest

import trawl.errors
from trawl.activities.application_errors import to_application_error
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
        (httpx.PoolTimeout("t"), "network_timeout"),
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
        "url_expired", "content_corrupt", "not_found", "login_required", "forbidden", "preview_only", "paid_only",
        "platform_error",
        "unsupported_url", "parse_error", "too_large", "blocked_address",
    }


def test_redact_removes_credentials_from_messages() -> None:
    from trawl.errors import redact

    text = redact("ProxyError http://bob:hunter2@proxy:3128/ failed; SESSDATA=abc123; /x?token=zzz&a=1")
    assert "hunter2" not in text and "abc123" not in text and "zzz" not in text
    assert "proxy:3128" in text and "a=1" in text


# -- issue 11: platform answers classified, never misread ---------------------------------
@pytest.mark.parametrize("login_url", [
    "https://passport.weibo.com/sso/signin?entry=wapsso&source=wapssowb&url=https%3A%2F%2Fm.weibo.cn%2F",
    "https://m.weibo.cn/login.php?r=https%3A%2F%2Fm.weibo.cn%2Fstatuses%2Fshow%3Fid%3D1",
    "https://passport.weibo.cn/signin/login?entry=mweibo&r=https%3A%2F%2Fm.weibo.cn%2F",
])
def test_weibo_login_wall_is_login_required_and_names_the_cookies_setting(login_url: str) -> None:
    body = json.dumps({"ok": -100, "url": login_url}).encode()
    error = classify_response(200, {}, body, url="https://m.weibo.cn/statuses/show?id=1",
                              item_url="https://weibo.com/1/HyZVegYAP")
    assert error is not None and error.error_class == "login_required" and not error.retryable
    assert "platforms.weibo.cookies_file" in error.message
    assert "https://weibo.com/1/HyZVegYAP" in error.message


@pytest.mark.parametrize("body", [
    {"ok": -100, "url": "https://m.weibo.cn/captcha?from=api"},
    {"ok": -100, "url": "https://m.weibo.cn/captcha?r=https://m.weibo.cn/login.php"},  # a return URL is no wall
    # As quoted in dataabc/weibo-crawler#461 (a throttled client).
    {"ok": -100, "errno": "-100", "msg": "", "url": "https://m.weibo.cn/captcha?scene=limit&referer=/", "extra": ""},
])
def test_weibo_captcha_stays_rate_limited(body: dict) -> None:
    error = classify_response(200, {}, json.dumps(body).encode())
    assert error is not None and error.error_class == "rate_limited" and error.retryable


@pytest.mark.parametrize(("code", "message", "expected"), [
    (-404, "啥都木有", "not_found"),
    (62002, "稿件不可见", "not_found"),
    (62004, "稿件审核中", "not_found"),
    (-403, "访问权限不足", "forbidden"),
    (62012, "仅UP主自己可见", "forbidden"),
    (-412, "请求被拦截", "rate_limited"),
    (-352, "风控校验失败", "rate_limited"),
    (-101, "账号未登录", "login_required"),
    (-400, "请求错误", "platform_error"),
    (87654, "something new", "platform_error"),
])
def test_every_bilibili_code_is_classified_with_its_code_message_and_url(code: int, message: str,
                                                                        expected: str) -> None:
    body = json.dumps({"code": code, "message": message, "ttl": 1}, ensure_ascii=False).encode()
    error = classify_response(200, {}, body, url="https://api.bilibili.com/x/web-interface/view?bvid=BV1",
                              item_url="https://www.bilibili.com/video/BV117411r7R1")
    assert error is not None and error.error_class == expected
    assert str(code) in error.message and message in error.message
    assert "https://www.bilibili.com/video/BV117411r7R1" in error.message


def test_bilibili_login_code_names_the_cookies_setting() -> None:
    error = classify_response(200, {}, '{"code":-101,"message":"账号未登录"}'.encode())
    assert error is not None and "platforms.bilibili.cookies_file" in error.message


@pytest.mark.parametrize(("status", "expected"), [
    (432, "rate_limited"), (418, "rate_limited"), (401, "forbidden"), (403, "forbidden"),
    (405, "platform_error"), (422, "platform_error"), (400, "platform_error"),
])
def test_only_real_refusals_among_4xx_are_forbidden(status: int, expected: str) -> None:
    error = classify_response(status, {}, b"", url="https://weibo.com/ajax/statuses/show?id=1")
    assert error is not None and error.error_class == expected
    assert str(status) in error.message
    if expected == "rate_limited":
        assert error.retryable and error.retry_after == RATE_LIMIT_DEFAULT_DELAY


def _gaierror(code: int, text: str) -> socket.gaierror:
    return socket.gaierror(code, text)


def _chained_connect_error(cause: BaseException) -> httpx.ConnectError:
    """An httpx.ConnectError raised from ``cause`` the way httpx and httpcore chain them."""
    try:
        try:
            raise cause
        except OSError as inner:
            raise httpcore.ConnectError(str(inner)) from inner
    except httpcore.ConnectError as middle:
        try:
            raise httpx.ConnectError(str(middle)) from middle
        except httpx.ConnectError as outer:
            return outer


@pytest.mark.parametrize(("exc", "expected"), [
    (_gaierror(socket.EAI_NONAME, "Name or service not known"), "name_not_found"),
    (_chained_connect_error(_gaierror(socket.EAI_NONAME, "Name or service not known")), "name_not_found"),
    (httpx.ConnectError("[Errno -2] Name or service not known"), "name_not_found"),
    (httpx.ConnectError("[Errno 8] nodename nor servname provided, or not known"), "name_not_found"),
    (_gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"), "network_error"),
    (_chained_connect_error(_gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")), "network_error"),
    (httpx.ConnectError("[Errno 111] Connection refused"), "network_error"),
])
def test_name_not_found_is_its_own_class(exc: BaseException, expected: str) -> None:
    assert classify_exception(exc).error_class == expected


def test_name_not_found_is_retried_briefly_then_fails_clearly() -> None:
    attempts, delay = trawl.errors.NAME_NOT_FOUND_ATTEMPTS, trawl.errors.NAME_NOT_FOUND_RETRY_DELAY
    exc = _chained_connect_error(_gaierror(socket.EAI_NONAME, "Name or service not known"))
    first = to_application_error(exc, timedelta(minutes=1), attempt=1)
    assert first.type == "name_not_found" and not first.non_retryable
    # Seconds apart: the delay, spread by up to half of it (trawl.activities.application_errors).
    assert first.next_retry_delay is not None and timedelta(seconds=delay) <= first.next_retry_delay \
        <= timedelta(seconds=1.5 * delay)
    last = to_application_error(exc, timedelta(minutes=1), attempt=attempts)
    assert last.type == "name_not_found" and last.non_retryable
    assert "does not resolve" in last.message and f"{attempts} attempts" in last.message
    assert "name_not_found" not in NON_RETRYABLE  # the first attempts are retried by the policy


@pytest.mark.parametrize("allow_private", [True, False], ids=["plain", "guarded"])
def test_unresolvable_host_through_trawls_client_is_name_not_found(allow_private: bool) -> None:
    from trawl.http_client import make_client
    from trawl.platforms.base import ResolveContext
    from trawl.platforms.generic import GenericResolver
    from trawl.settings import NetSettings

    with make_client(NetSettings(allow_private=allow_private)) as client:
        with pytest.raises(trawl.errors.TrawlError) as caught:
            GenericResolver().resolve("http://media.invalid/clip.mp4", ResolveContext(client, 1 << 20))
    assert caught.value.error_class == "name_not_found"
    assert "media.invalid" in str(caught.value)


def test_a_full_connection_pool_is_not_reported_as_a_slow_server() -> None:
    """httpx's PoolTimeout: no connection of trawl's own pool came free in time. Retried like a
    timeout, but the message says it was the pool and which setting sizes it."""
    error = classify_exception(httpx.PoolTimeout("t"))
    assert error.error_class == "network_timeout" and error.retryable
    assert "pool" in error.message and "net.max_connections" in error.message
    server = classify_exception(httpx.ReadTimeout("t"))
    assert "net.max_connections" not in server.message
