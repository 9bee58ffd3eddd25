"""Bilibili's bangumi episodes (番剧, films, series: ``/bangumi/play/ep<id>``) and course episodes
(课程: ``/cheese/play/ep<id>``), where they are free to watch; a season (``/bangumi/play/ss<id>``,
``/cheese/play/ss<id>``) is a listing of its episodes.

What the code reads, and how sure that is (none of it captured by trawl):

- Bangumi, documented with example answers in bilibili-API-collect (``docs/bangumi/info.md``,
  ``docs/bangumi/videostream_url.md``): ``GET {api}/pgc/view/web/season?ep_id=|season_id=`` ->
  ``{"code": 0, "result": {"season_id", "title", "up_info"?, "episodes": [{"id" (the ep id), "aid",
  "bvid", "cid", "title", "long_title", "badge" (会员, 限免, 付费...), "cover", "pub_time",
  "duration" (ms)}], "section": [{"episodes": [...]}]}}``; ``GET {api}/pgc/player/web/playurl?
  ep_id=&cid=&qn=&fnval=&fnver=0&fourk=1`` -> ``{"code": 0, "result": {"is_preview", "durl" | "dash",
  "timelength", ...}}`` (its ``v2`` twin nests them in ``result.video_info``: both are read).
  yt-dlp's ``BiliBiliBangumiIE`` reads code -10403 as premium only (大会员): here it is
  ``paid_only`` when the episode's badge says it is sold or kept for members, ``forbidden``
  (region) otherwise; a ``result`` that is a preview (``is_preview: 1``, 试看) marks the streams
  a preview, which fails the item as ``preview_only`` (docs/platforms.md).
- Courses (PUGV), from yt-dlp's ``BilibiliCheeseIE`` and other open-source readers:
  ``GET {api}/pugv/view/web/season?ep_id=|season_id=`` -> ``{"code": 0, "data": {"season_id",
  "title", "up_info": {"uname", "mid"}, "episodes": [{"id", "aid", "cid", "title", "index",
  "duration" (s), "release_date", "cover", "playable", "ep_status"}]}}``; an episode that is not
  ``playable`` has not been bought (``paid_only``, the play URL is not asked), ``ep_status`` -1
  is not out yet (``not_found``). ``GET {api}/pugv/player/web/playurl?avid=&cid=&ep_id=&qn=&fnval=
  &fnver=0&fourk=1`` -> ``{"code": 0, "data": {"dash" | "durl"}}``.

Keys: ``bilibili:ep<id>`` for a bangumi episode, ``bilibili:course-ep<id>`` for a course's (the
two number their episodes apart).
"""

from __future__ import annotations

import re
import time
import urllib.parse
from typing import TYPE_CHECKING, Any

from trawl.errors import Forbidden, NotFound, PaidOnly, ParseError, TrawlError, UnsupportedUrl, int_field, text_field
from trawl.listing_filters import PageEntry, as_walk
from trawl.models import Asset, Resolved, compact, upload_date
from trawl.platforms.base import (
    ResolveContext,
    Resolver,
    base_pattern,
    dig,
    float_or_none,
    get_json,
    int_or_none,
    str_or_none,
)
from trawl.platforms.bilibili.config import BilibiliSettings
from trawl.platforms.bilibili.errors import ANSWERS, classify_code
from trawl.platforms.bilibili.visitor import api_json

if TYPE_CHECKING:
    from collections.abc import Callable

    from trawl.platforms.bilibili.resolver import BilibiliResolver

# What an episode's badge says when it is sold or kept for paying members.
PAID_BADGES = ("会员", "付费", "超前", "独家")  # 会员/大会员 (members), 付费 (sold), 超前点播 (paid early viewing)
PREMIUM_ONLY = -10403  # the play URL's "premium only" (大会员) answer, or a region lock
NO_ACCESS = (-403, -10403)  # a course's play URL for an episode not bought
FNVAL = 16 | 64 | 128 | 256 | 512 | 1024 | 2048  # DASH and everything it may carry, as for videos
REAL_PAGE = "https://www.bilibili.com"
KEY_PREFIX = {"bangumi": "bilibili:ep", "cheese": "bilibili:course-ep"}  # by the URL's kind of episode


