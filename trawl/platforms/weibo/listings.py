"""A Weibo user's posts as a source: all of them, their videos, or their pictures.

Source kinds (``[[sources]] kind = ...``, and the listing URLs of
:func:`trawl.platforms.weibo.forms.listing_forms`):

- ``weibo_user``: every post, from m.weibo.cn's post list (:func:`~trawl.platforms.weibo.resolver.user_post_urls`);
- ``weibo_videos``: the posts of the video tab, ``GET {page_base}/ajax/profile/getWaterFallContent
  ?uid=<uid>&cursor=<c>`` (yt-dlp's ``WeiboUserIE``): ``data.list[]`` are statuses, newest first;
  ``data.next_cursor`` is the next page's cursor, ``-1`` on the last page;
- ``weibo_album``: the posts of the picture wall, ``GET {page_base}/ajax/profile/getImageWall
  ?uid=<uid>&sinceid=<s>`` (gallery-dl's ``WeiboAlbumExtractor``): ``data.list[]`` are pictures
  (``pid``, ``mid``), several of one post in a row; ``data.since_id`` is the next page's
  ``sinceid``, falsy on the last page. Each post is listed once, as its post URL: a post is one
  item with all its pictures.

Every kind's id is the user's uid (digits), or ``n:<screen name>`` or ``custom:<personal
domain>``, which are turned into the uid by ``GET {page_base}/ajax/profile/info?screen_name=``
(or ``custom=``), reading ``data.user.idstr`` (gallery-dl's ``_user_id``). Entries are the posts'
canonical URLs, ``https://weibo.com/<uid>/<mblogid>``, so they route offline to ``weibo:<mid>``.

The desktop APIs want the Referer of the profile and visitor cookies; without them the real
site sends the client to the Sina Visitor System, which is ``rate_limited`` here as for posts
(give ``platforms.weibo.cookies_file``). ``ok: 0`` is ``not_found`` (an unknown user), ``ok:
-100`` a login wall or a captcha, as :mod:`trawl.platforms.weibo.errors` reads them. The shapes
are those the two projects' code reads (and the spec's third-party captures), not captures of
trawl's own: see :mod:`trawl.platforms.weibo.site`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from trawl.errors import UnsupportedUrl
from trawl.listing_filters import PageEntry, Walk, as_walk
from trawl.platforms.base import (ResolveContext, Resolver, dig, float_or_none, get_json, int_or_none, json_object,
                                  require, str_or_none)
from trawl.platforms.weibo.errors import classify_redirect
from trawl.platforms.weibo.resolver import (
    NAME,
    REAL_HOST,
    WeiboResolver,
    _as_list,
    _cards,
    _check_ok,
    _digits,
    _post_url,
    _status_mid,
    mid_to_mblogid,
    parse_created_at,
    user_post_urls,
)

Enough = Walk | Callable[[list[str]], bool] | None
_TAG = re.compile(r"<[^>]{0,500}>")


def user_listing(resolver: Resolver, ctx: ResolveContext, ident: str, max_pages: int, enough: Enough) -> list[str]:
    """Source kind ``weibo_user``: every post of the user, newest first (a pinned post first of all).

    Without filters, :func:`~trawl.platforms.weibo.resolver.user_post_urls`. With them, the same
    pages read here, each post judged by its date, text and video's duration: the first post older
    than ``dateafter`` ends the paging, unless it is the pinned one (``isTop``, "置顶"), which the
    feed shows first whatever its age.
    """
    assert isinstance(resolver, WeiboResolver)
    uid = user_id(resolver, ctx, ident)
    walk = as_walk(enough)
    if not walk.filters:
        return user_post_urls(resolver.config, ctx, uid, max_pages, walk)
    base = resolver.config.mobile_base.rstrip("/")
    urls: list[str] = []
    for page in range(1, max_pages + 1):
        query = urlencode({"containerid": f"107603{uid}", "page": page})
        doc = get_json(resolver, f"{base}/api/container/getIndex?{query}", ctx, resolver.api_headers(base + "/", ctx))
        cards = _cards(dig(doc, "data", "cards"))
        pinned = [e for e in (post_entry(c, uid) for c in cards if _pinned(c)) if e is not None]
        posts = [e for e in (post_entry(c, uid) for c in cards if not _pinned(c)) if e is not None]
        if not pinned and not posts:
            break
        kept = walk.page(pinned, known_stops=False) + walk.page(posts, dated=True, known_stops=False)
        urls += kept
        if walk.stop_if_known(kept):
            break
    return list(dict.fromkeys(urls))


def _pinned(card: dict[str, Any]) -> bool:
    mblog = card.get("mblog") if isinstance(card.get("mblog"), dict) else {}
    return mblog.get("isTop") in (1, True) or dig(mblog, "title", "text") == "置顶"


def post_entry(card: dict[str, Any], uid: str = "") -> PageEntry | None:
    """A post card (``card_type`` 9) as a listing entry: its URL (by its author, else ``uid``), date,
    text and video's duration and plays, where the card says them."""
    mblog = card.get("mblog") if isinstance(card.get("mblog"), dict) else {}
    author = _digits(dig(mblog, "user", "id")) or _digits(uid)
    url = _post_url(card, author) if author else None
    if url is None:
        return None
    created = parse_created_at(mblog.get("created_at"))
    text = mblog.get("text")
    media = dig(mblog, "page_info", "media_info")
    return PageEntry(
        url, timestamp=int(datetime.fromisoformat(created).timestamp()) if created else None,
        duration=float_or_none(dig(media, "duration")), view_count=int_or_none(dig(mblog, "page_info", "play_count")),
        title=html.unescape(_TAG.sub("", text)).strip() if isinstance(text, str) else None)


