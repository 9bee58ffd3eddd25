"""The XML danmaku format (bullet comments), as an item's ``danmaku`` extra is stored and as players
and converters (danmaku2ass, DanmakuFactory) read it::

    <?xml version="1.0" encoding="UTF-8"?>
    <i><chatserver>...</chatserver><chatid>CID</chatid>...
    <d p="SECONDS,MODE,SIZE,COLOR,SENT_AT,POOL,USER_HASH,ID,WEIGHT">text</d>
    </i>

A platform that has danmaku writes it (its own package holds the writer, with its chat server);
what reads a stored file (the web page, an export) reads it here. :func:`parse_danmaku_xml` is
bounded: a hostile or broken file is a :class:`DanmakuParseError`, never a hang or a crash.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass

# Characters XML 1.0 cannot hold (C0 controls but tab, newline and carriage return; lone
# surrogates; U+FFFE/U+FFFF): a comment is stored without them rather than as a broken file.
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
MAX_XML_BYTES = 64 * 1024 * 1024
MAX_COMMENTS = 2_000_000
MAX_TEXT_CHARS = 2_000
_CHUNK = 1 << 16  # bytes fed to the parser at a time

MODES = {1: "scroll", 4: "bottom", 5: "top", 6: "reverse", 7: "positioned", 8: "code", 9: "bas"}


class DanmakuParseError(ValueError):
    """A danmaku file that is not the XML danmaku format, or is past the bounds."""


@dataclass(frozen=True)
class Danmaku:
    """One bullet comment.

    Attributes:
        seconds: when it shows, in seconds from the start of the video (or of the recording).
        mode: 1 scrolling, 4 bottom, 5 top, 6 reverse, 7 positioned (:data:`MODES`).
        size: font size (25 is normal, 18 small, 36 large).
        color: 0xRRGGBB.
        sent_at: when it was sent, in Unix seconds.
        pool: 0 ordinary, 1 subtitle, 2 special.
        user_hash: the sender as the platform shows it (a hash of the user id, never the id itself).
        id: the comment's id (``dmid``).
        weight: the platform's shielding weight (0-11); 0 when unknown.
        text: as sent, unescaped.
    """

    seconds: float
    text: str
    mode: int = 1
    size: int = 25
    color: int = 0xFFFFFF
    sent_at: int = 0
    pool: int = 0
    user_hash: str = ""
    id: str = ""
    weight: int = 0

    def attribute(self) -> str:
        """The ``p`` attribute of its ``<d>`` element."""
        return ",".join((f"{self.seconds:.5f}", str(self.mode), str(self.size), str(self.color), str(self.sent_at),
                         str(self.pool), NOT_XML.sub("", self.user_hash).replace(",", ""),
                         NOT_XML.sub("", self.id).replace(",", ""), str(self.weight)))


def parse_danmaku_xml(body: bytes, limit: int | None = None) -> tuple[str, list[Danmaku]]:
    """The chat id and the comments of an XML danmaku file, read as a stream.

    Args:
        body: the file.
        limit: stop after this many comments, reading no further (search indexes a file's first
            lines only); the bounds and any error past that point are then never reached. The chat
            id is the one read by then (it comes first in the files trawl writes).

    Raises:
        DanmakuParseError: not XML, not ``<i>``, a malformed ``p``, or past the bounds.
    """
    if limit is not None and limit <= 0:
        return "", []
    if limit is None and len(body) > MAX_XML_BYTES:
        raise DanmakuParseError(f"danmaku file of {len(body)} bytes, over the {MAX_XML_BYTES} bytes allowed")
    if b"<!DOCTYPE" in body[:4096] or b"<!ENTITY" in body:
        raise DanmakuParseError("danmaku file declares a DTD or entities")
    parser = ElementTree.XMLPullParser(events=("start", "end"))
    chat_id: str | None = None
    comments: list[Danmaku] = []
    depth = 0
    for at in range(0, len(body) or 1, _CHUNK):
        if at >= MAX_XML_BYTES:
            raise DanmakuParseError(f"danmaku file of {len(body)} bytes, over the {MAX_XML_BYTES} bytes allowed")
        try:
            parser.feed(body[at:at + _CHUNK])
            if at + _CHUNK >= len(body):
                parser.close()
            events = list(parser.read_events())
        except ElementTree.ParseError as exc:
            raise DanmakuParseError(f"danmaku file is not XML: {exc}") from None
        for event, element in events:
            if event == "start":
                if depth == 0 and element.tag != "i":
                    raise DanmakuParseError(f"danmaku file's root is <{element.tag[:40]}>, not <i>")
                depth += 1
                continue
            depth -= 1
            if element.tag == "chatid" and depth == 1 and chat_id is None:
                chat_id = (element.text or "").strip()
            elif element.tag == "d":
                if len(comments) >= MAX_COMMENTS:
                    raise DanmakuParseError(f"danmaku file holds over {MAX_COMMENTS} comments")
                comments.append(_comment(element.get("p") or "", element.text or ""))
                element.clear()  # a long file is not held twice, as text and as a tree
                if len(comments) == limit:
                    return chat_id or "", comments
    return chat_id or "", comments


def _comment(attribute: str, text: str) -> Danmaku:
    fields = attribute.split(",")
    if len(fields) < 8:
        raise DanmakuParseError(f"danmaku p={attribute[:80]!r} has {len(fields)} fields, not 8 or 9")
    try:
        return Danmaku(seconds=float(fields[0]), mode=int(fields[1]), size=int(fields[2]), color=int(fields[3]),
                       sent_at=int(fields[4]), pool=int(fields[5]), user_hash=fields[6], id=fields[7],
                       weight=int(fields[8]) if len(fields) > 8 and fields[8] else 0,
                       text=text[:MAX_TEXT_CHARS])
    except ValueError:
        raise DanmakuParseError(f"danmaku p={attribute[:80]!r} is not numbers where numbers go") from None
