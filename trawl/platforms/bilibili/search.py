"""Bilibili video search as a listing: source kind ``bilibili_search``.

``GET {api_base}/x/web-interface/wbi/search/type?search_type=video&keyword=&page=`` (WBI-signed, as
the other listings), with ``order`` (``totalrank`` by relevance, the default; ``click``, ``pubdate``
newest first, ``dm``, ``stow``), ``duration`` (0 any; 1 under 10 minutes; 2 10-30; 3 30-60; 4 over
60) and ``pubtime_begin_s``/``pubtime_end_s`` (a publication window, Unix seconds). An answer is
``data{page, pagesize (20), numResults, numPages, result[]}``, each result ``{type: "video", bvid,
title (the words found in <em class="keyword">), pubdate, duration ("m:s"), play, ...}``
(bilibili-API-collect, ``search/search_request.md``).

The API never gives more than 1,000 results (50 pages of 20; ``numResults`` stops at 1000). A search
that reaches the cap is cut by publication date, as MediaCrawler cuts its searches by day: the
window is halved, the newer half read first, until each part is under the cap or one day long
(then its first 1,000 are what the platform gives). The first page of a window that is cut is
read only to learn that it is capped.

The source's id is the search text itself, or the search as a query string starting with
``keyword=``: ``keyword=<text>&order=pubdate&duration=1&pubtime_begin_s=...&pubtime_end_s=...&limit=N``
(``limit``: at most N results; yt-dlp's ``bilisearchN:``). Listing URLs: the search pages
(``search.bilibili.com/all?keyword=...``, ``/video?keyword=...&order=pubdate``, m.bilibili.com's
``/search?keyword=...``) and yt-dlp's forms ``bilisearch:TEXT`` (the first result, as yt-dlp),
``bilisearchN:TEXT``, ``bilisearchall:TEXT`` and ``bilisearchdate[N|all]:TEXT`` (newest first).
The text is sent URL-encoded, whatever it holds; it is never read as anything but text.

A watch of a search queues new results only when the search is ordered by date (``order=pubdate``,
``bilisearchdate``): paging stops at the first page of known results. In another order a new
result can be on any page, so every page up to ``max_pages`` is read.
"""

from __future__ import annotations

import html
import re
import time
import urllib.parse
from dataclasses import dataclass

from trawl.errors import UnsupportedUrl
from trawl.listing_filters import PageEntry, Walk, as_walk
from trawl.platforms.base import ResolveContext, Resolver, base_pattern, dig, int_or_none
from trawl.platforms.bilibili.config import BilibiliSettings
from trawl.platforms.bilibili.resolver import BilibiliResolver, wbi_sign
from trawl.platforms.bilibili.visitor import api_json
from trawl.platforms.platform import Listing, ListingForm

KIND = "bilibili_search"
ORDERS = ("totalrank", "click", "pubdate", "dm", "stow")
DURATIONS = range(0, 5)
PAGE_SIZE = 20
RESULT_CAP = 1000  # numResults never exceeds it
PAGE_CAP = 50  # numPages never exceeds it
FOUNDED = 1245974400  # 2009-06-26, the site's first day: the earliest publication window
DAY = 86400
MAX_TEXT = 1000  # characters of a search text
_TAG = re.compile(r"<[^>]{0,200}>")


@dataclass(frozen=True)
class SearchQuery:
    keyword: str
    order: str = "totalrank"
    duration: int = 0
    begin: int | None = None  # pubtime_begin_s
    end: int | None = None  # pubtime_end_s
    limit: int = 0  # at most this many results (0: no limit)

    @property
    def ident(self) -> str:
        """The source id of this search (its query-string form)."""
        params: dict[str, str | int] = {"keyword": self.keyword}
        if self.order != "totalrank":
            params["order"] = self.order
        if self.duration:
            params["duration"] = self.duration
        if self.begin is not None:
            params["pubtime_begin_s"] = self.begin
        if self.end is not None:
            params["pubtime_end_s"] = self.end
        if self.limit:
            params["limit"] = self.limit
        return urllib.parse.urlencode(params)


