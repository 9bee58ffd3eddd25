"""Bilibili listings: an uploader's videos, a collection (合集), a series (系列), a favourites folder.

Source kinds and their ids (``[[sources]] kind = ..., id = ...``; a listing URL becomes one):

- ``bilibili_uploader``, id ``<mid>``: ``x/space/wbi/arc/search`` (WBI-signed), ``pn``/``ps``,
  ``data.page{pn, ps, count}``; ``order=pubdate``, newest first. An entry standing for a
  collection in hidden mode (``meta.attribute`` 156, as yt-dlp reads it) is that collection's
  videos, newest first.
- ``bilibili_collection``, id ``<mid>:<season id>`` (or ``<season id>``: the API takes any mid):
  ``x/polymer/web-space/seasons_archives_list``, ``page_num``/``page_size``,
  ``data.page{page_num, page_size, total}``. The API lists a collection in its own order, oldest
  first (bilibili-API-collect's example); the first page gives the total, then the pages are read
  from the last one back, each reversed: newest first, so a watch stops at the first known page.
- ``bilibili_series``, id ``<mid>:<series id>``: ``x/series/archives``, ``pn``/``ps``,
  ``data.page{num, size, total}``; ``sort=desc`` (the default order, newest first).
- ``bilibili_favorites``, id ``<media id>`` (the folder's mlid, as favlist URLs give it):
  ``x/v3/fav/resource/list``, ``pn``/``ps`` (at most 20), ``data.has_more``; ``order=mtime``,
  the most recently favourited first. Only videos (``type`` 2) are listed; entries deleted
  since (``attr`` 1 or 9, "已失效视频") are not crawled (they never can be, so they would keep
  every page from ever being fully known) but come back as the listing's dead entries
  (``Listed.gone``), with the folder's title and each entry's, for the catalog to keep. A private folder answers -403: without
  ``cookies_file`` that is ``login_required`` (only its owner's account lists it, as yt-dlp says);
  with cookies it is ``forbidden`` (the account given is not its owner's).

Every listing yields ``https://www.bilibili.com/video/<bvid>`` (on the configured page base).
Answer shapes and paging keys: bilibili-API-collect at 7ffb221 (``docs/user/space.md``,
``docs/video/collection.md``, ``docs/fav/list.md``) and yt-dlp's ``bilibili.py``.
"""

from __future__ import annotations

import math
import re
import urllib.parse
from collections.abc import Callable
from typing import Any

from trawl.errors import Forbidden, LoginRequired, UnsupportedUrl
from trawl.listing_filters import PageEntry, Walk, as_walk
from trawl.platforms.base import ResolveContext, Resolver, base_pattern, dig, int_or_none, str_or_none
from trawl.platforms.bilibili.config import BilibiliSettings
from trawl.platforms.bilibili.resolver import BilibiliResolver, wbi_sign
from trawl.platforms.bilibili.rooms import live_room_listing
from trawl.platforms.bilibili.visitor import api_json
from trawl.platforms.platform import Listed, Listing, ListingForm

Enough = Walk | Callable[[list[str]], bool] | None

UPLOADS_PAGE = 30  # yt-dlp's ps for arc/search
COLLECTION_PAGE = 30  # the API's default page_size
SERIES_PAGE = 30
FAVORITES_PAGE = 20  # the API's maximum
HIDDEN_COLLECTION = 156  # vlist[].meta.attribute of a collection shown as one entry (yt-dlp)
# A favourites entry whose video is gone (``attr``, bilibili-API-collect docs/fav/list.md: 0 fine,
# 1 deleted, 9 deleted by its uploader); the listing shows its title as "已失效视频" (video no
# longer available), its id and bvid still there. What the catalog records as its reason.
DEAD_ATTRS = {1: "已失效视频: deleted (attr 1)", 9: "已失效视频: deleted by its uploader (attr 9)"}

# Why a form is refused offline (ListingForm.login_required).
WATCH_LATER = ("the watch-later list (稍后再看) is a logged-in account's own list (code -101 without a "
               "login); trawl does not list it: crawl its videos' URLs")
FAVORITE_OPUS = ("favourited posts (fid=opus) are the logged-in account's own list of articles, not "
                 "videos (the SESSDATA cookie); trawl does not list them")


def _pair(match: re.Match[str]) -> str:
    return f"{match['mid']}:{match['sid'] or match['sid2']}"


