"""The Bilibili resolver against the simulator serving the captured responses."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from trawl.errors import PreviewOnly, TrawlError
from trawl.models import refuse_previews
from trawl.platforms.base import ResolveContext
from trawl.platforms.bilibili.listings import uploader_listing
from trawl.platforms.bilibili.resolver import BilibiliResolver, av_to_bv, bv_to_av, wbi_sign
from trawl.platforms.bilibili import BilibiliSettings
from trawl.simulator import Simulator
from trawl.platforms.bilibili.site import (
    PRIVATE_VIDEO,
    SHORT_LINK,
    SHORT_LINK_NOT_VIDEO,
    SUPPORTER_ONLY,
    TEN_PARTS,
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
    video_asset, audio_asset, cover = item.assets
    assert (video_asset.kind, video_asset.urls) == ("video", [best["baseUrl"], *best["backupUrl"]])
    assert (audio_asset.kind, audio_asset.urls[0]) == ("audio", audio["baseUrl"])
    assert video_asset.headers["Referer"] == "https://www.bilibili.com/"
    assert (cover.name, cover.kind, cover.urls) == ("thumbnail", "thumbnail", [view["pic"]])
    assert item.metadata["merge"] == "dash"
    # yt-dlp's info fields, from the captured view answer
    meta = item.metadata
    assert (meta["id"], meta["aid"], meta["cid"]) == ("BV117411r7R1", 85440373, 146044693)
    assert (meta["uploader"], meta["uploader_id"]) == ("陈楒潼桶桶桶", "66606350")
    assert (meta["timestamp"], meta["upload_date"], meta["duration"]) == (1580377255, "20200130", 486.0)
    assert (meta["view_count"], meta["like_count"], meta["comment_count"]) == (2404179, 161270, 2676)
    assert meta["description"] == view["desc"] and meta["thumbnail"] == view["pic"]
    assert meta["tags"][:3] == ["全民音乐UP主", "CB", "warma"] and meta["categories"] == ["原创音乐"]
    assert meta["parts"] == [{"page": 1, "cid": 146044693, "title": view["pages"][0]["part"], "duration": 486.0}]
    assert "part" not in meta and item.more == []  # one part: nothing more to crawl


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
    assert [(a.name, a.urls[0], a.expected_size) for a in first.assets] == [
        ("video", durl["url"], durl["size"]), ("thumbnail", site.videos["BV1GJ411x7h7"].view["data"]["pic"], None)]
    assert first.assets[0].urls[1:] == durl["backup_url"]
    assert [m.url for m in first.more] == [site.url("BV1GJ411x7h7", page=2)]  # the bare URL names part 2
    second = resolver.resolve(site.sim.url("/video/av80433022?p=2"), ctx)
    assert second.canonical_key == "bilibili:BV1GJ411x7h7_p2"
    assert second.canonical_url == "https://www.bilibili.com/video/BV1GJ411x7h7?p=2"
    assert [a.name for a in second.assets] == ["video-1", "video-2", "thumbnail"] and second.duration == 180
    assert second.more == [] and (second.metadata["part"], second.metadata["cid"]) == (2, 1002)


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
    assert uploader_listing(resolver, ctx, UPLOADER_MID, 5, None) == [site.url("BV117411r7R1"),
                                                                      site.url("BV1GJ411x7h7")]
    assert uploader_listing(resolver, ctx, "1", 5, None) == []


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


# -- issue 17: every part, every URL form ------------------------------------------------------
PASTED_FORMS = [
    # the forms of yt-dlp's extractor tests, and the key each must give offline
    ("https://www.bilibili.com/festival/2023honkaiimpact3gala?bvid=BV1ay4y1d77f", "bilibili:BV1ay4y1d77f"),
    ("https://www.bilibili.com/festival/bh3-7th?bvid=BV1tr4y1f7p2&", "bilibili:BV1tr4y1f7p2"),
    ("https://www.bilibili.com/festival/bh3-7th?from=x&bvid=BV1tr4y1f7p2#reply", "bilibili:BV1tr4y1f7p2"),
    ("http://player.bilibili.com/player.html?aid=85440373&cid=146044693&page=1", "bilibili:BV117411r7R1"),
    ("https://player.bilibili.com/player.html?cid=1002&aid=80433022&page=2", "bilibili:BV1GJ411x7h7_p2"),
    ("https://player.bilibili.com/player.html?bvid=BV1GJ411x7h7&p=2&autoplay=0", "bilibili:BV1GJ411x7h7_p2"),
    ("https://www.bilibili.com/video/BV1bK411W797?p=1", "bilibili:BV1bK411W797"),  # part 1 keeps the bare key
    ("https://www.bilibili.com/video/BV1ms411Q7vw/?p=4", "bilibili:BV1ms411Q7vw_p4"),
    ("http://www.bilibili.com/video/av1074402/", "bilibili:BV11x411K7CN"),
    ("https://www.bilibili.com/video/av8903802/", "bilibili:BV13x41117TL"),
]


@pytest.mark.parametrize(("url", "key"), PASTED_FORMS)
def test_pasted_forms_and_their_keys(url: str, key: str) -> None:
    assert REAL.claims(url) and REAL.offline_key(url) == key


@pytest.mark.parametrize("url", [
    "https://www.bilibili.com/festival/2023honkaiimpact3gala",  # no video named
    "https://player.bilibili.com/player.html?cid=146044693",
    "https://player.bilibili.com/player.html?aid=99999999999999999999",  # beyond the BV range
    "https://www.bilibili.com/video/av99999999999999999999",
])
def test_forms_naming_no_video_have_no_key(url: str) -> None:
    assert REAL.offline_key(url) is None


@pytest.mark.parametrize(("url", "explicit"), [
    ("https://www.bilibili.com/video/BV117411r7R1", False),
    ("https://www.bilibili.com/festival/x?bvid=BV117411r7R1", False),
    ("https://www.bilibili.com/video/BV117411r7R1?p=1", True),  # naming part 1 is not the whole video
    ("https://player.bilibili.com/player.html?aid=85440373", True),  # the embed plays one part
])
def test_only_a_bare_url_stands_for_every_part(url: str, explicit: bool) -> None:
    ref = REAL.ref(url)
    assert ref is not None and ref.explicit is explicit


def test_ten_part_video_bare_url_is_part_one_naming_the_other_nine(sim: Simulator, client: httpx.Client) -> None:
    site = install_bilibili_site(sim)
    resolver = BilibiliResolver(site.settings())
    ctx = ResolveContext(client, 5 << 20)
    view = reference_json("bilibili_view_10pages_derived.json")["data"]
    first = resolver.resolve(site.url(TEN_PARTS), ctx)
    assert first.canonical_key == f"bilibili:{TEN_PARTS}"  # part 1 keeps the key items had before parts
    assert [m.url for m in first.more] == [site.url(TEN_PARTS, page=n) for n in range(2, 11)]
    assert [p["cid"] for p in first.metadata["parts"]] == [p["cid"] for p in view["pages"]]
    assert (first.metadata["part"], first.metadata["cid"], first.duration) == (1, view["pages"][0]["cid"], 60)
    assert [a.kind for a in first.assets] == ["video", "thumbnail"]
    seen = {first.assets[0].urls[0]}
    for page in (2, 7, 10):
        part = resolver.resolve(site.url(TEN_PARTS, page=page), ctx)
        # Each part is its own item with its own cid's streams, and names nothing more.
        assert part.canonical_key == f"bilibili:{TEN_PARTS}_p{page}" and part.more == []
        assert part.metadata["cid"] == view["pages"][page - 1]["cid"] and f"P{page} 第{page}集" in (part.title or "")
        assert part.assets[0].urls[0] not in seen
        seen.add(part.assets[0].urls[0])
    # ?p=1 is part 1 alone: no other parts
    assert resolver.resolve(site.url(TEN_PARTS) + "?p=1", ctx).more == []
    # the player embed resolves the part it plays
    embed = f"https://player.bilibili.com/player.html?aid=20261130&cid={view['pages'][2]['cid']}&page=3"
    assert resolver.resolve(embed, ctx).canonical_key == f"bilibili:{TEN_PARTS}_p3"


def test_festival_page_resolves_without_fetching_the_page(sim: Simulator, client: httpx.Client) -> None:
    site = install_bilibili_site(sim)
    item = BilibiliResolver(site.settings()).resolve(
        "https://www.bilibili.com/festival/2020bnj?bvid=BV117411r7R1", ResolveContext(client, 5 << 20))
    assert item.canonical_key == "bilibili:BV117411r7R1"
    assert not [path for path in sim.stats if path.startswith("/festival")]


def test_parts_known_offline_from_stored_metadata() -> None:
    stored = {"parts": [{"page": 1, "cid": 1}, {"page": 2, "cid": 2}, {"page": 3, "cid": 3}]}
    bare = "https://www.bilibili.com/video/BV1GJ411x7h7"
    assert REAL.more_offline(bare, stored) == [f"{bare}?p=2", f"{bare}?p=3"]
    assert REAL.more_offline(bare + "?p=2", stored) == []  # a part stands for itself only
    assert REAL.more_offline(bare, {"aid": "80433022"}) is None  # committed before parts were recorded: ask
    assert REAL.more_offline("https://b23.tv/kpLP9MF", stored) is None


def test_thumbnails_setting_off(sim: Simulator, client: httpx.Client) -> None:
    site = install_bilibili_site(sim)
    item = BilibiliResolver(site.settings(thumbnails=False)).resolve(site.url("BV117411r7R1"),
                                                                    ResolveContext(client, 5 << 20))
    assert [a.kind for a in item.assets] == ["video", "audio"] and item.metadata["thumbnail"]


def test_a_supporter_only_video_s_preview_is_marked_as_such(sim: Simulator, client: httpx.Client) -> None:
    site = install_bilibili_site(sim)
    item = BilibiliResolver(site.settings()).resolve(site.url(SUPPORTER_ONLY), ResolveContext(client, 5 << 20))
    streams = [a for a in item.assets if a.kind == "video"]
    assert streams and all("supporter-only" in a.preview for a in streams)
    assert not next(a for a in item.assets if a.kind == "thumbnail").preview  # the cover is the cover
    with pytest.raises(PreviewOnly) as caught:
        refuse_previews(item)
    assert caught.value.error_class == "preview_only" and not caught.value.retryable
    assert site.url(SUPPORTER_ONLY) not in caught.value.message  # it names the canonical URL
    assert f"https://www.bilibili.com/video/{SUPPORTER_ONLY}" in caught.value.message
