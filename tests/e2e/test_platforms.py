"""Each simulated platform end to end: the CLI, a real dev server, real files."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from temporalio.client import Client

from trawl.starter.client import item_result, start_item
from tests.conftest import make_settings
from tests.e2e.test_cli import blob_count, records, run, trawl_env
from trawl.platforms.registry import build_registry
import trawl.errors
from trawl.settings import PlatformSettings, PlatformsSettings
from trawl.simulator import Simulator
from trawl.platforms.bilibili.site import (
    PRIVATE_VIDEO,
    SHORT_LINK,
    SUPPORTER_ONLY,
    UNLISTED_CODE,
    UNLISTED_CODE_VIDEO,
    UPLOADER_MID,
    install_bilibili_site,
)
from trawl.platforms.facebook.site import LOGIN_WALL_ID, VIDEOS, install_facebook_site
from trawl.platforms.weibo.site import install_weibo_site
from trawl.storage.catalog import Catalog
from trawl.worker.main import running_worker


FFMPEG = shutil.which("ffmpeg") is not None  # CI has it: the DASH streams merge, the segments join


def probe(path: Path) -> tuple[list[str], float]:
    """The codecs of a file's streams (sorted) and its duration, by ffprobe."""
    done = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_name:format=duration",
                           "-of", "json", str(path)], capture_output=True, text=True, check=True)
    info = json.loads(done.stdout)
    return sorted(s["codec_name"] for s in info["streams"]), float(info["format"]["duration"])


def platform_env(name: str, config: PlatformSettings) -> dict[str, str]:
    """TRAWL_PLATFORMS__<NAME>__* variables for a platform's simulator settings."""
    env = {}
    for field, value in config.model_dump().items():
        if isinstance(value, (str, int, float)) and not isinstance(value, bool) and value != "":
            env[f"TRAWL_PLATFORMS__{name.upper()}__{field.upper()}"] = str(value)
    return env


@pytest.fixture
def bili(sim: Simulator):
    return install_bilibili_site(sim)


def test_bilibili_three_url_forms_commit_once_with_dash_streams(bili, tmp_path: Path,
                                                               temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address, **platform_env("bilibili", bili.settings()))
    urls = [bili.url("BV117411r7R1"), bili.sim.url("/video/av85440373?spm_id_from=333.1"),
            bili.sim.url(f"/b23/{SHORT_LINK}")]
    done = run(["crawl", "--json", *urls], env, tmp_path)
    assert done.returncode == 0, done.stderr
    got = records(done.stdout)
    assert {r["canonical_key"] for r in got} == {"bilibili:BV117411r7R1"}
    assert {r["outcome"] for r in got} <= {"committed", "duplicate"} and "committed" in {r["outcome"] for r in got}
    committed = next(r for r in got if r["outcome"] == "committed")
    if FFMPEG:  # the streams merged into one MP4 that plays 486 s of picture and sound; the cover beside it
        assert {a["kind"]: a["mime"] for a in committed["assets"]} == {"video": "video/mp4", "thumbnail": "image/jpeg"}
        video = next(a for a in committed["assets"] if a["kind"] == "video")
        assert probe(Path(video["path"])) == (["aac", "h264"], pytest.approx(486, abs=1))
        files = 2
    else:  # no ffmpeg: both streams kept
        # The DASH audio stream is an ISO file like the video: its kind, not its bytes, makes it audio/mp4.
        assert {a["kind"]: a["mime"] for a in committed["assets"]} == {"video": "video/mp4", "audio": "audio/mp4",
                                                                       "thumbnail": "image/jpeg"}
        files = 3
    listed = records(run(["items", "--json"], env, tmp_path).stdout)
    assert len(listed) == 1 and listed[0]["platform"] == "bilibili"
    assert listed[0]["canonical_url"] == "https://www.bilibili.com/video/BV117411r7R1"
    # Its files once, and its five extras (danmaku, two subtitle tracks, chapters, comments).
    assert blob_count(tmp_path) == files + 5


