"""The simulated Weibo's comments, at m.weibo.cn's paths, on the shapes yt-dlp's, MediaCrawler's and
weibo-crawler's code read (none captured): ``comments/hotflow`` pages a post's comments
(``{"ok": 1, "data": {"data": [...], "total_number", "max_id", "max_id_type"}}``, ``max_id`` 0 on the
last page), ``comments/hotFlowChild`` a comment's replies (``{"ok": 1, "data": [...],
"total_number", "max_id", "max_id_type"}``); a post without comments answers ``{"ok": 0}``. Comment
text is HTML, as Weibo sends it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from trawl.simulator.server import Request, Response, Simulator

COMMENTS = 120  # top-level comments of a commented post
PAGE = 20
CHILD_PAGE = 10
TEXTS = ('转发了 <a href="/n/某人">@某人</a>', "太好看了 <span class=\"url-icon\"><img alt=\"[心]\" src=\"x.png\"></span>",
         "<script>not run</script> 原样", "第一")
_CST = timezone(timedelta(hours=8))


@dataclass
class WeiboCommentsSite:
    sim: Simulator
    commented: set[str] = field(default_factory=set)  # the mids with comments
    pages: list[str] = field(default_factory=list)  # the hotflow pages asked for (their max_id)

    def install(self) -> None:
        self.sim.add_exact("/comments/hotflow", self.hotflow)
        self.sim.add_exact("/comments/hotFlowChild", self.child)

    def top(self, mid: str) -> list[dict[str, Any]]:
        base = int(mid) * 1000
        return [self._comment(base + i, i, 0) for i in range(COMMENTS)]

    def replies(self, root: int) -> list[dict[str, Any]]:
        """Every fourth comment has 1 to 15 replies; every third answers the reply before it."""
        index = root % 1000
        count = index % 15 + 1 if index % 4 == 0 else 0
        out = []
        for j in range(count):
            reply = self._comment(root * 100 + j, j, root)
            if j % 3 == 2:
                reply["reply_comment"] = {"id": root * 100 + j - 1, "text": "…"}
            out.append(reply)
        return out

    def expected(self, mid: str) -> int:
        return sum(1 + len(self.replies(c["id"])) for c in self.top(mid))

    def _comment(self, cid: int, n: int, root: int) -> dict[str, Any]:
        when = datetime(2026, 12, 1, 8, 0, tzinfo=UTC) + timedelta(minutes=cid % 100_000)
        uid = 6_000_000_000 + cid % 1_000_000
        total = len(self.replies(cid)) if root == 0 else 0
        return {"created_at": when.astimezone(_CST).strftime("%a %b %d %H:%M:%S %z %Y"), "id": cid, "rootid": root or cid,
                "rootidstr": str(root or cid), "floor_number": n + 1, "text": TEXTS[n % len(TEXTS)] + f" {n}",
                "disable_reply": 0, "like_count": (cid * 7) % 301, "total_number": total, "isLikedByMblogAuthor": False,
                "more_info_type": 0, "bid": "", "source": "来自上海",
                "user": {"id": uid, "screen_name": f"微博用户{uid % 100000}", "profile_image_url": "", "verified": False},
                "comments": self.replies(cid)[:2] if root == 0 and total else False, "max_id": 0}

    def hotflow(self, req: Request) -> Response:
        mid = req.arg("id") or ""
        if mid not in self.commented or req.arg("mid") != mid:
            return _json({"ok": 0, "msg": "快来发表你的评论吧"})
        self.pages.append(req.arg("max_id") or "0")
        comments = self.top(mid)
        start = int(req.arg("max_id") or 0) % 1_000_000 if req.arg("max_id") else 0
        page = comments[start:start + PAGE]
        following = start + PAGE if start + PAGE < len(comments) else 0
        return _json({"ok": 1, "data": {"data": page, "total_number": self.expected(mid),
                                        "max_id": int(mid) * 1_000_000 + following if following else 0,
                                        "max_id_type": 0}})

    def child(self, req: Request) -> Response:
        root = int(req.arg("cid") or 0)
        replies = self.replies(root)
        if not replies:
            return _json({"ok": 0, "msg": "暂无回复"})
        start = int(req.arg("max_id") or 0) % 1_000_000
        following = start + CHILD_PAGE if start + CHILD_PAGE < len(replies) else 0
        return _json({"ok": 1, "data": replies[start:start + CHILD_PAGE], "total_number": len(replies),
                      "max_id": root * 1_000_000 + following if following else 0, "max_id_type": 0})


def _json(doc: Any) -> Response:
    return Response(200, {"Content-Type": "application/json; charset=utf-8"}, json.dumps(doc, ensure_ascii=False).encode())
