"""The Bilibili resolver against the simulator serving the captured responses."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from trawl.errors import TrawlError
from trawl.platforms.base import ResolveContext
from trawl.platforms.bilibili import BilibiliResolver, av_to_bv, bv_to_av, wbi_sign
from trawl.settings import BilibiliSettings
from trawl.simulator import Simulator
from trawl.simulator.bilibili import (
    PRIVATE_VIDEO,
    SHORT_LINK,
    SHORT_LINK_NOT_VIDEO,
    UNLISTED_CODE,
    UNLISTED_CODE_VIDEO,
    UPLOADER_MID,
    VIEW_ERRORS,
    install_bilibili_site,
)
from trawl.simulator.references import reference_json

REAL = BilibiliResolver(BilibiliSettings())


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("https://www.bilibili.com/video/BV117411r7R1", "bilibili:BV117411r7R1"),
        ("https://www.bilibili.com/video/BV117411r7R1/", "bilibili:BV117411r7R1"),
        ("https://bilibili.com/video/BV117411r7R1?spm_id_from=333.1&vd_source=ab", "bilibili:BV117411r7R1"),
        ("https://www.bilibili.com/video/av85440373", "bilibili:BV117411r7R1"),
        ("https://www.bilibili.com/video/AV85440373", "bilibili:BV117411r7R1"),
        ("https://m.bilibili.com/video/BV117411r7R1", "bilibili:BV117411r7R1"),
        ("https://www.bilibili.com/video/BV117411r7R1?p=1", "bilibili:BV117411r7R1"),
        ("https://www.bilibili.com/video/BV117411r7R1?p=2", "bilibili:BV117411r7R1_p2"),
        ("https://m.bilibili.com/video/av80433022?p=3&share_source=copy", "bilibili:BV1GJ411x7h7_p3"),
        ("https://www.bilibili.com/video/BV117411r7r1", "bilibili:BV117411r7r1"),  # ids are case-sensitive
        ("https://b23.tv/kpLP9MF", None),  # claimed; the key needs the redirect
    ],
)
def test_url_forms_and_offline_keys(url: str, key: str | None) -> None:
    assert REAL.claims(url)
    assert REAL.offline_key(url) == key


@pytest.mark.parametrize(
    "url",
    ["https://www.bilibili.com/read/cv123", "https://space.bilibili.com/66606350", "https://www.bilibili.com/",
     "https://www.bilibili.com/video/BV0xx411c7mD", "https://www.bilibili.com.evil.example/video/BV117411r7R1",
     "https://live.bilibili.com/21452505"],
)
def test_refused_forms(url: str) -> None:
    assert not REAL.claims(url)


@pytest.mark.parametrize(("aid", "bvid"), [(85440373, "BV117411r7R1"), (170001, "BV17x411w7KC"),
                                           (80433022, "BV1GJ411x7h7")])
def test_av_bv_conversion(aid: int, bvid: str) -> None:
    assert av_to_bv(aid) == bvid and bv_to_av(bvid) == aid


def test_wbi_signature_matches_the_documented_example() -> None:
    signed = wbi_sign({"foo": "114", "bar": "514", "zab": 1919810}, "7cd084941338484aae1ad9425b84077c",
                      "4932caff0ff746eab6f01bf08b70ac45", now=1702204169)
    assert signed["w_rid"] == "8f6f2b5b3d485fe1886cec6a0be8c5d4"


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(follow_redirects=True) as c:
        yield c


@pytest.fixture
def verbatim(sim: Simulator, client: httpx.Client):
    site = install_bilibili_site(sim, rewrite_media=False)
    return site, BilibiliResolver(site.settings()), ResolveContext(client, 5 * 1024 * 1024)


def test_dash_video_resolves_to_the_captured_fields(verbatim) -> None:
    site, resolver, ctx = verbatim
    item = resolver.resolve(site.url("BV117411r7R1"), ctx)
    view = reference_json("bilibili_view_1.json")["data"]
    dash = reference_json("bilibili_playurl_dash_1.json")["data"]["dash"]
    assert item.canonical_key == "bilibili:BV117411r7R1"
    assert item.canonical_url == "https://www.bilibili.com/video/BV117411r7R1"
    assert (item.title, item.uploader, item.duration) == (view["title"], view["owner"]["name"], 486.0)
    assert item.published_at == "2020-01-30T09:40:55Z"
    # quality 80 wanted: the 1080P streams; AVC (codecid 7) preferred over HEVC.
    best = next(v for v in dash["video"] if v["id"] == 80 and v["codecid"] == 7)
    audio = max(dash["audio"], key=lambda a: a["bandwidth"])
    video_asset, audio_asset = item.assets
    assert (video_asset.kind, video_asset.urls) == ("video", [best["baseUrl"], *best["backupUrl"]])
    assert (audio_asset.kind, audio_asset.urls[0]) == ("audio", audio["baseUrl"])
    assert video_asset.headers["Referer"] == "https://www.bilibili.com/"
    assert item.metadata["merge"] == "dash"


def test_quality_setting_picks_the_stream(sim: Simulator, client: httpx.Client) -> None:
    site = install_bilibili_site(sim, rewrite_media=False)
    resolver = BilibiliResolver(site.settings(quality=32))
    item = resolver.resolve(site.url("BV117411r7R1"), ResolveContext(client, 5 << 20))
    dash = reference_json("bilibili_playurl_dash_1.json")["data"]["dash"]
    assert item.assets[0].urls[0] == next(v for v in dash["video"] if v["id"] == 32 and v["codecid"] == 7)["baseUrl"]


@pytest.mark.parametrize(("quality", "expected"), [
    (6, 16),  # below every offered stream: the lowest, not the best
    (15, 16),
    (16, 16),
    (48, 32),  # between two: the closest at or below
    (80, 80),
    (127, 80),  # above every stream: the best
])
def test_quality_picks_the_closest_stream_at_or_below_else_the_lowest(sim: Simulator, client: httpx.Client,
                                                                       quality: int, expected: int) -> None:
    site = install_bilibili_site(sim, rewrite_media=False)
    item = BilibiliResolver(site.settings(quality=quality)).resolve(site.url("BV117411r7R1"),
                                                                    ResolveContext(client, 5 << 20))
    dash = reference_json("bilibili_playurl_dash_1.json")["data"]["dash"]
    chosen = next(v for v in dash["video"] if v["id"] == expected and v["codecid"] == 7)  # AVC preferred
    assert item.assets[0].urls[0] == chosen["baseUrl"]


@pytest.mark.parametrize(("bvid", "error_class"), [(PRIVATE_VIDEO, "forbidden"),
                                                    (UNLISTED_CODE_VIDEO, "platform_error")])
def test_platform_codes_are_classified_with_code_message_and_url(verbatim, bvid: str, error_class: str) -> None:
    site, resolver, ctx = verbatim
    url = site.url(bvid)
    with pytest.raises(TrawlError) as caught:
        resolver.resolve(url, ctx)
    answer = VIEW_ERRORS[bvid]
    assert caught.value.error_class == error_class and not caught.value.retryable
    message = str(caught.value)
    assert str(answer["code"]) in message and answer["message"] in message and url in message
    assert "parse_error" not in message and "data.cid" not in message


def test_unlisted_code_on_playurl_is_not_a_parse_error(verbatim) -> None:
    site, resolver, ctx = verbatim
    video = site.videos["BV117411r7R1"]
    video.playurl = {cid: {"code": UNLISTED_CODE, "message": "视频无法播放", "ttl": 1} for cid in video.playurl}
    with pytest.raises(TrawlError) as caught:
        resolver.resolve(site.url("BV117411r7R1"), ctx)
    assert caught.value.error_class == "platform_error"
    assert "视频无法播放" in str(caught.value) and site.url("BV117411r7R1") in str(caught.value)


def test_durl_parts_and_segments(verbatim) -> None:
    site, resolver, ctx = verbatim
    durl = reference_json("bilibili_playurl_durl_1.json")["data"]["durl"][0]
    first = resolver.resolve(site.url("BV1GJ411x7h7"), ctx)
    assert first.canonical_key == "bilibili:BV1GJ411x7h7" and "P1 上集" in (first.title or "")
    assert [(a.name, a.urls[0], a.expected_size) for a in first.assets] == [("video", durl["url"], durl["size"])]
    assert first.assets[0].urls[1:] == durl["backup_url"]
    second = resolver.resolve(site.sim.url("/video/av80433022?p=2"), ctx)
    assert second.canonical_key == "bilibili:BV1GJ411x7h7_p2"
    assert second.canonical_url == "https://www.bilibili.com/video/BV1GJ411x7h7?p=2"
    assert [a.name for a in second.assets] == ["video-1", "video-2"] and second.duration == 180


def test_short_link_is_followed_and_tracking_dropped(verbatim) -> None:
    site, resolver, ctx = verbatim
    url = site.sim.url(f"/b23/{SHORT_LINK}")
    assert resolver.claims(url)
    item = resolver.resolve(url, ctx)
    assert item.canonical_key == "bilibili:BV117411r7R1"
    assert item.canonical_url == "https://www.bilibili.com/video/BV117411r7R1"


@pytest.mark.parametrize(
    ("path", "error_class"),
    [(f"/b23/{SHORT_LINK_NOT_VIDEO}", "unsupported_url"), ("/video/BV17x411w7KC", "not_found"),
     ("/video/BV1GJ411x7h7?p=9", "not_found"), ("/b23/unknown", "not_found")],
)
def test_failures(verbatim, path: str, error_class: str) -> None:
    site, resolver, ctx = verbatim
    with pytest.raises(TrawlError) as caught:
        resolver.resolve(site.sim.url(path), ctx)
    assert caught.value.error_class == error_class


def test_rate_limiting_is_classified(verbatim) -> None:
    site, resolver, ctx = verbatim
    site.rate_limit_per_s = 1
    with pytest.raises(TrawlError) as caught:
        for _ in range(3):
            resolver.resolve(site.url("BV117411r7R1"), ctx)
    assert caught.value.error_class == "rate_limited" and caught.value.retry_after >= 60


def test_playurl_without_a_valid_signature_is_refused(verbatim, client: httpx.Client) -> None:
    site, _, _ = verbatim
    answer = client.get(site.sim.url("/x/player/wbi/playurl?bvid=BV117411r7R1&cid=146044693&wts=1&w_rid=bad"))
    assert answer.json()["code"] == -403


def test_uploader_source_lists_videos(verbatim) -> None:
    site, resolver, ctx = verbatim
    assert resolver.uploader_video_urls(ctx, UPLOADER_MID) == [site.url("BV117411r7R1"), site.url("BV1GJ411x7h7")]
    assert resolver.uploader_video_urls(ctx, "1") == []


def test_rewritten_media_needs_the_referer(sim: Simulator, client: httpx.Client) -> None:
    site = install_bilibili_site(sim)
    item = BilibiliResolver(site.settings()).resolve(site.url("BV117411r7R1"), ResolveContext(client, 5 << 20))
    url = item.assets[0].urls[0]
    assert url.startswith(sim.base_url)
    assert client.get(url).status_code == 403
    ok = client.get(url, headers=item.assets[0].headers)
    assert ok.status_code == 200 and ok.content[4:8] == b"ftyp"


def test_mangled_answers_only_raise_classified_errors(sim: Simulator, client: httpx.Client) -> None:
    site = install_bilibili_site(sim, rewrite_media=False)
    resolver = BilibiliResolver(site.settings())
    ctx = ResolveContext(client, 5 << 20)
    video = site.videos["BV117411r7R1"]
    manglers = [
        lambda v, p: v["data"].pop("cid"),
        lambda v, p: v["data"].update(pages="nope", owner=None, pubdate="x", duration=None),
        lambda v, p: p["data"]["dash"].update(video=[{"id": "x"}]),
        lambda v, p: p["data"].pop("dash"),
        lambda v, p: p.update(data=[1, 2]),
        lambda v, p: v.update(data=None),
        lambda v, p: p["data"]["dash"]["video"][0].update(baseUrl=None, base_url=7, backupUrl="x"),
    ]
    for mangle in manglers:
        fresh = install_bilibili_site(Simulator().start(), rewrite_media=False)  # pristine copies
        view, play = fresh.videos["BV117411r7R1"].view, fresh.videos["BV117411r7R1"].playurl[146044693]
        fresh.sim.stop()
        mangle(view, play)
        video.view, video.playurl = view, {146044693: play}
        try:
            resolver.resolve(site.url("BV117411r7R1"), ctx)
        except TrawlError:
            pass
