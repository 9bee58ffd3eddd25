"""Stored subtitle tracks as SRT and WebVTT, and which extras an export writes (yt-dlp's flags)."""

from __future__ import annotations

import json

import pytest

from trawl.export_extras import ExtrasChoice, ExtrasChoiceError
from trawl.storage.records import CommittedAsset
from trawl.subtitles import SubtitleError, convert, cues

TRACK = json.dumps({"body": [{"from": 0.5, "to": 2.25, "content": "你好 <b>&</b>"},
                             {"from": 3661.0, "to": 3662.5, "content": "two\n\nlines"}]}).encode()


def test_a_track_as_srt_and_webvtt() -> None:
    assert convert(TRACK, "srt").decode() == ("1\n00:00:00,500 --> 00:00:02,250\n你好 <b>&</b>\n\n"
                                              "2\n01:01:01,000 --> 01:01:02,500\ntwo\nlines\n")
    assert convert(TRACK, "vtt").decode() == ("WEBVTT\n\n00:00:00.500 --> 00:00:02.250\n你好 &lt;b&gt;&amp;&lt;/b&gt;\n\n"
                                              "01:01:01.000 --> 01:01:02.500\ntwo\nlines\n")
    assert convert(TRACK, "json") == TRACK


@pytest.mark.parametrize("body", [b"[", b"[]", b'{"body": 3}', b'{"body": [{"from": "x", "to": 1, "content": ""}]}',
                                  b'{"body": [{"from": 1, "to": 2}]}', b'{"body": [{"from": -1, "to": 2, "content": ""}]}',
                                  b"[" * 100_000])
def test_a_broken_track_is_a_subtitle_error(body: bytes) -> None:
    with pytest.raises(SubtitleError):
        cues(body)


def _sub(language: str) -> CommittedAsset:
    return CommittedAsset(f"subtitles.{language}", "subtitles", "a" * 64, 1, "application/json", "k", None, language)


DANMAKU = CommittedAsset("danmaku", "danmaku", "b" * 64, 1, "application/xml", "k")


def test_sub_langs_choose_as_yt_dlps_do() -> None:
    everything = ExtrasChoice(write_subs=True, write_auto_subs=True)
    assert everything.wants(_sub("zh-CN")) and everything.wants(_sub("ai-zh")) and everything.wants(DANMAKU)
    uploader_only = ExtrasChoice(write_subs=True)
    assert uploader_only.wants(_sub("zh-CN")) and not uploader_only.wants(_sub("ai-zh"))
    some = ExtrasChoice(write_subs=True, write_auto_subs=True, sub_langs=ExtrasChoice.parse_langs("ai-.*,danmaku"))
    assert [some.wants(a) for a in (_sub("zh-CN"), _sub("ai-zh"), DANMAKU)] == [False, True, True]
    not_danmaku = ExtrasChoice(write_subs=True, sub_langs=("all", "-danmaku"))
    assert not_danmaku.wants(_sub("en")) and not not_danmaku.wants(DANMAKU)
    assert not ExtrasChoice().wants(_sub("zh-CN")) and not ExtrasChoice().any


def test_a_bad_choice_names_what_to_write() -> None:
    with pytest.raises(ExtrasChoiceError, match="one of srt, vtt, json"):
        ExtrasChoice(sub_format="ass")
    with pytest.raises(ExtrasChoiceError, match="not a regular expression"):
        ExtrasChoice(sub_langs=("zh-(",))


def test_an_extras_requests_are_spaced_across_its_activities(monkeypatch: pytest.MonkeyPatch) -> None:
    from trawl import extras as extras_module
    from trawl.extras import Extra

    class Paced(Extra):
        name = kind = "comments"

        def fetch(self, resolved, ctx):  # noqa: ANN001, ANN202 - not called
            return []

    waits: list[float] = []
    monkeypatch.setattr(extras_module.time, "monotonic", lambda: 100.0)  # four requests at one instant
    monkeypatch.setattr(extras_module.time, "sleep", waits.append)
    extra = Paced()
    extra.paced(20.0)  # 50 ms apart
    for _ in range(4):
        extra._wait_turn()
    assert [round(w, 3) for w in waits] == [0.05, 0.1, 0.15]  # the first at once, each next 50 ms later


def test_a_language_is_a_name_part_never_a_path() -> None:
    from trawl.export_extras import sidecars
    from trawl.storage.records import CatalogItem

    odd = CommittedAsset("subtitles.x", "subtitles", "a" * 64, 1, "application/json", "k", None, "../../etc/zh")
    item = CatalogItem("p:1", "p", "u", "u", "t", None, None, None, "committed", None, "", [odd], {})
    [(suffix, _)] = sidecars(item, ExtrasChoice(write_subs=True), lambda asset: TRACK, info_json=False)
    assert suffix == ".______etc_zh.srt"


def test_srt_and_webvtt_are_read_into_cues() -> None:
    from trawl.subtitles import parse_timed_text, to_json

    srt = b"\xef\xbb\xbf1\r\n00:00:01,000 --> 00:00:02,500\r\nHello <i>x</i>\r\nline2\r\n\r\n2\r\n00:01:03,000 --> 00:01:04,000\r\nBye\r\n"
    assert [(c.start, c.end, c.text) for c in parse_timed_text(srt)] == [(1.0, 2.5, "Hello <i>x</i>\nline2"),
                                                                         (63.0, 64.0, "Bye")]
    vtt = b"WEBVTT\n\nNOTE a note\n\ncue-1\n00:01.000 --> 00:02.000 align:start\nA &amp; B &lt;\n"
    assert [(c.start, c.end, c.text) for c in parse_timed_text(vtt)] == [(1.0, 2.0, "A & B <")]
    assert json.loads(to_json(parse_timed_text(vtt))) == {"body": [{"from": 1.0, "to": 2.0, "content": "A & B <"}]}
    assert parse_timed_text(b"") == [] and parse_timed_text(b"WEBVTT\n") == []


def test_timed_text_that_is_not_is_refused() -> None:
    from trawl.subtitles import parse_timed_text

    for body in (b"<html>nope</html>", b"1\n00:00:xx,000 --> 00:00:01,000\nbad\n"):
        with pytest.raises(SubtitleError):
            parse_timed_text(body)
    with pytest.raises(SubtitleError, match="over"):
        parse_timed_text(b"0:00.000 --> 0:01.000\nx\n\n" * 100_001)