def video_listing(resolver: Resolver, ctx: ResolveContext, ident: str, max_pages: int, enough: Enough) -> list[str]:
    """Source kind ``weibo_videos``: the posts of the user's video tab, newest first."""
    assert isinstance(resolver, WeiboResolver)
    uid = user_id(resolver, ctx, ident)
    base = resolver.config.page_base.rstrip("/")
    urls: list[str] = []
    cursor = "0"
    for _ in range(max_pages):
        api = f"{base}/ajax/profile/getWaterFallContent?{urlencode({'uid': uid, 'cursor': cursor})}"
        data = _desktop_data(resolver, ctx, api, uid)
        found = list(dict.fromkeys(u for u in (_status_url(s, uid) for s in _as_list(data.get("list"))) if u))
        urls.extend(found)
        if not found or (enough is not None and enough(found)):
            break
        following = str_or_none(str(data.get("next_cursor", "")))
        if following is None or (int_or_none(following) or -1) < 0 or following == cursor:
            break  # yt-dlp: a cursor that is not a positive number ends the tab
        cursor = following
    return list(dict.fromkeys(urls))


def album_listing(resolver: Resolver, ctx: ResolveContext, ident: str, max_pages: int, enough: Enough) -> list[str]:
    """Source kind ``weibo_album``: the posts of the user's picture wall, newest first."""
    assert isinstance(resolver, WeiboResolver)
    uid = user_id(resolver, ctx, ident)
    base = resolver.config.page_base.rstrip("/")
    urls: list[str] = []
    since = "0"
    for _ in range(max_pages):
        query = urlencode({"uid": uid, "sinceid": since, "has_album": "true"})
        data = _desktop_data(resolver, ctx, f"{base}/ajax/profile/getImageWall?{query}", uid)
        mids = [_digits(dig(picture, "mid")) for picture in _as_list(data.get("list"))]
        found = list(dict.fromkeys(f"{REAL_HOST}/{uid}/{mid_to_mblogid(mid)}" for mid in mids if mid))
        fresh = [u for u in found if u not in urls]  # a post's pictures can run over a page break
        urls.extend(fresh)
        if not found or (enough is not None and enough(found)):
            break
        following = data.get("since_id")
        following = str(following) if isinstance(following, (str, int)) and not isinstance(following, bool) else ""
        if following in ("", "0", since):
            break  # gallery-dl: a falsy since_id ends the wall
        since = following
    return urls


def user_id(resolver: WeiboResolver, ctx: ResolveContext, ident: str) -> str:
    """The uid a listing id names: the uid itself, ``n:<screen name>`` or ``custom:<domain>``.

    Raises:
        UnsupportedUrl: an id of none of these forms.
        TrawlError: classified (``not_found`` for a user Weibo does not know).
    """
    ident = ident.strip()
    if ident.isascii() and ident.isdigit() and _digits(ident):
        return _digits(ident) or ident
    form, _, name = ident.partition(":")
    param = {"n": "screen_name", "custom": "custom"}.get(form)
    if param is None or not name:
        raise UnsupportedUrl(f"weibo: {ident!r} names no Weibo user: give the uid (digits), n:<screen name> "
                             "or custom:<personal domain>")
    api = f"{resolver.config.page_base.rstrip('/')}/ajax/profile/info?{urlencode({param: name})}"
    where = f"{REAL_HOST}/n/{name}" if form == "n" else f"{REAL_HOST}/{name}"
    data = _desktop_data(resolver, ctx, api, None, where)
    uid = _digits(dig(data, "user", "idstr")) or _digits(dig(data, "user", "id"))
    return require(uid, NAME, where, "data.user.idstr")


def _desktop_data(resolver: WeiboResolver, ctx: ResolveContext, api: str, uid: str | None,
                  where: str = "") -> dict[str, Any]:
    """``data`` of a desktop ajax answer, with the Referer of the profile it is about."""
    where = where or f"{REAL_HOST}/u/{uid}"
    referer = resolver.config.referer.rstrip("/") + (f"/u/{uid}" if uid else "/")
    sent = resolver.api_headers(referer, ctx)
    page = resolver.fetch_page(api, ctx, sent, item_url=where)
    if classify_redirect(page.url) is not None and resolver.visitor.incarnate(resolver, ctx, page.url, sent):
        page = resolver.fetch_page(api, ctx, resolver.api_headers(referer, ctx), item_url=where)  # as a visitor
    refusal = classify_redirect(page.url, f" for {where}")
    if refusal is not None:
        raise refusal
    doc = json_object(NAME, api, page)
    _check_ok(doc, where, allow_missing=False)
    data = doc.get("data")
    return data if isinstance(data, dict) else require(None, NAME, where, "data")


def _status_url(status: Any, uid: str) -> str | None:
    """A status's canonical URL, by its author (the listed user when the status names none)."""
    if not isinstance(status, dict):
        return None
    mid = _status_mid(status)
    if not mid:
        return None
    author = _digits(dig(status, "user", "idstr")) or _digits(dig(status, "user", "id")) or uid
    return f"{REAL_HOST}/{author}/{mid_to_mblogid(mid)}"
