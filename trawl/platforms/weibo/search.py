"""Weibo post search as a listing: source kind ``weibo_search``.

m.weibo.cn's search, ``GET {mobile_base}/api/container/getIndex?containerid=100103type=<T>&q=<text>
&page_type=searchall&page=N``: ``T`` 1 is the default search (综合, by relevance), 61 the real-time
search (实时, newest first). The answer is a card list as the profile feed's: ``data.cards[]`` of
``card_type`` 9 with the post in ``mblog``, some grouped in a ``card_type`` 11 card's
``card_group`` (MediaCrawler's ``filter_search_result_card`` reads both), and
``data.cardlistInfo.page``, the next page's number (absent or null on the last page).

The source's id is the search text itself, or ``q=<text>&type=61&limit=N`` (a query string starting
with ``q=``). Listing URLs: ``s.weibo.com/weibo?q=...`` (``/realtime?q=...`` and ``xsort=time``:
real-time), m.weibo.cn's ``/search?containerid=100103type%3D1%26q%3D...`` and
``weibosearch[date][N|all]:TEXT``, as yt-dlp spells its searches (``weibosearch:`` alone is the
first result; ``date`` is the real-time search). A watch of a search queues new posts only in the
real-time order (paging stops at the first page of known posts there).
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

from trawl.errors import UnsupportedUrl
from trawl.listing_filters import Walk, as_walk
from trawl.platforms.base import ResolveContext, Resolver, base_pattern, dig, get_json, int_or_none
from trawl.platforms.platform import Listing, ListingForm
from trawl.platforms.weibo.config import WeiboSettings
from trawl.platforms.weibo.listings import post_entry
from trawl.platforms.weibo.resolver import WeiboResolver, _cards

KIND = "weibo_search"
TYPES = {"1": "relevance", "61": "real-time"}
MAX_TEXT = 1000


@dataclass(frozen=True)
class WeiboSearch:
    text: str
    type: str = "1"
    limit: int = 0

    @property
    def ident(self) -> str:
        params = {"q": self.text, **({"type": self.type} if self.type != "1" else {}),
                  **({"limit": str(self.limit)} if self.limit else {})}
        return urllib.parse.urlencode(params)

    @property
    def container(self) -> str:
        return f"100103type={self.type}&q={self.text}"


def parse_search(ident: str) -> WeiboSearch:
    """A search from its source id (the text, or ``q=...&type=61&limit=N``).

    Raises:
        UnsupportedUrl: no text, a text longer than MAX_TEXT, a type other than 1 or 61.
    """
    where = repr(ident[:80])
    params = dict(urllib.parse.parse_qsl(ident, keep_blank_values=True)) if ident.startswith("q=") else {"q": ident}
    text = params.get("q", "")
    if not text.strip():
        raise UnsupportedUrl(f"{KIND} {where}: give the text to search for")
    if len(text) > MAX_TEXT:
        raise UnsupportedUrl(f"{KIND}: a search text of {len(text)} characters (at most {MAX_TEXT})")
    kind = params.get("type") or "1"
    if kind not in TYPES:
        raise UnsupportedUrl(f"{KIND} {where}: type {kind!r} is not 1 (relevance) or 61 (real-time)")
    limit = params.get("limit") or "0"
    if not limit.isascii() or not limit.isdigit() or len(limit) > 9:
        raise UnsupportedUrl(f"{KIND} {where}: limit {limit!r} is not a number")
    return WeiboSearch(text, kind, int(limit))


def _from_desktop(match: re.Match[str]) -> str:
    params = dict(urllib.parse.parse_qsl(match["query"], keep_blank_values=True))
    realtime = match["path"] == "realtime" or params.get("xsort") == "time"
    return parse_search(urllib.parse.urlencode({"q": params.get("q", ""), "type": "61" if realtime else "1"})).ident


def _from_mobile(match: re.Match[str]) -> str:
    params = dict(urllib.parse.parse_qsl(match["query"], keep_blank_values=True))
    container = params.get("containerid", "")
    found = re.fullmatch(r"100103type=(\d+)&(.*)", container, re.S)
    if found is None:
        raise UnsupportedUrl(f"{KIND}: containerid {container[:80]!r} is not a post search (100103type=1&q=...)")
    inner = dict(urllib.parse.parse_qsl(found[2], keep_blank_values=True))
    return parse_search(urllib.parse.urlencode({"q": inner.get("q", ""), "type": found[1]})).ident


def _from_prefix(match: re.Match[str]) -> str:
    count = match["count"]
    limit = 0 if count == "all" else int(count) if count else 1
    return WeiboSearch(match["text"], "61" if match["date"] else "1", limit).ident


def search_forms(config: WeiboSettings) -> list[ListingForm]:
    """s.weibo.com's and m.weibo.cn's search pages, and ``weibosearch:TEXT``."""
    desktop = r"(?i:https?://s\.weibo\.com)"
    mobile = "(?i:" + base_pattern(r"m\.weibo\.cn", config.mobile_base) + ")"
    return [
        ListingForm(KIND, re.compile(rf"{desktop}/(?P<path>weibo|realtime)/?\?(?=(?:[^#]*&)?q=)(?P<query>[^#]*)(?:#.*)?\Z"),
                    _from_desktop),
        ListingForm(KIND, re.compile(rf"{mobile}/search/?\?(?=(?:[^#]*&)?containerid=100103)(?P<query>[^#]*)(?:#.*)?\Z"),
                    _from_mobile),
        ListingForm(KIND, re.compile(r"weibosearch(?P<date>date)?(?P<count>[1-9]\d{0,6}|all)?:(?P<text>.+)\Z", re.S),
                    _from_prefix, pseudo=True),
    ]


def search_listing(resolver: Resolver, ctx: ResolveContext, ident: str, max_pages: int,
                   enough: Walk | None) -> list[str]:
    """``weibo_search``: the posts a search finds, in its order, ``max_pages`` pages at most."""
    assert isinstance(resolver, WeiboResolver)
    search, walk = parse_search(ident), as_walk(enough)
    realtime = search.type == "61"
    base = resolver.config.mobile_base.rstrip("/")
    referer = f"{base}/search?{urllib.parse.urlencode({'containerid': search.container})}"
    urls: list[str] = []
    number = 1
    for _ in range(max_pages):
        query = urllib.parse.urlencode({"containerid": search.container, "page_type": "searchall", "page": number})
        doc = get_json(resolver, f"{base}/api/container/getIndex?{query}", ctx, resolver.api_headers(referer, ctx))
        entries = [e for e in (post_entry(card) for card in _cards(dig(doc, "data", "cards"))) if e is not None]
        if not entries:
            break
        urls += walk.page(entries, dated=realtime, known_stops=realtime)
        if search.limit and len(dict.fromkeys(urls)) >= search.limit:
            break
        following = int_or_none(dig(doc, "data", "cardlistInfo", "page"))
        if walk.done or following is None or following <= number:
            break
        number = following
    found = list(dict.fromkeys(urls))
    return found[:search.limit] if search.limit else found


SEARCH_LISTINGS: dict[str, Listing] = {KIND: search_listing}
