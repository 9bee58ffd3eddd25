"""Bilibili's extras (trawl.extras): a video part's danmaku.

- ``danmaku``: every 6-minute protobuf segment of the part's ``cid``
  (``x/v2/dm/web/seg.so?type=1&oid=<cid>&segment_index=N``, N from 1 to the part's duration's
  segments; an empty answer is a segment without comments), or with ``danmaku_source = "xml"`` the
  one XML file (``comment.bilibili.com/<cid>.xml``); stored in Bilibili's XML danmaku format
  (:func:`.danmaku.danmaku_xml`), the file players and converters read.
- ``subtitles``: every track ``x/player/wbi/v2?aid=&cid=`` lists (``data.subtitle.subtitles[]``:
  the uploader's CC tracks and the AI ones, ``lan`` ``ai-zh``...), each its ``subtitle_url``'s JSON
  body of ``{from, to, content}`` cues, stored as given (checked first, bounded) as the asset
  ``subtitles.<lan>``; a track listed without a ``subtitle_url`` (Bilibili gives it to a logged-in
  account only) is recorded missing as ``login_required``.
- ``chapters``: the same answer's ``view_points`` as yt-dlp's ``chapters`` (JSON).
- ``comments``: every top-level comment, the pinned ones first (``x/v2/reply/wbi/main``, WBI-signed,
  paged by ``pagination_str``'s ``next_offset`` until ``cursor.is_end``), then every reply of each
  thread that has some (``x/v2/reply/reply?root=<rpid>``, page by page), as one document
  (:mod:`trawl.comments`), up to ``max_comments`` and ``max_replies``; each page's progress is
  heartbeated, so a retried attempt goes on from the page after the last one read.
"""

from __future__ import annotations

import json
import math
import re
import urllib.parse
from typing import Any

from trawl.comments import CommentBook, comment
from trawl.errors import ParseError, TrawlError
from trawl.extras import Extra, ExtraContext, ExtraFile, json_object
from trawl.models import Resolved
from trawl.platforms.base import ResolveContext, dig, float_or_none, int_or_none, load_cookies, str_or_none
from trawl.platforms.bilibili.config import BilibiliSettings
from trawl.platforms.bilibili.danmaku import (
    MAX_COMMENTS,
    Danmaku,
    DanmakuParseError,
    danmaku_xml,
    parse_danmaku_segment,
    parse_danmaku_xml,
)
from trawl.platforms.bilibili.errors import ANSWERS
from trawl.platforms.bilibili.resolver import BilibiliResolver, wbi_sign

SEGMENT_SECONDS = 360
# Segments read at most when the duration is unknown (until an empty one): 100 hours.
MAX_SEGMENTS = 1000
MAX_TRACKS = 50  # subtitle tracks of one part read at most
MAX_CUES = 100_000  # cues of one track
MAX_CHAPTERS = 1000
MAX_PAGES = 10_000  # pages of comments (top-level and replies together) read at most
REPLY_PAGE = 20
LOGIN_ONLY = ("Bilibili lists this track but gives its subtitle_url only to a logged-in account; give the cookies "
              "of one in platforms.bilibili.cookies_file")
# A language code as a file name part (NAME.<lan>.srt): letters, digits and -_ only.
_LANGUAGE = re.compile(r"[A-Za-z0-9_-]{1,35}")


class _BilibiliExtra(Extra):
    answers = ANSWERS

    def __init__(self, config: BilibiliSettings) -> None:
        self.config = config
        self.paced(config.requests_per_second)

    def headers(self) -> dict[str, str]:
        headers = {"Referer": self.config.referer, "User-Agent": self.config.user_agent, **self.config.headers}
        cookies = load_cookies(self.config.cookies_file)  # what a logged-in account is given (subtitles)
        if cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        return headers

    @property
    def api(self) -> str:
        return self.config.api_base.rstrip("/")

    def applies(self, resolved: Resolved) -> bool:
        """A video part (it has a ``cid``); a live recording has no such extras."""
        return int_or_none(resolved.metadata.get("cid")) is not None and resolved.metadata.get("live") is None


