"""Bilibili's danmaku (bullet comments) and its XML file format, the one players and converters read.

A video's danmaku (its protobuf segments or ``comment.bilibili.com/<cid>.xml``) and a live room's
comments (its WebSocket) both end up as :class:`Danmaku` and are stored with
:func:`danmaku_xml`::

    <?xml version="1.0" encoding="UTF-8"?>
    <i><chatserver>chat.bilibili.com</chatserver><chatid>CID</chatid>...
    <d p="SECONDS,MODE,SIZE,COLOR,SENT_AT,POOL,USER_HASH,ID,WEIGHT">text</d>
    </i>

The format and its bounded reader (:func:`parse_danmaku_xml`) are the core's, :mod:`trawl.danmaku`
(the web page and the export read stored files there); this module writes it, with this
platform's chat server, and reads the protobuf segments.
"""

from __future__ import annotations

from collections.abc import Iterable
from xml.sax.saxutils import escape, quoteattr

# The format itself lives in the core (what reads a stored file reads it there); named here too,
# as this platform's callers and tests know them.
from trawl.danmaku import (  # noqa: F401
    MAX_COMMENTS,
    MAX_TEXT_CHARS,
    MAX_XML_BYTES,
    MODES,
    NOT_XML,
    Danmaku,
    DanmakuParseError,
    parse_danmaku_xml,
)


def danmaku_xml(comments: Iterable[Danmaku], chat_id: int | str = 0, source: str = "k-v") -> bytes:
    """``comments`` as a Bilibili XML danmaku file, in time order (ties keep their order)."""
    ordered = sorted(comments, key=lambda comment: comment.seconds)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f"<i><chatserver>chat.bilibili.com</chatserver><chatid>{escape(str(chat_id))}</chatid>"
             f"<mission>0</mission><maxlimit>{len(ordered)}</maxlimit><state>0</state>"
             f"<real_name>0</real_name><source>{escape(source)}</source>"]
    lines.extend(f"<d p={quoteattr(comment.attribute())}>{escape(NOT_XML.sub('', comment.text))}</d>"
                 for comment in ordered)
    lines.append("</i>")
    return ("\n".join(lines) + "\n").encode()


# -- the protobuf segments (x/v2/dm/web/seg.so): DmSegMobileReply { repeated DanmakuElem elems = 1 } --
# Field numbers of bilibili.community.service.dm.v1.DanmakuElem (bilibili-API-collect,
# grpc_api/bilibili/community/service/dm/v1/dm.proto): only those the XML format keeps.
MAX_SEGMENT_BYTES = 16 * 1024 * 1024
_ELEM_FIELDS = (("id", 1, "int64"), ("progress", 2, "int32"), ("mode", 3, "int32"), ("fontsize", 4, "int32"),
                ("color", 5, "uint32"), ("midHash", 6, "string"), ("content", 7, "string"), ("ctime", 8, "int64"),
                ("weight", 9, "int32"), ("pool", 11, "int32"), ("idStr", 12, "string"))


def _segment_class() -> type:
    """The DmSegMobileReply message class, built once from the field table above (no generated code)."""
    global _SEGMENT
    if _SEGMENT is None:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

        proto = descriptor_pb2.FieldDescriptorProto
        types = {"int64": proto.TYPE_INT64, "int32": proto.TYPE_INT32, "uint32": proto.TYPE_UINT32,
                 "string": proto.TYPE_STRING}
        file = descriptor_pb2.FileDescriptorProto(name="trawl_bilibili_dm.proto", package="trawl.bilibili.dm",
                                                  syntax="proto3")
        elem = file.message_type.add(name="DanmakuElem")
        for name, number, kind in _ELEM_FIELDS:
            elem.field.add(name=name, number=number, type=types[kind], label=proto.LABEL_OPTIONAL)
        reply = file.message_type.add(name="DmSegMobileReply")
        reply.field.add(name="elems", number=1, type=proto.TYPE_MESSAGE, type_name=".trawl.bilibili.dm.DanmakuElem",
                        label=proto.LABEL_REPEATED)
        pool = descriptor_pool.DescriptorPool()
        pool.Add(file)
        _SEGMENT = message_factory.GetMessageClass(pool.FindMessageTypeByName("trawl.bilibili.dm.DmSegMobileReply"))
    return _SEGMENT


_SEGMENT: type | None = None


def parse_danmaku_segment(body: bytes, limit: int = MAX_COMMENTS) -> list[Danmaku]:
    """The comments of one protobuf segment (``seg.so``'s answer); an empty body is a segment
    without comments (what Bilibili answers past the last one).

    Raises:
        DanmakuParseError: not a DmSegMobileReply, or past the bounds (size, ``limit`` comments).
    """
    if len(body) > MAX_SEGMENT_BYTES:
        raise DanmakuParseError(f"danmaku segment of {len(body)} bytes, over the {MAX_SEGMENT_BYTES} bytes allowed")
    from google.protobuf.message import DecodeError

    reply = _segment_class()()
    try:
        reply.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise DanmakuParseError(f"danmaku segment is not a DmSegMobileReply: {exc}") from None
    if len(reply.elems) > limit:
        raise DanmakuParseError(f"danmaku segment holds over {limit} comments")
    return [Danmaku(seconds=elem.progress / 1000, text=elem.content[:MAX_TEXT_CHARS], mode=elem.mode or 1,
                    size=elem.fontsize or 25, color=elem.color, sent_at=elem.ctime, pool=elem.pool,
                    user_hash=elem.midHash, id=elem.idStr or (str(elem.id) if elem.id else ""), weight=elem.weight)
            for elem in reply.elems]


def danmaku_segment(comments: Iterable[Danmaku]) -> bytes:
    """``comments`` as a protobuf segment, as ``seg.so`` answers (the simulated site serves these)."""
    reply = _segment_class()()
    for comment in comments:
        reply.elems.add(id=int(comment.id) if comment.id.isdigit() else 0, progress=round(comment.seconds * 1000),
                        mode=comment.mode, fontsize=comment.size, color=comment.color, midHash=comment.user_hash,
                        content=comment.text, ctime=comment.sent_at, weight=comment.weight, pool=comment.pool,
                        idStr=comment.id)
    return reply.SerializeToString()
