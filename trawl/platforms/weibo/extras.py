"""Weibo's extras (trawl.extras): a post's comments with their replies, from m.weibo.cn.

``comments/hotflow?id=<mid>&mid=<mid>&max_id_type=0`` pages the top-level comments (the next
page by the answer's ``max_id`` and ``max_id_type``; ``max_id`` 0, or ``ok: 0``, ends them);
``comments/hotFlowChild?cid=<comment id>&max_id=0&max_id_type=0`` pages a comment's replies the
same way. One document per post (:mod:`trawl.comments`), the text as Weibo gives it (HTML, kept
as given), up to ``max_comments`` and ``max_replies``; each page's progress is heartbeated, so a
retried attempt goes on from the page after the last one read.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from trawl.comments import CommentBook, comment
from trawl.errors import ParseError
from trawl.extras import Extra, ExtraContext, ExtraFile
from trawl.models import Resolved
from trawl.platforms.base import dig, int_or_none, load_cookies, str_or_none
from trawl.platforms.weibo.config import WeiboSettings
from trawl.platforms.weibo.errors import ANSWERS
from trawl.platforms.weibo.resolver import parse_created_at

MAX_PAGES = 10_000  # pages of comments (top-level and replies together) read at most


class CommentsExtra(Extra):
    name = "comments"
    kind = "comments"
    answers = ANSWERS

    def __init__(self, config: WeiboSettings) -> None:
        self.config = config
        self.paced(config.requests_per_second)

    def applies(self, resolved: Resolved) -> bool:
        return self.config.max_comments > 0 and str(resolved.metadata.get("mid") or "").isdigit()

    def headers(self) -> dict[str, str]:
        headers = {"Referer": f"{self.config.mobile_base.rstrip('/')}/", "User-Agent": self.config.user_agent,
                   "X-Requested-With": "XMLHttpRequest", **self.config.headers}
        cookies = load_cookies(self.config.cookies_file)
        if cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        return headers

    def fetch(self, resolved: Resolved, ctx: ExtraContext) -> list[ExtraFile]:
        mid = str(resolved.metadata["mid"])
        base = self.config.mobile_base.rstrip("/")
        book = CommentBook("weibo", mid, self.config.max_comments, self.config.max_replies)
        book.resume(ctx.resumed)
        cursor = book.cursor or {"max_id": 0, "type": 0, "done": False, "threads": [], "thread": 0, "child": 0,
                                 "child_type": 0}
        first = f"{base}/comments/hotflow?id={mid}&mid={mid}&max_id_type=0"
        pages = 0
        while not cursor["done"] and pages < MAX_PAGES:
            url = first if not cursor["max_id"] else (f"{base}/comments/hotflow?id={mid}&mid={mid}"
                                                      f"&max_id={cursor['max_id']}&max_id_type={cursor['type']}")
            data = self._page(ctx, url)
            pages += 1
            for item in _comments(dig(data, "data")):
                if book.add(_comment(item, "root")) and (int_or_none(item.get("total_number")) or 0) > 0:
                    cursor["threads"].append(str(item.get("id")))
            book.total = int_or_none(dig(data, "total_number")) or book.total
            following = int_or_none(dig(data, "max_id")) or 0
            cursor["done"] = not following or following == cursor["max_id"] or not book.room(reply=False)
            cursor["max_id"], cursor["type"] = following, int_or_none(dig(data, "max_id_type")) or 0
            book.cursor = cursor
            ctx.heartbeat(book.state())
        while cursor["thread"] < len(cursor["threads"]) and pages < MAX_PAGES and book.room(reply=True):
            root = cursor["threads"][cursor["thread"]]
            data = self._page(ctx, f"{base}/comments/hotFlowChild?cid={root}&max_id={cursor['child']}"
                                   f"&max_id_type={cursor['child_type']}")
            pages += 1
            items = _comments(dig(data, "data"))
            for item in items:
                parent = str_or_none(str(dig(item, "reply_comment", "id") or "")) or root
                book.add(_comment(item, parent))
            following = int_or_none(dig(data, "max_id")) or 0
            if not items or not following or following == cursor["child"]:
                cursor["thread"], cursor["child"], cursor["child_type"] = cursor["thread"] + 1, 0, 0
            else:
                cursor["child"], cursor["child_type"] = following, int_or_none(dig(data, "max_id_type")) or 0
            book.cursor = cursor
            ctx.heartbeat(book.state())
        if pages >= MAX_PAGES:
            book.truncated = True
        return [ExtraFile("comments", self.kind, body=book.document(), mime="application/json", source_url=first)]

    def _page(self, ctx: ExtraContext, url: str) -> dict[str, Any]:
        """A page's ``data``; ``ok: 0`` (no comments, or none any more) is an empty page."""
        doc = self.get_json(ctx, url, self.headers())
        if doc.get("ok") == 0:
            return {}
        if doc.get("ok") != 1:
            raise ParseError(f"weibo: {url}: comment page answers ok {str(doc.get('ok'))[:20]!r}")
        data = doc.get("data")
        if isinstance(data, list):  # hotFlowChild: the comments at the top, paging beside them
            return {**doc, "data": data}
        return data if isinstance(data, dict) else {}


def _comments(value: Any) -> list[dict[str, Any]]:
    return [c for c in value[:1000] if isinstance(c, dict) and int_or_none(c.get("id"))] if isinstance(value, list) else []


def _comment(item: dict[str, Any], parent: str) -> dict[str, Any]:
    published = parse_created_at(item.get("created_at"))
    timestamp = int(datetime.fromisoformat(published).timestamp()) if published else None
    return comment(int_or_none(item.get("id")), parent if parent != "root" else None, item.get("text"),
                   dig(item, "user", "screen_name"), dig(item, "user", "id"), timestamp,
                   int_or_none(item.get("like_count")) if item.get("like_count") is not None else int_or_none(
                       item.get("like_counts")), False, int_or_none(item.get("total_number")))


EXTRAS = {"comments": CommentsExtra}