def _int(params: dict[str, str], name: str, where: str) -> int | None:
    value = params.get(name, "").strip()
    if not value:
        return None
    if not value.isascii() or not value.isdigit() or len(value) > 12:
        raise UnsupportedUrl(f"{KIND} {where}: {name} {value!r} is not a number")
    return int(value)


def parse_search(ident: str) -> SearchQuery:
    """A search from its source id: the text itself, or ``keyword=...&order=...`` (see the module).

    Raises:
        UnsupportedUrl: no text, a text longer than MAX_TEXT, an order or duration the API lacks.
    """
    where = repr(ident[:80])
    if ident.startswith("keyword="):
        params = {k: v for k, v in urllib.parse.parse_qsl(ident, keep_blank_values=True)}
        keyword = params.get("keyword", "")
    else:
        params, keyword = {}, ident
    if not keyword.strip():
        raise UnsupportedUrl(f"{KIND} {where}: give the text to search for")
    if len(keyword) > MAX_TEXT:
        raise UnsupportedUrl(f"{KIND}: a search text of {len(keyword)} characters (at most {MAX_TEXT})")
    order = params.get("order") or "totalrank"
    if order not in ORDERS:
        raise UnsupportedUrl(f"{KIND} {where}: order {order!r} is not one of {', '.join(ORDERS)}")
    duration = _int(params, "duration", where) or 0
    if duration not in DURATIONS:
        raise UnsupportedUrl(f"{KIND} {where}: duration {duration} is not 0-4 (0 any, 1 under 10 min, 2 10-30, "
                             "3 30-60, 4 over 60)")
    return SearchQuery(keyword, order, duration, _int(params, "pubtime_begin_s", where),
                       _int(params, "pubtime_end_s", where), _int(params, "limit", where) or 0)


# -- URL forms ------------------------------------------------------------------------------------
def _from_page(match: re.Match[str]) -> str:
    """The search a search page's URL shows (its ``keyword``, ``order``, ``duration``, window)."""
    params = dict(urllib.parse.parse_qsl(match["query"], keep_blank_values=True))
    order = params.get("order") or "totalrank"
    query = {"keyword": params.get("keyword", ""), "order": order, "duration": params.get("duration", "0"),
             **{k: params[k] for k in ("pubtime_begin_s", "pubtime_end_s") if params.get(k, "0") not in ("", "0")}}
    return parse_search(urllib.parse.urlencode(query)).ident


def _from_prefix(match: re.Match[str]) -> str:
    """yt-dlp's ``bilisearch[date][N|all]:TEXT``: the first result, N of them, or all."""
    count = match["count"]
    limit = 0 if count == "all" else int(count) if count else 1
    return SearchQuery(match["text"], "pubdate" if match["date"] else "totalrank", limit=limit).ident


def search_forms(config: BilibiliSettings) -> list[ListingForm]:
    """The search pages (real hosts and the configured ``search_base``) and yt-dlp's forms."""
    search = base_pattern(r"search\.bilibili\.com", config.search_base)
    mobile = base_pattern(r"m\.bilibili\.com", config.mobile_base)
    has_keyword = r"(?=(?:[^#]*&)?keyword=)"
    return [
        ListingForm(KIND, re.compile(rf"(?:{search}/(?:all|video)|{mobile}/search)/?\?{has_keyword}(?P<query>[^#]*)(?:#.*)?$"),
                    _from_page),
        ListingForm(KIND, re.compile(r"bilisearch(?P<date>date)?(?P<count>[1-9]\d{0,6}|all)?:(?P<text>.+)\Z", re.S),
                    _from_prefix, pseudo=True),
    ]


# -- the listing ----------------------------------------------------------------------------------
def _duration(text: object) -> float | None:
    """``"58:6"`` or ``"1:02:03"`` -> seconds."""
    if isinstance(text, int) and not isinstance(text, bool):
        return float(text)
    if not isinstance(text, str) or not re.fullmatch(r"\d{1,4}(?::\d{1,2}){0,2}", text.strip()):
        return None
    seconds = 0
    for part in text.strip().split(":"):
        seconds = seconds * 60 + int(part)
    return float(seconds)


