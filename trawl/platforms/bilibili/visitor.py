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

One session per platform, shared by all its workers: kept in ``ResolveContext.shared`` (the
catalog's ``shared_state`` for workers, so N worker processes ask spi once between them, and a
renewal by one is what the others send next), or in the resolver's own memory when the context
has none (a command resolving alone). The one that finds no session, or a stale one, asks for it;
the others wait for its answer (trawl.shared_state.made_once). No id, key or cookie ever enters an
activity's result or a workflow's history.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from trawl.errors import Forbidden, RateLimited, TrawlError
from trawl.platforms.base import ResolveContext, dig, get_json, str_or_none
from trawl.shared_state import MemoryState, SharedState, made_once

if TYPE_CHECKING:
    from trawl.platforms.bilibili.resolver import BilibiliResolver

SPI_PATH = "/x/frontend/finger/spi"
STALE_CODES = ("-352", "-412")  # the session's ids are missing or no longer accepted
MAX_ID_LENGTH = 200
# A session renewed this recently and refused again is not stale: the refusal is a rate limit
# (or a refusal) and goes back as it is, with no further renewal.
RENEWED_FOR = 30.0
KEY = "bilibili.visitor"  # the ids, in the shared state
WBI_KEY = "bilibili.wbi"  # the WBI keys (img_key, sub_key)
SESSION_TTL = 86400.0  # a browser keeps its buvid3 far longer; a day bounds what a stale row costs
WBI_TTL = 3600.0  # the keys change daily; an hour keeps nav requests rare


@dataclass(frozen=True)
class Visitor:
    generation: int  # bumped by each renewal
    buvid3: str  # "" when the platform gave none (the requests go without)
    buvid4: str
    renewed_at: float | None  # wall-clock seconds of the renewal that gave it; None: the first

    def dump(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def load(cls, raw: str | None) -> Visitor | None:
        try:
            doc = json.loads(raw) if raw else None
            return cls(int(doc["generation"]), str(doc["buvid3"]), str(doc["buvid4"]),
                       None if doc["renewed_at"] is None else float(doc["renewed_at"]))
        except (ValueError, TypeError, KeyError):
            return None  # written by another version: asked again


class VisitorSession:
    """The platform's visitor ids and WBI keys: asked for once, renewed when an answer says so."""

    def __init__(self) -> None:
        self._memory = MemoryState()  # when the context shares none
        self.renewals = 0  # renewals this object made (for the logs and tests)
        self.clock: Callable[[], float] = time.time

    def _state(self, ctx: ResolveContext) -> SharedState:
        return ctx.shared if ctx.shared is not None else self._memory

    def current(self, bili: BilibiliResolver, ctx: ResolveContext) -> Visitor:
        """The session every request sends now, asked for by one of its users when there is none."""
        state = self._state(ctx)
        raw = made_once(state, f"{KEY}.asking", lambda: state.get(KEY),
                        lambda: self._ask_and_keep(bili, ctx, state, 0, None))
        return Visitor.load(raw) or Visitor(0, "", "", None)

    def cookie(self, bili: BilibiliResolver, ctx: ResolveContext) -> str:
        """``buvid3=...; buvid4=...`` for the API requests ("" when the platform gave none)."""
        visitor = self.current(bili, ctx)
        return f"buvid3={visitor.buvid3}; buvid4={visitor.buvid4}" if visitor.buvid3 else ""

    def headers(self, bili: BilibiliResolver, ctx: ResolveContext, headers: dict[str, str]) -> dict[str, str]:
        """``headers`` with the visitor cookies added, unless ``cookies_file`` gives a ``buvid3``."""
        return self.sent(bili, ctx, headers)[0]

    def sent(self, bili: BilibiliResolver, ctx: ResolveContext,
             headers: dict[str, str]) -> tuple[dict[str, str], int]:
        """:meth:`headers`, and the generation of the session they carry."""
        own = headers.get("Cookie", "")
        if "buvid3=" in own:  # the cookies file's own: no visitor ids asked for
            kept = Visitor.load(self._state(ctx).get(KEY))
            return headers, kept.generation if kept else 0
        visitor = self.current(bili, ctx)
        if not visitor.buvid3:
            return headers, visitor.generation
        cookie = f"buvid3={visitor.buvid3}; buvid4={visitor.buvid4}"
        return {**headers, "Cookie": f"{own}; {cookie}" if own else cookie}, visitor.generation

    def renew(self, bili: BilibiliResolver, ctx: ResolveContext, seen: int) -> bool:
        """New ids and WBI keys for everyone sharing the session, unless another renewed them since
        generation ``seen`` (then that session is tried). Returns whether the request should be
        asked again: false when the session was renewed less than RENEWED_FOR ago and is refused
        still (a refusal that persists is not a stale session)."""
        state = self._state(ctx)
        now = Visitor.load(state.get(KEY))
        if now is not None and now.generation != seen:
            return True
        if now is not None and now.renewed_at is not None and self.clock() - now.renewed_at < RENEWED_FOR:
            return False

        def renewed() -> str | None:
            raw = state.get(KEY)
            visitor = Visitor.load(raw)
            return raw if visitor is not None and visitor.generation > seen else None

        def renew() -> str:
            self.renewals += 1
            state.delete(WBI_KEY)
            return self._ask_and_keep(bili, ctx, state, seen + 1, self.clock())

        made_once(state, f"{KEY}.renewing.{seen}", renewed, renew)
        return True

    def wbi_keys(self, ctx: ResolveContext, fetch: Callable[[], tuple[str, str]]) -> tuple[str, str]:
        """The WBI keys everyone sharing the session signs with, ``fetch``-ed (nav) when there are none."""
        state = self._state(ctx)

        def fetched() -> str:
            raw = json.dumps(list(fetch()))
            state.put(WBI_KEY, raw, WBI_TTL)
            return raw

        img, sub = json.loads(made_once(state, f"{WBI_KEY}.asking", lambda: state.get(WBI_KEY), fetched))
        return str(img), str(sub)

    def _ask_and_keep(self, bili: BilibiliResolver, ctx: ResolveContext, state: SharedState, generation: int,
                      renewed_at: float | None) -> str:
        ids = _ask(bili, ctx)
        raw = Visitor(generation, *(ids or ("", "")), renewed_at).dump()
        state.put(KEY, raw, SESSION_TTL)
        return raw


def _ask(bili: BilibiliResolver, ctx: ResolveContext) -> tuple[str, str] | None:
    """New visitor ids from the platform; None when it gives none (the requests go without)."""
    try:
        doc = get_json(bili, f"{bili.config.api_base.rstrip('/')}{SPI_PATH}", ctx, bili._headers())
    except TrawlError:
        return None  # the APIs decide without them; a stale answer renews and asks again
    b3, b4 = str_or_none(dig(doc, "data", "b_3")), str_or_none(dig(doc, "data", "b_4"))
    if not b3 or len(b3) > MAX_ID_LENGTH or not b3.isprintable() or ";" in b3:
        return None
    b4 = b4 if b4 and len(b4) <= MAX_ID_LENGTH and b4.isprintable() and ";" not in b4 else ""
    return b3, b4


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
    sent, seen = session.sent(bili, ctx, headers)
    try:
        return get_json(bili, url(), ctx, sent, item_url=item_url)
    except TrawlError as err:
        if not stale(err, signed) or not session.renew(bili, ctx, seen):
            raise
    return get_json(bili, url(), ctx, session.headers(bili, ctx, headers), item_url=item_url)
