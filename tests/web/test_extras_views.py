"""What the item page makes of stored extras (trawl.web.extras), as pure functions: ``?t=``, the
subtitle tracks, the chapters, the danmaku in time, the comments in threads, and what they do with
broken or hostile documents."""

from __future__ import annotations

import json
from typing import Any

import pytest

from trawl.storage.records import CommittedAsset
from trawl.web.extras import (
    LISTED_DANMAKU,
    MAX_SHOWN_BYTES,
    Chapter,
    Track,
    chapters,
    Recent,
    comment_threads,
    comments_view,
    danmaku_view,
    extras_of,
    seconds_param,
    snapshot_time,
    start_at,
    tracks,
)


@pytest.mark.parametrize(("given", "expected"), [
    ("90", 90.0), ("90.5", 90.5), (" 12 ", 12.0), ("12s", 12.0), ("1e3", 1000.0),
    ("", None), (None, None), ("0", None), ("-1", None), ("abc", None), ("1:30", None),
    ("nan", None), ("inf", None), ("1e99", None), ("10000001", None)])
def test_t_names_a_second_or_nothing(given: str | None, expected: float | None) -> None:
    assert start_at(given) == expected


@pytest.mark.parametrize(("seconds", "shown"), [(162.0, "162"), (1.5, "1.5"), (0.0, "0"), (2.0004, "2"),
                                                (12.3456, "12.346")])
def test_seconds_as_a_t_value(seconds: float, shown: str) -> None:
    assert seconds_param(seconds) == shown


def asset(name: str, kind: str, language: str | None = None) -> CommittedAsset:
    return CommittedAsset(name, kind, "0" * 64, 10, "application/json", "sha256/00/00/" + "0" * 64, language=language)


def test_tracks_uploaders_first_by_language_with_one_the_player_knows() -> None:
    assets = [asset("video", "video"), asset("subtitles.ai-zh", "subtitles", "ai-zh"),
              asset("subtitles.zh-CN", "subtitles", "zh-CN"), asset("subtitles.en-US", "subtitles", "en-US"),
              asset("subtitles.weird", "subtitles", "中文 <b>"), asset("subtitles.none", "subtitles"),
              asset("danmaku", "danmaku")]
    assert tracks(assets) == [Track("subtitles.none", "und", "unknown"), Track("subtitles.en-US", "en-US", "en-US"),
                              Track("subtitles.zh-CN", "zh-CN", "zh-CN"), Track("subtitles.weird", "und", "中文 <b>"),
                              Track("subtitles.ai-zh", "zh", "zh (automatic)")]


def test_of_an_extra_refreshed_the_newest_snapshot_is_shown() -> None:
    assets = [asset("comments", "comments"), asset("comments@20261205T130800Z", "comments"),
              asset("comments@20261201T000000Z", "comments"), asset("subtitles.zh-CN", "subtitles", "zh-CN")]
    (newest,) = extras_of(assets, "comments")
    assert newest.name == "comments@20261205T130800Z"
    assert snapshot_time(newest) == "2026-12-05T13:08:00+00:00"
    assert snapshot_time(assets[0]) is None and snapshot_time(asset("comments@garbage", "comments")) is None


def test_chapters_in_time_and_only_those_with_a_start() -> None:
    metadata: dict[str, Any] = {"chapters": [
        {"start_time": 162, "title": "二"}, {"start_time": 0.0, "title": "一"}, {"title": "no start"},
        {"start_time": "12", "title": "a string"}, {"start_time": -1}, {"start_time": True}, "not a chapter",
        {"start_time": 200, "title": ["not", "text"]}]}
    assert chapters(metadata) == [Chapter(0.0, "一"), Chapter(162.0, "二"), Chapter(200.0, "")]
    assert chapters({}) == [] and chapters({"chapters": "x"}) == []


def danmaku(*rows: tuple[str, str]) -> bytes:
    return ("<?xml version='1.0' encoding='UTF-8'?><i><chatid>1</chatid>" +
            "".join(f'<d p="{p}">{text}</d>' for p, text in rows) + "</i>").encode()


def test_danmaku_of_several_files_in_time_with_colours_and_text_as_text() -> None:
    view = danmaku_view([danmaku(("5.0,1,25,16711680,0,0,ab,1,0", "&lt;b&gt;red&lt;/b&gt;"),
                                 ("1.0,5,25,255,0,0,ab,2,0", "top")),
                         danmaku(("3.0,4,25,16777215,0,0,cd,3", "bottom"))])
    assert [(b.seconds, b.text, b.color, b.mode) for b in view.bullets] == [
        (1.0, "top", "#0000ff", "top"), (3.0, "bottom", "#ffffff", "bottom"), (5.0, "<b>red</b>", "#ff0000", "scroll")]
    assert view.total == 3 and view.errors == []


def test_danmaku_listed_are_bounded_and_a_broken_file_is_said() -> None:
    many = danmaku(*((f"{n},1,25,0,0,0,x,{n}", str(n)) for n in range(LISTED_DANMAKU + 1)))
    view = danmaku_view([many, b"<html>not danmaku</html>", b'<!DOCTYPE i [<!ENTITY a "b">]><i/>'])
    assert len(view.bullets) == LISTED_DANMAKU and view.total == LISTED_DANMAKU + 1
    assert view.bullets[-1].text == str(LISTED_DANMAKU - 1)
    assert view.errors == ["danmaku file's root is <html>, not <i>", "danmaku file declares a DTD or entities"]


