"""Weibo's visitor cookies: what the Sina Visitor System gives a browser it does not know.

Weibo sends a client without cookies from its desktop APIs to ``passport.weibo.com/visitor/visitor``.
The page there does two requests, as yt-dlp's ``WeiboBaseIE._update_visitor_cookies`` does them:
``POST /visitor/genvisitor`` (form ``cb=gen_callback``, ``fp`` = the browser's description) answers
the JSONP ``gen_callback({"retcode": 20000000, "data": {"tid", "new_tid", "confidence"}})``; then
``GET /visitor/visitor?a=incarnate&t=<tid>&w=<3 if new_tid else 2>&c=<confidence, 3 digits>&gc=
&cb=cross_domain&from=weibo`` answers ``cross_domain({"retcode": 20000000, "data": {"sub", "subp"}})``,
the ``SUB`` and ``SUBP`` cookies.

trawl does the same, on the host Weibo sent it to (``passport.weibo.com``, or a configured base
URL's host: the simulator), once, and sends ``SUB``/``SUBP`` with the API requests after (unless
``cookies_file`` has its own ``SUB``). A redirect to the visitor system after a renewal less than
RENEWED_FOR ago is what it is (``rate_limited``, as before). The cookies are shared by the
platform's workers: kept in ``ResolveContext.shared`` (the catalog's ``shared_state`` for workers,
so N worker processes go through the visitor system once between them), or in the resolver's own
memory when the context has none. Nothing of them enters an activity's result or a workflow's history.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from trawl.errors import TrawlError
from trawl.platforms.base import ResolveContext, dig, int_or_none, str_or_none
from trawl.shared_state import MemoryState, SharedState, made_once

if TYPE_CHECKING:
    from trawl.platforms.weibo.resolver import WeiboResolver

PASSPORT_HOST = "passport.weibo.com"
RENEWED_FOR = 30.0
MAX_COOKIE_LENGTH = 2000
KEY = "weibo.visitor"  # the cookies, in the shared state
SESSION_TTL = 86400.0
# ``cb({...});`` or ``window.cb && cb({...});``
_JSONP = re.compile(r"\s*(?:window\.[\w$]{1,64}\s*&&\s*)?[\w.$]{1,64}\((?P<body>.*)\)\s*;?\s*", re.S)


def jsonp(body: bytes) -> dict[str, Any]:
    """The object a JSONP answer (``callback({...});``) carries; {} for anything else."""
    found = _JSONP.fullmatch(body.decode("utf-8", "replace"))
    try:
        doc = json.loads(found["body"]) if found else None
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _cookie_value(value: Any) -> str | None:
    text = str_or_none(value)
    ok = text and len(text) <= MAX_COOKIE_LENGTH and text.isprintable() and not any(c in text for c in ";, ")
    return text if ok else None


@dataclass(frozen=True)
class Cookies:
    generation: int  # bumped by each visit to the visitor system
    sub: str  # "" when the visitor system gave none
    subp: str
    renewed_at: float  # wall-clock seconds

    @classmethod
    def load(cls, raw: str | None) -> Cookies | None:
        try:
            doc = json.loads(raw) if raw else None
            return cls(int(doc["generation"]), str(doc["sub"]), str(doc["subp"]), float(doc["renewed_at"]))
        except (ValueError, TypeError, KeyError):
            return None


class WeiboVisitor:
    """The platform's visitor cookies, asked for when Weibo sends a request to the visitor system."""

    def __init__(self) -> None:
        self._memory = MemoryState()  # when the context shares none
        self.renewals = 0  # cookies this object got from the visitor system (for the logs and tests)
        self.clock: Callable[[], float] = time.time

    def _state(self, ctx: ResolveContext) -> SharedState:
        return ctx.shared if ctx.shared is not None else self._memory

    def _cookies(self, ctx: ResolveContext) -> Cookies | None:
        return Cookies.load(self._state(ctx).get(KEY))

    def cookie(self, ctx: ResolveContext) -> str:
        cookies = self._cookies(ctx)
        if cookies is None or not cookies.sub:
            return ""
        return f"SUB={cookies.sub}" + (f"; SUBP={cookies.subp}" if cookies.subp else "")

    def incarnate(self, resolver: WeiboResolver, ctx: ResolveContext, sent_to: str, sent: dict[str, str]) -> bool:
        """Get visitor cookies after Weibo sent a request (with ``sent`` headers) to ``sent_to``;
        True when there are cookies to ask again with (new ones, or ones another worker got since)."""
        parts = urlsplit(sent_to)
        hosts = {PASSPORT_HOST} | {urlsplit(b).hostname for b in (resolver.config.page_base, resolver.config.mobile_base)}
        if not parts.path.startswith("/visitor/") or parts.hostname not in hosts:
            return False
        state = self._state(ctx)
        now = self._cookies(ctx)
        if now is not None and now.sub and f"SUB={now.sub}" not in sent.get("Cookie", ""):
            return True  # the request went without the cookies another got meanwhile
        if now is not None and self.clock() - now.renewed_at < RENEWED_FOR:
            return False  # renewed a moment ago and sent back again: not a missing cookie
        seen = now.generation if now else 0

        def renewed() -> str | None:
            raw = state.get(KEY)
            cookies = Cookies.load(raw)
            return raw if cookies is not None and cookies.generation > seen else None

        def visit() -> str:
            sub, subp = self._visit(resolver, ctx, sent_to)
            self.renewals += 1 if sub else 0
            raw = json.dumps(asdict(Cookies(seen + 1, sub or "", subp or "", self.clock())))
            state.put(KEY, raw, SESSION_TTL)
            return raw

        got = Cookies.load(made_once(state, f"{KEY}.renewing.{seen}", renewed, visit))
        return bool(got and got.sub)

    def _visit(self, resolver: WeiboResolver, ctx: ResolveContext, sent_to: str) -> tuple[str | None, str | None]:
        """SUB and SUBP from the visitor system (None, None when it gives none)."""
        parts = urlsplit(sent_to)
        passport = f"{parts.scheme}://{parts.netloc}"
        headers = {"Referer": sent_to, "User-Agent": resolver.config.user_agent}
        try:
            tid = self._gen(resolver, ctx, passport, headers)
            if tid is None:
                return None, None
            got = resolver.fetch_page(f"{passport}/visitor/visitor?{urlencode(self._incarnate_query(tid))}",
                                      ctx, headers)
        except TrawlError:
            return None, None
        data = jsonp(got.body).get("data")
        return _cookie_value(dig(data, "sub")), _cookie_value(dig(data, "subp"))

    def _gen(self, resolver: WeiboResolver, ctx: ResolveContext, passport: str,
             headers: dict[str, str]) -> dict[str, Any] | None:
        chrome = re.search(r"Chrome/(\d+)", resolver.config.user_agent)
        fingerprint = {"os": "1", "browser": f"Chrome{chrome[1] if chrome else '130'},0,0,0", "fonts": "undefined",
                       "screenInfo": "1920*1080*24", "plugins": ""}
        form = {"cb": "gen_callback", "fp": json.dumps(fingerprint)}
        page = resolver.post_page(f"{passport}/visitor/genvisitor", form, ctx, headers)
        data = jsonp(page).get("data")
        tid = str_or_none(dig(data, "tid"))
        if not tid or len(tid) > MAX_COOKIE_LENGTH:
            return None
        return {"tid": tid, "new_tid": dig(data, "new_tid") is True, "confidence": int_or_none(dig(data, "confidence"))}

    @staticmethod
    def _incarnate_query(tid: dict[str, Any]) -> dict[str, str]:
        confidence = tid["confidence"] if tid["confidence"] is not None and 0 <= tid["confidence"] <= 999 else 100
        return {"a": "incarnate", "t": tid["tid"], "w": "3" if tid["new_tid"] else "2", "c": f"{confidence:03d}",
                "gc": "", "cb": "cross_domain", "from": "weibo"}
