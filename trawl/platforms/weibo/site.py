"""The simulator's Weibo: the captured API answers, served at the real paths.

Posts (``WeiboSite.posts``):

- ``playback``: the captured desktop ``page_info`` with ``media_info.playback_list``
  (``weibo_ajax_page_info_playback_list_1.json``). The envelope around it is built from fields
  of the same capture: mid ``actionlog.mid``, author ``media_info.author_info``, text
  ``content2``.
- ``urls``: the captured mobile ``page_info`` with ``stream_url*`` and ``urls{}``
  (``weibo_mweibocn_page_info_urls_2023_1.json``). The capture names no mid or author id, so
  those are synthetic; the author's name comes from ``content1`` (``<name>的微博视频``).
- ``novideo``: the captured mobile answer ``weibo_mweibocn_statuses_show_1_noVideo.json`` (a
  repost, no pictures), served byte for byte by the mobile API when media is not rewritten.
- ``pictures``: synthetic, two pictures, by the author of ``novideo`` (none of the captures has
  pictures).
- ``repost``: a repost of the ``urls`` video, built on the captured repost ``novideo`` (its
  envelope, its placeholder text ``转发微博``) with the ``urls`` status as its
  ``retweeted_status``. The mobile answer keeps the video only under
  ``retweeted_status.page_info``, as m.weibo.cn does; the desktop answer also lifts that
  ``page_info`` to the top level, as the desktop API does (both per trawl's issue 11, not
  captured). Its mid and its author (another user, so the captured author's feed is unchanged)
  are synthetic.

- ``livephoto``, ``mixed``, ``longtext``: a Live Photo post, a mixed-media post and a long post
  (synthetic, by a user of their own), with the long-text APIs and the Live Photo wrapper: see
  :mod:`trawl.platforms.weibo.content_site`.

Synthetic mids follow the real rule (``(mid >> 22) + 515483463`` is the post time in Unix
seconds, which holds for both captured statuses) and ``created_at`` is derived from it. The
desktop API answers with the status object and ``"ok": 1`` at its top level; the mobile API with
``{"ok": 1, "data": status}``. Both carry the same ``page_info``: only one shape of each was
captured.

Modelled, not captured: ``{"ok": 0, "msg": "微博不存在或暂无查看权限!"}`` (the mobile site's
wording) for unknown ids on both APIs; the video page API ``POST /tv/api/component``; the
``tv/show`` and ``video.weibo.com/show`` pages, which are bare JavaScript shells as on the real
site; the visitor-cookie redirect page.

User listings, at the real paths, paged by ``page_size`` (``add_posts`` gives a user more posts
to page through; its clones are synthetic). None of these is a capture of trawl's own: the
shapes are the ones yt-dlp's and gallery-dl's code reads, with the third-party captures the
listing spec (issue 26) quotes:

- ``GET /api/container/getIndex?containerid=107603<uid>&page=N`` (m.weibo.cn's post list):
  ``data.cardlistInfo`` and ``data.cards[]`` of ``card_type`` 9 with the ``mblog`` and its
  ``scheme``, as in the third-party capture the spec reproduces; past the end
  ``{"ok": 0, "msg": "这里还没有内容"}``.
- ``GET /ajax/profile/info?screen_name=|custom=|uid=``: ``{"ok": 1, "data": {"user": {"id",
  "idstr", "screen_name", "profile_url", "location"}}}``, the fields gallery-dl's tests record
  for ``data.user``; an unknown user is ``{"ok": 0, "msg": "用户不存在"}`` (modelled). The
  playback author has the personal domain ``trawlsim`` (:data:`CUSTOM_DOMAIN`; synthetic).
- ``GET /ajax/profile/getWaterFallContent?uid=&cursor=`` (yt-dlp's ``WeiboUserIE``): the user's
  own video posts as full desktop statuses in ``data.list``, ``data.next_cursor`` the last
  listed mid minus one (a string, as in the spec's third-party mock), ``-1`` on the last page.
- ``GET /ajax/profile/getImageWall?uid=&sinceid=`` (gallery-dl's ``WeiboAlbumExtractor``): one
  ``{"pid", "mid", "type": "pic"}`` per picture of the user's own posts in ``data.list``;
  ``data.since_id`` an opaque string (its real format is unknown), ``0`` on the last page; the
  first page also has ``album_list[]`` (``containerid`` in the format of gallery-dl's test).

The desktop ajax APIs (statuses, profile info, both walls) answer 403 without the Referer.

Refusals (:class:`WeiboSite` attributes switch them on), none of them captured:

- rate limiting: ``{"ok": -100, "errno": "-100", "msg": "", "url": "https://m.weibo.cn/captcha?...",
  "extra": ""}``, the answer quoted in a public issue thread (dataabc/weibo-crawler#461);
- the login wall (``login_wall``): ``{"ok": -100, "url": "https://passport.weibo.com/sso/signin?..."}``,
  the shape trawl's issue 11 reports;
- throttling by status (``throttle_status``): HTTP 432 with an empty body and no reason phrase,
  or HTTP 418, as public issue threads report them (DIYgod/RSSHub#20512,
  dataabc/weibo-crawler#565, nghuyong/WeiboSpider#92); the bodies are assumptions.

With ``rewrite_media=True`` every media URL (hosts ``*.weibocdn.com``, ``*.sinaimg.cn``) in an
answer becomes a fresh signed simulator URL (``Expires=``, ``ssig=``, an hour, Referer required)
serving a generated file of 100-600 kB, and the ``size`` next to a rewritten ``url`` is set to
that file's size, so downloads verify. The same original URL always maps to the same bytes. A
video post's MP4 files are real clips as long as its ``media_info.duration`` (:data:`CLIPS`),
followed by a ``free`` box of bytes of their own; pictures and covers are a real picture followed
by bytes of their own.
"""

