"""An item's comments as trawl stores them (the ``comments`` extra): one JSON document per item,
whatever the platform, its comments under yt-dlp's field names (its info JSON's ``comments``)::

    {"version": 1, "platform": "<platform>", "id": "<its id>", "total": 1234, "count": 1200,
     "truncated": false, "comments": [
        {"id": "101", "parent": "root", "text": "...", "author": "...", "author_id": "42",
         "timestamp": 1700000000, "like_count": 3, "is_pinned": true, "reply_count": 2},
        {"id": "102", "parent": "101", ...}]}

``parent`` is ``root`` for a top-level comment, else the id of the comment it answers (a
thread's root, or a reply in it); ``text`` is as the platform gave it (HTML where it sends HTML, kept
as given, never interpreted); ``total`` is the count the platform states, ``count`` how many are
stored, ``truncated`` whether a safety cap (the platform's max_comments, max_replies) stopped it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

# While a document holds at most this many comments, each page's progress carries them all (a
# retried attempt goes on from the last page); a longer one carries its cursor only and starts over.
RESUMABLE_COMMENTS = 3000


@dataclass
class CommentBook:
    """Comments as they are paged in, with the cursors that say where paging stands."""

    platform: str
    item_id: str
    max_comments: int
    max_replies: int
    comments: list[dict[str, Any]] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    total: int | None = None
    truncated: bool = False
    cursor: dict[str, Any] = field(default_factory=dict)  # the platform's paging state

    @property
    def top_level(self) -> int:
        return sum(1 for c in self.comments if c["parent"] == "root")

    @property
    def replies(self) -> int:
        return len(self.comments) - self.top_level

    def room(self, reply: bool) -> bool:
        """Whether another comment of this kind may be added (else the document is truncated)."""
        full = self.replies >= self.max_replies if reply else self.top_level >= self.max_comments
        if full:
            self.truncated = True
        return not full

    def add(self, comment: dict[str, Any]) -> bool:
        """Add a comment (once: a comment seen on two pages, a pinned one listed again, is kept once)."""
        if comment["id"] in self.seen or not self.room(comment["parent"] != "root"):
            return False
        self.seen.add(comment["id"])
        self.comments.append(comment)
        return True

    def state(self) -> dict[str, Any]:
        """What a retried attempt needs to go on: the cursor, and the comments while few enough."""
        if len(self.comments) > RESUMABLE_COMMENTS:
            return {"cursor": self.cursor, "count": len(self.comments), "resumable": False}
        return {"cursor": self.cursor, "comments": self.comments, "total": self.total, "truncated": self.truncated,
                "resumable": True}

    def resume(self, state: Any) -> None:
        """Go on from a previous attempt's :meth:`state` (ignored unless it is a resumable one)."""
        if not isinstance(state, dict) or state.get("resumable") is not True:
            return
        comments = state.get("comments")
        cursor = state.get("cursor")
        if not isinstance(comments, list) or not isinstance(cursor, dict):
            return
        for comment in comments:
            if isinstance(comment, dict) and isinstance(comment.get("id"), str) and isinstance(comment.get("parent"), str):
                self.add(comment)
        self.cursor = cursor
        self.total = state.get("total") if isinstance(state.get("total"), int) else None
        self.truncated = bool(state.get("truncated"))

    def document(self) -> bytes:
        return json.dumps({"version": 1, "platform": self.platform, "id": self.item_id, "total": self.total,
                           "count": len(self.comments), "truncated": self.truncated, "comments": self.comments},
                          ensure_ascii=False, indent=1).encode()


def comment(id: Any, parent: Any, text: Any, author: Any, author_id: Any, timestamp: Any, likes: Any,
            pinned: bool = False, replies: Any = None) -> dict[str, Any]:
    """One comment under yt-dlp's names (absent fields left out)."""
    found = {"id": str(id), "parent": str(parent) if parent not in (None, "", 0, "0") else "root",
             "text": text if isinstance(text, str) else "", "author": author if isinstance(author, str) else None,
             "author_id": str(author_id) if author_id not in (None, "") else None,
             "timestamp": timestamp if isinstance(timestamp, int) and not isinstance(timestamp, bool) else None,
             "like_count": likes if isinstance(likes, int) and not isinstance(likes, bool) else None,
             "is_pinned": pinned or None,
             "reply_count": replies if isinstance(replies, int) and not isinstance(replies, bool) else None}
    return {k: v for k, v in found.items() if v is not None}