def listing_forms(config: BilibiliSettings) -> list[ListingForm]:
    """The listing URL forms, in the order they are tried (series before collection: a
    ``/lists/<sid>`` URL is a collection unless it says ``type=series``).

    List players pinned to one video (``/list/...?bvid=BV...``) are not listings: the video
    resolver claims them, as it claims every video URL, including one of a collection.
    """
    space = base_pattern(r"space\.bilibili\.com", config.space_base)
    www = base_pattern(r"(?:www\.|m\.)?bilibili\.com", config.page_base, config.mobile_base)
    no_video = r"(?![^#]*[?&]bvid=)"  # a list playing one of its videos is that video
    end = r"/?(?:[?#].*)?$"
    return [
        ListingForm("bilibili_favorites", re.compile(
            rf"{www}/(?:watchlater/?(?:[?#].*)?$|(?:list|medialist/play)/{no_video}watchlater{end})"),
            login_required=WATCH_LATER),
        ListingForm("bilibili_favorites", re.compile(rf"{space}/\d+/favlist/?\?(?:[^#]*&)?fid=opus(?:[&#].*)?$"),
                    login_required=FAVORITE_OPUS),
        ListingForm("bilibili_series", re.compile(
            rf"{space}/(?P<mid>\d+)/(?:channel/seriesdetail/?\?(?:[^#]*&)?sid=(?P<sid>\d+)"
            rf"|lists/(?P<sid2>\d+)/?\?(?:[^#]*&)?type=series)(?:[&#].*)?$"), _pair),
        # yt-dlp's BilibiliPlaylistIE: the player of a series (its test: list/1958703906?sid=547718
        # is series 547718). The URL does not say series or collection; a series is what it shows.
        ListingForm("bilibili_series", re.compile(
            rf"{www}/list/{no_video}(?P<mid>\d+)/?\?(?:[^#]*&)?sid=(?P<sid>\d+)(?P<sid2>)(?:[&#].*)?$"), _pair),
        ListingForm("bilibili_series", re.compile(
            rf"{www}/medialist/play/{no_video}(?P<mid>\d+)/?\?(?=(?:[^#]*&)?business=space_series(?:[&#]|$))"
            rf"(?=(?:[^#]*&)?business_id=(?P<sid>\d+))(?P<sid2>).*$"), _pair),
        ListingForm("bilibili_collection", re.compile(
            rf"{space}/(?P<mid>\d+)/(?:channel/collectiondetail/?\?(?:[^#]*&)?sid=(?P<sid>\d+)(?:[&#].*)?$"
            rf"|lists/(?P<sid2>\d+){end})"), _pair),
        ListingForm("bilibili_favorites", re.compile(
            rf"(?:{space}/\d+/favlist/?\?(?:[^#]*&)?fid=(?P<id>\d+)(?:[&#].*)?$"
            rf"|{www}/(?:medialist/detail|medialist/play|list)/{no_video}ml(?P<ml>\d+){end})"),
            lambda m: m["id"] or m["ml"]),
        ListingForm("bilibili_uploader", re.compile(rf"{space}/(?P<id>\d+)(?:/upload(?:/video)?|/video)?{end}")),
    ]


# -- the listings -------------------------------------------------------------------------------
def _bilibili(resolver: Resolver) -> BilibiliResolver:
    assert isinstance(resolver, BilibiliResolver)
    return resolver


def _ids(kind: str, value: str, *, mid_optional: bool = False) -> tuple[str, str]:
    """``<mid>:<id>`` of a source (``<id>`` alone where the API takes any mid)."""
    mid, _, sid = value.strip().rpartition(":")
    if not sid.isdigit() or not (mid.isdigit() or (mid_optional and not mid)):
        shape = "<mid>:<season id> or <season id>" if mid_optional else "<mid>:<series id>"
        raise UnsupportedUrl(f"{kind} id {value!r}: give {shape} (digits)")
    return mid or "0", sid


def _video_urls(resolver: BilibiliResolver, entries: Any, key: str = "bvid") -> list[str]:
    base = resolver.config.page_base.rstrip("/")
    found = entries if isinstance(entries, list) else []
    return [f"{base}/video/{e[key]}" for e in found if isinstance(e, dict) and isinstance(e.get(key), str) and e[key]]


def _clock(value: Any) -> float | None:
    """A duration in seconds, or ``"22:11"`` (arc/search's ``length``) in seconds."""
    if isinstance(value, str) and re.fullmatch(r"\d{1,5}(?::\d{1,2}){1,2}", value.strip()):
        seconds = 0
        for part in value.strip().split(":"):
            seconds = seconds * 60 + int(part)
        return float(seconds)
    number = int_or_none(value)
    return float(number) if number is not None and number >= 0 else None


