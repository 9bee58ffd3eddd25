"""Bilibili's XML danmaku format: written as players read it, read back, bounded against hostile files."""

from __future__ import annotations

import pytest

from trawl.platforms.bilibili.danmaku import Danmaku, DanmakuParseError, danmaku_xml, parse_danmaku_xml


def test_comments_round_trip_in_time_order() -> None:
    comments = [Danmaku(seconds=12.5, text="第二条 <b>&amp;", mode=5, color=0xFF0000, sent_at=1764900000,
                        user_hash="a1b2c3d4", id="1001", weight=7),
                Danmaku(seconds=0.25, text="前排", sent_at=1764899000, id="1000")]
    body = danmaku_xml(comments, chat_id=25546)
    assert body.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<i><chatserver>chat.bilibili.com</chatserver>')
    assert b'<d p="0.25000,1,25,16777215,1764899000,0,,1000,0">' in body
    assert "第二条 &lt;b&gt;&amp;amp;</d>".encode() in body  # text is stored as given, escaped once
    chat_id, read = parse_danmaku_xml(body)
    assert chat_id == "25546" and read == sorted(comments, key=lambda comment: comment.seconds)


def test_characters_xml_cannot_hold_are_left_out() -> None:
    body = danmaku_xml([Danmaku(seconds=1, text="bell\x07 and nul\x00 here", user_hash="x,\x01y")])
    (comment,) = parse_danmaku_xml(body)[1]
    assert comment.text == "bell and nul here" and comment.user_hash == "xy"


def test_a_real_files_eight_field_form_reads() -> None:
    body = ('<?xml version="1.0" encoding="UTF-8"?><i><chatid>42</chatid>'
            '<d p="3.1,1,25,16777215,1600000000,0,deadbeef,123">hi</d></i>').encode()
    assert parse_danmaku_xml(body)[1] == [Danmaku(seconds=3.1, text="hi", sent_at=1600000000, user_hash="deadbeef",
                                                  id="123")]


@pytest.mark.parametrize("body, said", [
    (b"not xml at all", "not XML"),
    (b"<html><d p='1,1,25,0,0,0,a,b'>x</d></html>", "not <i>"),
    (b"<i><d p='1,1'>x</d></i>", "2 fields"),
    (b"<i><d p='one,1,25,0,0,0,a,b'>x</d></i>", "not numbers"),
    (b'<?xml version="1.0"?><!DOCTYPE i [<!ENTITY a "aaaa">]><i><d p="1,1,25,0,0,0,a,b">&a;</d></i>', "DTD"),
])
def test_hostile_or_broken_files_are_a_parse_error(body: bytes, said: str) -> None:
    with pytest.raises(DanmakuParseError, match=said):
        parse_danmaku_xml(body)


def test_with_a_limit_the_first_comments_are_read_and_the_rest_never() -> None:
    comments = [Danmaku(seconds=float(n), text=f"line {n}", id=str(n)) for n in range(5000)]
    body = danmaku_xml(comments, chat_id=7)
    chat_id, first = parse_danmaku_xml(body, limit=3)
    assert chat_id == "7" and [c.text for c in first] == ["line 0", "line 1", "line 2"]
    broken = body[:len(body) // 2]  # cut mid-file: past the limit it is never parsed
    assert parse_danmaku_xml(broken, limit=3)[1] == first
    with pytest.raises(DanmakuParseError, match="not XML"):
        parse_danmaku_xml(broken)
    assert parse_danmaku_xml(body, limit=0) == ("", [])
    assert parse_danmaku_xml(body, limit=10**6)[1] == parse_danmaku_xml(body)[1]
    with pytest.raises(DanmakuParseError, match="not XML"):  # an error before the limit still counts
        parse_danmaku_xml(b"<i><d p='1,1,25,0,0,0,a,b'>x</d><d", limit=5)


# -- the protobuf segments (x/v2/dm/web/seg.so) ---------------------------------------------------
def test_a_segment_round_trips_through_the_protobuf_form() -> None:
    from trawl.platforms.bilibili.danmaku import danmaku_segment, parse_danmaku_segment

    comments = [Danmaku(seconds=1.5, text="前方高能 <i>", mode=5, size=36, color=0xFE0302, sent_at=1764900000,
                        user_hash="a1b2c3d4", id="41000000000000001", weight=9, pool=1)]
    assert parse_danmaku_segment(danmaku_segment(comments)) == comments
    assert parse_danmaku_segment(b"") == []  # what Bilibili answers past the last segment


def test_a_segments_field_numbers_are_bilibilis() -> None:
    from trawl.platforms.bilibili.danmaku import parse_danmaku_segment

    # DmSegMobileReply{elems=1: DanmakuElem{id=1: 7, progress=2: 2500 ms, content=7: "hi", idStr=12: "7"}},
    # written by hand: tag (field << 3 | wire type), then the value.
    elem = b"\x08\x07" + b"\x10\xc4\x13" + b"\x3a\x02hi" + b"\x62\x017"
    body = b"\x0a" + bytes([len(elem)]) + elem
    assert parse_danmaku_segment(body) == [Danmaku(seconds=2.5, text="hi", id="7", color=0)]


@pytest.mark.parametrize("body", [b"\xff\xff\xff\xff", b"\x0a\x05\x3a\x09short", b"<html>busy</html>"])
def test_a_broken_segment_is_a_parse_error(body: bytes) -> None:
    from trawl.platforms.bilibili.danmaku import parse_danmaku_segment

    with pytest.raises(DanmakuParseError, match="not a DmSegMobileReply"):
        parse_danmaku_segment(body)


def test_a_segment_past_the_bounds_is_refused() -> None:
    from trawl.platforms.bilibili.danmaku import danmaku_segment, parse_danmaku_segment

    body = danmaku_segment([Danmaku(seconds=i, text="x") for i in range(5)])
    with pytest.raises(DanmakuParseError, match="over 4 comments"):
        parse_danmaku_segment(body, limit=4)