class DanmakuExtra(_BilibiliExtra):
    name = "danmaku"
    kind = "danmaku"

    def fetch(self, resolved: Resolved, ctx: ExtraContext) -> list[ExtraFile]:
        cid = int_or_none(resolved.metadata.get("cid"))
        if self.config.danmaku_source == "xml":
            url = f"{self.config.comment_base.rstrip('/')}/{cid}.xml"
            try:
                _, comments = parse_danmaku_xml(self.get(ctx, url, self.headers(), platform_codes=False))
            except DanmakuParseError as err:
                raise ParseError(f"bilibili: {url}: {err}") from None
        else:
            url, comments = self._segments(cid, resolved.duration, ctx)
        return [ExtraFile("danmaku", "danmaku", body=danmaku_xml(comments, chat_id=cid or 0),
                          mime="application/xml", source_url=url)]

    def _segments(self, cid: Any, duration: float | None, ctx: ExtraContext) -> tuple[str, list[Danmaku]]:
        known = math.ceil(duration / SEGMENT_SECONDS) if duration and duration > 0 else None
        count = max(1, min(known or MAX_SEGMENTS, MAX_SEGMENTS))
        comments: list[Danmaku] = []
        first = ""
        for index in range(1, count + 1):
            url = f"{self.api}/x/v2/dm/web/seg.so?type=1&oid={cid}&segment_index={index}"
            first = first or url
            body = self.get(ctx, url, self.headers())
            if not body and known is None:
                break  # past the last segment of a video whose length is not known
            try:
                comments += parse_danmaku_segment(body, MAX_COMMENTS - len(comments))
            except DanmakuParseError as err:
                raise ParseError(f"bilibili: {url}: {err}") from None
        return first, comments


class _PlayerExtra(_BilibiliExtra):
    """An extra read from the player's answer (``x/player/wbi/v2``), signed with the WBI keys."""

    def __init__(self, config: BilibiliSettings) -> None:
        super().__init__(config)
        self._keys = BilibiliResolver(config)  # its WBI keys, fetched from nav and kept an hour

    def player(self, resolved: Resolved, ctx: ExtraContext) -> dict[str, Any]:
        aid, cid = int_or_none(resolved.metadata.get("aid")), int_or_none(resolved.metadata.get("cid"))
        img, sub = self._keys._wbi_keys(ResolveContext(ctx.client, ctx.max_bytes), self.headers())
        params = wbi_sign({"aid": aid or "", "cid": cid or ""}, img, sub)
        url = f"{self.api}/x/player/wbi/v2?{urllib.parse.urlencode(params)}"
        data = self.get_json(ctx, url, self.headers()).get("data")
        if not isinstance(data, dict):
            raise ParseError(f"bilibili: {url}: player answer has no data")
        return data

    def absolute(self, url: str) -> str:
        """A ``//host/path`` URL (as Bilibili gives subtitle URLs) with the API's scheme."""
        return urllib.parse.urljoin(self.config.api_base, url)


class SubtitlesExtra(_PlayerExtra):
    name = "subtitles"
    kind = "subtitles"

    def fetch(self, resolved: Resolved, ctx: ExtraContext) -> list[ExtraFile]:
        tracks = dig(self.player(resolved, ctx), "subtitle", "subtitles")
        if not isinstance(tracks, list):
            return []
        files: list[ExtraFile] = []
        seen: set[str] = set()
        for track in tracks[:MAX_TRACKS]:
            lan = str_or_none(dig(track, "lan")) if isinstance(track, dict) else None
            if lan is None or not _LANGUAGE.fullmatch(lan) or lan in seen:
                continue
            seen.add(lan)
            name = f"subtitles.{lan}"
            url = str_or_none(track.get("subtitle_url"))
            if url is None:
                files.append(ExtraFile(name, self.kind, lan, missing="login_required", reason=LOGIN_ONLY))
                continue
            url = self.absolute(url)
            try:
                body = self.get(ctx, url, self.headers(), platform_codes=False)
                _check_cues(body, url)
            except TrawlError as err:
                files.append(self.missing_or_raise(err, name, lan))
                continue
            files.append(ExtraFile(name, self.kind, lan, body=body, mime="application/json", source_url=url))
        return files


class ChaptersExtra(_PlayerExtra):
    name = "chapters"
    kind = "chapters"

    def fetch(self, resolved: Resolved, ctx: ExtraContext) -> list[ExtraFile]:
        points = self.player(resolved, ctx).get("view_points")
        chapters = []
        for point in points[:MAX_CHAPTERS] if isinstance(points, list) else []:
            start, end = float_or_none(dig(point, "from")), float_or_none(dig(point, "to"))
            if start is None or end is None:
                continue
            chapters.append({"start_time": start, "end_time": end, "title": str_or_none(dig(point, "content")) or ""})
        if not chapters:
            return []
        body = json.dumps(chapters, ensure_ascii=False, indent=1).encode()
        return [ExtraFile("chapters", self.kind, body=body, mime="application/json")]


