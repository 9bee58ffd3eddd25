"""The text lines of an extra's file as search reads them: one line per subtitle cue, per danmaku
(bullet comment) and per comment, with the time in the video where it has one.

Each kind is read in its stored form (trawl.extras): a subtitle track's JSON cues
(trawl.subtitles), the XML danmaku format players read (trawl.danmaku's parser, which stops at
``limit`` comments), a comment document (trawl.comments; a comment's HTML reduced to its text). Bounded: at most
``limit`` lines, each cut to :data:`LINE_CHARS` characters with its spacing folded; a file that is
not its kind's form gives no lines (search simply does not find it), never an error.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from trawl.danmaku import DanmakuParseError, parse_danmaku_xml
from trawl.subtitles import SubtitleError, cues

# The kinds whose text is searched (chapters are titles of the item's parts, not lines).
SEARCHED_KINDS = ("subtitles", "danmaku", "comments")
LINE_CHARS = 300
# The most of an extra's file read for its lines: a comment document bigger than this gives none;
# a danmaku file is streamed and read to its first lines only.
MAX_BODY_BYTES = 64 * 1024 * 1024
_TAG = re.compile(r"<[^>]{0,2000}>")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class ExtraLine:
    """One line of an extra: its kind, when it shows in the video (seconds; None for a comment),
    and its text (spacing folded, cut to LINE_CHARS)."""

    kind: str
    seconds: float | None
    text: str


def extra_lines(kind: str, body: bytes, limit: int) -> list[ExtraLine]:
    """The first ``limit`` non-empty lines of a stored extra of ``kind`` (none for another kind)."""
    if limit <= 0 or kind not in SEARCHED_KINDS:
        return []
    read = {"subtitles": _subtitles, "danmaku": _danmaku, "comments": _comments}[kind]
    found: list[ExtraLine] = []
    for seconds, raw in read(body, limit):
        line = folded(raw)
        if line:
            found.append(ExtraLine(kind, seconds, line))
            if len(found) >= limit:
                break
    return found


def folded(text: str) -> str:
    """``text`` on one line (runs of spacing as one space, NULs dropped), cut to LINE_CHARS."""
    return _SPACE.sub(" ", text.replace("\x00", "")).strip()[:LINE_CHARS]


def _subtitles(body: bytes, limit: int) -> Iterable[tuple[float | None, str]]:
    try:
        return [(cue.start, cue.text) for cue in cues(body)]
    except SubtitleError:
        return []


def _danmaku(body: bytes, limit: int) -> Iterable[tuple[float | None, str]]:
    """Streamed: the parser stops at ``limit`` without reading the rest of the file."""
    try:
        _, comments = parse_danmaku_xml(body, limit=limit)
    except DanmakuParseError:
        return []
    # A time the video cannot have (negative, NaN, absurd) is no time rather than a wrong one.
    return [(c.seconds if 0 <= c.seconds < 10**9 else None, c.text) for c in comments]


def _comments(body: bytes, limit: int) -> Iterable[tuple[float | None, str]]:
    if len(body) > MAX_BODY_BYTES:
        return []
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return []
    found = doc.get("comments") if isinstance(doc, dict) else None
    if not isinstance(found, list):
        return []
    return ((None, html.unescape(_TAG.sub(" ", c["text"]))) for c in found
            if isinstance(c, dict) and isinstance(c.get("text"), str))