from __future__ import annotations

import collections
import copy
import hashlib
import html
import json
import posixpath
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from trawl.platforms.platform import PlatformDemo
from trawl.platforms.weibo.content_site import (
    LONG_TEXT,
    cut_text,
    install_content_routes,
    livephoto_media,
    mixed_media,
    picture_media,
    wrapped_live_file,
)
from trawl.platforms.weibo.extras_site import WeiboCommentsSite
from trawl.platforms.weibo.config import WeiboSettings
from trawl.platforms.weibo.resolver import mid_to_mblogid
from trawl.platforms.weibo.search_site import search_page
from trawl.platforms.weibo.visitor_site import install_visitor_system, is_visitor
from trawl.simulator.demo import DemoCase
from trawl.simulator.media import FREE_HEADER, MediaFile, sample_size
from trawl.simulator.references import reference_bytes, reference_json
from trawl.simulator.server import FileBehaviour, Request, Response, Simulator
from trawl.simulator.signed import SignedMedia

MEDIA_HOSTS = ("weibocdn.com", "sinaimg.cn")
# The real clip (trawl/simulator/samples/make-clips.sh) each video post's MP4 files start with, by
# the reference its page_info comes from: as long as its media_info.duration (593 s, 21.222 s).
CLIPS = {"weibo_ajax_page_info_playback_list_1.json": "weibo-playback.mp4",
         "weibo_mweibocn_page_info_urls_2023_1.json": "weibo-urls.mp4"}
NOT_FOUND = {"ok": 0, "msg": "微博不存在或暂无查看权限!"}
RATE_LIMITED = {"ok": -100, "errno": "-100", "msg": "", "url": "https://m.weibo.cn/captcha?scene=limit&referer=/",
                "extra": ""}
LOGIN_PAGE = "https://passport.weibo.com/sso/signin?entry=wapsso&source=wapssowb&url="
NO_MORE_POSTS = {"ok": 0, "msg": "这里还没有内容", "data": {"cards": []}}
NO_SUCH_USER = {"ok": 0, "msg": "用户不存在"}
CUSTOM_DOMAIN = "trawlsim"
MID_EPOCH = 515483463  # (mid >> 22) + MID_EPOCH = post time, Unix seconds
_CHINA = timezone(timedelta(hours=8))
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
SHELL_PAGE = (b'<!DOCTYPE html><html><head><meta charset="utf-8"><title>Weibo</title></head>'
              b'<body><div id="app"></div><script src="/js/app.js"></script></body></html>')
VISITOR_PAGE = (b'<!DOCTYPE html><html><head><meta charset="utf-8"><title>Sina Visitor System</title></head>'
                b"<body><script>/* generates visitor cookies, then returns */</script></body></html>")


@dataclass
class WeiboPost:
    """One post the site serves, with what a resolver should report for it."""

    key: str
    mid: str
    mblogid: str
    uid: str
    title: str | None
    uploader: str | None
    asset_count: int  # 0: the post has no media
    duration: float | None
    source: str  # the reference file it comes from, or "synthetic"
    oid: str | None = None  # the video's object id, "1034:<digits>", for tv/show URLs

    @property
    def hex_oid(self) -> str | None:
        """A second, newer-style object id for the same video, ``1034:<32 hex digits>`` (the
        form yt-dlp's tests show; synthetic here: the md5 of ``oid``)."""
        return f"1034:{hashlib.md5(self.oid.encode()).hexdigest()}" if self.oid else None
    desktop: dict[str, Any] = field(default_factory=dict, repr=False)  # desktop API answer
    mobile: dict[str, Any] = field(default_factory=dict, repr=False)  # mobile API answer
    mobile_raw: bytes | None = field(default=None, repr=False)  # captured bytes of the mobile answer
    long_text: str | None = None  # a long post's whole text (content_site.py)

    @property
    def url(self) -> str:
        return f"https://weibo.com/{self.uid}/{self.mblogid}"


