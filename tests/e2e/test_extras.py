"""Extras as a user meets them (issue 41): ``trawl crawl --export DIR --write-subs ...`` and
``trawl export`` with yt-dlp's flags, files named as yt-dlp names them. Subprocesses, a real
Temporal server, the simulated Bilibili over loopback, real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_cli import records, run, trawl_env
from tests.e2e.test_platforms import platform_env
from trawl.platforms.bilibili.danmaku import parse_danmaku_xml
from trawl.platforms.bilibili.site import BilibiliSite, install_bilibili_site
from trawl.simulator import Simulator

VIDEO = "BV117411r7R1"
CID = 146044693


@pytest.fixture
def bili(sim: Simulator) -> BilibiliSite:
    return install_bilibili_site(sim)


def test_a_crawl_leaves_subtitles_danmaku_and_chapters_beside_the_media(bili: BilibiliSite, tmp_path: Path,
                                                                        temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address, **platform_env("bilibili", bili.settings()))
    out = tmp_path / "out"
    crawled = run(["crawl", "--json", bili.url(VIDEO), "--export", str(out), "-o", "%(title)s [%(id)s].%(ext)s",
                   "--write-subs", "--write-auto-subs", "--sub-langs", "all", "--write-comments", "--write-info-json"],
                  env, tmp_path)
    assert crawled.returncode == 0, crawled.stderr
    [result] = records(crawled.stdout)
    assert result["outcome"] == "committed"
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    stem = f"{result['title']} [{VIDEO}]"
    # The simulated streams are not real media, so ffmpeg leaves video and audio apart (.mp4, .m4a).
    assert set(names) - {f"{stem}.m4a"} == {f"{stem}.mp4", f"{stem}.info.json", f"{stem}.jpg", f"{stem}.zh-CN.srt",
                                             f"{stem}.ai-zh.srt", f"{stem}.danmaku.xml"}, names
    srt = (out / f"{stem}.zh-CN.srt").read_text()
    assert srt.startswith("1\n00:00:00,000 --> 00:00:09,000\n第1句 <i>原样</i>\n\n2\n00:00:10,000 --> ")
    assert (out / f"{stem}.ai-zh.srt").read_text().count(" --> ") == len(bili.extras.cues(CID, "ai-zh"))
    _, comments = parse_danmaku_xml((out / f"{stem}.danmaku.xml").read_bytes())
    assert len(comments) == len(bili.extras.danmaku(CID))
    info = json.loads((out / f"{stem}.info.json").read_text())
    assert [c["title"] for c in info["chapters"]] == ["开场", "正片 <一>", "彩蛋"]
    assert info["chapters"][0] == {"start_time": 0.0, "end_time": 162.0, "title": "开场"}
    # With --write-info-json the comments are inside it, as yt-dlp puts them: every one and every reply.
    assert len(info["comments"]) == bili.extras.expected_comments(85440373) == 858
    assert info["comments"][0]["is_pinned"] and {c["parent"] for c in info["comments"]} > {"root"}
    # The track Bilibili lists only to a logged-in account is in the result, missing with its reason.
    missing = {e["name"]: e["missing"] for e in result["extras"] if e["missing"]}
    assert missing == {"subtitles.ai-en": "login_required"}

    # trawl export with other choices: one language as WebVTT, no danmaku, no automatic tracks.
    again = tmp_path / "again"
    exported = run(["export", str(again), "-o", "%(id)s.%(ext)s", "--write-subs", "--sub-langs", "zh-.*,-danmaku",
                    "--sub-format", "vtt"], env, tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert set(exported.stdout.split()) - {f"{VIDEO}.m4a"} == {f"{VIDEO}.jpg", f"{VIDEO}.mp4", f"{VIDEO}.zh-CN.vtt"}
    vtt = (again / f"{VIDEO}.zh-CN.vtt").read_text()
    assert vtt.startswith("WEBVTT\n\n00:00:00.000 --> 00:00:09.000\n第1句 &lt;i&gt;原样&lt;/i&gt;\n")
    twice = run(["export", str(again), "-o", "%(id)s.%(ext)s", "--write-subs", "--sub-langs", "zh-.*",
                 "--sub-format", "vtt"], env, tmp_path)
    assert twice.returncode == 0 and twice.stdout == "", twice.stderr  # nothing new: the sidecar is kept


def test_a_bad_sub_langs_is_one_line(tmp_path: Path, temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address)
    done = run(["export", str(tmp_path / "x"), "--write-subs", "--sub-langs", "zh-(CN"], env, tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "--sub-langs 'zh-(CN' is not a regular expression" in done.stderr


def test_a_weibo_posts_comments_land_beside_its_media(sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    from trawl.platforms.weibo.site import install_weibo_site

    weibo = install_weibo_site(sim)
    post = weibo.posts["playback"]
    env = trawl_env(tmp_path, temporal_address, **platform_env("weibo", weibo.settings(requests_per_second=1000)))
    out = tmp_path / "out"
    crawled = run(["crawl", "--json", post.url, "--export", str(out), "-o", "%(id)s.%(ext)s", "--write-comments"],
                  env, tmp_path)
    assert crawled.returncode == 0, crawled.stderr
    doc = json.loads((out / f"{post.mid}.comments.json").read_text())  # no info JSON: a file of its own
    assert doc["count"] == weibo.comments.expected(post.mid) and len(doc["comments"]) == doc["count"]


def test_extras_flags_without_an_export_are_one_line(tmp_path: Path, temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address)
    done = run(["crawl", "https://www.bilibili.com/video/BV117411r7R1", "--write-subs"], env, tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "--write-subs writes files beside exported media: add --export DIR" in done.stderr


def test_trawl_extras_refreshes_into_a_dated_snapshot(bili: BilibiliSite, tmp_path: Path,
                                                     temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address, **platform_env("bilibili", bili.settings()))
    crawled = run(["crawl", bili.url(VIDEO)], env, tmp_path)
    assert crawled.returncode == 0, crawled.stderr
    refreshed = run(["extras", bili.url(VIDEO), "--only", "comments", "--json"], env, tmp_path)
    assert refreshed.returncode == 0, refreshed.stderr
    [result] = records(refreshed.stdout)
    [comments] = result["extras"]
    assert comments["name"] == f"comments@{result['snapshot']}" and comments["missing"] is None
    items = run(["items", "--json"], env, tmp_path)
    [item] = records(items.stdout)
    assert {"comments", f"comments@{result['snapshot']}"} <= {a["name"] for a in item["assets"]}
    unknown = run(["extras", "bilibili:BV1xx411c7mD"], env, tmp_path)
    assert unknown.returncode != 0 and "no committed item" in unknown.stderr and "Traceback" not in unknown.stderr


def test_a_facebook_videos_captions_land_beside_it(sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    from trawl.platforms.facebook.site import CLASSIC_ID, install_facebook_site

    site = install_facebook_site(sim)
    env = trawl_env(tmp_path, temporal_address, **platform_env("facebook", site.settings(requests_per_second=50)))
    out = tmp_path / "out"
    crawled = run(["crawl", "--json", sim.url(f"/watch/?v={CLASSIC_ID}"), "--export", str(out), "-o", "%(id)s.%(ext)s",
                   "--write-subs", "--write-auto-subs", "--sub-format", "vtt"], env, tmp_path)
    assert crawled.returncode == 0, crawled.stderr
    [result] = records(crawled.stdout)
    assert {e["name"] for e in result["extras"] if not e["missing"]} == {"subtitles.en_US", "subtitles.ai-fr_FR"}
    vtt = (out / f"{CLASSIC_ID}.en_US.vtt").read_text()
    assert vtt.startswith("WEBVTT\n\n00:00:00.000 --> 00:00:04.500\nHarbour lights at &lt;i&gt;dusk&lt;/i&gt;\n")
    assert (out / f"{CLASSIC_ID}.ai-fr_FR.vtt").read_text().endswith("Les lumières du port\n")


def test_the_danmaku_exported_as_ass(bili: BilibiliSite, tmp_path: Path, temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address, **platform_env("bilibili", bili.settings(extras=["danmaku"])))
    out = tmp_path / "out"
    crawled = run(["crawl", bili.url(VIDEO), "--export", str(out), "-o", "%(id)s.%(ext)s", "--write-subs",
                   "--sub-langs", "danmaku", "--danmaku-format", "ass"], env, tmp_path)
    assert crawled.returncode == 0, crawled.stderr
    assert not (out / f"{VIDEO}.danmaku.xml").exists()
    ass = (out / f"{VIDEO}.danmaku.ass").read_text(encoding="utf-8-sig")
    assert ass.startswith("[Script Info]\n") and ass.count("\nDialogue: ") == len(bili.extras.danmaku(CID))
    bad = run(["export", str(out), "--write-subs", "--danmaku-format", "srt"], env, tmp_path)
    assert bad.returncode != 0 and "--danmaku-format 'srt'" in bad.stderr and "Traceback" not in bad.stderr