def _listing_entries(resolver: BilibiliResolver, entries: Any, *, date_key: str = "pubdate",
                     duration_key: str = "duration", views: tuple[str, ...] = ("stat", "view")) -> list[PageEntry]:
    """A list API's videos with what it says of them (date, duration, plays, title), for filters."""
    found = entries if isinstance(entries, list) else []
    return [PageEntry(url, timestamp=int_or_none(e.get(date_key)), duration=_clock(e.get(duration_key)),
                         view_count=int_or_none(dig(e, *views)),
                         title=e.get("title") if isinstance(e.get("title"), str) else None)
            for e in found if isinstance(e, dict) for url in _video_urls(resolver, [e])]


def _space_headers(resolver: BilibiliResolver, mid: str) -> dict[str, str]:
    # The space APIs check the Referer (bilibili-API-collect: "需验证referer"); yt-dlp sends the
    # space page and its Origin.
    space = resolver.config.space_base.rstrip("/")
    return {**resolver._headers(), "Referer": f"{space}/{mid}", "Origin": space}


def _get(resolver: BilibiliResolver, ctx: ResolveContext, path: str, params: dict[str, Any] | Callable[[], dict],
         headers: dict[str, str]) -> dict:
    """A list API's answer, with the visitor session (:mod:`.visitor`); ``params`` a function for a
    WBI-signed request (signed again with new keys if the session is renewed)."""
    api = resolver.config.api_base.rstrip("/")
    signed = callable(params)

    def url() -> str:
        return f"{api}{path}?{urllib.parse.urlencode(params() if callable(params) else params)}"

    return api_json(resolver, ctx, url, headers, signed=signed)


def uploader_listing(resolver: Resolver, ctx: ResolveContext, mid: str, max_pages: int, enough: Enough) -> list[str]:
    """``bilibili_uploader``: an uploader's videos, newest first, ``max_pages`` pages at most
    (dated: a ``dateafter`` bound ends the paging at the first older video)."""
    bili = _bilibili(resolver)
    walk = as_walk(enough)
    if not mid.strip().isdigit():
        raise UnsupportedUrl(f"bilibili_uploader id {mid!r}: give the uploader's mid (digits)")
    headers = _space_headers(bili, mid)
    urls: list[str] = []
    for page in range(1, max_pages + 1):
        def params(number: int = page) -> dict:
            return wbi_sign({"mid": mid, "pn": number, "ps": UPLOADS_PAGE, "order": "pubdate", "platform": "web",
                             "tid": 0, "keyword": "", "order_avoided": "true"}, *bili._wbi_keys(ctx, headers))

        doc = _get(bili, ctx, "/x/space/wbi/arc/search", params, headers)
        vlist = dig(doc, "data", "list", "vlist")
        if not isinstance(vlist, list) or not vlist:
            break
        page_urls: list[str] = []
        videos: list[PageEntry] = []
        for entry in vlist:
            if not isinstance(entry, dict) or walk.done:
                continue
            season = int_or_none(dig(entry, "meta", "id"))
            if dig(entry, "meta", "attribute") == HIDDEN_COLLECTION and season:
                page_urls += walk.page(videos, dated=True, known_stops=False)
                videos = []
                # its newest page known: nothing newer in it (a watch reads one collection page)
                page_urls += collection_listing(bili, ctx, f"{mid}:{season}", max_pages, walk)
                walk.go_on_after_known()
            else:
                videos += _listing_entries(bili, [entry], date_key="created", duration_key="length",
                                           views=("play",))
        page_urls += walk.page(videos, dated=True, known_stops=False)
        urls += page_urls
        if walk.stop_if_known(page_urls):
            break
        count = int_or_none(dig(doc, "data", "page", "count"))
        if count is not None and page * UPLOADS_PAGE >= count:
            break
    return list(dict.fromkeys(urls))


def collection_listing(resolver: Resolver, ctx: ResolveContext, ident: str, max_pages: int,
                       enough: Enough) -> list[str]:
    """``bilibili_collection``: a collection's videos, newest first (the last page first)."""
    bili = _bilibili(resolver)
    mid, season = _ids("bilibili_collection", ident, mid_optional=True)
    headers = _space_headers(bili, mid)

    walk = as_walk(enough)

    def page(number: int) -> tuple[dict, list[PageEntry]]:
        doc = _get(bili, ctx, "/x/polymer/web-space/seasons_archives_list",
                   {"mid": mid, "season_id": season, "sort_reverse": "false", "page_num": number,
                    "page_size": COLLECTION_PAGE}, headers)
        return doc, _listing_entries(bili, dig(doc, "data", "archives"))

    first, first_entries = page(1)
    total = int_or_none(dig(first, "data", "page", "total")) or 0
    size = int_or_none(dig(first, "data", "page", "page_size")) or COLLECTION_PAGE
    last = max(1, math.ceil(total / size)) if size > 0 else 1
    urls: list[str] = []
    for number in range(last, max(0, last - max_pages), -1):
        entries = first_entries if number == 1 else page(number)[1]
        # The collection's own order, not necessarily by date: no date bound ends it.
        urls += walk.page(entries[::-1])
        if walk.done:
            break
    return list(dict.fromkeys(urls))