def document(*comments: dict[str, Any], **fields: Any) -> bytes:
    return json.dumps({"version": 1, "total": fields.get("total"), "truncated": fields.get("truncated", False),
                       "comments": list(comments)}).encode()


def view_of(body: bytes, **page: Any) -> Any:
    return comments_view(comment_threads(body), **page)


def c(ident: str, parent: str = "root", **fields: Any) -> dict[str, Any]:
    return {"id": ident, "parent": parent, "text": f"text {ident}", "author": f"au {ident}", **fields}


def test_comments_in_threads_a_reply_to_a_reply_says_whom_it_answers() -> None:
    view = view_of(document(c("1", is_pinned=True, like_count=5, timestamp=1700000000), c("2"),
                                  c("11", "1"), c("12", "11"), c("21", "2"), c("13", "1"), total=9))
    assert [(t.comment.id, [r.id for r in t.replies], t.reply_count) for t in view.threads] == [
        ("1", ["11", "12", "13"], 3), ("2", ["21"], 1)]
    first = view.threads[0].comment
    assert (first.pinned, first.likes, first.when, first.reply_to) == (True, 5, "2023-11-14T22:13:20+00:00", None)
    assert [r.reply_to for r in view.threads[0].replies] == [None, "au 11", None]
    assert (view.count, view.stated, view.thread_count, view.pages, view.truncated) == (6, 9, 2, 1, False)


def test_comments_pages_and_a_thread_alone() -> None:
    body = document(*(c(str(n)) for n in range(5)), *(c(f"r{n}", "0") for n in range(7)), truncated=True)
    second = view_of(body, page=2, per_page=2, replies_shown=3)
    assert [t.comment.id for t in second.threads] == ["2", "3"] and (second.page, second.pages, second.first) == (2, 3, 2)
    first = view_of(body, page=1, per_page=2, replies_shown=3)
    assert [r.id for r in first.threads[0].replies] == ["r0", "r1", "r2"] and first.threads[0].reply_count == 7
    assert first.truncated
    past = view_of(body, page=99, per_page=2)
    assert past.page == 3 and [t.comment.id for t in past.threads] == ["4"]
    alone = view_of(body, thread="0", replies_shown=3)
    assert alone.single == "0" and [len(t.replies) for t in alone.threads] == [7]
    assert view_of(body, thread="r1").threads == [] and view_of(body, thread="nope").threads == []


def test_comments_whose_thread_is_not_archived_or_that_go_round_stand_alone() -> None:
    view = view_of(document(c("orphan", "gone"), c("a", "b"), c("b", "c"), c("c", "a"), c("x", "x")))
    threads = {t.comment.id: ([r.id for r in t.replies], t.comment.reply_to) for t in view.threads}
    assert threads["orphan"] == ([], "a comment not archived")
    assert view.count == 5 and sum(1 + len(replies) for replies, _ in threads.values()) == 5  # every one shown once
    assert threads["x"] == ([], None)


def test_a_long_chain_of_replies_stays_in_its_thread() -> None:
    chain = [c("0")] + [c(str(n), str(n - 1)) for n in range(1, 5000)]
    (thread,) = view_of(document(*chain)).threads
    assert thread.reply_count == 4999


@pytest.mark.parametrize(("body", "error"), [
    (b"not json", "the comments document is not JSON"),
    (b"[" * 100_000, "the comments document is not JSON"),
    (b'{"comments": "x"}', "the comments document has no comments[] of at most 1,000,000"),
    (b"[]", "the comments document has no comments[] of at most 1,000,000"),
    (b" " * (MAX_SHOWN_BYTES + 1), f"the comments document is {MAX_SHOWN_BYTES + 1:,} bytes, over the {MAX_SHOWN_BYTES:,} shown here"),
])
def test_a_broken_comments_document_is_said_not_shown(body: bytes, error: str) -> None:
    assert view_of(body).error == error


def test_odd_fields_of_a_comment_are_left_out_and_long_text_cut() -> None:
    (thread,) = view_of(document({"id": "1", "parent": "root", "text": "x" * 20_000, "author": 5,
                                        "like_count": True, "timestamp": 10 ** 30}, {"id": 7}, "junk")).threads
    shown = thread.comment
    assert (shown.author, shown.likes, shown.when, len(shown.text)) == ("(no name)", None, None, 10_001)


def test_what_was_read_lately_is_kept_by_its_hash_within_a_budget() -> None:
    recent: Recent[str] = Recent(budget=10)
    built: list[str] = []

    def build(view: str, weight: int | None) -> Any:
        return lambda: (built.append(view) or view, weight)

    assert recent.get("a", build("A", 4)) == "A" and recent.get("a", build("A again", 4)) == "A"
    assert recent.get("b", build("B", 5)) == "B"
    recent.get("a", build("-", 4))  # a, used last, stays; b goes when c comes
    assert recent.get("c", build("C", 5)) == "C"
    assert recent.get("a", build("A2", 4)) == "A" and recent.get("b", build("B2", 5)) == "B2"
    assert recent.get("big", build("BIG", 11)) == "BIG" and recent.get("big", build("BIG2", 11)) == "BIG2"
    assert recent.get("gone", build("G", None)) == "G" and recent.get("gone", build("G2", None)) == "G2"
    assert built == ["A", "B", "C", "B2", "BIG", "BIG2", "G", "G2"]
