"""What Weibo's answers state: ``ok`` values, the pages its API sends a client to, redirects.

``ok: 1`` is success. ``ok: -100`` sends the client to a page: a login or passport page is a
login wall (``login_required``), a captcha is rate limiting. ``ok: 0`` is Weibo's "no" (deleted,
hidden, never existed: ``not_found``) unless its words say "log in" or "too frequent"; other
values are ``platform_error``. A redirect to the Sina Visitor System (``passport.weibo.com/
visitor/...``) instead of an answer is rate limiting, one to a login page a login wall. HTTP 418
and 432, which Weibo answers when it throttles, are rate limiting for every site
(:func:`trawl.errors.classify_response`).

Sources: public issue threads and trawl's issue 11 (see the simulated site's docstring); none of
these answers is captured.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from trawl.errors import (
    AnswerRules,
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

_LOGIN_PATH = re.compile(r"/(?:login|signin)(?:[./]|$)", re.IGNORECASE)
_LOGIN_WORDS = ("登录", "login", "log in")
_THROTTLE_WORDS = ("频繁", "too frequent", "too many")


def classify_answer(ok: int, message: str | None = None, page: str | None = None,
                    where: str = "") -> TrawlError | None:
    """The error a Weibo ``ok`` value states (None for 1).

    ``ok: -100`` sends the client to a page: a login or passport page is a login wall (not
    retried), a captcha is rate limiting. ``ok: 0`` is Weibo's "no" (deleted, hidden, never
    existed) unless its words say "log in" or "too frequent"; other values have no class.
    """
    if ok == 1:
        return None
    said = f"weibo: ok:{ok}{quoted(message)}"
    lowered = (message or "").lower()
    if (ok == -100 and page and _is_login_page(page)) or any(w in lowered for w in _LOGIN_WORDS):
        sent_to = f", sent to the login page {page.split('?', 1)[0]}" if page else ""
        return LoginRequired(f"{said}{sent_to}{where}: {cookies_advice('weibo')}")
    if ok == -100 or any(w in lowered for w in _THROTTLE_WORDS):
        sent_to = f" (captcha {page.split('?', 1)[0]})" if page else ""
        return RateLimited(f"{said}{sent_to}{where}")
    if ok == 0:
        return NotFound(f"{said}{where}")
    return PlatformError(f"{said}{where} (a value trawl has no entry for)")


def classify_redirect(final_url: str, where: str = "") -> TrawlError | None:
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
        return LoginRequired(f"weibo: sent to the login page {page}{where}: {cookies_advice('weibo')}")
    return None


def _is_login_page(page: str) -> bool:
    """A passport or login host, or a ``login``/``signin`` path (the query, a return URL, is not read)."""
    try:
        parts = urlsplit(page)
    except ValueError:
        return False
    host = (parts.hostname or "").lower()
    return host.startswith(("passport.", "login.")) or bool(_LOGIN_PATH.search(parts.path))


def _answer(doc: dict[str, Any], where: str) -> TrawlError | None:
    # Only -100 here: ok:0 also ends a feed's pages, so the resolver judges it where it is an error.
    if int_field(doc.get("ok")) != -100:
        return None
    message = text_field(doc.get("message")) or text_field(doc.get("msg"))
    return classify_answer(-100, message, text_field(doc.get("url")), where)


ANSWERS = AnswerRules(body=_answer)