class WeiboSite:
    """Routes and state of the simulated Weibo; built by :func:`install_weibo_site`.

    Attributes:
        posts: the posts served, by key: ``playback``, ``urls``, ``novideo``, ``pictures``,
            ``repost``, ``livephoto``, ``mixed``, ``longtext``.
        rate_limit_per_s: API requests allowed per second before ``ok: -100``; None = no limit.
        login_wall: the APIs (``"desktop"``, ``"mobile"``) that answer with the login wall.
        throttle_status: when set, every API answers this HTTP status (432 or 418) instead.
        referer: the desktop API answers 403 to requests whose Referer does not start with it;
            so do media URLs (with the value it had when the site was built).
        signed: the signed-media server behind rewritten URLs (None when media is not rewritten).
        login_redirect: the desktop API redirects to the visitor-cookie page instead of answering.
        page_size: posts per page of the profile feed and the video tab, pictures per page of
            the picture wall.
        users: screen names by uid; custom_domains: uid by personal domain.
    """

    def __init__(self, sim: Simulator, *, rewrite_media: bool = True) -> None:
        self.sim = sim
        self.rewrite_media = rewrite_media
        self.rate_limit_per_s: float | None = None
        self.referer = "https://weibo.com/"
        self.login_redirect = False
        # The visitor system gives cookies (visitor_site.py), which the desktop API then takes.
        self.visitor_flow = False
        self.visitor_subs: set[str] = set()
        self.login_wall: set[str] = set()
        self.throttle_status: int | None = None
        self.long_text_gone = False  # both long-text APIs answer as for a deleted text (content_site.py)
        self.page_size = 10
        # A post the profile feed shows first, marked pinned (isTop, title "置顶": the mobile
        # site's marks, as third-party readers of the feed take them; not captured).
        self.pinned: str | None = None
        self.posts = {post.key: post for post in _posts()}
        self._ids = {i: p for p in self.posts.values() for i in (p.mid, p.mblogid)}
        # Screen names by uid (from the posts), and personal domains (synthetic: no capture has one).
        self.users = {p.uid: p.uploader or p.uid for p in self.posts.values()}
        self.custom_domains = {CUSTOM_DOMAIN: self.posts["playback"].uid}
        self._lock = threading.Lock()
        self._recent: collections.deque[float] = collections.deque()
        self._files: dict[str, MediaFile] = {}  # media host + path -> generated file
        self._clips = {_media_key(url): CLIPS[post.source] for post in self.posts.values() if post.source in CLIPS
                       for url in _mp4_urls(post.desktop.get("page_info"))}  # media host + path -> clip
        self._issued: dict[str, FileBehaviour] = {}  # signed name -> its behaviour
        self._generation = 1
        # The playback post's comments with their replies (extras_site.py).
        self.comments = WeiboCommentsSite(sim, commented={self.posts["playback"].mid})
        self.signed = SignedMedia(sim, "/weibocdn", ttl=3600, expiry_param="Expires", sig_param="ssig",
                                  require_referer=self.referer) if rewrite_media else None

    # -- for tests ---------------------------------------------------------------------------
    def settings(self, **overrides: Any) -> WeiboSettings:
        """Weibo settings pointing every base URL at the simulator."""
        base = self.sim.base_url
        values = {"page_base": base, "mobile_base": base, "video_base": base, "referer": self.referer}
        return WeiboSettings(**{**values, **overrides})

    def add_posts(self, like: str, count: int) -> list[WeiboPost]:
        """``count`` more posts by the author of ``posts[like]``, with its media, an hour apart and
        newer than it (keys ``<like>-1``, ``<like>-2``...; synthetic, for listings that page).

        A clone's text ends in `` #<n>``, its video (if any) has an object id of its own; its
        media URLs are the template's, so it downloads the same bytes.
        """
        template = self.posts[like]
        born = (int(template.mid) >> 22) + MID_EPOCH
        added = []
        for n in range(1, count + 1):
            key = f"{like}-{n}"
            mid = _mid_at(born + 3600 * n, 4_000_000 + n)
            post = _clone(template, key, mid, n)
            self.posts[key] = post
            self._ids.update({post.mid: post, post.mblogid: post})
            added.append(post)
        return added

    def expire_media(self) -> int:
        """Make every media URL issued so far answer 403 ``URL signature expired``.

        Answers given afterwards carry new URLs (same bytes) that work. Returns how many
        signed files were expired.
        """
        with self._lock:
            for behaviour in self._issued.values():
                behaviour.expires_at = time.time() - 1
            count = len(self._issued)
            self._issued = {}
            self._generation += 1
        return count

    def media_file(self, url: str) -> MediaFile | None:
        """The generated file behind a rewritten media URL (or its original URL), if any."""
        with self._lock:
            if _is_media(url):
                return self._files.get(_media_key(url))
            name = urlsplit(url).path.removeprefix("/weibocdn/").split("/", 1)[-1]
            return next((f for key, f in self._files.items() if _file_name(key) == name), None)

    # -- routes ------------------------------------------------------------------------------
    def install(self) -> WeiboSite:
        self.comments.install()
        self.sim.add_exact("/ajax/statuses/show", self._desktop)
        self.sim.add_exact("/statuses/show", self._mobile)
        self.sim.add_exact("/api/container/getIndex", self._feed)
        self.sim.add_exact("/ajax/profile/info", self._profile_info)
        self.sim.add_exact("/ajax/profile/getWaterFallContent", self._video_wall)
        self.sim.add_exact("/ajax/profile/getImageWall", self._image_wall)
        self.sim.add_exact("/tv/api/component", self._component)
        self.sim.add_route(r"/tv/show/[^/]+", lambda req: _html(SHELL_PAGE))
        self.sim.add_exact("/show", lambda req: _html(SHELL_PAGE))
        install_visitor_system(self, VISITOR_PAGE)  # the page, genvisitor and incarnate (visitor_site.py)
        install_content_routes(self)  # long texts, the Live Photo wrapper (content_site.py)
        return self

    def post_by_id(self, ident: str) -> WeiboPost | None:
        """The post whose mid or mblogid is ``ident``."""
        return self._ids.get(ident)

    def desktop_refusal(self, req: Request) -> Response | None:
        """What a desktop ajax API answers instead, if anything (see ``_desktop_refused``)."""
        return self._desktop_refused(req)

    def refusal(self, req: Request, api: str) -> Response | None:
        """The throttling, rate-limit or login-wall answer this request gets, if any."""
        return self._refused(req, api)

    def _desktop(self, req: Request) -> Response:
        refused = self._desktop_refused(req)
        if refused is not None:
            return refused
        if self.login_redirect and not is_visitor(self, req):
            back = self.sim.url(f"/ajax/statuses/show?{urlencode({'id': req.arg('id') or ''})}")
            query = urlencode({"entry": "miniblog", "a": "enter", "url": back})
            return Response(302, {"Location": self.sim.url(f"/visitor/visitor?{query}")}, b"")
        post = self._ids.get(req.arg("id") or "")
        return _json(self._answer(post.desktop) if post else NOT_FOUND)

    def _mobile(self, req: Request) -> Response:
        refused = self._refused(req, "mobile")
        if refused is not None:
            return refused
        post = self._ids.get(req.arg("id") or "")
        if post is None:
            return _json(NOT_FOUND)
        if post.mobile_raw is not None and not self.rewrite_media:
            return Response(200, {"Content-Type": "application/json; charset=utf-8"}, post.mobile_raw)
        return _json(self._answer(post.mobile))

    def _feed(self, req: Request) -> Response:
        """The profile's post list: post cards, newest first.

        Containers: ``107603<uid>`` and ``230413<uid>_-_WEIBO_SECOND_PROFILE_WEIBO`` (every post,
        ``_ORI`` too: the simulated users repost nothing of others but the repost), ``..._VIDEO``
        (posts with their own video), ``..._PIC`` (posts with pictures). Paged by ``page=N`` or by
        ``since_id`` (the mid of the page's first post, which ``cardlistInfo.since_id`` names, as
        in the third-party capture; absent on the last page).
        """
        refused = self._refused(req, "mobile")
        if refused is not None:
            return refused
        container = req.arg("containerid") or ""
        searched = search_page(self, container, int(req.arg("page") or 1) if (req.arg("page") or "1").isdigit() else 1)
        if searched is not None:  # a post search (search_site.py)
            return _json(self._answer(searched))
        found = re.fullmatch(r"(?:107603(\d+)|230413(\d+)_-_WEIBO_SECOND_PROFILE_WEIBO(|_ORI|_VIDEO|_PIC))", container)
        uid = (found.group(1) or found.group(2)) if found else None
        tab = (found.group(3) or "") if found else ""
        mine = [p for p in self._by_user(uid) if {"_VIDEO": p.oid is not None,
                                                 "_PIC": bool(p.desktop.get("pic_ids"))}.get(tab, True)]
        top = self.posts.get(self.pinned or "")
        if top in mine:  # the pinned post comes first, whatever its age
            mine.remove(top)
            mine.insert(0, top)
        page_arg, since = req.arg("page") or "1", req.arg("since_id") or ""
        page = int(page_arg) if page_arg.isdigit() else 1
        start = (page - 1) * self.page_size if not since.isdigit() else \
            next((i for i, p in enumerate(mine) if int(p.mid) <= int(since)), len(mine))
        chunk = mine[start:start + self.page_size] if start >= 0 else []
        if not chunk:
            return _json(NO_MORE_POSTS)
        cards = [{
            "card_type": 9,
            "itemid": f"{container}_-_{p.mid}",
            "scheme": f"https://m.weibo.cn/status/{p.mblogid}?mblogid={p.mblogid}&luicode=10000011&lfid={container}",
            "mblog": {**p.mobile["data"], "isTop": 1, "title": {"text": "置顶", "base_color": 1}} if p is top
            else p.mobile["data"],
        } for p in chunk]
        following = mine[start + self.page_size:start + self.page_size + 1]
        info: dict[str, Any] = {"containerid": container, "v_p": 42, "show_style": 1, "total": len(mine),
                                "page": page + 1 if following and not since else None}
        if following:
            info["since_id"] = int(following[0].mid)
        return _json(self._answer({"ok": 1, "data": {"cardlistInfo": info, "cards": cards, "scheme": ""}}))

    def _component(self, req: Request) -> Response:
        """The video page API: which post carries video ``oid`` (shape modelled, see module doc)."""
        refused = self._refused(req, "desktop")
        if refused is not None:
            return refused
        fid = (req.arg("page") or "").rsplit("/", 1)[-1]
        post = next((p for p in self.posts.values() if p.oid and fid in (p.oid, p.hex_oid)), None)
        if post is None:
            return _json({"code": "100010", "msg": "视频不存在", "data": {}})
        page_info = post.desktop.get("page_info") or {}
        urls = {label: _protocol_relative(url) for label, url in (
            ("高清 720P", page_info.get("urls", {}).get("mp4_720p_mp4") or page_info["media_info"].get("mp4_720p_mp4")),
            ("标清 480P", page_info["media_info"].get("stream_url_hd")),
            ("流畅 360P", page_info["media_info"].get("stream_url")),
        ) if url}
        info = {"mid": post.mid, "oid": fid, "title": post.title, "author": post.uploader, "author_id": post.uid,
                "urls": urls}
        return _json(self._answer({"code": "100000", "msg": "succ", "data": {"Component_Play_Playinfo": info}}))

    def _profile_info(self, req: Request) -> Response:
        """A user by ``screen_name``, ``custom`` (personal domain) or ``uid``: ``data.user``."""
        refused = self._desktop_refused(req)
        if refused is not None:
            return refused
        uid = (self.custom_domains.get(req.arg("custom") or "")
               or next((u for u, name in self.users.items() if name == req.arg("screen_name")), None)
               or (req.arg("uid") if req.arg("uid") in self.users else None))
        if uid is None:
            return _json(NO_SUCH_USER)
        domain = next((d for d, u in self.custom_domains.items() if u == uid), None)
        user = {"id": int(uid), "idstr": uid, "screen_name": self.users[uid],
                "profile_url": f"/{domain}" if domain else f"/u/{uid}", "location": "其他"}
        return _json({"ok": 1, "data": {"user": user}})

    def _video_wall(self, req: Request) -> Response:
        """The video tab: the user's own video posts, newest first, ``next_cursor`` paging."""
        refused = self._desktop_refused(req)
        if refused is not None:
            return refused
        cursor = int(req.arg("cursor") or "0") if (req.arg("cursor") or "0").lstrip("-").isdigit() else 0
        mine = [p for p in self._by_user(req.arg("uid")) if p.oid]
        rest = [p for p in mine if cursor <= 0 or int(p.mid) <= cursor]
        chunk, more = rest[:self.page_size], len(rest) > self.page_size
        following: int | str = str(int(chunk[-1].mid) - 1) if more else -1
        statuses = [{k: v for k, v in p.desktop.items() if k != "ok"} for p in chunk]
        return _json(self._answer({"ok": 1, "data": {"list": statuses, "next_cursor": following}}))

    def _image_wall(self, req: Request) -> Response:
        """The picture wall: one entry per picture of the user's own posts, newest post first,
        ``page_size`` pictures a page; ``since_id`` (opaque: ``<mid>_<picture>`` of the next
        page's first picture) pages on, ``0`` on the last page."""
        refused = self._desktop_refused(req)
        if refused is not None:
            return refused
        uid = req.arg("uid") or ""
        pictures = [{"pid": pid, "mid": p.mid, "type": "pic"}
                    for p in self._by_user(uid) for pid in p.desktop.get("pic_ids") or []]
        since = req.arg("sinceid") or "0"
        start = next((i for i, pic in enumerate(pictures) if f"{pic['mid']}_{pic['pid']}" == since), 0)
        chunk = pictures[start:start + self.page_size]
        after = pictures[start + self.page_size:start + self.page_size + 1]
        data: dict[str, Any] = {"since_id": f"{after[0]['mid']}_{after[0]['pid']}" if after else 0, "list": chunk}
        if start == 0 and pictures:  # the first page also names the sub-albums
            first = pictures[0]["pid"]
            data["album_list"] = [{
                "containerid": (f"231826{uid}_-_pc_profile_album_-_photo_-_camera_-_0_-_"
                                "%E5%BE%AE%E5%8D%9A%E9%85%8D%E5%9B%BE"),
                "pic": f"https://wx1.sinaimg.cn/webp720/{first}.jpg", "pic_title": "微博配图"}]
        return _json(self._answer({"ok": 1, "data": data}))

    # -- helpers -----------------------------------------------------------------------------
    def _by_user(self, uid: str | None) -> list[WeiboPost]:
        """The posts ``uid`` wrote, newest first."""
        return sorted((p for p in self.posts.values() if p.uid == uid), key=lambda p: int(p.mid), reverse=True)

    def _desktop_refused(self, req: Request) -> Response | None:
        """What the desktop ajax API answers instead, if anything: a refusal, or 403 without the Referer."""
        refused = self._refused(req, "desktop")
        if refused is not None:
            return refused
        if not req.headers.get("referer", "").startswith(self.referer):
            return Response(403, {"Content-Type": "text/html"}, b"<html><body>403 Forbidden</body></html>")
        return None

    def _refused(self, req: Request, api: str) -> Response | None:
        """The throttling, rate-limit or login-wall answer this request gets, if any."""
        if self.throttle_status is not None:
            return Response(self.throttle_status, {"Content-Type": "text/html; charset=utf-8"}, b"")
        if self._limited():
            return _json(RATE_LIMITED)
        if api in self.login_wall:
            back = quote(self.sim.url(req.path), safe="")
            return _json({"ok": -100, "url": LOGIN_PAGE + back})
        return None

    def _limited(self) -> bool:
        """Count this request; True when more than ``rate_limit_per_s`` arrived in the last second."""
        now = time.monotonic()
        with self._lock:
            self._recent.append(now)
            while self._recent and self._recent[0] < now - 1.0:
                self._recent.popleft()
            return self.rate_limit_per_s is not None and len(self._recent) > self.rate_limit_per_s

    def _answer(self, doc: dict[str, Any]) -> dict[str, Any]:
        return self._rewrite(doc) if self.rewrite_media else doc

    def _rewrite(self, node: Any) -> Any:
        if isinstance(node, dict):
            out = {key: self._rewrite(value) for key, value in node.items()}
            url, size = node.get("url"), node.get("size")
            # A play_info states its file's size next to its URL: keep the two in step.
            if isinstance(url, str) and _is_media(url) and isinstance(size, int) and not isinstance(size, bool):
                out["size"] = self._file(url).size
            return out
        if isinstance(node, list):
            return [self._rewrite(value) for value in node]
        if isinstance(node, str) and _is_media(node):
            return self._sign(node)
        inner = wrapped_live_file(node) if isinstance(node, str) else None
        if inner and _is_media(inner):  # a Live Photo's wrapper, on the simulator, naming the signed file
            return self.sim.url("/media/play?" + urlencode({"livephoto": self._sign(inner)}))
        return node

    def _file(self, url: str) -> MediaFile:
        key = _media_key(url)
        with self._lock:
            found = self._files.get(key)
            if found is None:
                ext = posixpath.splitext(key)[1].lower()
                host = key.split("/", 1)[0]
                fmt = {".mp4": "mp4", ".mov": "mp4", ".png": "png"}.get(ext, "mp4" if "video" in host else "jpeg")
                size = 100_000 + int(hashlib.sha1(key.encode()).hexdigest(), 16) % 500_000
                clip = self._clips.get(key) if fmt == "mp4" else None
                if clip is not None:  # the clip, then the free box's header and payload
                    size += sample_size(clip) + FREE_HEADER
                found = self._files[key] = MediaFile(fmt, key, size, sample=clip)
            return found

    def _sign(self, url: str) -> str:
        assert self.signed is not None
        media = self._file(url)
        key = media.seed
        with self._lock:
            name = f"g{self._generation}/{_file_name(key)}"
            if name not in self._issued:
                self._issued[name] = self.signed.add(name, media)
        return self.signed.url(name)


