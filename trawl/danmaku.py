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


def parse_danmaku_xml(body: bytes) -> tuple[str, list[Danmaku]]:
    """The chat id and the comments of an XML danmaku file.

    Raises:
        DanmakuParseError: not XML, not ``<i>``, a malformed ``p``, or past the bounds.
    """
    if len(body) > MAX_XML_BYTES:
        raise DanmakuParseError(f"danmaku file of {len(body)} bytes, over the {MAX_XML_BYTES} bytes allowed")
    if b"<!DOCTYPE" in body[:4096] or b"<!ENTITY" in body:
        raise DanmakuParseError("danmaku file declares a DTD or entities")
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError as exc:
        raise DanmakuParseError(f"danmaku file is not XML: {exc}") from None
    if root.tag != "i":
        raise DanmakuParseError(f"danmaku file's root is <{root.tag[:40]}>, not <i>")
    comments: list[Danmaku] = []
    for element in root.iter("d"):
        if len(comments) >= MAX_COMMENTS:
            raise DanmakuParseError(f"danmaku file holds over {MAX_COMMENTS} comments")
        comments.append(_comment(element.get("p") or "", element.text or ""))
    return (root.findtext("chatid") or "").strip(), comments


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
