"""The simulated Weibo's posts of the newer content types, and the long-text APIs.

None of these shapes is captured: each follows what open-source readers of the real APIs take
(named in :mod:`trawl.platforms.weibo.media` and :mod:`trawl.platforms.weibo.longtext`); the
values (ids, texts) are synthetic.

- ``livephoto``: two pictures, the first a Live Photo. Desktop: ``pic_infos[<pid>]`` with
  ``"type": "livephoto"`` and ``video`` (the ``.mov`` on ``livephoto.us.sinaimg.cn``, wrapped in
  ``video.weibo.com/media/play?livephoto=`` as third-party readers report it). Mobile: the
  picture's ``pics[]`` entry with ``"type": "livephotos"`` and ``videoSrc`` (the file itself),
  and the status-level ``live_photo`` list.
- ``mixed``: a mixed-media post, picture, video, picture. Desktop: ``mix_media_info.items[]``
  with ``{"type": "pic", "data": <pic_info>}`` and ``{"type": "video", "data": <page_info>}``
  (the captured playback ``page_info``); mobile: ``pics[]`` with the video as a
  ``{"type": "video", "videoSrc", "duration"}`` entry among the pictures.
- ``longtext``: a post with one picture whose text is cut (``isLongText``); its full text comes
  from ``GET /ajax/statuses/longtext?id=<mblogid>`` (``{"ok": 1, "http_code": 200, "data":
  {"longTextContent": <plain text>}}``; ``data`` empty for a post without more text) and
  ``GET /statuses/extend?id=<mid>`` (``{"ok": 1, "data": {"ok": 1, "longTextContent": <HTML>}}``).
  With ``WeiboSite.long_text_gone`` both answer as for a deleted text (``ok: 0``).
"""

from __future__ import annotations

import hashlib
import html
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, urlsplit

from trawl.simulator.server import Request, Response

if TYPE_CHECKING:
    from trawl.platforms.weibo.site import WeiboSite

LONG_TEXT = ("今天去了山里，走了很久的路。" * 6 + "\n\n"
             "第二段：山顶的风很大，云从脚下经过，远处的城市像一张旧照片。" * 2 + "\n\n"
             "第三段：下山的时候天黑了，路灯一盏一盏亮起来。#trawl#")
CUT_AT = 140  # about where Weibo cuts a long post's text


def cut_text(full: str) -> str:
    """A long post's text as the status carries it: cut, the rest behind 展开 (expand)."""
    return full[:CUT_AT].replace("\n", " ") + "..."


def _sizes(pid: str) -> dict[str, Any]:
    """A desktop ``pic_info``'s sizes (gallery-dl's reading of ``pic_infos``)."""
    host = "https://wx1.sinaimg.cn"
    return {
        "thumbnail": {"url": f"{host}/wap180/{pid}.jpg", "width": 135, "height": 180},
        "bmiddle": {"url": f"{host}/wap360/{pid}.jpg", "width": 360, "height": 480},
        "large": {"url": f"{host}/orj1080/{pid}.jpg", "width": 1080, "height": 1440},
        "original": {"url": f"{host}/orj1080/{pid}.jpg", "width": 1080, "height": 1440},
        "largest": {"url": f"{host}/large/{pid}.jpg", "width": 3024, "height": 4032},
        "mw2000": {"url": f"{host}/mw2000/{pid}.jpg", "width": 1500, "height": 2000},
        "object_id": f"1042018:{hashlib.md5(pid.encode()).hexdigest()}", "pic_id": pid, "photo_tag": 0,
        "type": "pic", "pic_status": 1,
    }


def _mobile_pic(pid: str) -> dict[str, Any]:
    return {"pid": pid, "url": f"https://wx1.sinaimg.cn/orj360/{pid}.jpg", "size": "orj360",
            "geo": {"width": 360, "height": 480, "croped": False},
            "large": {"size": "large", "url": f"https://wx1.sinaimg.cn/large/{pid}.jpg",
                      "geo": {"width": "3024", "height": "4032", "croped": False}}}


def live_file(pid: str) -> str:
    """The Live Photo's video file of picture ``pid``."""
    return f"https://livephoto.us.sinaimg.cn/{hashlib.md5(pid.encode()).hexdigest()[:24]}.mov"