def test_bilibili_multipart_durl_segments(bili, tmp_path: Path, temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address, **platform_env("bilibili", bili.settings()))
    done = run(["crawl", "--json", bili.url("BV1GJ411x7h7"), bili.url("BV1GJ411x7h7", page=2)], env, tmp_path)
    assert done.returncode == 0, done.stderr
    got = {r["canonical_key"]: r for r in records(done.stdout)}
    assert set(got) == {"bilibili:BV1GJ411x7h7", "bilibili:BV1GJ411x7h7_p2"}
    first, second = got["bilibili:BV1GJ411x7h7"], got["bilibili:BV1GJ411x7h7_p2"]
    assert [a["name"] for a in first["assets"]] == ["thumbnail", "video"]  # part 1: one segment, kept as served
    assert all(Path(a["path"]).read_bytes()[:3] == (b"\xff\xd8\xff" if a["kind"] == "thumbnail" else b"FLV")
               for a in first["assets"])
    if FFMPEG:  # part 2's two 90 s segments joined into one MP4 of 180 s
        assert [(a["name"], a["mime"]) for a in second["assets"]] == [("thumbnail", "image/jpeg"), ("video", "video/mp4")]
        assert probe(Path(second["assets"][1]["path"])) == (["aac", "h264"], pytest.approx(180, abs=1))
    else:
        assert [a["name"] for a in second["assets"]] == ["thumbnail", "video-1", "video-2"]
    if shutil.which("ffprobe"):  # every FLV stored plays as long as the platform says
        assert probe(Path(first["assets"][1]["path"])) == (["aac", "h264"], pytest.approx(120, abs=1))


def test_resolve_and_source_through_the_cli(bili, tmp_path: Path, temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address, **platform_env("bilibili", bili.settings()),
                    TRAWL_SOURCES=json.dumps([{"name": "uploads", "kind": "bilibili_uploader", "id": UPLOADER_MID}]))
    resolved = run(["resolve", "--json", bili.sim.url("/video/av85440373"), bili.url("BV17x411w7KC")], env, tmp_path)
    assert resolved.returncode == 1
    first, second = records(resolved.stdout)
    assert first["canonical_key"] == "bilibili:BV117411r7R1" and first["duration"] == 486
    assert [a["kind"] for a in first["assets"]] == ["video", "audio", "thumbnail"] and blob_count(tmp_path) == 0
    assert (second["outcome"], second["error_class"]) == ("failed", "not_found")
    crawled = run(["crawl", "--json", "--source", "uploads"], env, tmp_path)
    assert crawled.returncode == 0, crawled.stderr
    # The uploader's two-part video is listed once and crawled whole: both parts.
    assert {r["canonical_key"] for r in records(crawled.stdout)} == {"bilibili:BV117411r7R1",
                                                                      "bilibili:BV1GJ411x7h7",
                                                                      "bilibili:BV1GJ411x7h7_p2"}
    unknown = run(["crawl", "--source", "nope"], env, tmp_path)
    assert unknown.returncode == 2 and "no source named 'nope'" in unknown.stderr


