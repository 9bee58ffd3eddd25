"""Bilibili's other content: bangumi and course episodes (pgc.py), dynamics and opus posts
(opus.py), audio (audio.py), against the simulated site (content_site.py)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from trawl.errors import PreviewOnly, TrawlError
from trawl.models import Resolved, refuse_previews
from trawl.platforms.base import ResolveContext, Resolver
from trawl.platforms.bilibili import PLATFORM, BilibiliSettings
from trawl.platforms.bilibili import content_site as sim_content
from trawl.platforms.bilibili.site import BilibiliSite, install_bilibili_site
from trawl.platforms.registry import build_registry
from trawl.settings import PlatformsSettings, Settings
from trawl.simulator import Response, Simulator
from trawl.sources import expand, source_from_definition

REAL = PLATFORM.resolvers(BilibiliSettings())


@pytest.fixture
def ctx() -> Iterator[ResolveContext]:
    with httpx.Client(follow_redirects=True) as client:
        yield ResolveContext(client, max_page_bytes=5 * 1024 * 1024)


@pytest.fixture
def verbatim(sim: Simulator) -> BilibiliSite:
    return install_bilibili_site(sim, rewrite_media=False)


def resolver_for(resolvers: list[Resolver], url: str) -> Resolver:
    return next(r for r in resolvers if r.claims(url))


def resolve(site: BilibiliSite, path: str, ctx: ResolveContext) -> Resolved:
    url = site.sim.url(path)
    return resolver_for(PLATFORM.resolvers(site.settings()), url).resolve(url, ctx)


def failure(site: BilibiliSite, path: str, ctx: ResolveContext) -> TrawlError:
    with pytest.raises(TrawlError) as error:
        resolve(site, path, ctx)
    return error.value


# -- URL forms -------------------------------------------------------------------------------
@pytest.mark.parametrize(("url", "name", "key"), [
    ("https://www.bilibili.com/bangumi/play/ep21495/", "bilibili:episode", "bilibili:ep21495"),
    ("https://m.bilibili.com/bangumi/play/ep21495?from=search", "bilibili:episode", "bilibili:ep21495"),
    ("https://www.bilibili.com/cheese/play/ep229832", "bilibili:episode", "bilibili:course-ep229832"),
    ("https://t.bilibili.com/1201902028962398230", "bilibili:opus", None),  # a video dynamic is the video
    ("https://www.bilibili.com/opus/1201902028962398230?spm_id_from=333.999", "bilibili:opus", None),
    ("https://m.bilibili.com/dynamic/1201902028962398230", "bilibili:opus", None),
    ("https://m.bilibili.com/opus/1201902028962398230", "bilibili:opus", None),
    ("https://www.bilibili.com/audio/au1234567", "bilibili:audio", "bilibili:au1234567"),
    ("https://m.bilibili.com/audio/au1234567/", "bilibili:audio", "bilibili:au1234567"),
])
def test_url_forms_and_keys(url: str, name: str, key: str | None) -> None:
    resolver = resolver_for(REAL, url)
    assert resolver.name == name
    assert resolver.offline_key(url) == key


@pytest.mark.parametrize("url", [
    "https://www.bilibili.com/bangumi/play/epx1", "https://www.bilibili.com/bangumi/media/md28220978",
    "https://t.bilibili.com/", "https://t.bilibili.com.evil.example/123", "https://www.bilibili.com/opus/abc",
    "https://www.bilibili.com/audio/au", "https://www.bilibili.com/audio/mycollection/123",
])
def test_urls_not_claimed(url: str) -> None:
    assert not any(r.claims(url) for r in REAL)


@pytest.mark.parametrize(("url", "kind", "ident"), [
    ("https://www.bilibili.com/bangumi/play/ss26801", "bilibili_season", "26801"),
    ("https://www.bilibili.com/bangumi/play/ss26801/?spm_id_from=x", "bilibili_season", "26801"),
    ("https://www.bilibili.com/cheese/play/ss5918", "bilibili_course", "5918"),
    ("https://www.bilibili.com/audio/am10624", "bilibili_audio_list", "10624"),
])
def test_season_and_list_pages_are_listings(url: str, kind: str, ident: str) -> None:
    registry = build_registry(Settings().platforms)
    route = registry.listing_for(url)
    assert route is not None
    assert (route.kind, route.id) == (kind, ident)


# -- bangumi and courses ---------------------------------------------------------------------
def test_a_free_bangumi_episode(verbatim: BilibiliSite, ctx: ResolveContext) -> None:
    item = resolve(verbatim, f"/bangumi/play/ep{sim_content.FREE_EP}", ctx)
    assert item.canonical_key == f"bilibili:ep{sim_content.FREE_EP}"
    assert item.canonical_url == f"https://www.bilibili.com/bangumi/play/ep{sim_content.FREE_EP}"
    assert [a.kind for a in item.assets] == ["video", "audio", "thumbnail"]
    assert not any(a.preview for a in item.assets)
    assert item.title == "模拟番剧 1 免费的一集"
    assert item.duration == pytest.approx(1420.791)
    assert item.metadata["merge"] == "dash" and item.metadata["season_id"] == sim_content.SEASON
    refuse_previews(item)  # a free episode is no preview


@pytest.mark.parametrize(("ep", "error_class", "words"), [
    (sim_content.MEMBER_EP, "paid_only", "'会员'"),
    (sim_content.REGION_EP, "forbidden", "region"),
    (999999, "not_found", "-404"),
])
def test_episodes_that_cannot_be_had(verbatim: BilibiliSite, ctx: ResolveContext, ep: int, error_class: str,
                                     words: str) -> None:
    error = failure(verbatim, f"/bangumi/play/ep{ep}", ctx)
    assert error.error_class == error_class and words in str(error)
    assert not error.retryable


def test_a_paid_episodes_preview_is_no_item(verbatim: BilibiliSite, ctx: ResolveContext) -> None:
    item = resolve(verbatim, f"/bangumi/play/ep{sim_content.PREVIEW_EP}", ctx)
    assert item.assets[0].preview.startswith("marked '付费'")
    with pytest.raises(PreviewOnly):
        refuse_previews(item)


def test_not_logged_in_is_login_required(verbatim: BilibiliSite, sim: Simulator, ctx: ResolveContext) -> None:
    sim.add_exact("/pgc/player/web/playurl", lambda req: Response(
        200, {"Content-Type": "application/json"}, b'{"code": -101, "message": "\\u8d26\\u53f7\\u672a\\u767b\\u5f55"}'))
    error = failure(verbatim, f"/bangumi/play/ep{sim_content.FREE_EP}", ctx)
    assert error.error_class == "login_required"


def test_course_episodes(verbatim: BilibiliSite, ctx: ResolveContext) -> None:
    item = resolve(verbatim, f"/cheese/play/ep{sim_content.COURSE_FREE_EP}", ctx)
    assert item.canonical_key == f"bilibili:course-ep{sim_content.COURSE_FREE_EP}"
    assert item.title == "模拟课程: 1 - 课程先导片" and item.uploader == "课程UP主" and item.duration == 221
    assert [a.kind for a in item.assets] == ["video", "thumbnail"]
    paid = failure(verbatim, f"/cheese/play/ep{sim_content.COURSE_PAID_EP}", ctx)
    assert paid.error_class == "paid_only" and "not bought" in str(paid)
    later = failure(verbatim, f"/cheese/play/ep{sim_content.COURSE_LATER_EP}", ctx)
    assert later.error_class == "not_found" and "not out yet" in str(later)


def test_a_course_play_url_refusal_is_paid_only(verbatim: BilibiliSite, sim: Simulator, ctx: ResolveContext) -> None:
    content = verbatim.content
    assert content is not None
    answer = copy.deepcopy(content.course())
    answer["data"]["episodes"][1]["playable"] = True  # the season says yes, the play URL no
    sim.add_exact("/pugv/view/web/season", lambda req: Response(200, {"Content-Type": "application/json"},
                                                                 json.dumps(answer).encode()))
    error = failure(verbatim, f"/cheese/play/ep{sim_content.COURSE_PAID_EP}", ctx)
    assert error.error_class == "paid_only" and "code -403" in str(error)


def test_rewritten_episode_streams_download(sim: Simulator, ctx: ResolveContext) -> None:
    site = install_bilibili_site(sim)
    item = resolve(site, f"/bangumi/play/ep{sim_content.FREE_EP}", ctx)
    for asset in item.assets:
        assert httpx.get(asset.urls[0], headers=asset.headers).status_code == 200
        assert httpx.get(asset.urls[0]).status_code == 403  # the Referer is wanted


# -- dynamics --------------------------------------------------------------------------------
def test_a_draw_dynamic_is_its_pictures_at_full_size(verbatim: BilibiliSite, ctx: ResolveContext) -> None:
    ident = sim_content.DRAW_DYNAMIC
    item = resolve(verbatim, f"/t/{ident}", ctx)
    assert item.canonical_key == f"bilibili:opus-{ident}"
    assert item.canonical_url == f"https://www.bilibili.com/opus/{ident}"
    assert [a.urls for a in item.assets] == [[f"https://i0.hdslb.com/bfs/new_dyn/{ident}_{n}.jpg"] for n in (1, 2)]
    assert item.title == "两张照片" and item.metadata["description"] == "两张照片\n第二行"
    assert item.uploader == sim_content.AUTHOR["name"]
    assert item.published_at == "2024-12-05T00:00:00Z"
    assert item.metadata["like_count"] == 42


def test_an_opus_post_and_its_other_url(verbatim: BilibiliSite, ctx: ResolveContext) -> None:
    ident = sim_content.OPUS_DYNAMIC
    by_t = resolve(verbatim, f"/t/{ident}", ctx)
    by_opus = resolve(verbatim, f"/opus/{ident}", ctx)
    assert by_t.canonical_key == by_opus.canonical_key == f"bilibili:opus-{ident}"
    assert [a.name for a in by_t.assets] == ["image-1", "image-2", "image-3"]
    assert by_t.title == "三张图的图文" and by_t.metadata["description"] == "图文的正文"


def test_a_repost_takes_the_reposted_pictures(verbatim: BilibiliSite, ctx: ResolveContext) -> None:
    item = resolve(verbatim, f"/t/{sim_content.REPOST_DYNAMIC}", ctx)
    assert item.canonical_key == f"bilibili:opus-{sim_content.REPOST_DYNAMIC}"
    assert len(item.assets) == 2 and item.metadata["reposted"] == sim_content.DRAW_DYNAMIC
    assert item.title == "转发一下"


def test_a_video_dynamic_is_the_video(verbatim: BilibiliSite, ctx: ResolveContext) -> None:
    item = resolve(verbatim, f"/t/{sim_content.VIDEO_DYNAMIC}", ctx)
    assert item.canonical_key == "bilibili:BV117411r7R1"


@pytest.mark.parametrize(("ident", "error_class", "words"), [
    (sim_content.TEXT_DYNAMIC, "unsupported_url", "no pictures"),
    (sim_content.ARTICLE_DYNAMIC, "unsupported_url", "article"),
    ("42", "platform_error", "4101131"),
])
def test_dynamics_without_media(verbatim: BilibiliSite, ctx: ResolveContext, ident: str, error_class: str,
                                words: str) -> None:
    error = failure(verbatim, f"/t/{ident}", ctx)
    assert error.error_class == error_class and words in str(error)


MAJORS: list[Any] = [None, 5, "x", [], {"type": "MAJOR_TYPE_DRAW", "draw": {"items": [None, {"src": 7}, {"src": "javascript:x"}]}},
                     {"type": "MAJOR_TYPE_OPUS", "opus": {"pics": "nope", "title": ["t"]}},
                     {"type": "MAJOR_TYPE_ARCHIVE", "archive": {"bvid": None}}, {"type": "MAJOR_TYPE_PGC", "pgc": {}},
                     {"type": ["MAJOR_TYPE_DRAW"]}]


@pytest.mark.parametrize("major", MAJORS)
def test_odd_dynamic_answers_raise_only_trawl_errors(verbatim: BilibiliSite, sim: Simulator, ctx: ResolveContext,
                                                     major: Any) -> None:
    doc = {"code": 0, "data": {"item": {"id_str": "7", "modules": {"module_dynamic": {"major": major},
                                                                   "module_author": {"pub_ts": "soon"}}}}}
    sim.add_exact("/x/polymer/web-dynamic/v1/detail", lambda req: Response(
        200, {"Content-Type": "application/json"}, json.dumps(doc).encode()))
    error = failure(verbatim, "/t/7", ctx)
    assert error.error_class in ("unsupported_url", "parse_error")


# -- audio -----------------------------------------------------------------------------------
def test_a_song(verbatim: BilibiliSite, ctx: ResolveContext) -> None:
    item = resolve(verbatim, f"/audio/au{sim_content.SONG}", ctx)
    assert item.canonical_key == f"bilibili:au{sim_content.SONG}"
    assert item.canonical_url == f"https://www.bilibili.com/audio/au{sim_content.SONG}"
    audio, cover = item.assets
    assert (audio.kind, audio.expected_size, len(audio.urls)) == ("audio", 220_000, 2)
    assert cover.kind == "thumbnail"
    assert (item.title, item.uploader, item.duration) == ("模拟的歌", "唱歌的UP主", 183)
    assert item.metadata["view_count"] == 1234


def test_a_missing_song_is_not_found(verbatim: BilibiliSite, ctx: ResolveContext) -> None:
    assert failure(verbatim, f"/audio/au{sim_content.GONE_SONG}", ctx).error_class == "not_found"


def test_a_rewritten_song_downloads(sim: Simulator, ctx: ResolveContext) -> None:
    site = install_bilibili_site(sim)
    audio = resolve(site, f"/audio/au{sim_content.SONG}", ctx).assets[0]
    body = httpx.get(audio.urls[0], headers=audio.headers)
    assert body.status_code == 200 and body.content[4:8] == b"ftyp" and len(body.content) == audio.expected_size


# -- listings --------------------------------------------------------------------------------
def test_season_course_and_audio_list_pages_expand(verbatim: BilibiliSite, sim: Simulator,
                                                   ctx: ResolveContext) -> None:
    settings = Settings(platforms=PlatformsSettings(bilibili=verbatim.settings()))
    registry = build_registry(settings.platforms)
    base = sim.base_url
    cases = [
        (f"/bangumi/play/ss{sim_content.SEASON}",
         [f"{base}/bangumi/play/ep{e}" for e in (sim_content.FREE_EP, sim_content.MEMBER_EP, sim_content.PREVIEW_EP,
                                                 sim_content.REGION_EP)]),
        (f"/cheese/play/ss{sim_content.COURSE}",
         [f"{base}/cheese/play/ep{e}" for e in (sim_content.COURSE_FREE_EP, sim_content.COURSE_PAID_EP,
                                                sim_content.COURSE_LATER_EP)]),
        (f"/audio/am{sim_content.AUDIO_LIST}", [f"{base}/audio/au{s}" for s in (sim_content.SONG, sim_content.GONE_SONG)]),
    ]
    for path, expected in cases:
        route = registry.listing_for(sim.url(path))
        assert route is not None, path
        source = source_from_definition(route.definition(max_pages=3))
        assert expand(source, settings, registry, ctx) == expected
        assert all(registry.resolver_for(url).offline_key(url) for url in expected)  # each with a key offline
