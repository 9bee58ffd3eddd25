"""Bilibili dynamics (动态) and opus posts (图文): ``t.bilibili.com/<id>``,
``www.bilibili.com/opus/<id>``, ``m.bilibili.com/opus/<id>`` and ``m.bilibili.com/dynamic/<id>``:
their pictures as image assets, their text as the description.

``GET {api}/x/polymer/web-dynamic/v1/detail?id=<id>&features=itemOpusStyle`` answers ``{"code": 0,
"data": {"item": {"id_str", "type", "modules": {"module_author": {"mid", "name", "pub_ts"},
"module_dynamic": {"desc": {"text"}, "major": {...}}, "module_stat": {"like": {"count"},
"comment": {"count"}, "forward": {"count"}}}, "orig": <the reposted dynamic>}}}``. The ``major``
says what the dynamic carries: ``MAJOR_TYPE_DRAW`` (``draw.items[].src``), ``MAJOR_TYPE_OPUS``
(``opus.pics[].url``, ``opus.title``, ``opus.summary.text``), ``MAJOR_TYPE_ARCHIVE`` (a video:
``archive.bvid``), ``MAJOR_TYPE_PGC`` (an episode: ``pgc.epid``), ``MAJOR_TYPE_ARTICLE`` (an
article, text). A repost (``DYNAMIC_TYPE_FORWARD``) carries the reposted dynamic in ``orig``.
These shapes come from bilibili-API-collect (``docs/dynamic``) and open-source readers of the API
(RSS bots, archivers the search tool found), not from a capture.

A dynamic of pictures is an item of its own, ``bilibili:opus-<id>``; a dynamic that is a video or
an episode (its own or reposted) is that video or episode, under its key: so a dynamic URL has no
key offline. An article, a dynamic of text alone and kinds trawl does not know are
``unsupported_url``, saying what they are.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from trawl.errors import ParseError, UnsupportedUrl
from trawl.models import Asset, Resolved, compact, count_or_none, upload_date
from trawl.platforms.base import ResolveContext, Resolver, base_pattern, dig, int_or_none, str_or_none
from trawl.platforms.bilibili.config import BilibiliSettings
from trawl.platforms.bilibili.errors import ANSWERS
from trawl.platforms.bilibili.visitor import api_json

if TYPE_CHECKING:
    from trawl.platforms.bilibili.pgc import BilibiliEpisodeResolver
    from trawl.platforms.bilibili.resolver import BilibiliResolver

REAL_PAGE = "https://www.bilibili.com"
# Image hosts whose URLs take an ``@<size>`` suffix for a smaller copy: the file itself without it.
_SIZED_HOSTS = ("hdslb.com", "biliimg.com")
_FIRST_LINE = 80  # a title cut from the text: its first line, at most this long


class BilibiliOpusResolver(Resolver):
    """A dynamic or opus post: its pictures, or the video or episode it is."""

    name = "bilibili:opus"
    platform = "bilibili"
    answers = ANSWERS

    def __init__(self, config: BilibiliSettings, video: BilibiliResolver, episodes: BilibiliEpisodeResolver) -> None:
        self.config = config
        self.video = video
        self.episodes = episodes
        page = base_pattern(r"(?:www\.|m\.)?bilibili\.com", config.page_base, config.mobile_base)
        dynamic = base_pattern(r"t\.bilibili\.com", config.dynamic_base)
        end = r"/?(?:[?#].*)?$"
        self.url_patterns = (  # type: ignore[misc]
            re.compile(rf"{dynamic}/(?P<id>\d{{1,20}}){end}"),
            re.compile(rf"{page}/(?:opus|dynamic)/(?P<id>\d{{1,20}}){end}"),
        )

    def resolve(self, url: str, ctx: ResolveContext) -> Resolved:
        found = self.match(url)
        if found is None:
            raise UnsupportedUrl(f"{url}: not a Bilibili dynamic or opus URL")
        ident = found["id"]
        api = self.config.api_base.rstrip("/")
        query = urlencode({"id": ident, "features": "itemOpusStyle"})
        doc = api_json(self.video, ctx, lambda: f"{api}/x/polymer/web-dynamic/v1/detail?{query}",
                       self.video.headers(), item_url=url)
        item = dig(doc, "data", "item")
        if not isinstance(item, dict):
            raise ParseError(f"bilibili: {url}: the dynamic answer has no data.item")
        carrier = _carrier(item)
        major = dig(carrier, "modules", "module_dynamic", "major")
        kind = str_or_none(dig(major, "type")) or ""
        if kind == "MAJOR_TYPE_ARCHIVE":
            bvid = str_or_none(dig(major, "archive", "bvid"))
            if not bvid:
                raise ParseError(f"bilibili: {url}: a video dynamic without archive.bvid")
            return self.video.resolve(f"{self.config.page_base.rstrip('/')}/video/{bvid}", ctx)
        if kind == "MAJOR_TYPE_PGC":
            epid = int_or_none(dig(major, "pgc", "epid"))
            if not epid:
                raise ParseError(f"bilibili: {url}: an episode dynamic without pgc.epid")
            return self.episodes.resolve(f"{self.config.page_base.rstrip('/')}/bangumi/play/ep{epid}", ctx)
        if kind == "MAJOR_TYPE_ARTICLE":
            article = int_or_none(dig(major, "article", "id"))
            raise UnsupportedUrl(f"{url}: this dynamic is an article (专栏{f' cv{article}' if article else ''}): "
                                 "text, not media")
        pictures = _pictures(major)
        if not pictures:
            what = f" ({kind})" if kind and kind not in ("MAJOR_TYPE_DRAW", "MAJOR_TYPE_OPUS") else ""
            raise UnsupportedUrl(f"{url}: Bilibili dynamic {ident} has no pictures{what}: nothing to archive")
        return self._item(ident, item, major, pictures)

    def _item(self, ident: str, item: dict[str, Any], major: Any, pictures: list[str]) -> Resolved:
        headers = {"Referer": self.config.referer, "User-Agent": self.config.user_agent}
        assets = [Asset(name=f"image-{n}", kind="image", urls=[u], headers=dict(headers))
                  for n, u in enumerate(pictures, 1)]
        author = dig(item, "modules", "module_author")
        text = (str_or_none(dig(item, "modules", "module_dynamic", "desc", "text"))
                or str_or_none(dig(major, "opus", "summary", "text")))
        title = str_or_none(dig(major, "opus", "title")) or _first_line(text) or f"dynamic {ident}"
        published = int_or_none(dig(author, "pub_ts"))
        key = f"bilibili:opus-{ident}"
        canonical = f"{REAL_PAGE}/opus/{ident}"
        uploader = str_or_none(dig(author, "name"))
        stat = dig(item, "modules", "module_stat")
        return Resolved(
            canonical_key=key, canonical_url=canonical, platform=self.platform, assets=assets, title=title,
            uploader=uploader,
            published_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(published)) if published else None,
            metadata=compact({
                "id": f"opus-{ident}", "dynamic_id": ident, "title": title, "description": text,
                "uploader": uploader, "uploader_id": str(int_or_none(dig(author, "mid")) or "") or None,
                "timestamp": published, "upload_date": upload_date(published),
                "like_count": count_or_none(dig(stat, "like", "count")),
                "comment_count": count_or_none(dig(stat, "comment", "count")),
                "repost_count": count_or_none(dig(stat, "forward", "count")),
                "webpage_url": canonical,
                "reposted": str_or_none(dig(item, "orig", "id_str")) if item.get("orig") else None,
            }),
        )


def _carrier(item: dict[str, Any]) -> dict[str, Any]:
    """The dynamic whose media the item takes: the dynamic, or for a repost whose own major is
    empty the reposted one (``orig``)."""
    if dig(item, "modules", "module_dynamic", "major") or not isinstance(item.get("orig"), dict):
        return item
    return item["orig"]


def _pictures(major: Any) -> list[str]:
    """The pictures of a ``MAJOR_TYPE_DRAW`` or ``MAJOR_TYPE_OPUS`` major, each as the file itself."""
    found = [dig(p, "src") for p in _list(dig(major, "draw", "items"))]
    found += [dig(p, "url") or dig(p, "src") for p in _list(dig(major, "opus", "pics"))]
    return list(dict.fromkeys(u for u in (_original(v) for v in found) if u))


def _original(value: Any) -> str | None:
    """An image URL (https), without the ``@<size>`` suffix Bilibili's image hosts shrink it by."""
    url = str_or_none(value)
    if url and url.startswith("//"):
        url = "https:" + url
    if not url or not url.lower().startswith(("http://", "https://")):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    path = parts.path
    if (parts.hostname or "").endswith(_SIZED_HOSTS) and "@" in path:
        path = path.split("@", 1)[0]
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def _first_line(text: str | None) -> str | None:
    line = (text or "").strip().split("\n", 1)[0].strip()
    return (line[:_FIRST_LINE] + "…" if len(line) > _FIRST_LINE else line) or None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
