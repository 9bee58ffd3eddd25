"""The simulated site's listings and its Hi-Res video: the list APIs at their real paths, with the
real answer shapes, and the videos they list.

Answer shapes (no listing answer was captured; each is the real example response pasted in
bilibili-API-collect at commit 7ffb221, cited ``BAC@<path>``, with its values replaced):

- uploads, ``x/space/wbi/arc/search`` (WBI-checked): ``data.list.vlist[]`` entries and
  ``data.page{pn, ps, count}`` of BAC@docs/user/space.md (:data:`VLIST_ENTRY`); ``meta`` is null
  and ``season_id`` 0 for a video in no collection, as its field table says.
- collections, ``x/polymer/web-space/seasons_archives_list``: ``data{aids, archives[], meta,
  page{page_num, page_size, total}}`` of BAC@docs/video/collection.md (:data:`SEASON_ARCHIVE`);
  the collection's own order (oldest first, as the example with ``sort_reverse=false``),
  reversed for ``sort_reverse=true``.
- series, ``x/series/archives``: ``data{aids, page{num, size, total}, archives[]}`` of
  BAC@docs/video/collection.md (:data:`SERIES_ARCHIVE`), newest first (``sort=desc``, the
  default; ``asc`` reverses).
- favourites, ``x/v3/fav/resource/list``: ``data{info, medias[], has_more, ttl}`` of
  BAC@docs/fav/list.md (:data:`FAV_INFO`, :data:`FAV_MEDIA`), the most recently favourited first,
  ``ps`` at most 20 (more is -400, BAC: "定义域：1-20"); a private folder answers ``-403``
  "访问权限不足" (BAC's code table: the envelope is the captured error envelope).
- a video's collection, ``view``'s ``data.ugc_season`` (BAC@docs/video/info.md's example,
  :data:`UGC_SEASON`), on every video of :data:`COLLECTION_ID`.

Invented: the -404 answer of an unknown collection, series or folder (the envelope of
``bilibili_error_-412.json`` with the code the view API uses); the ids and titles.

The Hi-Res video :data:`HIRES_VIDEO` is the captured DASH answer (``bilibili_playurl_dash_1.json``)
with the streams an account with premium gets besides: ``dash.dolby{type: 2, audio: [E-AC-3
30250]}`` and ``dash.flac{display, audio: {FLAC 30251}}`` (nesting from BAC's field tables for
docs/video/videostream_url.md and the "measured with an annual premium account" fixture quoted in
the listing research), video streams of 4K (120: AVC and HEVC), HDR (125: HEVC alone, as the
captured ``support_formats`` offers it) and Dolby Vision (126; its ``codecs`` string is invented).
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterable
from typing import Any

from trawl.platforms.bilibili.resolver import av_to_bv
from trawl.simulator.server import Request

LIST_MID = "1958703906"  # the uploader of every listed video (yt-dlp's series test uploader)
POOL = 40  # videos 1..40 of LIST_MID, video N published N days after the first
COLLECTION_ID = "1227671"  # videos 1..32: the newest page (of 30) holds 32 and 31
HIDDEN_COLLECTION_ID = "2046621"  # videos 33..35, shown in the uploads as one entry (meta.attribute 156)
SERIES_ID = "547718"  # videos 5..40: 36, two pages of 30
FAVORITES_ID = "1103407912"  # videos 1..23, plus one deleted video and one audio: 25 entries, 2 pages of 20
PRIVATE_FAVORITES_ID = "1103407999"  # answers -403
HIRES_VIDEO = av_to_bv(30000100)  # DASH with dash.flac, dash.dolby, 4K, HDR and Dolby Vision
HIRES_MID = 20261300
COLLECTION = range(1, 33)
HIDDEN = range(33, 36)
SERIES = range(5, 41)
FAVORITES = range(1, 24)
FIRST_PUBDATE = 1700000000
DAY = 86400


def pool_bvid(n: int) -> str:
    """The bvid of listed video ``n`` (1..POOL; higher is newer)."""
    return av_to_bv(30000000 + n)


def expected_urls(page_base: str, numbers: Iterable[int]) -> list[str]:
    """The video URLs of pool videos ``numbers``, as a listing gives them."""
    return [f"{page_base.rstrip('/')}/video/{pool_bvid(n)}" for n in numbers]


# BAC@docs/user/space.md, the arc/search example's vlist entry.
VLIST_ENTRY: dict[str, Any] = {
    "comment": 985, "typeid": 250, "play": 224185,
    "pic": "http://i0.hdslb.com/bfs/archive/5e56c10a9bd67f2fcac46fdd0fc2caa8769700c8.jpg", "subtitle": "",
    "description": "", "copyright": "1", "title": "", "review": 0, "author": "", "mid": 0, "created": 0,
    "length": "22:11", "video_review": 2365, "aid": 0, "bvid": "", "hide_click": False, "is_pay": 0,
    "is_union_video": 1, "is_steins_gate": 0, "is_live_playback": 0, "is_lesson_video": 0,
    "is_lesson_finished": 0, "lesson_update_info": "", "jump_url": "", "meta": None, "is_avoided": 0,
    "season_id": 0, "attribute": 16793984, "is_charging_arc": False, "elec_arc_type": 0, "vt": 0,
    "enable_vt": 0, "vt_display": "", "playback_position": 0, "is_self_view": False,
}
# BAC@docs/user/space.md, the same entry's ``meta`` (its collection).
VLIST_META: dict[str, Any] = {
    "id": 0, "title": "", "cover": "https://archive.biliimg.com/bfs/archive/e2ca3e5a6672cf35c9e61ac02e8d739cc0aafa8b.jpg",
    "mid": 0, "intro": "", "sign_state": 0, "attribute": 140,
    "stat": {"season_id": 0, "view": 31755096, "danmaku": 171253, "reply": 33685, "favorite": 409505,
             "coin": 935105, "share": 199467, "like": 1791607, "mtime": 1745309513, "vt": 0, "vv": 0},
    "ep_count": 0, "first_aid": 0, "ptime": 0, "ep_num": 0,
}
# BAC@docs/video/collection.md, seasons_archives_list's archive entry and meta.
SEASON_ARCHIVE: dict[str, Any] = {
    "aid": 0, "bvid": "", "ctime": 0, "duration": 261, "interactive_video": False,
    "pic": "http://i2.hdslb.com/bfs/archive/234e6bd061176dba9e148f4373c52fa7cd2d801f.jpg", "pubdate": 0,
    "stat": {"view": 12145}, "state": 0, "title": "", "ugc_pay": 0,
}
SEASON_META: dict[str, Any] = {
    "category": 0, "cover": "https://archive.biliimg.com/bfs/archive/5e1c1f77c3065ec31eec43d7e35f7a061602e4d6.jpg",
    "description": "", "mid": 0, "name": "", "ptime": 0, "season_id": 0, "total": 0,
}
# BAC@docs/video/collection.md, x/series/archives' archive entry.
SERIES_ARCHIVE: dict[str, Any] = {
    "aid": 0, "title": "", "pubdate": 0, "ctime": 0, "state": 0,
    "pic": "http://i1.hdslb.com/bfs/archive/187c0ba21b9ceba908a8760e83d49f466316824b.jpg", "duration": 275,
    "stat": {"view": 26555}, "bvid": "", "ugc_pay": 0, "interactive_video": False, "enable_vt": 0,
    "vt_display": "", "playback_position": 0,
}
# BAC@docs/fav/list.md, the folder's info and a media entry.
FAV_INFO: dict[str, Any] = {
    "id": 0, "fid": 0, "mid": 0, "attr": 54, "title": "",
    "cover": "http://i2.hdslb.com/bfs/archive/bb51ee8a5fc5e03996138155f0f682d30ee16484.jpg",
    "upper": {"mid": 0, "name": "", "face": "http://i0.hdslb.com/bfs/face/7efb679569b2faeff38fa08f6f992fa1ada5e948.webp",
              "followed": False, "vip_type": 2, "vip_statue": 1},
    "cover_type": 2, "cnt_info": {"collect": 3393, "play": 184768, "thumb_up": 3916, "share": 44},
    "type": 11, "intro": "", "ctime": 1598884758, "mtime": 1598884758, "state": 0, "fav_state": 0,
    "like_state": 0, "media_count": 0,
}
FAV_MEDIA: dict[str, Any] = {
    "id": 0, "type": 2, "title": "", "cover": "http://i2.hdslb.com/bfs/archive/bb51ee8a5fc5e03996138155f0f682d30ee16484.jpg",
    "intro": "", "page": 1, "duration": 546,
    "upper": {"mid": 0, "name": "", "face": "http://i0.hdslb.com/bfs/face/7efb679569b2faeff38fa08f6f992fa1ada5e948.webp"},
    "attr": 0, "cnt_info": {"collect": 11256, "play": 1638040, "danmaku": 7697}, "link": "",
    "ctime": 0, "pubtime": 0, "fav_time": 0, "bv_id": "", "bvid": "", "season": None,
}
# BAC@docs/video/info.md, the ``ugc_season`` example (one section; episodes as its first one).
UGC_SEASON: dict[str, Any] = {
    "id": 0, "title": "", "cover": "https://archive.biliimg.com/bfs/archive/5a853e8bd10a041360b45a462785d90a58ec469e.png",
    "mid": 0, "intro": "", "sign_state": 0, "attribute": 140,
    "sections": [{"season_id": 0, "id": 3341804, "title": "正片", "type": 1, "episodes": []}],
    "stat": {"season_id": 0, "view": 787330, "danmaku": 1298, "reply": 774, "fav": 2589, "coin": 1947,
             "share": 271, "now_rank": 0, "his_rank": 0, "like": 12320, "vt": 0, "vv": 0},
    "ep_count": 0, "season_type": 1, "is_pay_season": False, "enable_vt": 0,
}
UGC_EPISODE: dict[str, Any] = {
    "season_id": 0, "section_id": 3341804, "id": 0, "aid": 0, "cid": 0, "title": "", "attribute": 0,
    "arc": {"aid": 0, "videos": 0, "type_id": 0, "type_name": "", "copyright": 0, "pic": "", "title": "",
            "pubdate": 0, "ctime": 0, "desc": "", "state": 0, "duration": 612},
    "bvid": "",
}


def _ok(data: Any) -> dict[str, Any]:
    return {"code": 0, "message": "0", "ttl": 1, "data": data}


NOT_FOUND = {"code": -404, "message": "啥都木有", "ttl": 1}
PRIVATE = {"code": -403, "message": "访问权限不足", "ttl": 1}


def pool_videos(view: dict, durl: dict) -> list[tuple[str, dict, dict[int, dict]]]:
    """The listed videos: (bvid, view answer, cid -> playurl answer), copies of the captured
    view and durl answers; every video of :data:`COLLECTION_ID` carries its ``ugc_season``."""
    season = copy.deepcopy(UGC_SEASON)
    season.update(id=int(COLLECTION_ID), title="合集：样片日记", mid=int(LIST_MID), ep_count=len(COLLECTION))
    season["stat"]["season_id"] = int(COLLECTION_ID)
    section = season["sections"][0]
    section["season_id"] = int(COLLECTION_ID)
    for n in COLLECTION:
        episode = copy.deepcopy(UGC_EPISODE)
        episode.update(season_id=int(COLLECTION_ID), id=70000000 + n, aid=30000000 + n, cid=5000 + n,
                       title=_title(n), bvid=pool_bvid(n))
        episode["arc"].update(aid=30000000 + n, title=_title(n), pubdate=_pubdate(n), ctime=_pubdate(n))
        section["episodes"].append(episode)
    videos = []
    for n in range(1, POOL + 1):
        answer = copy.deepcopy(view)
        data = answer["data"]
        data.update(bvid=pool_bvid(n), aid=30000000 + n, cid=5000 + n, title=_title(n), pubdate=_pubdate(n),
                    ctime=_pubdate(n), videos=1)
        data["owner"] = {**data["owner"], "mid": int(LIST_MID), "name": "列表UP主"}
        data["pages"] = [{**data["pages"][0], "cid": 5000 + n, "part": _title(n)}]
        if n in COLLECTION:
            data["ugc_season"] = season
        videos.append((pool_bvid(n), answer, {5000 + n: copy.deepcopy(durl)}))
    return videos


def hires_video(view: dict, dash: dict) -> tuple[str, dict, dict[int, dict]]:
    """:data:`HIRES_VIDEO`: the captured DASH answer with lossless, Dolby, 4K, HDR and Dolby Vision."""
    answer = copy.deepcopy(view)
    answer["data"].update(bvid=HIRES_VIDEO, aid=30000100, cid=4001, title="Hi-Res 无损 + 杜比全景声")
    answer["data"]["owner"] = {**answer["data"]["owner"], "mid": HIRES_MID, "name": "无损UP主"}
    answer["data"]["pages"] = [{**answer["data"]["pages"][0], "cid": 4001}]
    play = copy.deepcopy(dash)
    data = play["data"]
    streams = data["dash"]
    avc = next(v for v in streams["video"] if v["id"] == 80 and v["codecid"] == 7)
    hevc = next(v for v in streams["video"] if v["id"] == 80 and v["codecid"] == 12)
    codecs = {f["quality"]: f["codecs"] for f in data["support_formats"]}
    added = [
        _stream(avc, 120, codecs[120][0], 3840, 1920, 6000000),
        _stream(hevc, 120, codecs[120][1], 3840, 1920, 3500000),
        _stream(hevc, 125, codecs[125][0], 3840, 1920, 4000000),
        _stream(hevc, 126, "dvh1.08.07", 3840, 1920, 4500000),  # codecs invented
    ]
    streams["video"] = added + streams["video"]
    aac = next(a for a in streams["audio"] if a["id"] == 30280)
    streams["dolby"] = {"type": 2, "audio": [_stream(aac, 30250, "ec-3", 0, 0, 448000)]}
    streams["flac"] = {"display": True, "audio": _stream(aac, 30251, "fLaC", 0, 0, 2247494)}
    data["accept_quality"] = [126, *data["accept_quality"]]
    data["accept_description"] = ["杜比视界", *data["accept_description"]]
    return HIRES_VIDEO, answer, {4001: play}


def _stream(template: dict, ident: int, codecs: str, width: int, height: int, bandwidth: int) -> dict:
    stream = copy.deepcopy(template)
    # The captured URLs name the stream file (..._nb3-1-30080.m4s, ..._f9-1-100113.m4s): a new
    # stream gets a file name of its own.
    tag = f"{ident}-{codecs.split('.')[0]}"

    def renamed(url: str) -> str:
        return re.sub(r"-(\d+)\.m4s\?", f"-{tag}.m4s?", url, count=1)

    for key in ("baseUrl", "base_url"):
        stream[key] = renamed(stream[key])
    for key in ("backupUrl", "backup_url"):
        stream[key] = [renamed(u) for u in stream.get(key) or []]
    stream.update(id=ident, codecs=codecs, bandwidth=bandwidth)
    if width:
        stream.update(width=width, height=height)
    return stream


def _title(n: int) -> str:
    return f"样片日记 第{n}期"


def _pubdate(n: int) -> int:
    return FIRST_PUBDATE + n * DAY


class ListingAnswers:
    """The list APIs over the site's videos (``videos``: bvid -> an object with ``.view``)."""

    def __init__(self, videos: dict[str, Any]) -> None:
        self.videos = videos

    def _views(self, numbers: Iterable[int]) -> list[dict]:
        return [self.videos[pool_bvid(n)].view["data"] for n in numbers if pool_bvid(n) in self.videos]

    def arc_search(self, req: Request) -> dict[str, Any]:
        """Uploads of ``mid``, newest first; a hidden-mode collection is one entry."""
        mid = req.arg("mid") or ""
        page, size = int(req.arg("pn") or 1), int(req.arg("ps") or 30)
        views = [v.view["data"] for v in self.videos.values() if str(v.view["data"]["owner"]["mid"]) == mid]
        views.sort(key=lambda d: -int(d.get("pubdate") or 0))
        hidden = {pool_bvid(n) for n in HIDDEN} if mid == LIST_MID else set()
        entries, shown = [], False
        for data in views:
            if data["bvid"] in hidden:
                if shown:
                    continue
                shown = True
                entry = self._vlist_entry(data)
                meta = copy.deepcopy(VLIST_META)
                meta.update(id=int(HIDDEN_COLLECTION_ID), title="隐藏合集", mid=int(mid), attribute=156,
                            ep_count=len(HIDDEN), ep_num=len(HIDDEN), first_aid=30000000 + HIDDEN[0],
                            ptime=data["pubdate"])
                meta["stat"]["season_id"] = int(HIDDEN_COLLECTION_ID)
                entry.update(meta=meta, season_id=int(HIDDEN_COLLECTION_ID))
            else:
                entry = self._vlist_entry(data)
            entries.append(entry)
        chunk = entries[(page - 1) * size: page * size]
        return _ok({"list": {"slist": [], "tlist": {"250": {"tid": 250, "count": len(entries), "name": "出行"}},
                             "vlist": chunk},
                    "page": {"pn": page, "ps": size, "count": len(entries)},
                    "episodic_button": {"text": "播放全部", "uri": f"//www.bilibili.com/medialist/play/{mid}?from=space"},
                    "is_risk": False, "gaia_res_type": 0, "gaia_data": None})

    @staticmethod
    def _vlist_entry(data: dict) -> dict:
        entry = copy.deepcopy(VLIST_ENTRY)
        entry.update(title=data["title"], author=data["owner"]["name"], mid=data["owner"]["mid"],
                     created=data["pubdate"], aid=data["aid"], bvid=data["bvid"], pic=data.get("pic") or entry["pic"])
        return entry

    def seasons_archives_list(self, req: Request) -> dict[str, Any]:
        season = req.arg("season_id")
        numbers = {COLLECTION_ID: COLLECTION, HIDDEN_COLLECTION_ID: HIDDEN}.get(season or "")
        if numbers is None:
            return NOT_FOUND
        page, size = int(req.arg("page_num") or 1), int(req.arg("page_size") or 30)
        views = self._views(numbers)
        if req.arg("sort_reverse") == "true":
            views.reverse()
        chunk = views[(page - 1) * size: page * size]
        archives = [{**copy.deepcopy(SEASON_ARCHIVE), "aid": d["aid"], "bvid": d["bvid"], "ctime": d["pubdate"],
                     "pubdate": d["pubdate"], "title": d["title"]} for d in chunk]
        meta = {**SEASON_META, "mid": int(LIST_MID), "name": "合集", "ptime": views[-1]["pubdate"] if views else 0,
                "season_id": int(season or 0), "total": len(views)}
        return _ok({"aids": [a["aid"] for a in archives], "archives": archives, "meta": meta,
                    "page": {"page_num": page, "page_size": size, "total": len(views)}})

    def series_archives(self, req: Request) -> dict[str, Any]:
        if req.arg("series_id") != SERIES_ID:
            return NOT_FOUND
        page, size = int(req.arg("pn") or 1), int(req.arg("ps") or 20)
        views = self._views(SERIES)[::-1]  # desc: newest first
        if req.arg("sort") == "asc":
            views.reverse()
        chunk = views[(page - 1) * size: page * size]
        archives = [{**copy.deepcopy(SERIES_ARCHIVE), "aid": d["aid"], "title": d["title"], "pubdate": d["pubdate"],
                     "ctime": d["pubdate"], "bvid": d["bvid"]} for d in chunk]
        return _ok({"aids": [a["aid"] for a in archives], "page": {"num": page, "size": size, "total": len(views)},
                    "archives": archives})

    def fav_resource_list(self, req: Request) -> dict[str, Any]:
        media_id = req.arg("media_id")
        if media_id == PRIVATE_FAVORITES_ID:
            return PRIVATE
        if media_id != FAVORITES_ID:
            return NOT_FOUND
        page, size = int(req.arg("pn") or 1), int(req.arg("ps") or 0)
        if not 1 <= size <= 20:
            return {"code": -400, "message": "请求错误", "ttl": 1}
        medias = [self._media(d) for d in self._views(FAVORITES)]
        deleted = {**copy.deepcopy(FAV_MEDIA), "id": 30000999, "title": "已失效视频", "attr": 9,
                   "bvid": av_to_bv(30000999), "bv_id": av_to_bv(30000999), "link": "bilibili://video/30000999"}
        audio = {**copy.deepcopy(FAV_MEDIA), "id": 257709, "type": 12, "title": "音频",
                 "link": "bilibili://music/257709", "bvid": "", "bv_id": ""}
        medias[10:10] = [deleted, audio]
        for index, media in enumerate(medias):  # favourited one hour apart, in list order
            media["fav_time"] = FIRST_PUBDATE + 100 * DAY + index * 3600
        medias.reverse()  # order=mtime: the latest favourited first
        chunk = medias[(page - 1) * size: page * size]
        info = copy.deepcopy(FAV_INFO)
        info.update(id=int(FAVORITES_ID), fid=int(FAVORITES_ID[:-2]), mid=int(LIST_MID), title="公开收藏夹",
                    media_count=len(medias))
        info["upper"].update(mid=int(LIST_MID), name="列表UP主")
        return _ok({"info": info, "medias": chunk, "has_more": page * size < len(medias), "ttl": 1703349018})

    @staticmethod
    def _media(data: dict) -> dict:
        media = copy.deepcopy(FAV_MEDIA)
        media.update(id=data["aid"], title=data["title"], link=f"bilibili://video/{data['aid']}",
                     ctime=data["pubdate"], pubtime=data["pubdate"], bv_id=data["bvid"], bvid=data["bvid"])
        media["upper"].update(mid=data["owner"]["mid"], name=data["owner"]["name"])
        return media


def pages(total: int, size: int) -> int:
    """How many pages of ``size`` hold ``total`` entries (for tests)."""
    return max(1, math.ceil(total / size))