def install_weibo_site(sim: Simulator, *, rewrite_media: bool = True) -> WeiboSite:
    """Serve the simulated Weibo on ``sim`` (see the module docstring for what is served)."""
    return WeiboSite(sim, rewrite_media=rewrite_media).install()


# -- the posts -------------------------------------------------------------------------------
def _load(name: str) -> Any:
    return reference_json(name)


def _mid_at(unix_seconds: int, sequence: int) -> str:
    return str(((unix_seconds - MID_EPOCH) << 22) + sequence)


def _created_at(mid: str) -> str:
    """``created_at`` as Weibo writes it (China time, English names) for the time in ``mid``."""
    moment = datetime.fromtimestamp((int(mid) >> 22) + MID_EPOCH, _CHINA)
    return (f"{_DAYS[moment.weekday()]} {_MONTHS[moment.month - 1]} {moment.day:02d} "
            f"{moment:%H:%M:%S} +0800 {moment.year}")


def _desktop(mid: str, uid: str, name: str, text: str, **media: Any) -> dict[str, Any]:
    return {
        "visible": {"type": 0, "list_id": 0}, "created_at": _created_at(mid), "id": int(mid), "idstr": mid,
        "mid": mid, "mblogid": mid_to_mblogid(mid),
        "user": {"id": int(uid), "idstr": uid, "screen_name": name, "profile_url": f"/u/{uid}"},
        "can_edit": False, "text_raw": text, "text": html.escape(text, quote=False), "source": "微博 weibo.com",
        "pic_ids": [], "pic_num": 0, **media, "ok": 1,
    }