def livephoto_media(pids: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(desktop fields, mobile fields) of a post whose first picture is a Live Photo."""
    live, still = pids
    wrapped = f"https://video.weibo.com/media/play?livephoto={quote(live_file(live), safe='')}"
    infos = {pid: _sizes(pid) for pid in pids}
    infos[live].update(type="livephoto", video=wrapped)
    pics = [_mobile_pic(pid) for pid in pids]
    pics[0].update(type="livephotos", videoSrc=live_file(live))
    desktop = {"pic_ids": pids, "pic_num": len(pids), "pic_infos": infos}
    mobile = {"pic_ids": pids, "pics": pics, "live_photo": [live_file(live)]}
    return desktop, mobile


def picture_media(pid: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(desktop fields, mobile fields) of a post with one plain picture."""
    return ({"pic_ids": [pid], "pic_num": 1, "pic_infos": {pid: _sizes(pid)}},
            {"pic_ids": [pid], "pics": [_mobile_pic(pid)]})


def mixed_media(pids: list[str], page_info: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(desktop fields, mobile fields) of a mixed-media post: picture, video, picture."""
    first, last = pids
    items = [{"type": "pic", "data": _sizes(first)},
             {"type": "video", "data": page_info},
             {"type": "pic", "data": _sizes(last)}]
    best = max(page_info["media_info"]["playback_list"], key=lambda e: e["meta"]["quality_index"])
    video = {"pid": page_info["object_id"], "type": "video", "videoSrc": best["play_info"]["url"],
             "duration": page_info["media_info"]["duration"],
             "url": f"https://wx1.sinaimg.cn/orj360/{first}.jpg"}
    desktop = {"pic_ids": [], "pic_num": 0, "mix_media_info": {"items": items}}
    mobile = {"pic_ids": pids, "pics": [_mobile_pic(first), video, _mobile_pic(last)]}
    return desktop, mobile


def wrapped_live_file(url: str) -> str | None:
    """The file a ``video.weibo.com/media/play?livephoto=<file>`` wrapper names, else None."""
    parts = urlsplit(url)
    if parts.hostname != "video.weibo.com" or parts.path != "/media/play":
        return None
    return (parse_qs(parts.query).get("livephoto") or [None])[0]


def _json(doc: Any) -> Response:
    return Response(200, {"Content-Type": "application/json; charset=utf-8"},
                    json.dumps(doc, ensure_ascii=False).encode("utf-8"))


def install_content_routes(site: WeiboSite) -> None:
    """``/ajax/statuses/longtext`` and ``/statuses/extend`` for the site's posts, and the Live
    Photo wrapper ``/media/play`` (rewritten answers name it on the simulator)."""

    def desktop(req: Request) -> Response:
        refused = site.desktop_refusal(req)
        if refused is not None:
            return refused
        post = site.post_by_id(req.arg("id") or "")
        if post is None or site.long_text_gone:
            return _json({"ok": 0, "http_code": 200, "msg": "微博不存在或暂无查看权限!"})
        data = {"longTextContent": post.long_text, "url_struct": [], "topic_struct": []} if post.long_text else {}
        return _json({"ok": 1, "http_code": 200, "data": data})

    def mobile(req: Request) -> Response:
        refused = site.refusal(req, "mobile")
        if refused is not None:
            return refused
        post = site.post_by_id(req.arg("id") or "")
        if post is None or site.long_text_gone or not post.long_text:
            return _json({"ok": 0, "msg": "微博不存在或暂无查看权限!"})
        markup = html.escape(post.long_text, quote=False).replace("\n", "<br />")
        return _json({"ok": 1, "data": {"ok": 1, "longTextContent": markup, "reposts_count": 0,
                                        "comments_count": 0, "attitudes_count": 3}})

    def wrapper(req: Request) -> Response:
        """The Live Photo wrapper: a redirect to the (simulator's) file it names."""
        target = req.arg("livephoto") or ""
        if not target.startswith(site.sim.base_url):
            return Response(404, {"Content-Type": "text/html"}, b"<html>404</html>")
        return Response(302, {"Location": target}, b"")

    site.sim.add_exact("/media/play", wrapper)
    site.sim.add_exact("/ajax/statuses/longtext", desktop)
    site.sim.add_exact("/statuses/extend", mobile)