def series_listing(resolver: Resolver, ctx: ResolveContext, ident: str, max_pages: int, enough: Enough) -> list[str]:
    """``bilibili_series``: a series' videos, newest first."""
    bili = _bilibili(resolver)
    mid, series = _ids("bilibili_series", ident)
    headers = _space_headers(bili, mid)
    walk = as_walk(enough)
    urls: list[str] = []
    for number in range(1, max_pages + 1):
        doc = _get(bili, ctx, "/x/series/archives", {"mid": mid, "series_id": series, "only_normal": "true",
                                                     "sort": "desc", "pn": number, "ps": SERIES_PAGE}, headers)
        entries = _listing_entries(bili, dig(doc, "data", "archives"))
        if not entries:
            break
        urls += walk.page(entries, dated=True)  # sort=desc: newest first
        if walk.done:
            break
        total = int_or_none(dig(doc, "data", "page", "total"))
        size = int_or_none(dig(doc, "data", "page", "size")) or SERIES_PAGE
        if total is not None and number * size >= total:
            break
    return list(dict.fromkeys(urls))


def favorites_listing(resolver: Resolver, ctx: ResolveContext, media_id: str, max_pages: int,
                      enough: Enough) -> list[str]:
    """``bilibili_favorites``: a public favourites folder's videos, the latest favourited first.

    Raises:
        LoginRequired: a private folder (-403) and no cookies given.
        Forbidden: a private folder (-403) the account in ``cookies_file`` does not own.
    """
    bili = _bilibili(resolver)
    media_id = media_id.strip()
    if not media_id.isdigit():
        raise UnsupportedUrl(f"bilibili_favorites id {media_id!r}: give the folder's media id (digits)")
    headers = bili._headers()
    urls: list[str] = []
    order: list[str] = []  # every video entry, dead ones too, as listed
    titles: dict[str, str] = {}
    gone: list[tuple[str, str | None, str]] = []
    title: str | None = None
    for number in range(1, max_pages + 1):
        try:
            doc = _get(bili, ctx, "/x/v3/fav/resource/list", {"media_id": media_id, "pn": number,
                                                              "ps": FAVORITES_PAGE, "order": "mtime", "type": 0,
                                                              "keyword": "", "platform": "web"}, headers)
        except Forbidden as exc:
            if bili.config.cookies_file:
                raise Forbidden(f"{exc.message}: favourites folder {media_id} is private and the account in "
                                "platforms.bilibili.cookies_file is not its owner's") from None
            raise LoginRequired(f"{exc.message}: favourites folder {media_id} is private: only its owner's "
                                "account lists it (set platforms.bilibili.cookies_file to the owner's "
                                "cookies)") from None
        title = title or str_or_none(dig(doc, "data", "info", "title"))
        medias = dig(doc, "data", "medias")
        entries = [m for m in medias if isinstance(m, dict) and m.get("type") == 2] if isinstance(medias, list) else []
        videos = [m for m in entries if m.get("attr") not in DEAD_ATTRS]
        page_urls = _video_urls(bili, videos)
        for entry in entries:
            for url in _video_urls(bili, [entry]):
                titles[url] = str_or_none(entry.get("title")) or ""
                order.append(url)
                if entry.get("attr") in DEAD_ATTRS:
                    gone.append((url, titles[url] or None, DEAD_ATTRS[entry["attr"]]))
        urls += page_urls
        if enough is not None and page_urls and enough(page_urls):
            break
        if dig(doc, "data", "has_more") is not True:
            break
    return Listed(list(dict.fromkeys(urls)), title=title, titles=titles, gone=gone, order=list(dict.fromkeys(order)))


def live_listing(resolver: Resolver, ctx: ResolveContext, room: str, max_pages: int, enough: Enough) -> list[str]:
    """``bilibili_live``: a live room, listed while it is live (:func:`.rooms.live_room_listing`)."""
    rooms = _bilibili(resolver).rooms
    if rooms is None:
        raise UnsupportedUrl("bilibili_live: live rooms are not resolved by this registry")
    return live_room_listing(rooms, ctx, room)


LISTINGS: dict[str, Listing] = {
    "bilibili_live": live_listing,
    "bilibili_uploader": uploader_listing,
    "bilibili_collection": collection_listing,
    "bilibili_series": series_listing,
    "bilibili_favorites": favorites_listing,
}
