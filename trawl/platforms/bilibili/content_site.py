"""The simulated Bilibili's bangumi and course episodes, dynamics and audio, at the real paths.

The shapes are the documented ones (:mod:`.pgc`, :mod:`.opus`, :mod:`.audio` name their
sources); the streams are the captured ``playurl`` answers (``bilibili_playurl_dash_1.json``,
``bilibili_playurl_durl_1.json``) moved where these APIs put them (``result`` for bangumi,
``data`` for courses); ids, titles and texts are synthetic.

- Bangumi season :data:`SEASON` (``pgc/view/web/season``, ``pgc/player/web/playurl``): episode
  :data:`FREE_EP` free (DASH), :data:`MEMBER_EP` badge 会员 answering -10403 "大会员专享限制",
  :data:`PREVIEW_EP` badge 付费 answering a 试看 preview (``is_preview: 1``, one ``durl``),
  :data:`REGION_EP` free but -10403 "抱歉您所在地区不可观看！" (a region lock).
- Course :data:`COURSE` (``pugv/view/web/season``, ``pugv/player/web/playurl``): episode
  :data:`COURSE_FREE_EP` playable (a free trial episode, ``durl``), :data:`COURSE_PAID_EP` not
  playable (not bought), :data:`COURSE_LATER_EP` not out yet (``ep_status: -1``).
- Dynamics (``x/polymer/web-dynamic/v1/detail``): :data:`DRAW_DYNAMIC` two pictures
  (``MAJOR_TYPE_DRAW``, an ``@`` size suffix on one), :data:`OPUS_DYNAMIC` three pictures
  (``MAJOR_TYPE_OPUS`` with a title), :data:`VIDEO_DYNAMIC` the captured video BV117411r7R1
  (``MAJOR_TYPE_ARCHIVE``), :data:`REPOST_DYNAMIC` a repost of the draw dynamic,
  :data:`TEXT_DYNAMIC` text alone, :data:`ARTICLE_DYNAMIC` an article; an unknown id answers
  code 4101131 "动态不存在" (modelled).
- Audio (``/audio/music-service-c/web/...``): song :data:`SONG` (an M4A), :data:`GONE_SONG` with
  ``data: null``, and the list :data:`AUDIO_LIST` holding both.

With ``rewrite_media`` the pictures, covers, song and streams are signed media on the simulator
(Referer required), as the videos' are.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import TYPE_CHECKING, Any

from trawl.simulator.media import MediaFile
from trawl.simulator.references import reference_json
from trawl.simulator.server import Request, Response

if TYPE_CHECKING:
    from trawl.platforms.bilibili.site import BilibiliSite

SEASON, FREE_EP, MEMBER_EP, PREVIEW_EP, REGION_EP = 46120, 733301, 733302, 733303, 733304
COURSE, COURSE_FREE_EP, COURSE_PAID_EP, COURSE_LATER_EP = 5918, 229832, 229833, 229834
DRAW_DYNAMIC, OPUS_DYNAMIC, VIDEO_DYNAMIC = "1001000000000000001", "1001000000000000002", "1001000000000000003"
REPOST_DYNAMIC, TEXT_DYNAMIC, ARTICLE_DYNAMIC = "1001000000000000004", "1001000000000000005", "1001000000000000006"
SONG, GONE_SONG, AUDIO_LIST = 1234567, 1234568, 10624
AUTHOR = {"mid": 20261205, "name": "图文UP主", "pub_ts": 1733356800, "pub_time": "2024-12-05 08:00"}


class ContentSite:
    """The answers, built once (:func:`install_content`); ``answers[path]`` by id."""

    def __init__(self, site: BilibiliSite) -> None:
        self.site = site
        self.dash = reference_json("bilibili_playurl_dash_1.json")["data"]
        self.durl = reference_json("bilibili_playurl_durl_1.json")["data"]
        self.pictures: dict[str, str] = {}  # the real-looking URL -> the URL served (signed when rewritten)

    # -- media -------------------------------------------------------------------------------
    def _media(self, url: str, fmt: str, size: int) -> str:
        """``url`` as served: itself, or a signed simulator file of ``fmt`` when media is rewritten."""
        if not self.site.rewrite_media or self.site.media is None:
            return url
        name = f"content/{hashlib.sha1(url.encode()).hexdigest()[:16]}.{fmt}"
        self.site.media.add(name, MediaFile(fmt, url, size))
        return self.site.media.url(name)

    def _streams(self, answer: dict[str, Any], stem: str) -> dict[str, Any]:
        if self.site.rewrite_media:
            self.site._rewrite({"data": answer}, stem)  # noqa: SLF001 - the site's own stream rewriting
        return answer

    # -- bangumi -----------------------------------------------------------------------------
    def season(self) -> dict[str, Any]:
        def episode(ep: int, number: int, title: str, badge: str) -> dict[str, Any]:
            return {"aid": 113000 + number, "bvid": "", "cid": 260000 + number, "id": ep, "ep_id": ep,
                    "title": str(number), "long_title": title, "badge": badge,
                    "badge_info": {"text": badge, "bg_color": "#FB7299"}, "status": 13 if badge else 2,
                    "cover": self._media(f"https://i0.hdslb.com/bfs/archive/ep{ep}.jpg", "jpeg", 30_000 + number),
                    "pub_time": 1733000000 + 604800 * number, "duration": 1420791,
                    "link": f"https://www.bilibili.com/bangumi/play/ep{ep}"}
        return {"code": 0, "message": "success", "ttl": 1, "result": {
            "season_id": SEASON, "title": "模拟番剧", "season_title": "第一季", "evaluate": "一部模拟的番剧。",
            "up_info": {"mid": 928123, "uname": "模拟番剧出品"},
            "series": {"series_id": 4358, "series_title": "模拟番剧"},
            "episodes": [episode(FREE_EP, 1, "免费的一集", ""), episode(MEMBER_EP, 2, "会员的一集", "会员"),
                         episode(PREVIEW_EP, 3, "付费的一集", "付费"), episode(REGION_EP, 4, "看不到的一集", "")],
            "section": [], "payment": {"price": "0.0"}, "rights": {"area_limit": 0}}}

    def bangumi_play(self, ep: int) -> dict[str, Any]:
        if ep == MEMBER_EP:
            return {"code": -10403, "message": "大会员专享限制"}
        if ep == REGION_EP:
            return {"code": -10403, "message": "抱歉您所在地区不可观看！"}
        if ep == PREVIEW_EP:
            result = {**copy.deepcopy(self.durl), "is_preview": 1, "has_paid": False, "status": 13}
            return {"code": 0, "message": "success", "result": self._streams(result, f"ep{ep}")}
        if ep == FREE_EP:
            result = {**copy.deepcopy(self.dash), "is_preview": 0, "has_paid": False, "status": 2}
            return {"code": 0, "message": "success", "result": self._streams(result, f"ep{ep}")}
        return {"code": -404, "message": "啥都木有"}

    # -- courses -----------------------------------------------------------------------------
    def course(self) -> dict[str, Any]:
        def episode(ep: int, index: int, title: str, playable: bool, status: int) -> dict[str, Any]:
            return {"id": ep, "aid": 720000 + index, "cid": 1280000 + index, "index": index, "title": title,
                    "subtitle": "视频课 · 3分41秒", "duration": 221, "release_date": 1695549606 + 86400 * index,
                    "cover": self._media(f"https://archive.biliimg.com/bfs/archive/course{ep}.jpg", "jpeg", 20_000),
                    "playable": playable, "ep_status": status, "status": 1 if playable else 2, "play": 4200}
        return {"code": 0, "message": "success", "data": {
            "season_id": COURSE, "title": "模拟课程", "subtitle": "一门模拟的课程",
            "up_info": {"mid": 316568752, "uname": "课程UP主"},
            "episodes": [episode(COURSE_FREE_EP, 1, "课程先导片", True, 1),
                         episode(COURSE_PAID_EP, 2, "第一课", False, 1),
                         episode(COURSE_LATER_EP, 3, "第二课", False, -1)],
            "user_status": {"payed": 0}}}

    def course_play(self, ep: int) -> dict[str, Any]:
        if ep == COURSE_FREE_EP:
            return {"code": 0, "message": "0", "data": self._streams(copy.deepcopy(self.durl), f"course-{ep}")}
        return {"code": -403, "message": "访问权限不足"}

    # -- dynamics ----------------------------------------------------------------------------
    def dynamic(self, ident: str) -> dict[str, Any]:
        def item(id_str: str, kind: str, text: str, major: dict[str, Any] | None, **more: Any) -> dict[str, Any]:
            modules = {"module_author": AUTHOR, "module_dynamic": {"desc": {"text": text, "rich_text_nodes": []},
                                                                   "major": major},
                       "module_stat": {"like": {"count": 42}, "comment": {"count": 7}, "forward": {"count": 3}}}
            return {"id_str": id_str, "type": kind, "visible": True, "modules": modules, **more}

        def pic(n: int, suffix: str = "") -> str:
            """A picture; ``suffix`` (a smaller copy's ``@<size>``) only on the real-looking URLs."""
            url = self._media(f"https://i0.hdslb.com/bfs/new_dyn/{ident}_{n}.jpg", "jpeg", 50_000 + n)
            return url if self.site.rewrite_media else url + suffix

        draw = item(DRAW_DYNAMIC, "DYNAMIC_TYPE_DRAW", "两张照片\n第二行", {"type": "MAJOR_TYPE_DRAW", "draw": {
            "id": 2026, "items": [{"src": pic(1), "width": 1080, "height": 1440, "size": 310.5},
                                  {"src": pic(2, "@1052w_!web-dynamic.webp"), "width": 1080, "height": 1440}]}})
        found = {
            DRAW_DYNAMIC: draw,
            OPUS_DYNAMIC: item(OPUS_DYNAMIC, "DYNAMIC_TYPE_DRAW", "", {"type": "MAJOR_TYPE_OPUS", "opus": {
                "title": "三张图的图文", "summary": {"text": "图文的正文", "rich_text_nodes": []},
                "pics": [{"url": pic(n), "width": 800, "height": 600, "size": 120.0} for n in (1, 2, 3)],
                "jump_url": f"//www.bilibili.com/opus/{OPUS_DYNAMIC}"}}),
            VIDEO_DYNAMIC: item(VIDEO_DYNAMIC, "DYNAMIC_TYPE_AV", "投稿了视频", {"type": "MAJOR_TYPE_ARCHIVE", "archive": {
                "aid": "85440373", "bvid": "BV117411r7R1", "title": "视频", "jump_url": "//www.bilibili.com/video/BV117411r7R1/"}}),
            REPOST_DYNAMIC: item(REPOST_DYNAMIC, "DYNAMIC_TYPE_FORWARD", "转发一下", None, orig=draw),
            TEXT_DYNAMIC: item(TEXT_DYNAMIC, "DYNAMIC_TYPE_WORD", "只有文字", None),
            ARTICLE_DYNAMIC: item(ARTICLE_DYNAMIC, "DYNAMIC_TYPE_ARTICLE", "", {"type": "MAJOR_TYPE_ARTICLE", "article": {
                "id": 39170010, "title": "一篇专栏", "covers": [pic(1)]}}),
        }.get(ident)
        if found is None:
            return {"code": 4101131, "message": "动态不存在", "ttl": 1, "data": None}
        return {"code": 0, "message": "0", "ttl": 1, "data": {"item": found}}

    # -- audio -------------------------------------------------------------------------------
    def song(self, sid: int) -> dict[str, Any]:
        if sid != SONG:
            return {"code": 0, "msg": "success", "data": None}
        return {"code": 0, "msg": "success", "data": {
            "id": SONG, "uid": 928123, "uname": "唱歌的UP主", "title": "模拟的歌", "intro": "一首模拟的歌",
            "cover": self._media(f"http://i0.hdslb.com/bfs/music/au{SONG}.jpg", "jpeg", 25_000),
            "duration": 183, "passtime": 1733356800, "lyric": "",
            "statistic": {"sid": SONG, "play": 1234, "collect": 5, "comment": 6, "share": 1}}}

    def song_url(self, sid: int) -> dict[str, Any]:
        if sid != SONG:
            return {"code": 0, "msg": "success", "data": None}
        real = f"https://upos-sz-mirrorkodo.bilivideo.com/ugaxcode/m{SONG}.m4a"
        return {"code": 0, "msg": "success", "data": {
            "sid": SONG, "type": 1, "size": 220_000, "timeout": 10800,
            "cdns": [self._media(real, "m4a", 220_000), self._media(real + "?backup=1", "m4a", 220_000)]}}

    def audio_list(self, list_id: int, page: int) -> dict[str, Any]:
        songs = [{"id": SONG, "title": "模拟的歌", "passtime": 1733356800, "duration": 183},
                 {"id": GONE_SONG, "title": "不在了的歌", "passtime": 1733270400, "duration": 95}]
        if list_id != AUDIO_LIST:
            return {"code": 72000000, "msg": "歌单不存在", "data": None}
        shown = songs if page == 1 else []
        return {"code": 0, "msg": "success", "data": {"curPage": page, "pageCount": 1, "totalSize": len(songs),
                                                      "pageSize": 100, "data": shown}}


def install_content(site: BilibiliSite) -> ContentSite:
    content = ContentSite(site)
    season, course = content.season(), content.course()  # built once: their media stay the same

    def number(req: Request, name: str) -> int:
        value = req.arg(name) or ""
        return int(value) if value.isdigit() else 0

    def json_answer(doc: dict[str, Any]) -> Response:
        body = json.dumps(doc, ensure_ascii=False).encode()
        return Response(200, {"Content-Type": "application/json; charset=utf-8"}, body)

    def pgc_season(req: Request) -> Response:
        ep, ss = number(req, "ep_id"), number(req, "season_id")
        known = ss == SEASON or any(e["id"] == ep for e in season["result"]["episodes"])
        return json_answer(season if known else {"code": -404, "message": "啥都木有"})

    def pugv_season(req: Request) -> Response:
        ep, ss = number(req, "ep_id"), number(req, "season_id")
        known = ss == COURSE or any(e["id"] == ep for e in course["data"]["episodes"])
        return json_answer(course if known else {"code": -404, "message": "啥都木有"})

    routes = {
        "/pgc/view/web/season": pgc_season,
        "/pgc/player/web/playurl": lambda req: json_answer(content.bangumi_play(number(req, "ep_id"))),
        "/pugv/view/web/season": pugv_season,
        "/pugv/player/web/playurl": lambda req: json_answer(content.course_play(number(req, "ep_id"))),
        "/x/polymer/web-dynamic/v1/detail": lambda req: json_answer(content.dynamic(req.arg("id") or "")),
        "/audio/music-service-c/web/song/info": lambda req: json_answer(content.song(number(req, "sid"))),
        "/audio/music-service-c/web/url": lambda req: json_answer(content.song_url(number(req, "sid"))),
        "/audio/music-service-c/web/song/of-menu":
            lambda req: json_answer(content.audio_list(number(req, "sid"), number(req, "pn") or 1)),
    }
    for path, handler in routes.items():
        site.sim.add_exact(path, handler)
    return content
