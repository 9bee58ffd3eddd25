"""What Bilibili's answers state: the ``code`` table and the risk-control header.

Any non-zero ``code`` in a JSON answer is an error carrying the code, Bilibili's message and the
URL given. The table comes from the public API documentation (bilibili-API-collect
``docs/misc/errcode.md`` and ``docs/video/info.md``); only the -412/-352 bodies are real captures.
Server codes (-500, -503...) are ``http_5xx``; -412/-352/-509/-799 (risk control, too frequent)
and the ``Bili-Status-Code: -352``/``-412`` header are ``rate_limited``; -404/62002/62004 and
the live rooms' 60004 (no such room, ``docs/live/info.md``), the comments' 12002 (comment area
closed) and 12022 (comment gone) ``not_found``; -101
``login_required``; -403/62012/-688/-689 (private, uploader only, geo-blocked, copyright)
``forbidden``; any other code ``platform_error``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trawl.errors import (
    AnswerRules,
    Forbidden,
    Http5xx,
    LoginRequired,
    NotFound,
    PlatformError,
    RateLimited,
    TrawlError,
    cookies_advice,
    int_field,
    quoted,
    text_field,
)

# code -> class (bilibili-API-collect docs/misc/errcode.md, docs/video/info.md).
CODES: dict[int, type[TrawlError]] = {
    -404: NotFound, 62002: NotFound, 62004: NotFound,  # none; invisible; under review
    60004: NotFound,  # live room_init: no such room (docs/live/info.md)
    12002: NotFound, 12022: NotFound,  # comments: the comment area is closed; the comment is gone (docs/comment)
    -403: Forbidden, 62012: Forbidden, -688: Forbidden, -689: Forbidden,  # no access; uploader only; geo; copyright
    -412: RateLimited, -352: RateLimited, -509: RateLimited, -799: RateLimited,  # risk control; too frequent
    -101: LoginRequired,  # not logged in
    -500: Http5xx, -503: Http5xx, -504: Http5xx, -8888: Http5xx,  # server error, overload, timeout
}


def classify_code(code: int, message: str | None, where: str = "") -> TrawlError | None:
    """The error a Bilibili ``code`` states (None for 0); unlisted codes are PlatformError."""
    if code == 0:
        return None
    cls = CODES.get(code, PlatformError)
    text = f"bilibili: code {code}{quoted(message)}{where}"
    if cls is LoginRequired:
        text += "; " + cookies_advice("bilibili")
    elif cls is PlatformError:
        text += " (a code trawl has no entry for)"
    return cls(text)


def _answer(doc: dict[str, Any], where: str) -> TrawlError | None:
    code = int_field(doc.get("code"))
    if code is None:
        return None
    return classify_code(code, text_field(doc.get("message")) or text_field(doc.get("msg")), where)


def _risk_control(headers: Mapping[str, str], where: str) -> TrawlError | None:
    status = headers.get("bili-status-code") or headers.get("Bili-Status-Code")
    if status and status.strip() in ("-352", "-412"):
        return RateLimited(f"Bilibili risk control {status.strip()}{where}")
    return None


ANSWERS = AnswerRules(body=_answer, headers=_risk_control)