class BilibiliEpisodeResolver(Resolver):
    """A bangumi or course episode: its video and audio, as a video's (``dash`` or ``durl``)."""

    name = "bilibili:episode"
    platform = "bilibili"
    answers = ANSWERS

    def __init__(self, config: BilibiliSettings, video: BilibiliResolver) -> None:
        self.config = config
        self.video = video  # the streams are read as a video's, with its visitor session
        page = base_pattern(r"(?:www\.|m\.)?bilibili\.com", config.page_base, config.mobile_base)
        self.url_patterns = (  # type: ignore[misc]
            re.compile(rf"{page}/(?P<kind>bangumi|cheese)/play/ep(?P<id>\d{{1,12}})/?(?:[?#].*)?$"),
        )

    def offline_key(self, url: str) -> str | None:
        found = self.match(url)
        return f"{KEY_PREFIX[found['kind']]}{int(found['id'])}" if found else None

    def resolve(self, url: str, ctx: ResolveContext) -> Resolved:
        found = self.match(url)
        if found is None:
            raise UnsupportedUrl(f"{url}: not a Bilibili bangumi or course episode URL")
        ep = int(found["id"])
        if found["kind"] == "cheese":
            return self._course(url, ep, ctx)
        return self._bangumi(url, ep, ctx)

    # -- bangumi -----------------------------------------------------------------------------
    def _bangumi(self, url: str, ep: int, ctx: ResolveContext) -> Resolved:
        api = self.config.api_base.rstrip("/")
        headers = self.video.headers()
        doc = api_json(self.video, ctx, lambda: f"{api}/pgc/view/web/season?ep_id={ep}", headers, item_url=url)
        season = doc.get("result") if isinstance(doc.get("result"), dict) else {}
        episode = _episode(season, ep, ("episodes",), ("section", "episodes"))
        if episode is None:
            raise NotFound(f"bilibili: {url}: the season answer lists no episode {ep}")
        cid = int_or_none(episode.get("cid"))
        if not cid:
            raise ParseError(f"bilibili: {url}: episode {ep} has no cid")
        qn = self.video.quality(ctx)
        query = {"ep_id": ep, "cid": cid, "qn": qn, "fnval": FNVAL, "fnver": 0, "fourk": 1}
        play = self._play(f"{api}/pgc/player/web/playurl?{urllib.parse.urlencode(query)}", url, ctx)
        code = int_field(play.get("code"))
        paid = _paid_badge(episode)
        if code == PREMIUM_ONLY:
            said = text_field(play.get("message"))
            if paid:
                raise PaidOnly(f"bilibili: {url}: episode {ep} is {paid} (code {code}"
                               f"{f' {said!r}' if said else ''}): {_ACCOUNT}")
            raise Forbidden(f"bilibili: code {code}{f' {said!r}' if said else ''} for {url}: not watchable from "
                            "here (a region lock)")
        _raise_code(play, url)
        result = play.get("result") if isinstance(play.get("result"), dict) else {}
        result = result.get("video_info") if isinstance(result.get("video_info"), dict) else result
        if paid and not (isinstance(result.get("dash"), dict) or result.get("durl")):
            raise PaidOnly(f"bilibili: {url}: episode {ep} is {paid}: the play URL gives no stream; {_ACCOUNT}")
        reason = (f"{paid or 'a member-only'} episode: the play URL gives a preview (试看) only; {_ACCOUNT}")
        assets = self.video.play_streams(url, result, ctx, qn, reason, where="result")
        duration = (float_or_none(episode.get("duration")) or float_or_none(result.get("timelength")) or 0) / 1000
        title = " ".join(t for t in (str_or_none(season.get("title")), str_or_none(episode.get("title")),
                                     str_or_none(episode.get("long_title"))) if t) or f"ep{ep}"
        published = int_or_none(episode.get("pub_time"))
        key = f"bilibili:ep{ep}"
        canonical = f"{REAL_PAGE}/bangumi/play/ep{ep}"
        return self._item(key, canonical, title, str_or_none(dig(season, "up_info", "uname")), duration or None,
                          published, assets, str_or_none(episode.get("cover")), compact({
                              "episode_id": ep, "season_id": int_or_none(season.get("season_id")),
                              "series": str_or_none(dig(season, "series", "series_title")) or
                              str_or_none(season.get("title")),
                              "episode": str_or_none(episode.get("long_title")),
                              "episode_number": int_or_none(episode.get("title")),
                              "aid": int_or_none(episode.get("aid")), "bvid": str_or_none(episode.get("bvid")),
                              "cid": cid, "badge": str_or_none(episode.get("badge")),
                              "description": str_or_none(season.get("evaluate")),
                          }))

    # -- courses -----------------------------------------------------------------------------
    def _course(self, url: str, ep: int, ctx: ResolveContext) -> Resolved:
        api = self.config.api_base.rstrip("/")
        headers = self.video.headers()
        doc = api_json(self.video, ctx, lambda: f"{api}/pugv/view/web/season?ep_id={ep}", headers, item_url=url)
        season = doc.get("data") if isinstance(doc.get("data"), dict) else {}
        episode = _episode(season, ep, ("episodes",))
        if episode is None:
            raise NotFound(f"bilibili: {url}: the course answer lists no episode {ep}")
        if int_or_none(episode.get("ep_status")) == -1:
            raise NotFound(f"bilibili: {url}: course episode {ep} is not out yet")
        course = str_or_none(season.get("title")) or f"course {season.get('season_id')}"
        if episode.get("playable") is False or episode.get("playable") == 0:
            raise PaidOnly(f"bilibili: {url}: episode {ep} of the course {course!r} is sold with the course, "
                           f"not bought; {_ACCOUNT}")
        aid, cid = int_or_none(episode.get("aid")), int_or_none(episode.get("cid"))
        if not aid or not cid:
            raise ParseError(f"bilibili: {url}: course episode {ep} has no aid or cid")
        qn = self.video.quality(ctx)
        query = {"avid": aid, "cid": cid, "ep_id": ep, "qn": qn, "fnval": FNVAL, "fnver": 0, "fourk": 1}
        play = self._play(f"{api}/pugv/player/web/playurl?{urllib.parse.urlencode(query)}", url, ctx)
        code = int_field(play.get("code"))
        if code in NO_ACCESS:
            said = text_field(play.get("message"))
            raise PaidOnly(f"bilibili: {url}: code {code}{f' {said!r}' if said else ''}: episode {ep} of the course "
                           f"{course!r} is sold with the course; {_ACCOUNT}")
        _raise_code(play, url)
        data = play.get("data") if isinstance(play.get("data"), dict) else {}
        reason = f"course episode sold with the course {course!r}: a preview (试看) only; {_ACCOUNT}"
        assets = self.video.play_streams(url, data, ctx, qn, reason)
        title = " - ".join(t for t in (str(episode.get("index") or "").strip(), str_or_none(episode.get("title")))
                           if t) or f"ep{ep}"
        key = f"bilibili:course-ep{ep}"
        canonical = f"{REAL_PAGE}/cheese/play/ep{ep}"
        return self._item(key, canonical, f"{course}: {title}", str_or_none(dig(season, "up_info", "uname")),
                          float_or_none(episode.get("duration")), int_or_none(episode.get("release_date")),
                          assets, str_or_none(episode.get("cover")), compact({
                              "episode_id": ep, "season_id": int_or_none(season.get("season_id")),
                              "series": course, "episode": str_or_none(episode.get("title")),
                              "episode_number": int_or_none(episode.get("index")), "aid": aid, "cid": cid,
                              "uploader_id": str(int_or_none(dig(season, "up_info", "mid")) or "") or None,
                              "description": str_or_none(season.get("subtitle")),
                          }))

    # -- shared ------------------------------------------------------------------------------
    def _play(self, api: str, url: str, ctx: ResolveContext) -> dict[str, Any]:
        """The play URL answer, its code read by the caller (-10403 says more than the table)."""
        session = self.video.visitor
        return get_json(self.video, api, ctx, session.headers(self.video, ctx, self.video.headers()),
                        platform_codes=False, item_url=url)

    def _item(self, key: str, canonical: str, title: str, uploader: str | None, duration: float | None,
              published: int | None, assets: list[Asset], cover: str | None, extra: dict[str, Any]) -> Resolved:
        cover = _https(cover)
        merge = "dash" if len(assets) == 2 and assets[1].kind == "audio" else None
        if cover and self.config.thumbnails:
            assets.append(Asset(name="thumbnail", kind="thumbnail", urls=[cover],
                                headers={"Referer": self.config.referer, "User-Agent": self.config.user_agent}))
        metadata = compact({
            "id": key.split(":", 1)[1], "title": title, "uploader": uploader, "duration": duration,
            "timestamp": published, "upload_date": upload_date(published), "thumbnail": cover,
            "webpage_url": canonical, "merge": merge, **extra,
        })
        return Resolved(canonical_key=key, canonical_url=canonical, platform=self.platform, assets=assets,
                        title=title, uploader=uploader, duration=duration,
                        published_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(published)) if published else None,
                        metadata=metadata)


