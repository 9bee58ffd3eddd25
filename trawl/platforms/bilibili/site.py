"""Bilibili at its real paths, answering with the real response shapes.

``BV117411r7R1`` is the captured ``view`` answer with the captured DASH ``playurl`` answer;
:data:`HIRES_VIDEO` the same DASH answer with lossless, Dolby, 4K, HDR and Dolby Vision streams;
the uploader :data:`LIST_MID`'s forty videos are listed by the list APIs (uploads, a collection,
a hidden-mode collection, a series, a public and a private favourites folder), each a copy of
the captured view and ``durl`` answers (:mod:`.listing_site` says where each list answer's
shape comes from);
the live rooms (``room_init``, ``getRoomPlayInfo``, signed live playlists) are :mod:`.room_site`'s;
bangumi and course episodes, dynamics and audio are :mod:`.content_site`'s;
``BV1GJ411x7h7`` is a two-part video built from the same shapes whose streams come as
``durl`` (part 2 in two segments); :data:`TEN_PARTS` is the ten-part video of the derived
``bilibili_view_10pages_derived.json`` (the captured view answer with ``pages[]`` grown to ten;
each part's ``playurl`` is the captured ``durl`` answer); ``BV17x411w7KC`` is deleted (code -404).
With ``rewrite_media`` every stream URL and the cover (``pic``) point at signed, expiring media
on the simulator that answers 403 without ``Referer: https://www.bilibili.com/``; without it the
captured answers are served verbatim. ``playurl`` and the uploader search check the WBI signature.

Error answers of ``view`` (:data:`VIEW_ERRORS`): the envelope ``{"code", "message", "ttl"}`` is
the captured one (``bilibili_error_-412.json``); the codes are not captured. 62012 "仅UP主自己可见"
(visible only to its uploader) is the answer quoted in trawl's issue 11 and listed in the public
API documentation (bilibili-API-collect, ``docs/video/info.md``); :data:`UNLISTED_CODE` is
invented, standing for any code trawl has no entry for.

Rewritten DASH audio is an ISO BMFF file with a generic brand, as real ``.m4s`` audio segments
are (they do not carry the ``M4A`` brand), so nothing but the asset's kind says it is audio.
Rewritten media is real where a clip lasts as long as its video says (:data:`DASH_CLIPS`,
:data:`DURL_CLIPS`: a player plays it, ffmpeg merges and joins it); the other videos' streams are
synthetic bytes behind a real container's first bytes.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from trawl.platforms.bilibili.config import BilibiliSettings
from trawl.platforms.bilibili.listing_site import (
    COLLECTION_ID,
    FAVORITES_ID,
    HIDDEN_COLLECTION_ID,
    HIRES_VIDEO,
    LIST_MID,
    PRIVATE_FAVORITES_ID,
    SERIES_ID,
    ListingAnswers,
    expected_urls,
    hires_video,
    pool_bvid,
    pool_videos,
)
from trawl.platforms.bilibili.resolver import wbi_sign
from trawl.platforms.bilibili.content_site import ContentSite, install_content
from trawl.platforms.bilibili.extras_site import ExtrasSite
from trawl.platforms.bilibili.search_site import SearchAnswers, install_search
from trawl.platforms.bilibili.visitor_site import install_visitors, visitor_ok
from trawl.platforms.bilibili.room_site import ROOM_SHORT, ROOM_SHORT_LINK, RoomSite
from trawl.platforms.platform import PlatformDemo
from trawl.simulator.demo import DemoCase
from trawl.simulator.media import MediaFile, sample_size
from trawl.simulator.references import reference_json
from trawl.simulator.server import FileBehaviour, Request, Response, Simulator
from trawl.simulator.signed import SignedMedia

IMG_KEY = "7cd084941338484aae1ad9425b84077c"
SUB_KEY = "4932caff0ff746eab6f01bf08b70ac45"
UPLOADER_MID = "66606350"
TEN_PARTS = "BV1KW411x7jc"  # av20261130: ten parts, from the derived view answer
# av20261201: a supporter-only (充电专属) video; an account without access gets a 试看 preview.
SUPPORTER_ONLY = "BV1KW411x75m"
SHORT_LINK = "kpLP9MF"
SHORT_LINK_NOT_VIDEO = "xNotVid"
PRIVATE_VIDEO = "BV1fx411c7Z8"  # av114514: answers 62012, visible only to its uploader
UNLISTED_CODE_VIDEO = "BV1cx411A7dD"  # av1919810: answers a code trawl does not list
UNLISTED_CODE = 88214
VIEW_ERRORS: dict[str, dict[str, Any]] = {
    PRIVATE_VIDEO: {"code": 62012, "message": "仅UP主自己可见", "ttl": 1},
    UNLISTED_CODE_VIDEO: {"code": UNLISTED_CODE, "message": "稿件状态异常", "ttl": 1},
}
# Real clips (trawl/simulator/samples/make-clips.sh) served for the streams that last as long as
# they, by "<bvid>-<cid>": the 486 s videos' DASH streams (the captured video and the Hi-Res one
# built from it: a video and an audio clip), the two-part video's durl streams, one clip per
# segment (part 1 120 s, part 2 two segments of 90 s). Other streams (episodes, courses, the
# listed copies) last otherwise: synthetic bytes.
DASH_CLIPS = {stem: {"video": "bilibili-dash-video.m4s", "audio": "bilibili-dash-audio.m4s"}
              for stem in ("BV117411r7R1-146044693", f"{HIRES_VIDEO}-4001")}
DURL_CLIPS = {"BV1GJ411x7h7-1001": ("bilibili-p1.flv",),
              "BV1GJ411x7h7-1002": ("bilibili-p2-1.flv", "bilibili-p2-2.flv")}
TRACKING = ("share_medium=android&share_plat=android&share_session_id=f3852d0c-516a-42a9-8253-fea9aaccb11b"
            "&share_source=COPY&share_tag=s_i&timestamp=1639477906&unique_k=kpLP9MF")


def _json(doc: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    body = json.dumps(doc, ensure_ascii=False).encode()
    return Response(status, {"Content-Type": "application/json; charset=utf-8", **(headers or {})}, body)


@dataclass
class Video:
    bvid: str
    view: dict
    playurl: dict[int, dict]  # cid -> playurl answer


@dataclass
class BilibiliSite:
    sim: Simulator
    rewrite_media: bool = True
    # More API requests than this per second get the risk-control answers (412, -352).
    rate_limit_per_s: float | None = None
    videos: dict[str, Video] = field(default_factory=dict)
    media: SignedMedia | None = None
    generation: int = 0  # bumped by expire_media(): new URL names, same bytes
    _recent: deque[float] = field(default_factory=deque)
    search: SearchAnswers | None = None  # the video search, once installed
    # The WBI keys nav gives and signatures are checked with (rotate_wbi() changes them).
    wbi_keys: tuple[str, str] = (IMG_KEY, SUB_KEY)
    # Visitors (visitor_site.py): with visitor_required, the WBI APIs answer -352 to a request
    # without a buvid3 that finger/spi gave (and has not expired since).
    visitor_required: bool = False
    visitors: set[str] = field(default_factory=set)
    visitor_checks: int = 0
    expire_at_check: int | None = None  # the N-th checked request finds the visitors expired
    _lock: threading.Lock = field(default_factory=threading.Lock)
    content: ContentSite | None = None  # episodes, courses, dynamics, audio (content_site.py), once installed

    def __post_init__(self) -> None:
        self.lists = ListingAnswers(self.videos)
        self.rooms = RoomSite(self.sim, wbi_keys=(IMG_KEY, SUB_KEY))  # the live rooms (room_site.py), installed with the site
        # danmaku, subtitles, chapters, comments (extras_site.py); the captured video has subtitles
        self.extras = ExtrasSite(self.sim, self._durations, signed_ok=self._signed_ok, owners=self._owners,
                                 subtitled={146044693}, commented={85440373})

    def _owners(self) -> dict[int, tuple[int, str]]:
        return {int(page["cid"]): (int(video.view["data"]["aid"]), video.bvid)
                for video in self.videos.values() for page in video.view["data"].get("pages") or []
                if isinstance(page, dict) and page.get("cid")}

    def _durations(self) -> dict[int, float]:
        """cid -> duration of every part of every video (the extras' answers follow them)."""
        return {int(page["cid"]): float(page.get("duration") or video.view["data"].get("duration") or 0)
                for video in self.videos.values() for page in video.view["data"].get("pages") or []
                if isinstance(page, dict) and page.get("cid")}

    def settings(self, **overrides: Any) -> BilibiliSettings:
        base = self.sim.base_url
        return BilibiliSettings(**{"page_base": base, "mobile_base": f"{base}/m", "api_base": base,
                                   "short_base": f"{base}/b23", "space_base": f"{base}/space",
                                   "dynamic_base": f"{base}/t",
                                   "live_base": f"{base}/liveroom", "live_api_base": base,
                                   "comment_base": f"{base}/comment",
                                   "requests_per_second": 1000, **overrides})

    def space_url(self, path: str) -> str:
        """A space page on the simulator: ``space_url(f"{LIST_MID}/video")``."""
        return self.sim.url(f"/space/{path.lstrip('/')}")

    def url(self, bvid: str, page: int = 1) -> str:
        return self.sim.url(f"/video/{bvid}" + (f"?p={page}" if page > 1 else ""))

    # -- building ----------------------------------------------------------------------------
    def _build(self) -> None:
        view = reference_json("bilibili_view_1.json")
        dash = reference_json("bilibili_playurl_dash_1.json")
        self.videos["BV117411r7R1"] = Video("BV117411r7R1", view, {view["data"]["cid"]: dash})

        multi = copy.deepcopy(view)
        data = multi["data"]
        data.update(bvid="BV1GJ411x7h7", aid=80433022, title="两集合集：拜年祭快板电音版", videos=2, cid=1001,
                    duration=300)
        first, second = copy.deepcopy(data["pages"][0]), copy.deepcopy(data["pages"][0])
        first.update(cid=1001, page=1, part="上集", duration=120)
        second.update(cid=1002, page=2, part="下集", duration=180)
        data["pages"] = [first, second]
        durl = reference_json("bilibili_playurl_durl_1.json")
        one = copy.deepcopy(durl)
        one["data"]["timelength"] = one["data"]["durl"][0]["length"] = 120_000
        two = copy.deepcopy(durl)
        segment = two["data"]["durl"][0]
        segment["length"] = 90_000
        later = copy.deepcopy(segment)
        later["order"] = 2
        later["url"] = segment["url"].replace("-1-64.flv", "-2-64.flv")
        later["backup_url"] = [u.replace("-1-64.flv", "-2-64.flv") for u in segment.get("backup_url") or []]
        two["data"]["durl"].append(later)
        two["data"]["timelength"] = 180_000
        self.videos["BV1GJ411x7h7"] = Video("BV1GJ411x7h7", multi, {1001: one, 1002: two})
        # The view fields (is_upower_exclusive, is_upower_play, is_upower_preview) are those of the
        # captured view answer, set as a supporter-only video has them; the preview's playurl is
        # the captured durl answer with the one quality described as 试看 (bilibili-API-collect,
        # docs/video/videostream_url.md; not captured).
        exclusive = copy.deepcopy(view)
        exclusive["data"].update(bvid=SUPPORTER_ONLY, aid=20261201, title="充电专属：完整版", cid=3001,
                                 is_upower_exclusive=True, is_upower_play=False, is_upower_preview=True)
        exclusive["data"]["pages"] = [{**copy.deepcopy(view["data"]["pages"][0]), "cid": 3001}]
        exclusive["data"]["owner"] = {**view["data"]["owner"], "mid": 20261201, "name": "充电UP主"}
        preview = copy.deepcopy(durl)
        preview["data"].update(accept_description=["试看"], accept_quality=[preview["data"]["quality"]])
        self.videos[SUPPORTER_ONLY] = Video(SUPPORTER_ONLY, exclusive, {3001: preview})
        ten = reference_json("bilibili_view_10pages_derived.json")
        self.videos[TEN_PARTS] = Video(TEN_PARTS, ten, {page["cid"]: copy.deepcopy(durl)
                                                        for page in ten["data"]["pages"]})
        for bvid, listed, answers in [*pool_videos(view, durl), hires_video(view, dash)]:
            self.videos[bvid] = Video(bvid, listed, answers)
        if self.rewrite_media:
            for video in self.videos.values():
                for cid, answer in video.playurl.items():
                    self._rewrite(answer, f"{video.bvid}-{cid}")
                self._rewrite_cover(video)

    def _rewrite_cover(self, video: Video) -> None:
        """The cover (``pic``) as a signed JPEG on the simulator, one per video."""
        assert self.media is not None
        name = f"{video.bvid}/g{self.generation}/cover.jpg"
        self.media.add(name, MediaFile("jpeg", f"{video.bvid}-cover", 40_000 + len(video.bvid)))
        video.view["data"]["pic"] = self.media.url(name)

    def _rewrite(self, answer: dict, stem: str) -> None:
        """Point every stream at signed simulator media of a small size (and fix sizes).

        The bytes (and ETags) depend on the stream only, the URL names also on the generation,
        so a download resumed on a re-issued URL appends to the same file.
        """
        assert self.media is not None
        data = answer["data"]
        prefix = f"{stem}/g{self.generation}"
        clips = DURL_CLIPS.get(stem, ())
        for index, segment in enumerate(data.get("durl") or []):
            if index < len(clips):
                media = MediaFile("flv", f"{stem}-durl-{index}", sample_size(clips[index]), sample=clips[index])
            else:
                media = MediaFile("flv", f"{stem}-durl-{index}", 300_000 + 7919 * index)
            name = f"{prefix}/durl-{index}.flv"
            self.media.add(name, media)
            self.media.add(f"{name}.backup", media)
            segment["url"] = self.media.url(name)
            segment["backup_url"] = [self.media.url(f"{name}.backup")]
            segment["size"] = media.size
        dash = data.get("dash") or {}
        flac = (dash.get("flac") or {}).get("audio")
        streams = {"video": dash.get("video") or [],
                   "audio": [*(dash.get("audio") or []), *((dash.get("dolby") or {}).get("audio") or []),
                             *([flac] if flac else [])]}
        for kind, fmt in (("video", "mp4"), ("audio", "mp4")):  # audio .m4s: an ISO brand, not M4A
            for index, stream in enumerate(streams[kind]):
                size = (400_000 if kind == "video" else 120_000) + 1009 * index
                media = MediaFile(fmt, f"{stem}-{kind}-{index}", size, sample=DASH_CLIPS.get(stem, {}).get(kind))
                name = f"{prefix}/{kind}-{stream.get('id')}-{index}.m4s"
                self.media.add(name, media)
                self.media.add(f"{name}.backup", media)
                primary, backup = self.media.url(name), self.media.url(f"{name}.backup")
                stream.update(baseUrl=primary, base_url=primary, backupUrl=[backup], backup_url=[backup])

    def expire_media(self) -> None:
        """Every stream URL issued so far answers 403 ``URL signature expired`` (its deadline
        passed); ``playurl`` answers from now on carry fresh URLs to the same bytes."""
        if self.media is None:
            return
        for entry in self.media.files.values():
            entry.behaviour.expires_at = time.time() - 1
        self.generation += 1
        self.videos.clear()
        self._build()

    def behaviour(self, url: str) -> FileBehaviour:
        """The behaviour of the signed media a URL points at (to cut or throttle it in tests)."""
        assert self.media is not None
        name = url.split(self.media.prefix + "/", 1)[1].split("?", 1)[0]
        return self.media.files[name].behaviour

    # -- answering ---------------------------------------------------------------------------
    def _limited(self) -> bool:
        if not self.rate_limit_per_s:
            return False
        now = time.monotonic()
        with self._lock:
            while self._recent and now - self._recent[0] > 1.0:
                self._recent.popleft()
            self._recent.append(now)
            return len(self._recent) > self.rate_limit_per_s

    def _signed_ok(self, req: Request) -> bool:
        params = {k: v[0] for k, v in req.query.items() if k not in ("w_rid",)}
        wts = params.pop("wts", None)
        if wts is None or not wts.isdigit():
            return False
        expected = wbi_sign(params, *self.wbi_keys, now=int(wts))["w_rid"]
        return req.arg("w_rid") == expected

    def view(self, req: Request) -> Response:
        if self._limited():
            return Response(412, {"Content-Type": "text/html"}, b"<html><body>412 Precondition Failed</body></html>")
        bvid = req.arg("bvid")
        aid = req.arg("aid")
        video = self.videos.get(bvid or "") or next(
            (v for v in self.videos.values() if str(v.view["data"]["aid"]) == aid), None)
        if video is None:
            return _json(VIEW_ERRORS.get(bvid or "", {"code": -404, "message": "啥都木有", "ttl": 1}))
        return _json(video.view)

    def nav(self, req: Request) -> Response:
        return _json({"code": -101, "message": "账号未登录", "ttl": 1, "data": {
            "isLogin": False,
            "wbi_img": {"img_url": f"https://i0.hdslb.com/bfs/wbi/{self.wbi_keys[0]}.png",
                        "sub_url": f"https://i0.hdslb.com/bfs/wbi/{self.wbi_keys[1]}.png"}}})

    def playurl(self, req: Request) -> Response:
        if self._limited() or not visitor_ok(self, req):
            return _json(reference_json("bilibili_error_-352_vvoucher.json"), headers={"Bili-Status-Code": "-352"})
        if not self._signed_ok(req):
            return _json({"code": -403, "message": "访问权限不足", "ttl": 1})
        video = self.videos.get(req.arg("bvid") or "")
        cid = int(req.arg("cid") or 0)
        if video is None or cid not in video.playurl:
            return _json({"code": -404, "message": "啥都木有", "ttl": 1})
        return _json(video.playurl[cid])

    def arc_search(self, req: Request) -> Response:
        if self._limited() or not visitor_ok(self, req):
            return _json(reference_json("bilibili_error_-352_vvoucher.json"), headers={"Bili-Status-Code": "-352"})
        if not self._signed_ok(req):
            return _json({"code": -403, "message": "访问权限不足", "ttl": 1})
        return _json(self.lists.arc_search(req))

    def seasons_archives_list(self, req: Request) -> Response:
        return _json(self.lists.seasons_archives_list(req))

    def series_archives(self, req: Request) -> Response:
        return _json(self.lists.series_archives(req))

    def fav_resource_list(self, req: Request) -> Response:
        return _json(self.lists.fav_resource_list(req))

    def short_link(self, req: Request) -> Response:
        code = req.match.group("code") if req.match else ""
        if code == SHORT_LINK:
            target = self.sim.url(f"/video/BV117411r7R1?p=1&{TRACKING}")
        elif code == ROOM_SHORT_LINK:  # as the app shares a room: the page with tracking params
            target = self.sim.url(f"/liveroom/{ROOM_SHORT}?broadcast_type=0&is_room_feed=1&{TRACKING}")
        elif code == SHORT_LINK_NOT_VIDEO:
            target = self.sim.url("/read/cv123456")
        else:
            return Response(404, {"Content-Type": "text/html"}, b"<html>404</html>")
        return Response(302, {"Location": target, "Content-Type": "text/html; charset=utf-8"},
                        f'<a href="{target}">Found</a>.'.encode())

    def page(self, req: Request) -> Response:
        return Response(200, {"Content-Type": "text/html; charset=utf-8"},
                        b"<!DOCTYPE html><html><head><title>bilibili</title></head><body></body></html>")


def install_bilibili_site(sim: Simulator, *, rewrite_media: bool = True) -> BilibiliSite:
    site = BilibiliSite(sim, rewrite_media=rewrite_media)
    if rewrite_media:
        site.media = SignedMedia(sim, "/upgcxcode", expiry_param="deadline", sig_param="upsig",
                                 require_referer="https://www.bilibili.com")
    site._build()
    sim.add_exact("/x/web-interface/view", site.view)
    sim.add_exact("/x/web-interface/nav", site.nav)
    sim.add_exact("/x/player/wbi/playurl", site.playurl)
    sim.add_exact("/x/space/wbi/arc/search", site.arc_search)
    sim.add_exact("/x/polymer/web-space/seasons_archives_list", site.seasons_archives_list)
    sim.add_exact("/x/series/archives", site.series_archives)
    sim.add_exact("/x/v3/fav/resource/list", site.fav_resource_list)
    sim.add_route(r"/b23/(?P<code>[A-Za-z0-9]+)/?", site.short_link)
    sim.add_route(r"(?:/m)?/video/.+|/read/.+", site.page)
    site.rooms.install()
    site.extras.install()
    site.search = install_search(site)  # the video search (search_site.py)
    install_visitors(site)  # finger/spi (visitor_site.py)
    site.content = install_content(site)  # episodes, courses, dynamics, audio (content_site.py)
    return site


def install_demo(sim: Simulator) -> PlatformDemo:
    """The site with the demo's cases: one video under three URL forms, a part, a deleted video."""
    site = install_bilibili_site(sim)
    return PlatformDemo(settings=site.settings(requests_per_second=20), failures="a deleted Bilibili video", cases=[
        DemoCase(site.url("BV117411r7R1"), "committed", "Bilibili DASH: video + audio", "bili"),
        DemoCase(sim.url("/video/av85440373"), "committed", "same video by av number", "bili"),
        DemoCase(sim.url(f"/b23/{SHORT_LINK}"), "committed", "same video by b23.tv short link", "bili"),
        DemoCase(site.url("BV1GJ411x7h7", page=2), "committed", "Bilibili part 2, two durl segments"),
        DemoCase(site.url("BV17x411w7KC"), "not_found", "Bilibili code -404"),
    ])


__all__ = [
    "COLLECTION_ID", "FAVORITES_ID", "HIDDEN_COLLECTION_ID", "HIRES_VIDEO", "LIST_MID", "PRIVATE_FAVORITES_ID",
    "PRIVATE_VIDEO", "ROOM_SHORT_LINK", "SERIES_ID", "SHORT_LINK", "SHORT_LINK_NOT_VIDEO", "SUPPORTER_ONLY", "TEN_PARTS",
    "UNLISTED_CODE", "UNLISTED_CODE_VIDEO", "UPLOADER_MID", "VIEW_ERRORS", "BilibiliSite", "expected_urls",
    "install_bilibili_site", "install_demo", "pool_bvid",
]
