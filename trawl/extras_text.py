"""The text lines of an extra's file as search reads them: one line per subtitle cue, per danmaku
(bullet comment) and per comment, with the time in the video where it has one.

Each kind is read in its stored form (trawl.extras): a subtitle track's JSON cues
(trawl.subtitles), the XML danmaku format players read (``<d p="SECONDS,...">text</d>``), a
comment document (trawl.comments; a comment's HTML reduced to its text). Bounded: at most
``limit`` lines, each cut to :data:`LINE_CHARS` characters with its spacing folded; a file that is
not its kind's form gives no lines (search simply does not find it), never an error.
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from trawl.subtitles import SubtitleError, cues

# The kinds whose text is searched (chapters are titles of the item's parts, not lines).
SEARCHED_KINDS = ("subtitles", "danmaku", "comments")
LINE_CHARS = 300
# A file bigger than this is read by its first lines only where its form allows (danmaku is
# streamed); a comment document or a track this large gives none.
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
    for seconds, raw in read(body):
        line = folded(raw)
        if line:
            found.append(ExtraLine(kind, seconds, line))
            if len(found) >= limit:
                break
    return found


def folded(text: str) -> str:
    """``text`` on one line (runs of spacing as one space, NULs dropped), cut to LINE_CHARS."""
    return _SPACE.sub(" ", text.replace("\x00", "")).strip()[:LINE_CHARS]


def _subtitles(body: bytes) -> Iterable[tuple[float | None, str]]:
    try:
        return [(cue.start, cue.text) for cue in cues(body)]
    except SubtitleError:
        return []


def _danmaku(body: bytes) -> Iterator[tuple[float | None, str]]:
    """Streamed: the caller stops at its limit without reading the rest of the file."""
    if b"<!DOCTYPE" in body[:4096] or b"<!ENTITY" in body:
        return  # no DTD, no entity expansion
    parser = ElementTree.XMLPullParser(events=("end",))
    for at in range(0, min(len(body), MAX_BODY_BYTES), 1 << 16):
        try:
            parser.feed(body[at:at + (1 << 16)])
            events = list(parser.read_events())
        except ElementTree.ParseError:
            return  # the lines read before the break stay
        for _, element in events:
            if element.tag == "d":
                yield _seconds((element.get("p") or "").split(",", 1)[0]), element.text or ""
                element.clear()


def _seconds(value: str) -> float | None:
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if 0 <= seconds < 10**9 else None


def _comments(body: bytes) -> Iterable[tuple[float | None, str]]:
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