def _entries(bili: BilibiliResolver, results: object) -> list[PageEntry]:
    base = bili.config.page_base.rstrip("/")
    entries = []
    for result in results if isinstance(results, list) else []:
        if not isinstance(result, dict) or result.get("type", "video") != "video":
            continue
        bvid = result.get("bvid")
        if not isinstance(bvid, str) or not re.fullmatch(r"BV[0-9A-Za-z]{10}", bvid):
            continue
        title = result.get("title")
        entries.append(PageEntry(
            f"{base}/video/{bvid}", timestamp=int_or_none(result.get("pubdate")), duration=_duration(result.get("duration")),
            view_count=int_or_none(result.get("play")),
            title=html.unescape(_TAG.sub("", title)) if isinstance(title, str) else None))
    return entries


def search_listing(resolver: Resolver, ctx: ResolveContext, ident: str, max_pages: int,
                   enough: Walk | None) -> list[str]:
    """``bilibili_search``: the videos a search finds, in its order, ``max_pages`` requests at most."""
    assert isinstance(resolver, BilibiliResolver)
    bili, query, walk = resolver, parse_search(ident), as_walk(enough)
    by_date = query.order == "pubdate"
    after, before = walk.window  # the filters' dates narrow the search itself
    lows = [v for v in (query.begin, after) if v is not None]
    highs = [v for v in (query.end, None if before is None else before - 1) if v is not None]
    begin, end = (max(lows) if lows else None), (min(highs) if highs else None)
    search_page = bili.config.search_base.rstrip("/")
    headers = {**bili._headers(), "Referer": f"{search_page}/all?{urllib.parse.urlencode({'keyword': query.keyword})}",
               "Origin": search_page}
    api = f"{bili.config.api_base.rstrip('/')}/x/web-interface/wbi/search/type"
    requests = 0

    def page(number: int, window: tuple[int | None, int | None]) -> dict:
        nonlocal requests
        requests += 1
        params: dict[str, object] = {"search_type": "video", "keyword": query.keyword, "order": query.order,
                                     "duration": query.duration, "tids": 0, "page": number}
        if window[0] is not None:
            params["pubtime_begin_s"] = window[0]
        if window[1] is not None:
            params["pubtime_end_s"] = window[1]
        def signed() -> str:  # signed again with the new keys after a renewal
            return f"{api}?{urllib.parse.urlencode(wbi_sign(params, *bili._wbi_keys(ctx, headers)))}"

        return api_json(bili, ctx, signed, headers, signed=True)

    urls: list[str] = []
    windows: list[tuple[int | None, int | None]] = [(begin, end)]
    if begin is not None and end is not None and begin > end:
        windows = []  # an empty window: nothing to read
    while windows and requests < max_pages and not walk.done:
        window = windows.pop()
        first = page(1, window)
        total = int_or_none(dig(first, "data", "numResults")) or 0
        pages = min(int_or_none(dig(first, "data", "numPages")) or 0, PAGE_CAP)
        low, high = window[0] if window[0] is not None else FOUNDED, window[1] if window[1] is not None else int(time.time())
        if (total >= RESULT_CAP or pages >= PAGE_CAP) and high - low > DAY:
            middle = low + (high - low) // 2
            windows += [(low, middle), (middle + 1, high)]  # the newer half is read first
            continue
        doc = first
        for number in range(1, max(pages, 1) + 1):
            if number > 1:
                if requests >= max_pages:
                    break
                doc = page(number, window)
            entries = _entries(bili, dig(doc, "data", "result"))
            if not entries:
                break
            kept = walk.page(entries, dated=by_date, known_stops=by_date)
            urls += kept
            if query.limit and len(dict.fromkeys(urls)) >= query.limit:
                walk.done = True
            if walk.done:
                break
    found = list(dict.fromkeys(urls))
    return found[:query.limit] if query.limit else found


SEARCH_LISTINGS: dict[str, Listing] = {KIND: search_listing}