class CommentsExtra(_PlayerExtra):
    name = "comments"
    kind = "comments"

    def applies(self, resolved: Resolved) -> bool:
        return super().applies(resolved) and self.config.max_comments > 0 and \
            int_or_none(resolved.metadata.get("aid")) is not None

    def fetch(self, resolved: Resolved, ctx: ExtraContext) -> list[ExtraFile]:
        aid = int_or_none(resolved.metadata.get("aid"))
        book = CommentBook("bilibili", str(resolved.metadata.get("bvid") or aid), self.config.max_comments,
                           self.config.max_replies)
        book.resume(ctx.resumed)
        cursor = book.cursor or {"offset": "", "done": False, "threads": [], "thread": 0, "pn": 1}
        pages = 0
        first_url = ""
        while not cursor["done"] and pages < MAX_PAGES:
            url, data = self._main_page(aid, cursor["offset"], ctx)
            first_url = first_url or url
            pages += 1
            top = [r for r in _replies(data.get("top_replies")) if not cursor["offset"]]
            for reply, pinned in [*((r, True) for r in top), *((r, False) for r in _replies(data.get("replies")))]:
                if book.add(_comment(reply, pinned)) and (int_or_none(reply.get("rcount")) or 0) > 0:
                    cursor["threads"].append(str(reply.get("rpid")))
            book.total = int_or_none(dig(data, "cursor", "all_count")) or book.total
            following = str_or_none(dig(data, "cursor", "pagination_reply", "next_offset"))
            cursor["done"] = bool(dig(data, "cursor", "is_end")) or not following or following == cursor["offset"] \
                or not book.room(reply=False)
            cursor["offset"] = following or ""
            book.cursor = cursor
            ctx.heartbeat(book.state())
        while cursor["thread"] < len(cursor["threads"]) and pages < MAX_PAGES and book.room(reply=True):
            root = cursor["threads"][cursor["thread"]]
            data = self.get_json(ctx, f"{self.api}/x/v2/reply/reply?oid={aid}&type=1&root={root}&ps={REPLY_PAGE}"
                                      f"&pn={cursor['pn']}", self.headers()).get("data")
            pages += 1
            replies = _replies(dig(data, "replies"))
            for reply in replies:
                book.add(_comment(reply, False))
            count = int_or_none(dig(data, "page", "count")) or 0
            if not replies or cursor["pn"] * REPLY_PAGE >= count:
                cursor["thread"], cursor["pn"] = cursor["thread"] + 1, 1
            else:
                cursor["pn"] += 1
            book.cursor = cursor
            ctx.heartbeat(book.state())
        if pages >= MAX_PAGES:
            book.truncated = True
        return [ExtraFile("comments", self.kind, body=book.document(), mime="application/json", source_url=first_url)]

    def _main_page(self, aid: int | None, offset: str, ctx: ExtraContext) -> tuple[str, dict[str, Any]]:
        img, sub = self._keys._wbi_keys(ResolveContext(ctx.client, ctx.max_bytes), self.headers())
        params = wbi_sign({"oid": aid or "", "type": 1, "mode": 3, "plat": 1, "web_location": 1315875,
                           "pagination_str": json.dumps({"offset": offset}, separators=(",", ":"))}, img, sub)
        url = f"{self.api}/x/v2/reply/wbi/main?{urllib.parse.urlencode(params)}"
        data = self.get_json(ctx, url, self.headers()).get("data")
        if not isinstance(data, dict):
            raise ParseError(f"bilibili: {url}: comment page has no data")
        return url, data


def _replies(value: Any) -> list[dict[str, Any]]:
    """The reply objects of a page (bounded: a page holds a few dozen)."""
    return [r for r in value[:1000] if isinstance(r, dict) and int_or_none(r.get("rpid"))] if isinstance(value, list) else []


def _comment(reply: dict[str, Any], pinned: bool) -> dict[str, Any]:
    return comment(int_or_none(reply.get("rpid")), int_or_none(reply.get("parent")), dig(reply, "content", "message"),
                   dig(reply, "member", "uname"), dig(reply, "member", "mid") or reply.get("mid"),
                   int_or_none(reply.get("ctime")), int_or_none(reply.get("like")), pinned,
                   int_or_none(reply.get("rcount")))


def _check_cues(body: bytes, url: str) -> None:
    """A subtitle body as Bilibili serves it (``{"body": [{"from", "to", "content"}...]}``), bounded."""
    doc = json_object(body, url)
    cues = doc.get("body")
    if not isinstance(cues, list):
        raise ParseError(f"bilibili: {url}: subtitle has no body[] of cues")
    if len(cues) > MAX_CUES:
        raise ParseError(f"bilibili: {url}: subtitle holds over {MAX_CUES} cues")
    for index, cue in enumerate(cues):
        if not (isinstance(cue, dict) and float_or_none(cue.get("from")) is not None
                and float_or_none(cue.get("to")) is not None and isinstance(cue.get("content"), str)):
            raise ParseError(f"bilibili: {url}: subtitle cue {index} is not {{from, to, content}}")


EXTRAS = {"danmaku": DanmakuExtra, "subtitles": SubtitlesExtra, "chapters": ChaptersExtra, "comments": CommentsExtra}