def test_weibo_video_and_picture_posts(sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    site = install_weibo_site(sim)
    env = trawl_env(tmp_path, temporal_address, **platform_env("weibo", site.settings()))
    video, pictures = site.posts["playback"], site.posts["pictures"]
    urls = [sim.url(f"/{video.uid}/{video.mblogid}"), sim.url(f"/detail/{video.mid}"),
            sim.url(f"/{pictures.uid}/{pictures.mblogid}")]
    done = run(["crawl", "--json", *urls], env, tmp_path)
    assert done.returncode == 0, done.stderr
    got = records(done.stdout)
    assert {r["canonical_key"] for r in got} == {f"weibo:{video.mid}", f"weibo:{pictures.mid}"}
    pics = next(r for r in got if r["canonical_key"] == f"weibo:{pictures.mid}")
    assert [a["kind"] for a in pics["assets"]] == ["image", "image"]
    assert all(Path(a["path"]).read_bytes()[:3] == b"\xff\xd8\xff" for a in pics["assets"])
    assert len(records(run(["items", "--json"], env, tmp_path).stdout)) == 2


def test_bilibili_platform_codes_are_classified_through_the_cli(bili, tmp_path: Path,
                                                                temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address, **platform_env("bilibili", bili.settings()))
    urls = [bili.url(PRIVATE_VIDEO), bili.url(UNLISTED_CODE_VIDEO)]
    resolved = run(["resolve", "--json", *urls], env, tmp_path)
    assert resolved.returncode == 1
    private, unlisted = records(resolved.stdout)
    assert (private["error_class"], unlisted["error_class"]) == ("forbidden", "platform_error")
    assert "62012" in private["error"] and "仅UP主自己可见" in private["error"] and urls[0] in private["error"]
    assert str(UNLISTED_CODE) in unlisted["error"] and urls[1] in unlisted["error"]


def test_a_supporter_only_preview_is_never_stored_as_the_video(bili, tmp_path: Path, temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address, **platform_env("bilibili", bili.settings()))
    url = bili.url(SUPPORTER_ONLY)
    resolved = run(["resolve", "--json", url], env, tmp_path)
    assert resolved.returncode == 1 and records(resolved.stdout)[0]["error_class"] == "preview_only"
    crawled = run(["crawl", "--json", url], env, tmp_path)
    assert crawled.returncode == 1, crawled.stderr
    [item] = records(crawled.stdout)
    assert (item["outcome"], item["error_class"]) == ("failed", "preview_only")
    assert "supporter-only" in item["error"] and "cookies_file" in item["error"] and SUPPORTER_ONLY in item["error"]
    assert blob_count(tmp_path) == 0  # nothing of the preview entered the store
    assert records(run(["items", "--json"], env, tmp_path).stdout) == []
    assert not any(SUPPORTER_ONLY in path and s.requests for path, s in bili.sim.stats.items())  # no preview byte


def test_a_kept_preview_is_an_item_of_its_own(bili, tmp_path: Path, temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address, **platform_env("bilibili", bili.settings()))
    url = bili.url(SUPPORTER_ONLY)
    kept = run(["crawl", "--json", "--keep-previews", url], env, tmp_path)
    assert kept.returncode == 0, kept.stderr
    [item] = records(kept.stdout)
    assert (item["outcome"], item["canonical_key"]) == ("committed", f"bilibili:{SUPPORTER_ONLY}:preview")
    [stored] = records(run(["items", "--json"], env, tmp_path).stdout)
    assert stored["preview"] and "preview" in stored["preview"], stored
    assert "[preview]" in run(["items"], env, tmp_path).stdout
    # The video's own key stays free: without the flag it still fails, never a duplicate of the preview.
    again = run(["crawl", "--json", url], env, tmp_path)
    assert (records(again.stdout)[0]["outcome"], records(again.stdout)[0]["error_class"]) == ("failed", "preview_only")


# Few, quick fetch attempts: an answer misread as retryable fails as that class instead of hanging.
QUICK_FETCH = {"TRAWL_RETRY__FETCH__MAXIMUM_ATTEMPTS": "2", "TRAWL_RETRY__FETCH__INITIAL_INTERVAL": "100ms",
               "TRAWL_RETRY__FETCH__MAXIMUM_INTERVAL": "200ms"}


def test_weibo_login_wall_fails_at_once_asking_for_cookies(sim: Simulator, tmp_path: Path,
                                                           temporal_address: str) -> None:
    site = install_weibo_site(sim)
    site.login_wall = {"desktop", "mobile"}
    env = trawl_env(tmp_path, temporal_address, **platform_env("weibo", site.settings()), **QUICK_FETCH)
    post = site.posts["playback"]
    done = run(["crawl", "--json", sim.url(f"/{post.uid}/{post.mblogid}")], env, tmp_path)
    assert done.returncode == 1
    [got] = records(done.stdout)
    assert (got["outcome"], got["error_class"]) == ("failed", "login_required")
    assert "platforms.weibo.cookies_file" in got["error"]
    assert sim.stats["/statuses/show"].requests == 1  # tried the mobile API once, then stopped


def test_weibo_repost_commits_under_its_own_key_with_the_video(sim: Simulator, tmp_path: Path,
                                                               temporal_address: str) -> None:
    site = install_weibo_site(sim)
    env = trawl_env(tmp_path, temporal_address, **platform_env("weibo", site.settings()))
    repost, original = site.posts["repost"], site.posts["urls"]
    urls = [sim.url(f"/{repost.uid}/{repost.mblogid}"), sim.url(f"/detail/{original.mid}")]
    done = run(["crawl", "--json", *urls], env, tmp_path)
    assert done.returncode == 0, done.stderr
    got = {r["canonical_key"]: r for r in records(done.stdout)}
    assert set(got) == {f"weibo:{repost.mid}", f"weibo:{original.mid}"}
    shared = got[f"weibo:{repost.mid}"]
    assert shared["title"] == repost.title and "转发微博" not in shared["title"]
    assert [a["kind"] for a in shared["assets"]] == ["thumbnail", "video"]
    assert shared["assets"][0]["sha256"] == got[f"weibo:{original.mid}"]["assets"][0]["sha256"]
    # The reposted video (and its cover) is stored once; each post has its comments document.
    assert blob_count(tmp_path) == 2 + 2


def test_facebook_short_link_and_login_wall(sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    site = install_facebook_site(sim)
    env = trawl_env(tmp_path, temporal_address, **platform_env("facebook", site.settings(requests_per_second=50)))
    classic = VIDEOS[0]
    urls = [sim.url(f"/{classic.page}/videos/{classic.id}"), site.short_url("aBc12XyZ9"),
            sim.url(f"/watch/?v={LOGIN_WALL_ID}")]
    done = run(["crawl", "--json", *urls], env, tmp_path)
    assert done.returncode == 1
    got = {r["url"]: r for r in records(done.stdout)}
    assert got[urls[0]]["canonical_key"] == got[urls[1]]["canonical_key"] == f"facebook:{classic.id}"
    assert {a["kind"]: a["size"] for a in got[urls[0]]["assets"]}["video"] == classic.hd_size
    assert (got[urls[2]]["outcome"], got[urls[2]]["error_class"]) == ("failed", "login_required")
    assert len(records(run(["items", "--json"], env, tmp_path).stdout)) == 1


async def test_expired_media_url_is_refetched_and_resumed(temporal_client: Client, tmp_path: Path,
                                                          temporal_address: str, bili) -> None:
    settings = make_settings(tmp_path, temporal_address,
                             retry={"download": {"initial_interval": "3s", "maximum_interval": "3s"}},
                             platforms=PlatformsSettings(bilibili=bili.settings()))
    registry = build_registry(settings.platforms)
    resolver = registry.resolvers[0]
    from trawl.http_client import make_client
    from trawl.platforms.base import ResolveContext

    with make_client(settings.net) as http:
        first_urls = resolver.resolve(bili.url("BV117411r7R1"), ResolveContext(http, 1 << 20)).assets[0].urls
    cut = bili.behaviour(first_urls[0])
    cut.cut_at = 150_000
    # The backup mirror is down, so the cut download can only go on after the retry delay, by
    # which time the URLs have expired: the path under test, whatever the machine's load.
    bili.behaviour(first_urls[1]).statuses.extend([503] * 10)
    async with running_worker(temporal_client, settings, registry):
        started = await start_item(temporal_client, settings, registry, bili.url("BV117411r7R1"))
        deadline = time.monotonic() + 30
        while cut.cut_times and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        bili.expire_media()  # the CDN deadline passes between the cut and the retry
        result = await asyncio.wait_for(item_result(started.handle, ""), 90)
    assert result.outcome == "committed", result
    playurls = bili.sim.stats["/x/player/wbi/playurl"].requests
    assert playurls == 3  # our probe, the first fetch, the re-fetch after url_expired
    served = sum(s.bytes_sent for path, s in bili.sim.stats.items() if "/video-80-" in path)
    stream = bili.media.files[first_urls[0].split(bili.media.prefix + "/", 1)[1].split("?", 1)[0]].media
    assert served < stream.size + 50_000  # resumed from the cut on the fresh URL
    ranges = [r for path, s in bili.sim.stats.items() if "/g1/video-80-" in path for r in s.ranges]
    assert ranges and ranges[0] == "bytes=150000-"


async def test_rate_limited_platform_recovers(temporal_client: Client, tmp_path: Path, temporal_address: str,
                                              bili) -> None:
    settings = make_settings(tmp_path, temporal_address,
                             retry={"fetch": {"initial_interval": "500ms", "maximum_interval": "2s"}},
                             platforms=PlatformsSettings(bilibili=bili.settings()))
    bili.rate_limit_per_s = 2
    registry = build_registry(settings.platforms)
    urls = [bili.url("BV117411r7R1"), bili.url("BV1GJ411x7h7"), bili.url("BV1GJ411x7h7", page=2)]
    async with running_worker(temporal_client, settings, registry):
        handles = [(await start_item(temporal_client, settings, registry, u)).handle for u in urls]
        results = await asyncio.wait_for(asyncio.gather(*(item_result(h, "") for h in handles)), 120)
    assert [r.outcome for r in results] == ["committed"] * 3
    statuses = bili.sim.stats["/x/web-interface/view"].requests + bili.sim.stats["/x/player/wbi/playurl"].requests
    assert statuses > 6  # some answers were 412/-352 and were asked again
    assert Catalog(settings.catalog_url).count() == 3


async def test_cookies_never_reach_temporal_history(temporal_client: Client, tmp_path: Path,
                                                    temporal_address: str, bili) -> None:
    cookies = tmp_path / "cookies.txt"
    cookies.write_text("# Netscape HTTP Cookie File\n"
                       ".bilibili.com\tTRUE\t/\tFALSE\t0\tSESSDATA\ttop-secret-session-value\n")
    settings = make_settings(tmp_path, temporal_address,
                             platforms=PlatformsSettings(bilibili=bili.settings(cookies_file=str(cookies))))
    registry = build_registry(settings.platforms)
    async with running_worker(temporal_client, settings, registry):
        started = await start_item(temporal_client, settings, registry, bili.url("BV117411r7R1"))
        result = await asyncio.wait_for(item_result(started.handle, ""), 60)
    assert result.outcome == "committed"
    history = await started.handle.fetch_history()
    raw = b"".join(event.SerializeToString() for event in history.events)
    assert b"BV117411r7R1" in raw  # the payloads are searchable as they are
    assert b"top-secret-session-value" not in raw and str(cookies).encode() not in raw


async def test_unresolvable_host_is_retried_briefly_then_fails_as_name_not_found(
        temporal_client: Client, tmp_path: Path, temporal_address: str) -> None:
    settings = make_settings(tmp_path, temporal_address,
                             retry={"fetch": {"initial_interval": "100ms", "maximum_interval": "200ms",
                                              "maximum_attempts": 8}})
    registry = build_registry(settings.platforms)
    async with running_worker(temporal_client, settings, registry):
        started = await start_item(temporal_client, settings, registry, "http://media.invalid/clip.mp4")
        result = await asyncio.wait_for(item_result(started.handle, ""), 90)
    assert (result.outcome, result.error_class) == ("failed", "name_not_found")
    assert "media.invalid" in (result.error or "") and "does not resolve" in (result.error or "")
    history = await started.handle.fetch_history()
    fetches = {e.event_id for e in history.events if e.HasField("activity_task_scheduled_event_attributes")
               and e.activity_task_scheduled_event_attributes.activity_type.name in ("fetch", "fetch_and_store_tiny")}
    attempts = [e.activity_task_started_event_attributes.attempt for e in history.events
                if e.HasField("activity_task_started_event_attributes")
                and e.activity_task_started_event_attributes.scheduled_event_id in fetches]
    assert attempts == [trawl.errors.NAME_NOT_FOUND_ATTEMPTS]  # the last attempt's number
    assert trawl.errors.NAME_NOT_FOUND_ATTEMPTS < 8  # a few attempts, not the policy's eight
