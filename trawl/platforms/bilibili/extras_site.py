"""The simulated Bilibili's extras, on the real answers' shapes (bilibili-API-collect, docs/danmaku,
docs/video/player.md and grpc_api/.../dm.proto; no capture of these answers is kept): every video's
danmaku as protobuf segments (``x/v2/dm/web/seg.so``: ``DmSegMobileReply``, 6 minutes each, an
empty body past the last) and as the XML file (``/comment/<cid>.xml``); the player's answer
(``x/player/wbi/v2``, WBI-signed) with :data:`TRACKS` subtitle tracks for the parts in
``subtitled`` (an uploader's CC track, an AI track, and an AI track listed without its
``subtitle_url``, as Bilibili lists it to an anonymous visitor) and ``view_points`` chapters;
each track's body at ``/bfs/subtitle/<cid>-<lan>.json`` (``//host/path`` in the answer, as real);
the comments of the videos in ``commented`` (aid): :data:`COMMENTS` top-level ones and a pinned
one over pages of 20 (``x/v2/reply/wbi/main``, WBI-signed, ``pagination_str`` offsets, the pinned
one in ``top_replies`` of the first page), every fifth with a thread of replies, some answering
another reply, paged by ``x/v2/reply/reply`` (docs/comment/list.md of bilibili-API-collect).

:attr:`ExtrasSite.fault` breaks an extra for tests: ``{"danmaku": "garbage"}`` answers bytes that
are no segment, ``{"danmaku": "503"}`` a 503 every time.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trawl.platforms.bilibili.danmaku import Danmaku, danmaku_segment, danmaku_xml
from trawl.simulator.server import Request, Response, Simulator

SEGMENT_SECONDS = 360
DANMAKU_PER_MINUTE = 6
# Texts as viewers send them: CJK, emoji, markup-looking text that must be stored as given.
DANMAKU_TEXTS = ("前方高能", "哈哈哈哈", "awsl", "<b>不是标签</b> & 也不是实体 &amp;", "🎉🎉🎉", "第一！", "这段好听")
# (lan, lan_doc, type, ai_type, ai_status, served): type 1 and lan ai-* are AI-generated tracks.
TRACKS = (("zh-CN", "中文（中国）", 0, 0, 0, True), ("ai-zh", "中文（自动生成）", 1, 0, 2, True),
          ("ai-en", "English（自动翻译）", 1, 1, 2, False))
CUE_SECONDS = 10
COMMENTS = 250  # top-level comments of a commented video, besides its pinned one
COMMENT_PAGE = 20
COMMENT_TEXTS = ("好听！", "<script>alert('不会执行')</script> 原样保存", "第一次见这么玩的 😂", "三连了", "求BGM")
CHAPTERS = ("开场", "正片 <一>", "彩蛋")


@dataclass
class ExtrasSite:
    sim: Simulator
    # cid -> the part's duration in seconds (the view answers' pages), filled by the Bilibili site.
    durations: Callable[[], dict[int, float]]
    # Whether a WBI-signed request's signature is right (the site's check).
    signed_ok: Callable[[Request], bool] = lambda req: True
    # cid -> aid, bvid of the videos the player answers for (the view answers), filled by the site.
    owners: Callable[[], dict[int, tuple[int, str]]] = dict
    subtitled: set[int] = field(default_factory=set)  # the cids with subtitle tracks and chapters
    commented: set[int] = field(default_factory=set)  # the aids with comments
    comment_pages: list[int] = field(default_factory=list)  # the offsets of the comment pages asked for
    fail_comment_page_once: int | None = None  # the comment page at this offset answers 503, once
    fault: dict[str, str] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)

    def install(self) -> None:
        self.sim.add_exact("/x/v2/dm/web/seg.so", self.segment)
        self.sim.add_route(r"/comment/(?P<cid>\d+)\.xml", self.xml)
        self.sim.add_exact("/x/player/wbi/v2", self.player)
        self.sim.add_route(r"/bfs/subtitle/(?P<cid>\d+)-(?P<lan>[A-Za-z0-9_-]+)\.json", self.subtitle)
        self.sim.add_exact("/x/v2/reply/wbi/main", self.comments_main)
        self.sim.add_exact("/x/v2/reply/reply", self.comments_thread)

    # -- comments --------------------------------------------------------------------------------
    def top_comments(self, aid: int) -> list[dict[str, Any]]:
        """The top-level comments, the pinned one first (it is not among the pages' ``replies``)."""
        return [self._reply(aid, aid * 1000 + i, 0, 0, i) for i in range(COMMENTS + 1)]

    def thread(self, aid: int, root: int) -> list[dict[str, Any]]:
        """A thread's replies, oldest first: every fifth comment (and the pinned one) has 1 to 23;
        every third reply answers the reply before it, not the root."""
        index = root - aid * 1000
        count = index % 23 + 1 if index % 5 == 0 else 0
        replies = []
        for j in range(count):
            rpid = root * 100 + j
            parent = root * 100 + j - 1 if j % 3 == 2 else root
            replies.append(self._reply(aid, rpid, root, parent, j))
        return replies

    def expected_comments(self, aid: int) -> int:
        """Every comment of a commented video, replies included."""
        return sum(1 + len(self.thread(aid, c["rpid"])) for c in self.top_comments(aid))

    def _reply(self, aid: int, rpid: int, root: int, parent: int, n: int) -> dict[str, Any]:
        rcount = len(self.thread(aid, rpid)) if root == 0 else 0
        mid = 3_000_000 + (rpid * 7919) % 1_000_000
        preview = self.thread(aid, rpid)[:3] if root == 0 else None
        return {"rpid": rpid, "oid": aid, "type": 1, "mid": mid, "root": root, "parent": parent, "dialog": root and parent,
                "count": rcount, "rcount": rcount, "state": 0, "fansgrade": 0, "attr": 0,
                "ctime": 1_700_000_000 + rpid % 10_000_000, "rpid_str": str(rpid), "root_str": str(root),
                "parent_str": str(parent), "like": (rpid * 13) % 997, "action": 0,
                "member": {"mid": str(mid), "uname": f"用户{mid}", "sex": "保密", "sign": "",
                           "avatar": "https://i0.hdslb.com/bfs/face/member/noface.jpg"},
                "content": {"message": COMMENT_TEXTS[n % len(COMMENT_TEXTS)] + (f" #{n}" if root == 0 else f" 回复{n}"),
                            "members": [], "jump_url": {}, "max_line": 6},
                "replies": preview or None, "reply_control": {"time_desc": "1天前发布", "location": "IP属地：上海"}}

    def comments_main(self, req: Request) -> Response:
        self._count("comments")
        broken = self._broken("comments")
        if broken is not None:
            return broken
        if not self.signed_ok(req):
            return _json({"code": -403, "message": "访问权限不足", "ttl": 1})
        aid = _int(req.arg("oid"))
        if aid is None or req.arg("type") != "1" or aid not in self.commented:
            return _json({"code": 12002, "message": "评论区已关闭", "ttl": 1})
        try:
            offset = json.loads(req.arg("pagination_str") or "{}").get("offset") or ""
            start = int(json.loads(offset)["Data"]["cursor"]) if offset else 0
        except (ValueError, KeyError, TypeError, AttributeError):
            return _json({"code": -400, "message": "请求错误", "ttl": 1})
        self.comment_pages.append(start)
        if start == self.fail_comment_page_once:
            self.fail_comment_page_once = None
            return Response(503, {"Content-Type": "text/html"}, b"<html>503</html>")
        pinned, *rest = self.top_comments(aid)
        page = rest[start:start + COMMENT_PAGE]
        end = start + COMMENT_PAGE >= len(rest)
        following = "" if end else json.dumps({"type": 1, "direction": 1, "Data": {"cursor": start + COMMENT_PAGE}})
        return _json({"code": 0, "message": "0", "ttl": 1, "data": {
            "cursor": {"is_begin": start == 0, "prev": start, "next": start + COMMENT_PAGE, "is_end": end, "mode": 3,
                       "mode_text": "热门评论", "all_count": self.expected_comments(aid),
                       "support_mode": [2, 3], "name": "热门评论",
                       "pagination_reply": {"next_offset": following} if following else {},
                       "session_id": "1763000000000000"},
            "replies": page, "top_replies": [pinned] if start == 0 else [],
            "upper": {"mid": 0}, "vote": 0, "blacklist": 0, "assist": 0, "mode": 3,
            "support_mode": [2, 3], "control": {"input_disable": False}, "note": 1}})

    def comments_thread(self, req: Request) -> Response:
        self._count("comments")
        if self.fault.get("comment_thread") == "503":
            return Response(503, {"Content-Type": "text/html"}, b"<html>503</html>")
        aid, root = _int(req.arg("oid")), _int(req.arg("root"))
        pn, ps = _int(req.arg("pn")) or 1, min(_int(req.arg("ps")) or 20, 49)
        if aid is None or root is None or aid not in self.commented:
            return _json({"code": 12022, "message": "已经被删除了", "ttl": 1})
        replies = self.thread(aid, root)
        return _json({"code": 0, "message": "0", "ttl": 1, "data": {
            "config": {"showtopic": 1}, "control": {"input_disable": False},
            "page": {"count": len(replies), "num": pn, "size": ps},
            "replies": replies[(pn - 1) * ps:pn * ps], "root": self._reply(aid, root, 0, 0, root - aid * 1000),
            "upper": {"mid": 0}}})

    # -- the player: subtitle tracks and chapters ------------------------------------------------
    def cues(self, cid: int, lan: str) -> list[dict[str, Any]]:
        """A track's cues: one every :data:`CUE_SECONDS` over the part's duration."""
        duration = self.durations().get(cid) or 0
        ai = lan.startswith("ai-")
        return [{"from": float(t), "to": float(min(t + CUE_SECONDS - 1, duration)), "sid": i + 1, "location": 2,
                 "content": (f"AI 第{i + 1}句" if ai else f"第{i + 1}句 <i>原样</i>") if lan != "ai-en" else f"Line {i + 1}",
                 "music": 0.0}
                for i, t in enumerate(range(0, int(duration), CUE_SECONDS))]

    def chapters(self, cid: int) -> list[dict[str, Any]]:
        duration = int(self.durations().get(cid) or 0)
        cut = [0, duration // 3, 2 * duration // 3, duration]
        return [{"type": 2, "from": cut[i], "to": cut[i + 1], "content": title, "imgUrl": "", "logoUrl": "",
                 "team_type": "", "team_name": ""} for i, title in enumerate(CHAPTERS)]

    def player(self, req: Request) -> Response:
        self._count("player")
        broken = self._broken("subtitles")
        if broken is not None:
            return broken
        if not self.signed_ok(req):
            return _json({"code": -403, "message": "访问权限不足", "ttl": 1})
        cid = _int(req.arg("cid"))
        owner = self.owners().get(cid or 0)
        if cid is None or owner is None or str(owner[0]) != req.arg("aid"):
            return _json({"code": -400, "message": "请求错误", "ttl": 1})
        tracks = []
        if cid in self.subtitled:
            host = self.sim.base_url.split(":", 1)[1]  # //127.0.0.1:port, as Bilibili gives //aisubtitle.hdslb.com
            for n, (lan, doc, kind, ai_type, ai_status, served) in enumerate(TRACKS):
                tracks.append({"id": cid * 10 + n, "lan": lan, "lan_doc": doc, "is_lock": False,
                               "subtitle_url": f"{host}/bfs/subtitle/{cid}-{lan}.json" if served else "",
                               "type": kind, "id_str": str(cid * 10 + n), "ai_type": ai_type, "ai_status": ai_status})
        return _json({"code": 0, "message": "0", "ttl": 1, "data": {
            "aid": owner[0], "bvid": owner[1], "allow_bp": False, "no_share": False, "cid": cid,
            "subtitle": {"allow_submit": False, "lan": "", "lan_doc": "", "subtitles": tracks},
            "view_points": self.chapters(cid) if cid in self.subtitled else [],
            "login_mid": 0, "login_mid_hash": "", "is_owner": False, "name": "", "permission": "0"}})

    def subtitle(self, req: Request) -> Response:
        self._count("subtitle")
        assert req.match is not None
        cid, lan = int(req.match.group("cid")), req.match.group("lan")
        if self.fault.get("subtitle") == "garbage":
            return Response(200, {"Content-Type": "application/json"}, b'{"body": "not cues"}')
        if cid not in self.subtitled or lan not in {t[0] for t in TRACKS if t[5]}:
            return Response(404, {"Content-Type": "text/html"}, b"<html>404 Not Found</html>")
        return _json({"font_size": 0.4, "font_color": "#FFFFFF", "background_alpha": 0.5,
                      "background_color": "#9C27B0", "Stroke": "none", "type": "AIsubtitle" if lan.startswith("ai-")
                      else "", "lang": lan.removeprefix("ai-"), "version": "v1.6.0.4", "body": self.cues(cid, lan)})

    def _count(self, extra: str) -> None:
        self.requests[extra] = self.requests.get(extra, 0) + 1

    def _broken(self, extra: str) -> Response | None:
        fault = self.fault.get(extra)
        if fault == "503":
            return Response(503, {"Content-Type": "text/html"}, b"<html>503 Service Unavailable</html>")
        if fault == "garbage":
            return Response(200, {"Content-Type": "application/octet-stream"}, b"\xff\xff\xff\xff not a segment")
        return None

    def danmaku(self, cid: int) -> list[Danmaku]:
        """Every comment of a part: :data:`DANMAKU_PER_MINUTE` a minute over its whole duration."""
        duration = self.durations().get(cid)
        if duration is None:
            return []
        count = max(1, int(duration / 60 * DANMAKU_PER_MINUTE))
        return [Danmaku(seconds=round(duration * (i + 0.5) / count, 3), text=DANMAKU_TEXTS[i % len(DANMAKU_TEXTS)],
                        mode=(1, 1, 4, 5)[i % 4], size=(25, 25, 18, 36)[i % 4], color=(0xFFFFFF, 0xFE0302, 0x00CD00)[i % 3],
                        sent_at=1_700_000_000 + i * 37, pool=0, user_hash=f"{(cid * 31 + i) & 0xFFFFFFFF:08x}",
                        id=str(cid * 100_000 + i), weight=i % 11)
                for i in range(count)]

    def segment(self, req: Request) -> Response:
        self._count("danmaku")
        broken = self._broken("danmaku")
        if broken is not None:
            return broken
        cid, index = _int(req.arg("oid")), _int(req.arg("segment_index"))
        if req.arg("type") != "1" or cid is None or index is None or index < 1:
            return _json({"code": -400, "message": "请求错误", "ttl": 1})
        start, end = (index - 1) * SEGMENT_SECONDS, index * SEGMENT_SECONDS
        comments = [c for c in self.danmaku(cid) if start <= c.seconds < end]
        return Response(200, {"Content-Type": "application/octet-stream"}, danmaku_segment(comments))

    def xml(self, req: Request) -> Response:
        self._count("danmaku")
        broken = self._broken("danmaku")
        if broken is not None:
            return broken
        cid = int(req.match.group("cid")) if req.match else 0
        return Response(200, {"Content-Type": "text/xml"}, danmaku_xml(self.danmaku(cid), chat_id=cid))

    def segments(self, cid: int) -> int:
        """How many segments a part's danmaku has (for tests)."""
        return max(1, math.ceil((self.durations().get(cid) or 0) / SEGMENT_SECONDS))


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _json(doc: Any) -> Response:
    return Response(200, {"Content-Type": "application/json; charset=utf-8"}, json.dumps(doc, ensure_ascii=False).encode())