def _mobile(mid: str, uid: str, name: str, text: str, **media: Any) -> dict[str, Any]:
    data = {
        "created_at": _created_at(mid), "id": mid, "mid": mid, "bid": mid_to_mblogid(mid),
        "text": html.escape(text, quote=False), "source": "微博 weibo.com", "pic_ids": [],
        "user": {"id": int(uid), "screen_name": name, "profile_url": f"https://m.weibo.cn/u/{uid}?uid={uid}"},
        **media,
    }
    return {"ok": 1, "data": data}


def _video_post(key: str, source: str, mid: str, uid: str, name: str, text: str) -> WeiboPost:
    page_info = _load(source)
    return WeiboPost(
        key=key, mid=mid, mblogid=mid_to_mblogid(mid), uid=uid, title=" ".join(text.split()), uploader=name,
        asset_count=1, duration=float(page_info["media_info"]["duration"]), source=source,
        oid=page_info["object_id"],
        desktop=_desktop(mid, uid, name, text, page_info=page_info),
        mobile=_mobile(mid, uid, name, text, page_info=page_info),
    )


def _posts() -> list[WeiboPost]:
    playback = _load("weibo_ajax_page_info_playback_list_1.json")
    author = playback["media_info"]["author_info"]
    urls = _load("weibo_mweibocn_page_info_urls_2023_1.json")
    novideo_file = "weibo_mweibocn_statuses_show_1_noVideo.json"
    raw = reference_bytes(novideo_file)
    novideo = json.loads(raw)
    data = novideo["data"]
    desktop = {k: v for k, v in data.items() if k not in ("bid", "raw_text")}
    desktop.update(id=int(data["mid"]), idstr=data["mid"], mblogid=data["bid"], text_raw=data["raw_text"],
                   pic_num=0, ok=1)
    user = data["user"]
    uid = str(user["id"])
    posts = [
        _video_post("playback", "weibo_ajax_page_info_playback_list_1.json", playback["actionlog"]["mid"],
                    author["idstr"], author["screen_name"], playback["content2"]),
        _video_post("urls", "weibo_mweibocn_page_info_urls_2023_1.json", _mid_at(1673686800, 1_234_567),
                    "6124642021", urls["content1"].removesuffix("的微博视频"), urls["content2"]),
        WeiboPost(key="novideo", mid=data["mid"], mblogid=data["bid"], uid=uid, title=data["raw_text"],
                  uploader=user["screen_name"], asset_count=0, duration=None, source=novideo_file,
                  desktop=desktop, mobile=novideo, mobile_raw=raw),
        _pictures_post(_mid_at(1560600000, 3_141_592), uid, user["screen_name"]),
    ]
    return [*posts, _repost_post(novideo, posts[1], _mid_at(1673690400, 7_654_321)),
            *_content_posts(playback)]