_ACCOUNT = "give the cookies of an account that has it in platforms.bilibili.cookies_file"


def _episode(season: dict[str, Any], ep: int, *paths: tuple[str, ...]) -> dict[str, Any] | None:
    """The episode ``ep`` among the season's lists (``episodes``, ``section[].episodes``)."""
    for path in paths:
        groups = [season.get(path[0])] if len(path) == 1 else [dig(s, path[1]) for s in _list(season.get(path[0]))]
        for group in groups:
            for episode in _list(group):
                if isinstance(episode, dict) and int_or_none(episode.get("id") or episode.get("ep_id")) == ep:
                    return episode
    return None


def _paid_badge(episode: dict[str, Any]) -> str:
    """What the episode's badge says it is when it is sold or kept for members ("" when free)."""
    badge = str_or_none(episode.get("badge")) or str_or_none(dig(episode, "badge_info", "text")) or ""
    if any(word in badge for word in PAID_BADGES):
        return f"marked {badge!r} (paid or member-only)"
    return ""


def _raise_code(answer: dict[str, Any], url: str) -> None:
    code = int_field(answer.get("code"))
    if code is None:
        raise ParseError(f"bilibili: {url}: play URL answer has no code")
    error: TrawlError | None = classify_code(code, text_field(answer.get("message")) or text_field(answer.get("msg")),
                                             f" for {url}")
    if error is not None:
        raise error


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _https(url: str | None) -> str | None:
    """A cover URL, protocol-relative ones made https; None for anything else."""
    if url and url.startswith("//"):
        url = "https:" + url
    return url if url and url.lower().startswith(("http://", "https://")) else None


