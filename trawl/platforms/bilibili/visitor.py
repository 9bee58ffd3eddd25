"""Bilibili's visitor session: what the site's own pages get for a visitor, kept and renewed.

A visitor's browser gets its device ids from ``GET {api_base}/x/frontend/finger/spi``
(``data.b_3`` and ``data.b_4``, sent back as the ``buvid3`` and ``buvid4`` cookies) and its WBI keys
from ``x/web-interface/nav`` (bilibili-API-collect, ``docs/misc/buvid3_4.md`` and
``docs/misc/sign/wbi.md``). The APIs answer a request without them, or with ids the risk control
no longer likes, with -352 (or -412 for the search: "Cookie 不足"); a request signed with keys that
have rotated fails its WBI check (-403).

trawl does what the page does, through the platform's own endpoints and nothing else: it asks
for the ids once, sends them with every API request (unless ``cookies_file`` has its own
``buvid3``), and when an answer says the session is stale (-352 or -412; -403 on a WBI-signed
request) it renews it once, new ids and new keys, and asks again. A second refusal is what it
is: ``rate_limited`` (slow down) or ``forbidden``, with its hint; never worked around further.

One session per resolver, so every fetch and listing a worker process runs for the platform
shares it (renewed once for all, however many ask at the same time). It lives in the worker's
memory only: no id, key or cookie ever enters an activity's result or a workflow's history.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trawl.errors import Forbidden, RateLimited, TrawlError
from trawl.platforms.base import ResolveContext, dig, get_json, str_or_none

if TYPE_CHECKING:
    from trawl.platforms.bilibili.resolver import BilibiliResolver

SPI_PATH = "/x/frontend/finger/spi"
STALE_CODES = ("-352", "-412")  # the session's ids are missing or no longer accepted
MAX_ID_LENGTH = 200
# A session renewed this recently and refused again is not stale: the refusal is a rate limit
# (or a refusal) and goes back as it is, with no further renewal.
RENEWED_FOR = 30.0


@dataclass(frozen=True)
class Visitor:
    buvid3: str
    buvid4: str
    at: float  # when it was given (monotonic seconds)


class VisitorSession:
    """The visitor ids of one resolver, asked for once and renewed when an answer says so."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._visitor: Visitor | None = None
        self._asked = False  # spi was asked (an answer without ids is not asked again until renewal)
        self.generation = 0  # bumped by each renewal
        self.renewals = 0
        self._renewed_at: float | None = None

    def cookie(self, bili: BilibiliResolver, ctx: ResolveContext) -> str:
        """``buvid3=...; buvid4=...`` for the API requests ("" when the platform gave none)."""
        with self._lock:
            if not self._asked:
                self._asked = True
                self._visitor = _ask(bili, ctx)
            visitor = self._visitor
        return f"buvid3={visitor.buvid3}; buvid4={visitor.buvid4}" if visitor else ""

    def headers(self, bili: BilibiliResolver, ctx: ResolveContext, headers: dict[str, str]) -> dict[str, str]:
        """``headers`` with the visitor cookies added, unless ``cookies_file`` gives a ``buvid3``."""
        own = headers.get("Cookie", "")
        if "buvid3=" in own:
            return headers
        cookie = self.cookie(bili, ctx)
        if not cookie:
            return headers
        return {**headers, "Cookie": f"{own}; {cookie}" if own else cookie}

    def renew(self, bili: BilibiliResolver, seen: int) -> bool:
        """Drop the ids and the WBI keys so the next request asks for new ones, unless another
        request renewed them since generation ``seen`` (then that session is tried). Returns
        whether the request should be asked again: false when the session was renewed less than
        RENEWED_FOR ago and is refused still (a refusal that persists is not a stale session)."""
        with self._lock:
            if self.generation != seen:
                return True
            if self._renewed_at is not None and time.monotonic() - self._renewed_at < RENEWED_FOR:
                return False
            self.generation += 1
            self.renewals += 1
            self._renewed_at = time.monotonic()
            self._visitor, self._asked = None, False
            bili._wbi = None
            return True


def _ask(bili: BilibiliResolver, ctx: ResolveContext) -> Visitor | None:
    """New visitor ids from the platform; None when it gives none (the requests go without)."""
    try:
        doc = get_json(bili, f"{bili.config.api_base.rstrip('/')}{SPI_PATH}", ctx, bili._headers())
    except TrawlError:
        return None  # the APIs decide without them; a stale answer renews and asks again
    b3, b4 = str_or_none(dig(doc, "data", "b_3")), str_or_none(dig(doc, "data", "b_4"))
    if not b3 or len(b3) > MAX_ID_LENGTH or not b3.isprintable() or ";" in b3:
        return None
    b4 = b4 if b4 and len(b4) <= MAX_ID_LENGTH and b4.isprintable() and ";" not in b4 else ""
    return Visitor(b3, b4, time.monotonic())


def stale(err: TrawlError, signed: bool) -> bool:
    """Whether an answer says the visitor session is stale: risk control's -352/-412, or a WBI
    check failed (-403 on a signed request: the keys rotated)."""
    if isinstance(err, RateLimited):
        return any(code in err.message for code in STALE_CODES)
    return signed and isinstance(err, Forbidden) and "code -403" in err.message


def api_json(bili: BilibiliResolver, ctx: ResolveContext, url: Callable[[], str], headers: dict[str, str],
             *, signed: bool = False, item_url: str = "") -> dict:
    """GET a Bilibili API with the visitor session; a stale answer renews it once and asks again.

    Args:
        url: builds the request's URL (again after a renewal: a signed one with the new keys).
        signed: the request carries a WBI signature (a -403 then means the keys rotated).

    Raises:
        TrawlError: classified, the second answer's when the session was renewed.
    """
    session = bili.visitor
    seen = session.generation
    try:
        return get_json(bili, url(), ctx, session.headers(bili, ctx, headers), item_url=item_url)
    except TrawlError as err:
        if not stale(err, signed) or not session.renew(bili, seen):
            raise
    return get_json(bili, url(), ctx, session.headers(bili, ctx, headers), item_url=item_url)