def _content_posts(page_info: dict[str, Any]) -> list[WeiboPost]:
    """The Live Photo, mixed-media and long-text posts (content_site.py), by a user of their own
    (synthetic), so the other users' feeds stay as they were."""
    uid, name = "7012345678", "动图和长文"
    posts = []
    live_pids = ["006whbZwly1hlive01aj30u0140q5d", "006whbZwly1hlive02aj30u0140n0x"]
    mid = _mid_at(1700000000, 2_718_281)
    desktop, mobile = livephoto_media(live_pids)
    text = "会动的照片 #livephoto#"
    posts.append(WeiboPost(key="livephoto", mid=mid, mblogid=mid_to_mblogid(mid), uid=uid, title=text, uploader=name,
                           asset_count=3, duration=None, source="synthetic",
                           desktop=_desktop(mid, uid, name, text, **desktop), mobile=_mobile(mid, uid, name, text, **mobile)))
    mix_pids = ["006whbZwly1hmixd01aj30u0140q5d", "006whbZwly1hmixd02aj30u0140n0x"]
    mid = _mid_at(1700003600, 1_414_213)
    desktop, mobile = mixed_media(mix_pids, page_info)
    text = "图和视频一起发 #mixed#"
    posts.append(WeiboPost(key="mixed", mid=mid, mblogid=mid_to_mblogid(mid), uid=uid, title=text, uploader=name,
                           asset_count=3, duration=float(page_info["media_info"]["duration"]), source="synthetic",
                           desktop=_desktop(mid, uid, name, text, **desktop), mobile=_mobile(mid, uid, name, text, **mobile)))
    mid = _mid_at(1700007200, 1_732_050)
    pid = "006whbZwly1hlong01aj30u0140q5d"
    cut = cut_text(LONG_TEXT)
    desktop, mobile = picture_media(pid)
    post = WeiboPost(key="longtext", mid=mid, mblogid=mid_to_mblogid(mid), uid=uid, title=cut, uploader=name,
                     asset_count=1, duration=None, source="synthetic", long_text=LONG_TEXT,
                     desktop=_desktop(mid, uid, name, cut, isLongText=True, **desktop),
                     mobile=_mobile(mid, uid, name, cut, isLongText=True, **mobile))
    posts.append(post)
    return posts