# -- seasons as listings ------------------------------------------------------------------------
def season_forms(config: BilibiliSettings) -> list[tuple[str, re.Pattern[str]]]:
    """(kind, pattern with an ``id`` group) of the season pages: bangumi and courses."""
    page = base_pattern(r"(?:www\.|m\.)?bilibili\.com", config.page_base, config.mobile_base)
    end = r"/?(?:[?#].*)?$"
    return [("bilibili_season", re.compile(rf"{page}/bangumi/play/ss(?P<id>\d{{1,12}}){end}")),
            ("bilibili_course", re.compile(rf"{page}/cheese/play/ss(?P<id>\d{{1,12}}){end}"))]


def _season_listing(kind: str, path: str, body: str, page: str) -> Callable[..., list[str]]:
    def listing(resolver: Resolver, ctx: ResolveContext, season_id: str, max_pages: int, enough: Any) -> list[str]:
        """A season's episodes in their order (one answer lists them all)."""
        bili: BilibiliResolver = resolver  # type: ignore[assignment]
        if not season_id.strip().isdigit():
            raise UnsupportedUrl(f"{kind} id {season_id!r}: give the season id (the digits after ss)")
        api = bili.config.api_base.rstrip("/")
        doc = api_json(bili, ctx, lambda: f"{api}{path}?season_id={season_id.strip()}", bili.headers())
        season = doc.get(body) if isinstance(doc.get(body), dict) else {}
        base = bili.config.page_base.rstrip("/")
        entries = [PageEntry(f"{base}/{page}/play/ep{n}", title=str_or_none(e.get("long_title") or e.get("title")))
                   for e in _list(season.get("episodes")) if isinstance(e, dict)
                   for n in [int_or_none(e.get("id") or e.get("ep_id"))] if n]
        return list(dict.fromkeys(as_walk(enough).page(entries, known_stops=False)))
    return listing


SEASON_LISTINGS = {
    "bilibili_season": _season_listing("bilibili_season", "/pgc/view/web/season", "result", "bangumi"),
    "bilibili_course": _season_listing("bilibili_course", "/pugv/view/web/season", "data", "cheese"),
}
