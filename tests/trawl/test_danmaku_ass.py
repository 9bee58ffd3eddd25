"""Danmaku rendered as ASS (issue 41, point 1): lanes, timing, sizes, colours, escaping, bounds."""

from __future__ import annotations

import re

from trawl.danmaku import Danmaku, parse_danmaku_xml
from trawl.danmaku_ass import SCROLL_SECONDS, STILL_SECONDS, Stage, escape, render_ass

STAGE = Stage(1920, 1080)


def events(body: bytes) -> list[str]:
    return [line for line in body.decode("utf-8-sig").splitlines() if line.startswith("Dialogue:")]


def test_the_header_is_a_v4_plus_script_on_the_stage() -> None:
    body, count = render_ass([], Stage(1280, 720), title="A {title}\nsecond line")
    text = body.decode("utf-8")
    assert text.startswith("\ufeff[Script Info]") and count == 0
    assert "PlayResX: 1280\nPlayResY: 720\n" in text and "Title: A {title} second line\n" in text
    assert "Style: Danmaku,sans-serif,33," in text  # 50 px at 1080 lines, scaled to 720
    assert "[Events]\nFormat: Layer, Start, End," in text


def test_a_scrolling_comment_crosses_from_right_to_left() -> None:
    (line,) = events(render_ass([Danmaku(61.5, "你好")], STAGE)[0])
    assert line == f"Dialogue: 2,0:01:01.50,0:01:{61.5 + SCROLL_SECONDS - 60:05.2f},Danmaku,,0,0,0,,{{\\move(1920,0,-100,0)}}你好"


def test_scrolling_comments_that_would_collide_take_the_next_lane() -> None:
    shown = events(render_ass([Danmaku(0.0, "一"), Danmaku(0.1, "二"), Danmaku(10.0, "三")], STAGE)[0])
    lanes = [re.search(r"move\(\d+,(\d+),", line).group(1) for line in shown]
    assert lanes == ["0", "50", "0"]  # the third comes after the first has left: its lane again


def test_a_long_comment_never_catches_up_a_short_one_in_its_lane() -> None:
    # The short one has wholly entered after 0.1 s, but a long (faster) one sent then would reach it.
    shown = events(render_ass([Danmaku(0.0, "短"), Danmaku(1.0, "长" * 40)], STAGE)[0])
    assert [re.search(r"move\(-?\d+,(\d+),", line).group(1) for line in shown] == ["0", "50"]


def test_reverse_top_and_bottom_comments() -> None:
    shown = events(render_ass([Danmaku(1.0, "反", mode=6), Danmaku(2.0, "顶", mode=5), Danmaku(2.5, "顶二", mode=5),
                               Danmaku(3.0, "底", mode=4)], STAGE)[0])
    assert "\\move(-50,0,1920,0)" in shown[0]
    assert shown[1].startswith(f"Dialogue: 3,0:00:02.00,0:00:{2 + STILL_SECONDS:05.2f},") and "\\an8\\pos(960,0)" in shown[1]
    assert "\\an8\\pos(960,50)" in shown[2]  # the first top one still shows
    assert "\\an2\\pos(960,1080)" in shown[3]


def test_size_and_colour_come_from_the_comment() -> None:
    shown = events(render_ass([Danmaku(0.0, "大", size=36, color=0xFF0000), Danmaku(0.0, "黑", size=18, color=0x000010),
                               Danmaku(0.0, "白")], STAGE)[0])
    assert "\\fs72\\c&H0000FF&}" in shown[0]  # red is BGR in ASS
    assert "\\fs36\\c&H100000&\\3c&HFFFFFF&}" in shown[1]  # dark: a white outline
    assert "move(1920,100," in shown[1] and shown[2].endswith("{\\move(1920,150,-50,150)}白")  # red took 2 lanes


def test_scripted_comments_are_left_out_and_the_count_is_bounded() -> None:
    comments = [Danmaku(float(n), f"#{n}") for n in range(10)] + [Danmaku(0.5, "[0,0,1]", mode=7),
                                                                   Danmaku(0.5, "code", mode=8)]
    body, count = render_ass(comments, STAGE, limit=4)
    assert count == 4 and [line.rsplit("}", 1)[1] for line in events(body)] == ["#0", "#1", "#2", "#3"]


def test_a_full_stage_overlaps_rather_than_drops() -> None:
    body, count = render_ass([Danmaku(0.0, f"弹幕{n}") for n in range(40)], STAGE)
    assert count == 40 and len(events(body)) == 40


def test_ass_control_characters_are_shown_as_sent() -> None:
    assert escape("{\\pos(0,0)}a\\Nb\nc") == "\\{\\\u200bpos(0,0)\\}a\\\u200bNb\\Nc"
    assert escape("  lead") == "\u2007\u2007lead"
    (line,) = events(render_ass([Danmaku(0.0, "{\\an5\\fs200}大}\\h")], STAGE)[0])
    text = line.split("}", 1)[1]  # after the one override block trawl writes
    assert "{" not in text.replace("\\{", "") and "}" not in text.replace("\\}", "")
    assert "\\N" not in text and "\\h" not in text


def test_a_stored_xml_file_renders() -> None:
    xml = ('<?xml version="1.0" encoding="UTF-8"?><i><chatid>1</chatid>'
           '<d p="1.5,1,25,16777215,1700000000,0,abc,1,0">第一 &lt;b&gt;</d>'
           '<d p="2.0,5,25,65280,1700000000,0,abc,2,0">顶</d></i>').encode()
    body, count = render_ass(parse_danmaku_xml(xml)[1], STAGE)
    assert count == 2 and events(body)[0].endswith("第一 <b>") and "\\c&H00FF00&" in events(body)[1]