def _repost_post(template: dict[str, Any], original: WeiboPost, mid: str) -> WeiboPost:
    """A repost of ``original`` (a video post) on the envelope of the captured repost ``template``."""
    uid, name = "6543210987", "转发的人"
    bid = mid_to_mblogid(mid)
    data = copy.deepcopy(template["data"])
    data["user"].update(id=int(uid), screen_name=name, profile_url=f"https://m.weibo.cn/u/{uid}?uid={uid}")
    for button in data.get("buttons") or []:
        button.get("params", {})["uid"] = int(uid)
    data.update(id=mid, mid=mid, bid=bid, created_at=_created_at(mid),
                retweeted_status=copy.deepcopy(original.mobile["data"]),
                status_title=(original.title or "")[:20] + "...")
    desktop = {k: v for k, v in data.items() if k not in ("bid", "raw_text")}
    lifted = {k: v for k, v in copy.deepcopy(original.desktop).items() if k != "ok"}
    desktop.update(id=int(mid), idstr=mid, mblogid=bid, text_raw=data["raw_text"], pic_num=0,
                   retweeted_status=lifted, page_info=copy.deepcopy(lifted["page_info"]), ok=1)
    title = original.desktop["page_info"]["title"]  # the video's own title, not the placeholder
    return WeiboPost(key="repost", mid=mid, mblogid=bid, uid=uid, title=title, uploader=name,
                     asset_count=original.asset_count, duration=original.duration, source="synthetic",
                     desktop=desktop, mobile={"ok": 1, "data": data})


def _clone(template: WeiboPost, key: str, mid: str, n: int) -> WeiboPost:
    """A post like ``template`` under another mid, its text marked `` #<n>`` (see ``add_posts``)."""
    bid = mid_to_mblogid(mid)
    oid = f"1034:{int(template.oid.split(':')[1]) + n}" if template.oid else None
    desktop, mobile = copy.deepcopy(template.desktop), copy.deepcopy(template.mobile)
    data = mobile["data"]
    desktop.update(id=int(mid), idstr=mid, mid=mid, mblogid=bid, created_at=_created_at(mid))
    data.update(id=mid, mid=mid, bid=bid, created_at=_created_at(mid))
    for status in (desktop, data):
        for field_name in ("text", "text_raw", "raw_text"):
            if isinstance(status.get(field_name), str):
                status[field_name] += f" #{n}"
        if oid and isinstance(status.get("page_info"), dict):
            status["page_info"]["object_id"] = oid
    title = f"{template.title} #{n}" if template.title and template.key != "repost" else template.title
    return WeiboPost(key=key, mid=mid, mblogid=bid, uid=template.uid, title=title, uploader=template.uploader,
                     asset_count=template.asset_count, duration=template.duration, source="synthetic", oid=oid,
                     desktop=desktop, mobile=mobile)


