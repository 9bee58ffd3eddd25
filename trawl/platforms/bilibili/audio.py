"""Bilibili audio (音频): a song ``www.bilibili.com/audio/au<id>`` (``m.`` too) as an audio item, an
audio list ``www.bilibili.com/audio/am<id>`` as a listing of its songs.

The music service answers on the page host, each answer ``{"code": 0, "msg": "success", "data":
...}`` (from yt-dlp's ``BilibiliAudioIE``/``BilibiliAudioAlbumIE`` and bilibili-API-collect's
``docs/audio``; not captured by trawl):

- ``GET {page}/audio/music-service-c/web/song/info?sid=<id>``: ``data{id, title, uname, uid,
  intro, cover, duration (s), passtime (Unix s), lyric, statistic{play, comment, collect}}``;
  ``data`` null for a song that is not there.
- ``GET {page}/audio/music-service-c/web/url?sid=<id>&privilege=2&quality=2``: ``data{sid, type,
  size, cdns[]}``, the file's URLs (the first primary, the others its backups; signed, expiring as
  the video streams do, and wanting the Referer).
- ``GET {page}/audio/music-service-c/web/song/of-menu?sid=<list id>&pn=N&ps=100``: ``data{curPage,
  pageCount, totalSize, data[]{id, title, passtime, duration}}``.

Key: ``bilibili:au<id>``.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from trawl.errors import NotFound, ParseError, UnsupportedUrl
from trawl.listing_filters import PageEntry, as_walk
from trawl.models import Asset, Resolved, compact, count_or_none, upload_date
from trawl.platforms.base import ResolveContext, Resolver, base_pattern, dig, float_or_none, int_or_none, str_or_none
from trawl.platforms.bilibili.config import BilibiliSettings
from trawl.platforms.bilibili.errors import ANSWERS
from trawl.platforms.bilibili.visitor import api_json

if TYPE_CHECKING:
    from trawl.platforms.bilibili.resolver import BilibiliResolver

REAL_PAGE = "https://www.bilibili.com"
SERVICE = "/audio/music-service-c/web"
LIST_PAGE = 100


def audio_forms(config: BilibiliSettings) -> list[tuple[str, re.Pattern[str]]]:
    """(kind, pattern with an ``id`` group) of the audio list pages."""
    page = base_pattern(r"(?:www\.|m\.)?bilibili\.com", config.page_base, config.mobile_base)
    return [("bilibili_audio_list", re.compile(rf"{page}/audio/am(?P<id>\d{{1,12}})/?(?:[?#].*)?$"))]


class BilibiliAudioResolver(Resolver):
    """A song of Bilibili's music service: one audio asset (and its cover)."""

    name = "bilibili:audio"
    platform = "bilibili"
    answers = ANSWERS

    def __init__(self, config: BilibiliSettings, video: BilibiliResolver) -> None:
        self.config = config
        self.video = video  # its visitor session and headers
        page = base_pattern(r"(?:www\.|m\.)?bilibili\.com", config.page_base, config.mobile_base)
        self.url_patterns = (re.compile(rf"{page}/audio/au(?P<id>\d{{1,12}})/?(?:[?#].*)?$"),)  # type: ignore[misc]

    def offline_key(self, url: str) -> str | None:
        found = self.match(url)
        return f"bilibili:au{int(found['id'])}" if found else None

    def resolve(self, url: str, ctx: ResolveContext) -> Resolved:
        found = self.match(url)
        if found is None:
            raise UnsupportedUrl(f"{url}: not a Bilibili audio URL")
        sid = int(found["id"])
        base = self.config.page_base.rstrip("/") + SERVICE
        headers = self.video.headers()
        info = api_json(self.video, ctx, lambda: f"{base}/song/info?sid={sid}", headers, item_url=url).get("data")
        if not isinstance(info, dict) or not info:
            raise NotFound(f"bilibili: {url}: no song au{sid} (the song info answer has no data)")
        play = api_json(self.video, ctx, lambda: f"{base}/url?sid={sid}&privilege=2&quality=2", headers,
                        item_url=url).get("data")
        urls = [u for u in (_https(c) for c in _list(dig(play, "cdns"))) if u]
        if not urls:
            raise ParseError(f"bilibili: {url}: the song URL answer has no data.cdns")
        media = {"Referer": self.config.referer, "User-Agent": self.config.user_agent}
        size = int_or_none(dig(play, "size"))
        assets = [Asset(name="audio", kind="audio", urls=list(dict.fromkeys(urls)), headers=dict(media),
                        expected_size=size if size and size > 0 else None)]
        cover = _https(info.get("cover"))
        if cover and self.config.thumbnails:
            assets.append(Asset(name="thumbnail", kind="thumbnail", urls=[cover], headers=dict(media)))
        title = str_or_none(info.get("title")) or f"au{sid}"
        uploader = str_or_none(info.get("uname")) or str_or_none(info.get("author"))
        duration = float_or_none(info.get("duration"))
        published = int_or_none(info.get("passtime"))
        canonical = f"{REAL_PAGE}/audio/au{sid}"
        return Resolved(
            canonical_key=f"bilibili:au{sid}", canonical_url=canonical, platform=self.platform, assets=assets,
            title=title, uploader=uploader, duration=duration if duration and duration > 0 else None,
            published_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(published)) if published else None,
            metadata=compact({
                "id": f"au{sid}", "title": title, "description": str_or_none(info.get("intro")),
                "uploader": uploader, "uploader_id": str(int_or_none(info.get("uid")) or "") or None,
                "timestamp": published, "upload_date": upload_date(published),
                "duration": duration if duration and duration > 0 else None,
                "view_count": count_or_none(dig(info, "statistic", "play")),
                "comment_count": count_or_none(dig(info, "statistic", "comment")),
                "thumbnail": cover, "webpage_url": canonical,
            }),
        )


def audio_list_listing(resolver: Resolver, ctx: ResolveContext, list_id: str, max_pages: int, enough: Any) -> list[str]:
    """``bilibili_audio_list``: an audio list's songs, in the list's order."""
    bili: BilibiliResolver = resolver  # type: ignore[assignment]
    if not list_id.strip().isdigit():
        raise UnsupportedUrl(f"bilibili_audio_list id {list_id!r}: give the list's id (the digits after am)")
    base = bili.config.page_base.rstrip("/")
    walk = as_walk(enough)
    urls: list[str] = []
    for number in range(1, max_pages + 1):
        query = f"sid={list_id.strip()}&pn={number}&ps={LIST_PAGE}"
        doc = api_json(bili, ctx, lambda: f"{base}{SERVICE}/song/of-menu?{query}", bili.headers())
        songs = [s for s in _list(dig(doc, "data", "data")) if isinstance(s, dict) and int_or_none(s.get("id"))]
        if not songs:
            break
        entries = [PageEntry(f"{base}/audio/au{int_or_none(s['id'])}", timestamp=int_or_none(s.get("passtime")),
                                duration=float_or_none(s.get("duration")), title=str_or_none(s.get("title")))
                   for s in songs]
        urls += walk.page(entries, known_stops=False)
        pages = int_or_none(dig(doc, "data", "pageCount"))
        if walk.done or (pages is not None and number >= pages):
            break
    return list(dict.fromkeys(urls))


def _https(value: Any) -> str | None:
    url = str_or_none(value)
    if url and url.startswith("//"):
        url = "https:" + url
    return url if url and url.lower().startswith(("http://", "https://")) else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
