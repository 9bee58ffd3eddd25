"""Bilibili listings (uploads, collections, series, favourites) and DASH stream choice, against the
simulator's list APIs; every URL form routed offline."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from trawl.errors import LoginRequired, TrawlError
from trawl.platforms.base import ResolveContext
from trawl.platforms.bilibili import PLATFORM, BilibiliSettings
from trawl.platforms.bilibili.listing_site import COLLECTION, FAVORITES, HIDDEN, POOL, SERIES
from trawl.platforms.bilibili.listings import collection_listing, favorites_listing, series_listing, uploader_listing
from trawl.platforms.bilibili.resolver import BilibiliResolver, av_to_bv
from trawl.platforms.bilibili.site import (
    COLLECTION_ID,
    FAVORITES_ID,
    HIRES_VIDEO,
    LIST_MID,
    PRIVATE_FAVORITES_ID,
    SERIES_ID,
    expected_urls,
    install_bilibili_site,
    pool_bvid,
)
from trawl.platforms.platform import platforms_model
from trawl.platforms.registry import PLATFORMS, build_registry, default_registry
from trawl.simulator import Simulator
from trawl.simulator.references import reference_json

REGISTRY = default_registry()
REAL = BilibiliResolver(BilibiliSettings())

# Every listing URL form: (url, kind, id). The examples are yt-dlp's and gallery-dl's test URLs
# (the listing research, section 2.2) and the forms the site shows.
LISTINGS = [
    ("https://space.bilibili.com/3985676/video", "bilibili_uploader", "3985676"),
    ("https://space.bilibili.com/313580179/video", "bilibili_uploader", "313580179"),
    ("https://space.bilibili.com/3985676", "bilibili_uploader", "3985676"),
    ("https://space.bilibili.com/3985676/", "bilibili_uploader", "3985676"),
    ("http://space.bilibili.com/3985676?spm_id_from=333.1007.0.0", "bilibili_uploader", "3985676"),
    ("https://space.bilibili.com/3985676/upload/video", "bilibili_uploader", "3985676"),
    ("https://space.bilibili.com/3985676/upload", "bilibili_uploader", "3985676"),
    ("https://space.bilibili.com/3985676/video?tid=0&pn=2&keyword=&order=pubdate", "bilibili_uploader", "3985676"),
    ("https://space.bilibili.com/3985676/#/video", "bilibili_uploader", "3985676"),
    ("https://space.bilibili.com/2142762/lists/3662502?type=season", "bilibili_collection", "2142762:3662502"),
    ("https://space.bilibili.com/2142762/lists/3662502", "bilibili_collection", "2142762:3662502"),
    ("https://space.bilibili.com/2142762/lists/3662502/?spm_id_from=333.999", "bilibili_collection",
     "2142762:3662502"),
    ("https://space.bilibili.com/2142762/channel/collectiondetail?sid=57445", "bilibili_collection", "2142762:57445"),
    ("https://space.bilibili.com/2142762/channel/collectiondetail?sid=57445&ctype=0", "bilibili_collection",
     "2142762:57445"),
    ("https://space.bilibili.com/3669403/lists/2046621?type=season", "bilibili_collection", "3669403:2046621"),
    ("https://space.bilibili.com/1958703906/lists/547718?type=series", "bilibili_series", "1958703906:547718"),
    ("https://space.bilibili.com/1958703906/lists/547718?spm_id_from=1&type=series", "bilibili_series",
     "1958703906:547718"),
    ("https://space.bilibili.com/1958703906/channel/seriesdetail?sid=547718&ctype=0", "bilibili_series",
     "1958703906:547718"),
    ("https://space.bilibili.com/1958703906/channel/seriesdetail?sid=547718", "bilibili_series",
     "1958703906:547718"),
    ("https://www.bilibili.com/list/1958703906?sid=547718", "bilibili_series", "1958703906:547718"),
    ("https://www.bilibili.com/medialist/play/1958703906?business=space_series&business_id=547718&desc=1",
     "bilibili_series", "1958703906:547718"),
    ("https://space.bilibili.com/84912/favlist?fid=1103407912&ftype=create", "bilibili_favorites", "1103407912"),
    ("https://space.bilibili.com/84912/favlist?fid=1103407912", "bilibili_favorites", "1103407912"),
    ("https://www.bilibili.com/medialist/detail/ml1103407912", "bilibili_favorites", "1103407912"),
    ("https://www.bilibili.com/medialist/detail/ml1103407912?type=1", "bilibili_favorites", "1103407912"),
    ("https://www.bilibili.com/list/ml1103407912", "bilibili_favorites", "1103407912"),
    ("https://www.bilibili.com/medialist/play/ml1103407912", "bilibili_favorites", "1103407912"),
]
# Forms only a logged-in account lists: refused offline as login_required.
LOGIN_FORMS = [
    "https://www.bilibili.com/watchlater/#/list",
    "https://www.bilibili.com/watchlater",
    "https://www.bilibili.com/list/watchlater",
    "https://www.bilibili.com/medialist/play/watchlater",
    "https://space.bilibili.com/405279279/favlist?fid=opus",
]
# Single items, with the key each routes to offline; none is a listing.
ITEMS = [
    ("https://www.bilibili.com/video/BV13x41117TL", "bilibili:BV13x41117TL"),
    ("https://www.bilibili.com/video/BV1bK411W797?p=1", "bilibili:BV1bK411W797"),
    ("https://www.bilibili.com/video/BV1ms411Q7vw/?p=4", "bilibili:BV1ms411Q7vw_p4"),
    ("http://www.bilibili.com/video/av1074402/", "bilibili:BV11x411K7CN"),
    ("https://m.bilibili.com/video/BV117411r7R1", "bilibili:BV117411r7R1"),
    ("https://www.bilibili.com/festival/2023honkaiimpact3gala?bvid=BV1ay4y1d77f", "bilibili:BV1ay4y1d77f"),
    ("http://player.bilibili.com/player.html?aid=85440373&cid=146044693&page=1", "bilibili:BV117411r7R1"),
    # a video of a collection, as the collection's page links it: the video alone
    ("https://www.bilibili.com/video/BV1Tb421b7mi/?spm_id_from=333.788.videopod.episodes", "bilibili:BV1Tb421b7mi"),
    # a list player playing one of its videos: that video (yt-dlp with --no-playlist)
    ("https://www.bilibili.com/list/1958703906?sid=547718&oid=687146339&bvid=BV1DU4y1r7tz", "bilibili:BV1DU4y1r7tz"),
    ("https://www.bilibili.com/list/ml1103407912?oid=371494037&bvid=BV1CZ4y1T7gC", "bilibili:BV1CZ4y1T7gC"),
    ("https://www.bilibili.com/list/watchlater?bvid=BV1CZ4y1T7gC&oid=371494037", "bilibili:BV1CZ4y1T7gC"),
    ("https://www.bilibili.com/medialist/play/ml1103407912?bvid=BV1CZ4y1T7gC", "bilibili:BV1CZ4y1T7gC"),
]


@pytest.mark.parametrize(("url", "kind", "ident"), LISTINGS)
def test_listing_forms_are_recognised_offline(url: str, kind: str, ident: str) -> None:
    route = REGISTRY.listing_for(url)
    assert route is not None and (route.platform, route.kind, route.id) == ("bilibili", kind, ident)
    assert kind in PLATFORM.listings
    assert not REAL.claims(url)  # never an item


@pytest.mark.parametrize("url", LOGIN_FORMS)
def test_forms_needing_a_login_say_so(url: str) -> None:
    with pytest.raises(LoginRequired) as caught:
        REGISTRY.listing_for(url)
    assert caught.value.error_class == "login_required" and url in caught.value.message
    assert not REAL.claims(url)


@pytest.mark.parametrize(("url", "key"), ITEMS)
def test_single_items_are_never_listings(url: str, key: str) -> None:
    assert REGISTRY.listing_for(url) is None
    route = REGISTRY.route(url)
    assert route.platform == "bilibili" and route.workflow_id == f"item-{key}"


@pytest.mark.parametrize("url", [
    "https://space.bilibili.com/405279279/dynamic",  # opus and articles: not listed
    "https://space.bilibili.com/313580179/upload/audio",  # audio: not listed
    "https://space.bilibili.com/abc/video",
    "https://space.bilibili.com.evil.example/3985676/video",
    "https://www.bilibili.com/",
    "https://live.bilibili.com/196",
])
def test_other_pages_are_not_bilibili_listings(url: str) -> None:
    route = REGISTRY.listing_for(url)
    assert route is None or route.platform != "bilibili"


# -- against the simulator -----------------------------------------------------------------------
@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(follow_redirects=True) as c:
        yield c


@pytest.fixture
def bili(sim: Simulator, client: httpx.Client):
    site = install_bilibili_site(sim, rewrite_media=False)
    return site, BilibiliResolver(site.settings()), ResolveContext(client, 5 * 1024 * 1024)


def newest_first(numbers) -> list[int]:
    return sorted(numbers, reverse=True)


def test_uploads_page_through_newest_first_and_open_a_hidden_collection(bili) -> None:
    site, resolver, ctx = bili
    urls = uploader_listing(resolver, ctx, LIST_MID, 5, None)
    # 38 entries (the hidden collection is one) on two pages; the collection gives its 3 videos
    assert urls == expected_urls(site.sim.base_url, newest_first(range(1, POOL + 1)))
    first_page = uploader_listing(resolver, ctx, LIST_MID, 1, None)
    assert first_page == urls[:32]  # 30 entries: 5 videos, the collection's 3, 24 videos
    assert set(expected_urls(site.sim.base_url, HIDDEN)) <= set(first_page)


def test_a_page_fully_known_stops_the_listing(bili) -> None:
    site, resolver, ctx = bili
    seen: list[int] = []
    urls = uploader_listing(resolver, ctx, LIST_MID, 5, lambda page: seen.append(len(page)) or True)
    # the hidden collection's newest page (3 videos) is asked about, then the uploads page holding it
    assert seen == [3, 32] and len(urls) == 32


def test_collection_newest_first_from_its_last_page(bili) -> None:
    site, resolver, ctx = bili
    expected = expected_urls(site.sim.base_url, newest_first(COLLECTION))
    assert collection_listing(resolver, ctx, f"{LIST_MID}:{COLLECTION_ID}", 5, None) == expected
    assert collection_listing(resolver, ctx, COLLECTION_ID, 5, None) == expected  # the API takes any mid
    # one page: the newest, the last of the collection's own order (page 2 holds 31 and 32)
    assert collection_listing(resolver, ctx, f"{LIST_MID}:{COLLECTION_ID}", 1, None) == expected[:2]
    pages: list[list[str]] = []
    collection_listing(resolver, ctx, COLLECTION_ID, 5, lambda page: pages.append(page) or True)
    assert pages == [expected[:2]]


def test_series_pages_newest_first(bili) -> None:
    site, resolver, ctx = bili
    expected = expected_urls(site.sim.base_url, newest_first(SERIES))
    assert series_listing(resolver, ctx, f"{LIST_MID}:{SERIES_ID}", 5, None) == expected
    assert series_listing(resolver, ctx, f"{LIST_MID}:{SERIES_ID}", 1, None) == expected[:30]


def test_favourites_list_videos_only_latest_first(bili) -> None:
    site, resolver, ctx = bili
    # 25 entries on two pages of 20; the deleted video and the audio are left out
    assert favorites_listing(resolver, ctx, FAVORITES_ID, 5, None) == expected_urls(site.sim.base_url,
                                                                                    newest_first(FAVORITES))
    # page 1: 18 videos, the deleted video and the audio
    assert favorites_listing(resolver, ctx, FAVORITES_ID, 1, None) == expected_urls(site.sim.base_url,
                                                                                    newest_first(FAVORITES))[:18]


def test_favourites_say_their_title_and_dead_entries_in_their_place(bili) -> None:
    site, resolver, ctx = bili
    listed = favorites_listing(resolver, ctx, FAVORITES_ID, 5, None)
    assert listed.title == "公开收藏夹"
    # the deleted video (attr 9, "已失效视频") is not crawled, but listed where the folder has it:
    # between the 13th and 12th video, newest first (the audio is no video: left out)
    (url, title, why), = listed.gone
    assert url.endswith("/video/" + av_to_bv(30000999)) and title == "已失效视频"
    assert why == "已失效视频: deleted by its uploader (attr 9)"
    videos = expected_urls(site.sim.base_url, newest_first(FAVORITES))
    assert listed.order == [*videos[:13], url, *videos[13:]]
    assert listed.titles[videos[0]] and listed.titles[url] == "已失效视频"


def test_private_favourites_need_the_owner_s_login(bili, tmp_path: Path) -> None:
    site, resolver, ctx = bili
    with pytest.raises(TrawlError) as caught:
        favorites_listing(resolver, ctx, PRIVATE_FAVORITES_ID, 5, None)
    assert caught.value.error_class == "login_required" and not caught.value.retryable
    assert "-403" in caught.value.message and "private" in caught.value.message
    cookies = tmp_path / "cookies.txt"
    cookies.write_text("# Netscape HTTP Cookie File\n.bilibili.com\tTRUE\t/\tFALSE\t0\tSESSDATA\tabc\n")
    logged_in = BilibiliResolver(site.settings(cookies_file=str(cookies)))
    with pytest.raises(TrawlError) as caught:
        favorites_listing(logged_in, ctx, PRIVATE_FAVORITES_ID, 5, None)
    assert caught.value.error_class == "forbidden" and "not its owner" in caught.value.message


@pytest.mark.parametrize(("listing", "ident", "error_class"), [
    (collection_listing, "1:999", "not_found"),
    (series_listing, "1:999", "not_found"),
    (favorites_listing, "999", "not_found"),
    (series_listing, "547718", "unsupported_url"),  # a series needs its uploader's mid
    (collection_listing, "a:b", "unsupported_url"),
    (favorites_listing, "ml1103407912", "unsupported_url"),
    (uploader_listing, "abc", "unsupported_url"),
])
def test_listing_failures_are_classified(bili, listing, ident: str, error_class: str) -> None:
    _, resolver, ctx = bili
    with pytest.raises(TrawlError) as caught:
        listing(resolver, ctx, ident, 5, None)
    assert caught.value.error_class == error_class


def test_simulator_urls_expand_through_the_registry(bili) -> None:
    site, _, ctx = bili
    config = platforms_model(PLATFORMS)(bilibili=site.settings())
    registry = build_registry(config)
    base = site.sim.base_url
    cases = {
        site.space_url(f"{LIST_MID}/video"): ("bilibili_uploader", LIST_MID, POOL),
        site.space_url(f"{LIST_MID}/lists/{COLLECTION_ID}?type=season"): ("bilibili_collection",
                                                                          f"{LIST_MID}:{COLLECTION_ID}", 32),
        site.space_url(f"{LIST_MID}/channel/seriesdetail?sid={SERIES_ID}"): ("bilibili_series",
                                                                            f"{LIST_MID}:{SERIES_ID}", 36),
        site.space_url(f"{LIST_MID}/favlist?fid={FAVORITES_ID}&ftype=create"): ("bilibili_favorites",
                                                                               FAVORITES_ID, 23),
        f"{base}/medialist/detail/ml{FAVORITES_ID}": ("bilibili_favorites", FAVORITES_ID, 23),
    }
    for url, (kind, ident, count) in cases.items():
        route = registry.listing_for(url)
        assert route is not None and (route.kind, route.id) == (kind, ident), url
        resolver = registry.resolver_of("bilibili")
        urls = PLATFORM.listings[kind](resolver, ctx, route.id, 5, None)
        assert len(urls) == count and all(u.startswith(f"{base}/video/BV") for u in urls)
        assert registry.resolver_for(urls[0]).platform == "bilibili"  # each entry is a video it resolves
    assert registry.listing_for(site.url(pool_bvid(3))) is None


def test_a_video_of_a_collection_resolves_as_itself(bili) -> None:
    site, resolver, ctx = bili
    bvid = pool_bvid(5)
    assert site.videos[bvid].view["data"]["ugc_season"]["id"] == int(COLLECTION_ID)
    item = resolver.resolve(site.url(bvid), ctx)
    assert item.canonical_key == f"bilibili:{bvid}" and item.more == []
    assert [a.kind for a in item.assets] == ["video", "thumbnail"]


# -- DASH: lossless, Dolby, and the qualities one codec family plays --------------------------------
@pytest.mark.parametrize(("audio", "expected"), [
    ("best", 30251), ("lossless", 30251), ("dolby", 30250), ("aac", 30280),
])
def test_audio_choice(sim: Simulator, client: httpx.Client, audio: str, expected: int) -> None:
    site = install_bilibili_site(sim, rewrite_media=False)
    item = BilibiliResolver(site.settings(audio=audio)).resolve(site.url(HIRES_VIDEO), ResolveContext(client, 5 << 20))
    dash = site.videos[HIRES_VIDEO].playurl[4001]["data"]["dash"]
    offered = [*dash["audio"], *dash["dolby"]["audio"], dash["flac"]["audio"]]
    chosen = next(a for a in offered if a["id"] == expected)
    audio_asset = next(a for a in item.assets if a.kind == "audio")
    assert audio_asset.urls[0] == chosen["baseUrl"]


def test_without_lossless_or_dolby_every_choice_falls_back(sim: Simulator, client: httpx.Client) -> None:
    site = install_bilibili_site(sim, rewrite_media=False)
    dash = reference_json("bilibili_playurl_dash_1.json")["data"]["dash"]
    assert dash["flac"] is None and dash["dolby"] == {"type": 0, "audio": None}  # the anonymous shape
    best_aac = max(dash["audio"], key=lambda a: a["bandwidth"])
    for audio in ("best", "lossless", "dolby", "aac"):
        item = BilibiliResolver(site.settings(audio=audio)).resolve(site.url("BV117411r7R1"),
                                                                   ResolveContext(client, 5 << 20))
        assert item.assets[1].urls[0] == best_aac["baseUrl"]


def test_best_without_lossless_takes_the_highest_bitrate(sim: Simulator, client: httpx.Client) -> None:
    site = install_bilibili_site(sim, rewrite_media=False)
    dash = site.videos[HIRES_VIDEO].playurl[4001]["data"]["dash"]
    dash["flac"] = None
    item = BilibiliResolver(site.settings()).resolve(site.url(HIRES_VIDEO), ResolveContext(client, 5 << 20))
    assert item.assets[1].urls[0] == dash["dolby"]["audio"][0]["baseUrl"]  # 448 kb/s E-AC-3 over 192 kb/s AAC


def test_a_crawl_s_audio_choice_wins_over_the_setting(sim: Simulator, client: httpx.Client) -> None:
    site = install_bilibili_site(sim, rewrite_media=False)
    ctx = ResolveContext(client, 5 << 20)
    ctx.audio = "aac"  # type: ignore[attr-defined]  # what ResolveContext will carry once crawls choose audio
    item = BilibiliResolver(site.settings(audio="lossless")).resolve(site.url(HIRES_VIDEO), ctx)
    assert "-30280" in item.assets[1].urls[0]


@pytest.mark.parametrize(("quality", "height", "expected"), [
    (80, 0, (80, 7)),
    (127, 0, (120, 7)),  # best: 4K AVC; not Dolby Vision, not the HEVC-only HDR
    (120, 0, (120, 7)),
    (125, 0, (125, 12)),  # HDR asked for exactly
    (126, 0, (126, 12)),  # Dolby Vision asked for exactly
    (80, 100_000, (120, 7)),  # -f best
    (80, 720, (64, 7)),
])
def test_streams_one_codec_family_plays_only_when_asked(sim: Simulator, client: httpx.Client, quality: int,
                                                        height: int, expected: tuple[int, int]) -> None:
    site = install_bilibili_site(sim, rewrite_media=False)
    item = BilibiliResolver(site.settings(quality=quality)).resolve(site.url(HIRES_VIDEO),
                                                                   ResolveContext(client, 5 << 20, quality=height))
    videos = site.videos[HIRES_VIDEO].playurl[4001]["data"]["dash"]["video"]
    chosen = next(v for v in videos if (v["id"], v["codecid"]) == expected)
    assert item.assets[0].urls[0] == chosen["baseUrl"]


def test_rewritten_lossless_audio_is_served(sim: Simulator, client: httpx.Client) -> None:
    site = install_bilibili_site(sim)
    item = BilibiliResolver(site.settings()).resolve(site.url(HIRES_VIDEO), ResolveContext(client, 5 << 20))
    audio = item.assets[1]
    assert audio.kind == "audio" and audio.urls[0].startswith(sim.base_url) and "30251" in audio.urls[0]
    answer = client.get(audio.urls[0], headers=audio.headers)
    assert answer.status_code == 200 and answer.content[4:8] == b"ftyp"