def _pictures_post(mid: str, uid: str, name: str) -> WeiboPost:
    pids = ["006whbZwly1h2x3k8tq1vj30u0140q5d", "006whbZwly1h2x3k9b0n2j30u0140n0x"]
    text = "春天的两张照片 #trawl#"
    html_text = ('春天的两张照片 <a href="https://m.weibo.cn/search?containerid=231522type%3D1%26q%3D%23trawl%23">'
                 '<span class="surl-text">#trawl#</span></a>')
    pic_infos = {pid: {
        "thumbnail": {"url": f"https://wx1.sinaimg.cn/wap180/{pid}.jpg", "width": 135, "height": 180},
        "bmiddle": {"url": f"https://wx1.sinaimg.cn/wap360/{pid}.jpg", "width": 360, "height": 480},
        "large": {"url": f"https://wx1.sinaimg.cn/orj1080/{pid}.jpg", "width": 1080, "height": 1440},
        "original": {"url": f"https://wx1.sinaimg.cn/orj1080/{pid}.jpg", "width": 1080, "height": 1440},
        "largest": {"url": f"https://wx1.sinaimg.cn/large/{pid}.jpg", "width": 1080, "height": 1440},
        "mw2000": {"url": f"https://wx1.sinaimg.cn/mw2000/{pid}.jpg", "width": 1080, "height": 1440},
        "object_id": f"1042018:{hashlib.md5(pid.encode()).hexdigest()}", "pic_id": pid, "photo_tag": 0,
        "type": "pic", "pic_status": 1,
    } for pid in pids}
    pics = [{
        "pid": pid, "url": f"https://wx1.sinaimg.cn/orj360/{pid}.jpg", "size": "orj360",
        "geo": {"width": 360, "height": 480, "croped": False},
        "large": {"size": "large", "url": f"https://wx1.sinaimg.cn/large/{pid}.jpg",
                  "geo": {"width": "1080", "height": "1440", "croped": False}},
    } for pid in pids]
    desktop = _desktop(mid, uid, name, text, pic_ids=pids, pic_num=len(pids), pic_infos=pic_infos)
    desktop["text"] = html_text
    mobile = _mobile(mid, uid, name, text, pic_ids=pids, pics=pics)
    mobile["data"]["text"] = html_text
    return WeiboPost(key="pictures", mid=mid, mblogid=mid_to_mblogid(mid), uid=uid, title=text, uploader=name,
                     asset_count=len(pids), duration=None, source="synthetic", desktop=desktop, mobile=mobile)


# -- small helpers ---------------------------------------------------------------------------
def _is_media(value: str) -> bool:
    if not value.startswith(("http://", "https://", "//")):
        return False
    return (urlsplit(_absolute(value)).hostname or "").endswith(MEDIA_HOSTS)


def _mp4_urls(node: Any) -> list[str]:
    """The MP4 URLs on the media hosts anywhere in ``node`` (a post's page_info)."""
    if isinstance(node, dict):
        return [url for value in node.values() for url in _mp4_urls(value)]
    if isinstance(node, list):
        return [url for value in node for url in _mp4_urls(value)]
    if isinstance(node, str) and _is_media(node) and urlsplit(_absolute(node)).path.lower().endswith(".mp4"):
        return [node]
    return []


def _media_key(url: str) -> str:
    """What identifies a media file: host and path (the query only signs and labels it)."""
    parts = urlsplit(_absolute(url))
    return f"{parts.hostname}{parts.path}"


def _absolute(url: str) -> str:
    return "https:" + url if url.startswith("//") else url


def _file_name(key: str) -> str:
    """The signed-URL file name for a media host + path: short, unique, keeps the extension."""
    return hashlib.sha1(key.encode()).hexdigest()[:16] + posixpath.splitext(key)[1].lower()


def _protocol_relative(url: str) -> str:
    return "//" + url.split("://", 1)[1] if "://" in url else url


def _json(doc: Any) -> Response:
    body = json.dumps(doc, ensure_ascii=False).encode("utf-8")
    return Response(200, {"Content-Type": "application/json; charset=utf-8"}, body)


def _html(body: bytes) -> Response:
    return Response(200, {"Content-Type": "text/html; charset=utf-8"}, body)


def install_demo(sim: Simulator) -> PlatformDemo:
    """The site with the demo's cases: a video post under two URL forms, pictures, a text-only post."""
    site = install_weibo_site(sim)
    video, pictures, text_only = site.posts["playback"], site.posts["pictures"], site.posts["novideo"]
    return PlatformDemo(settings=site.settings(requests_per_second=20), failures="a Weibo post without media", cases=[
        DemoCase(sim.url(f"/{video.uid}/{video.mblogid}"), "committed", "Weibo video post", "weibo"),
        DemoCase(sim.url(f"/detail/{video.mid}"), "committed", "same post, m.weibo.cn form by mid", "weibo"),
        DemoCase(sim.url(f"/{pictures.uid}/{pictures.mblogid}"), "committed", "Weibo post with two pictures"),
        DemoCase(sim.url(f"/{text_only.uid}/{text_only.mblogid}"), "unsupported_url", "Weibo post without media"),
    ])
