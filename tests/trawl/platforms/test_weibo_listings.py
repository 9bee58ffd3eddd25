"""Weibo's URL forms routed offline (posts, user listings, refused pages) and its user listings
(all posts, the video tab, the picture wall) expanded against the simulated site."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from trawl.errors import LoginRequired, NotFound, RateLimited, TrawlError, UnsupportedUrl
from trawl.platforms.base import ResolveContext
from trawl.platforms.registry import build_registry
from trawl.platforms.weibo import PLATFORM, WeiboSettings
from trawl.platforms.weibo.listings import album_listing, user_id, user_listing, video_listing
from trawl.platforms.weibo.resolver import WeiboResolver, mblogid_to_mid
from trawl.platforms.weibo.site import CUSTOM_DOMAIN, WeiboSite, install_weibo_site
from trawl.settings import PlatformsSettings, Settings, SourceSettings
from trawl.simulator import Simulator
from trawl.sources import expand, source_from_definition

SIM = "http://127.0.0.1:8999"
UID = "1758989602"

# Every listing form: URL -> (kind, id). Real URLs from yt-dlp's and gallery-dl's tests where
# they have one (listing spec, issue 26, §1.2), the others in the same shapes.
LISTINGS = [
    # all posts
    (f"https://weibo.com/u/{UID}", "weibo_user", UID),
    (f"https://www.weibo.com/u/{UID}/", "weibo_user", UID),
    (f"https://weibo.com/{UID}", "weibo_user", UID),
    (f"https://weibo.com/{UID}/home", "weibo_user", UID),
    ("https://weibo.com/2553930725?tabtype=feed", "weibo_user", "2553930725"),
    (f"https://weibo.com/{UID}?tabtype=home", "weibo_user", UID),
    ("https://weibo.com/u/7500315942?tabtype=feed", "weibo_user", "7500315942"),
    (f"https://weibo.com/u/{UID}?is_all=1#top", "weibo_user", UID),
    (f"https://weibo.com/p/{UID}", "weibo_user", UID),
    ("https://www.weibo.com/p/1003062314621010/home", "weibo_user", "2314621010"),
    (f"https://weibo.com/p/100505{UID}?is_all=1", "weibo_user", UID),
    (f"https://weibo.com/p/100606{UID}/home?from=page_100606", "weibo_user", UID),
    ("https://weibo.com/zhouyuxi77", "weibo_user", "custom:zhouyuxi77"),
    ("https://weibo.com/zhouyuxi77?tabtype=feed", "weibo_user", "custom:zhouyuxi77"),
    ("https://www.weibo.com/n/周于希Sally", "weibo_user", "n:周于希Sally"),
    ("https://www.weibo.com/n/%E5%91%A8%E4%BA%8E%E5%B8%8CSally?tabtype=feed", "weibo_user", "n:周于希Sally"),
    ("https://m.weibo.cn/u/2314621010", "weibo_user", "2314621010"),
    ("https://m.weibo.cn/u/5973737418?uid=5973737418&luicode=10000011", "weibo_user", "5973737418"),
    ("https://m.weibo.cn/profile/2314621010", "weibo_user", "2314621010"),
    ("https://m.weibo.cn/n/upupming", "weibo_user", "n:upupming"),
    ("https://m.weibo.cn/p/1076032314621010", "weibo_user", "2314621010"),
    ("https://m.weibo.cn/p/1005052314621010", "weibo_user", "2314621010"),
    ("https://m.weibo.cn/p/2304132314621010_-_WEIBO_SECOND_PROFILE_WEIBO", "weibo_user", "2314621010"),
    ("https://m.weibo.cn/p/2304132314621010_-_WEIBO_SECOND_PROFILE_WEIBO_ORI", "weibo_user", "2314621010"),
    ("https://m.weibo.cn/p/index?containerid=2304132314621010_-_WEIBO_SECOND_PROFILE_WEIBO&luicode=10000011",
     "weibo_user", "2314621010"),
    # the video tab
    (f"https://weibo.com/{UID}?tabtype=video", "weibo_videos", UID),
    ("https://weibo.com/u/2066652961?tabtype=video", "weibo_videos", "2066652961"),
    (f"https://weibo.com/{UID}?tabtype=newVideo", "weibo_videos", UID),
    ("https://weibo.com/u/7610808848?tabtype=newVideo", "weibo_videos", "7610808848"),
    (f"https://weibo.com/u/{UID}?is_all=1&tabtype=newVideo", "weibo_videos", UID),
    ("https://weibo.com/zhouyuxi77?tabtype=video", "weibo_videos", "custom:zhouyuxi77"),
    ("https://www.weibo.com/n/周于希Sally?tabtype=newVideo", "weibo_videos", "n:周于希Sally"),
    (f"https://weibo.com/p/100505{UID}?tabtype=video", "weibo_videos", UID),
    ("https://m.weibo.cn/p/2304132314621010_-_WEIBO_SECOND_PROFILE_WEIBO_VIDEO", "weibo_videos", "2314621010"),
    ("https://m.weibo.cn/p/index?containerid=2304132314621010_-_WEIBO_SECOND_PROFILE_WEIBO_VIDEO",
     "weibo_videos", "2314621010"),
    # the picture wall
    (f"https://weibo.com/{UID}?tabtype=album", "weibo_album", UID),
    ("https://weibo.com/u/2142058927?tabtype=album-头像", "weibo_album", "2142058927"),
    ("https://weibo.com/u/2142058927?tabtype=album-2", "weibo_album", "2142058927"),
    ("https://weibo.com/u/2142058927?tabtype=album_all", "weibo_album", "2142058927"),
    ("https://weibo.com/u/2142058927?tabtype=album:only", "weibo_album", "2142058927"),
    ("https://m.weibo.cn/p/2304132314621010_-_WEIBO_SECOND_PROFILE_WEIBO_PIC", "weibo_album", "2314621010"),
    # the configured base URL (the simulator's) is claimed too; personal domains are not
    (f"{SIM}/u/{UID}", "weibo_user", UID),
    (f"{SIM}/{UID}", "weibo_user", UID),
    (f"{SIM}/profile/{UID}", "weibo_user", UID),
    (f"{SIM}/n/someone?tabtype=video", "weibo_videos", "n:someone"),
    (f"{SIM}/p/230413{UID}_-_WEIBO_SECOND_PROFILE_WEIBO_PIC", "weibo_album", UID),
]

# Every single-post form: URL -> its key offline (None: a video page, whose key the platform tells).
POSTS = [
    ("https://weibo.com/7827771738/N4xlMvjhI", f"weibo:{mblogid_to_mid('N4xlMvjhI')}"),
    ("https://weibo.com/2909128931/4409545658754086", "weibo:4409545658754086"),
    ("https://www.weibo.com/3314883543/Iy7fj4qVg", f"weibo:{mblogid_to_mid('Iy7fj4qVg')}"),
    ("https://weibo.com/0/4224132150961381", "weibo:4224132150961381"),
    ("https://m.weibo.cn/status/4189191225395228", "weibo:4189191225395228"),
    ("https://m.weibo.cn/status/IEOhahDCR?mblogid=IEOhahDCR&luicode=10000011&lfid=1076036404087010",
     "weibo:4497263844203901"),
    ("https://m.weibo.cn/detail/4189191225395228", "weibo:4189191225395228"),
    ("https://weibo.cn/detail/4600272267522211", "weibo:4600272267522211"),  # was left to generic
    ("https://m.weibo.cn/5746766133/4339748116375525", "weibo:4339748116375525"),  # was left to generic
    ("https://weibo.com/detail/4600272267522211", "weibo:4600272267522211"),  # was left to generic
    ("https://www.weibo.com/status/4600272267522211", "weibo:4600272267522211"),
    ("https://weibo.com/u/7610808848?tabtype=newVideo&layerid=4967273022359838", "weibo:4967273022359838"),
    ("https://weibo.com/tv/show/1034:4797699866951785?from=old_pc_videoshow", None),
    ("https://weibo.com/tv/show/1034%3A4797699866951785", None),
    ("https://weibo.com/tv/show/1034:633c288cc043d0ca7808030f1157da64", None),
    ("https://video.weibo.com/show?fid=1034:4967272104787984", None),
    ("https://video.weibo.com/show?fid=1034%3A4857856063897666&luicode=10000011"
     "&lfid=2304131111681197_-_WEIBO_SECOND_PROFILE_WEIBO", None),
    (f"{SIM}/detail/4600272267522211", "weibo:4600272267522211"),
    (f"{SIM}/u/{UID}?tabtype=newVideo&layerid=4967273022359838", "weibo:4967273022359838"),
]

# Pages that list no media: claimed by the resolver only to refuse them at once.
REFUSED = [
    ("https://weibo.com/u/page/follow/2142058927", "lists people or favourites"),
    ("https://weibo.com/u/page/fav/2142058927", "lists people or favourites"),
    (f"https://weibo.com/{UID}?tabtype=article", "articles"),
    ("https://m.weibo.cn/p/2304132314621010_-_WEIBO_SECOND_PROFILE_WEIBO_ARTICAL", "articles"),
    ("https://weibo.com/u/2142058927?tabtype=fans", "a profile tab trawl does not list"),
    ("https://weibo.com/zhouyuxi77?tabtype=article", "articles"),
    (f"{SIM}/n/someone?tabtype=article", "articles"),
]

# Neither: left to the generic resolver.
NEITHER = [
    "https://weibo.com/",
    "https://weibo.com/login.php",
    "https://weibo.com/hot",
    "https://weibo.com/newlogin?tabtype=weibo",
    "https://weibo.com/p/1008085b5c3a6e8e1a2c7a6c7d2b0f1a6e2d1c",  # a super-topic, not a user
    "https://share.weibo.cn/abc",  # no extractor takes it
    f"{SIM}/zhouyuxi77",  # personal domains only on the real hosts
    f"{SIM}/zhouyuxi77?tabtype=article",
]


@pytest.fixture(scope="module")
def registry():  # type: ignore[no-untyped-def]
    settings = WeiboSettings(page_base=SIM, mobile_base=SIM, video_base=SIM)
    return build_registry(PlatformsSettings(weibo=settings))


@pytest.mark.parametrize(("url", "kind", "ident"), LISTINGS)
def test_listing_forms(registry, url: str, kind: str, ident: str) -> None:  # type: ignore[no-untyped-def]
    route = registry.listing_for(url)
    assert route is not None and (route.platform, route.kind, route.id) == ("weibo", kind, ident)
    assert registry.route(url).platform == "generic"  # no post form claims a listing


@pytest.mark.parametrize(("url", "key"), POSTS)
def test_post_forms(registry, url: str, key: str | None) -> None:  # type: ignore[no-untyped-def]
    assert registry.listing_for(url) is None  # no listing form claims a post
    route = registry.route(url)
    assert route.resolver.name == "weibo:status"
    assert route.workflow_id.startswith(f"item-{key}" if key else "url-")


@pytest.mark.parametrize(("url", "why"), REFUSED)
def test_refused_pages(registry, url: str, why: str) -> None:  # type: ignore[no-untyped-def]
    assert registry.listing_for(url) is None
    route = registry.route(url)
    assert route.resolver.name == "weibo:status" and route.workflow_id.startswith("url-")
    with httpx.Client(transport=httpx.MockTransport(lambda request: pytest.fail(f"asked {request.url}"))) as client:
        with pytest.raises(UnsupportedUrl, match=why):
            route.resolver.resolve(url, ResolveContext(client, 1 << 20))


@pytest.mark.parametrize("url", NEITHER)
def test_neither_post_nor_listing(registry, url: str) -> None:  # type: ignore[no-untyped-def]
    assert registry.listing_for(url) is None
    assert registry.route(url).platform == "generic"


def test_kinds_are_source_kinds() -> None:
    assert set(PLATFORM.listings) == {"weibo_user", "weibo_videos", "weibo_album", "weibo_search"}
    assert {form.kind for form in PLATFORM.listing_forms(WeiboSettings())} == set(PLATFORM.listings)


# -- the listings against the simulated site -------------------------------------------------
@pytest.fixture
def ctx() -> Iterator[ResolveContext]:
    with httpx.Client(follow_redirects=True) as client:
        yield ResolveContext(client, max_page_bytes=5 * 1024 * 1024)


@pytest.fixture
def site(sim: Simulator) -> WeiboSite:
    site = install_weibo_site(sim)
    site.add_posts("playback", 3)  # the playback author: 4 video posts
    site.add_posts("pictures", 2)  # the pictures author: 3 posts of 2 pictures, and a text post
    return site


def resolver_of(site: WeiboSite) -> WeiboResolver:
    return WeiboResolver(site.settings())


def newest_first(site: WeiboSite, *keys: str) -> list[str]:
    posts = sorted((site.posts[k] for k in keys), key=lambda p: int(p.mid), reverse=True)
    return [p.url for p in posts]


def test_video_tab_pages_by_cursor(site: WeiboSite, sim: Simulator, ctx: ResolveContext) -> None:
    site.page_size = 3
    uid = site.posts["playback"].uid
    urls = video_listing(resolver_of(site), ctx, uid, 5, None)
    assert urls == newest_first(site, "playback", "playback-1", "playback-2", "playback-3")
    assert sim.stats["/ajax/profile/getWaterFallContent"].requests == 2  # next_cursor -1 ends it
    keys = [resolver_of(site).offline_key(u) for u in urls]
    assert keys == [f"weibo:{mblogid_to_mid(u.rsplit('/', 1)[1])}" for u in urls]
    # a user without videos: one empty page
    assert video_listing(resolver_of(site), ctx, site.posts["pictures"].uid, 5, None) == []


def test_video_tab_stops_at_a_known_page_and_at_max_pages(site: WeiboSite, sim: Simulator,
                                                           ctx: ResolveContext) -> None:
    site.page_size = 1
    uid = site.posts["playback"].uid
    assert len(video_listing(resolver_of(site), ctx, uid, 2, None)) == 2
    seen: list[list[str]] = []
    urls = video_listing(resolver_of(site), ctx, uid, 5, lambda page: seen.append(page) or True)
    assert urls == seen[0] and len(seen) == 1
    assert sim.stats["/ajax/profile/getWaterFallContent"].requests == 3


def test_picture_wall_lists_each_post_once(site: WeiboSite, sim: Simulator, ctx: ResolveContext) -> None:
    site.page_size = 3  # pages break inside a post's two pictures
    uid = site.posts["pictures"].uid
    urls = album_listing(resolver_of(site), ctx, uid, 10, None)
    assert urls == newest_first(site, "pictures", "pictures-1", "pictures-2")  # not the text-only post
    assert sim.stats["/ajax/profile/getImageWall"].requests == 2  # 6 pictures; since_id 0 ends it
    assert album_listing(resolver_of(site), ctx, uid, 1, None) == urls[:2]
    assert album_listing(resolver_of(site), ctx, site.posts["urls"].uid, 3, None) == []


def test_all_posts_of_a_named_user(site: WeiboSite, sim: Simulator, ctx: ResolveContext) -> None:
    playback = site.posts["playback"]
    everything = newest_first(site, "playback", "playback-1", "playback-2", "playback-3")
    assert user_listing(resolver_of(site), ctx, playback.uid, 3, None) == everything
    assert user_listing(resolver_of(site), ctx, f"n:{playback.uploader}", 3, None) == everything
    assert user_listing(resolver_of(site), ctx, f"custom:{CUSTOM_DOMAIN}", 3, None) == everything
    assert sim.stats["/ajax/profile/info"].requests == 2


@pytest.mark.parametrize(("ident", "error", "words"), [
    ("n:nobody", NotFound, 'ok:0 "用户不存在" for https://weibo.com/n/nobody'),
    ("custom:nobody", NotFound, "for https://weibo.com/nobody"),
    ("zhouyuxi77", UnsupportedUrl, "give the uid (digits), n:<screen name> or custom:<personal domain>"),
    ("n:", UnsupportedUrl, "names no Weibo user"),
])
def test_ids_that_name_no_user(site: WeiboSite, ctx: ResolveContext, ident: str, error: type[TrawlError],
                               words: str) -> None:
    for listing in (user_listing, video_listing, album_listing):
        with pytest.raises(error) as err:
            listing(resolver_of(site), ctx, ident, 3, None)
        assert words in str(err.value)


def test_desktop_listings_want_the_referer(site: WeiboSite, sim: Simulator, ctx: ResolveContext) -> None:
    for path in ("/ajax/profile/getWaterFallContent?uid=1", "/ajax/profile/getImageWall?uid=1",
                 "/ajax/profile/info?custom=trawlsim"):
        assert httpx.get(sim.url(path)).status_code == 403
    assert user_id(resolver_of(site), ctx, f"custom:{CUSTOM_DOMAIN}") == site.posts["playback"].uid


def test_refusals_on_the_listing_apis(site: WeiboSite, ctx: ResolveContext) -> None:
    uid = site.posts["playback"].uid
    site.login_wall = {"desktop"}
    with pytest.raises(LoginRequired, match="cookies_file"):
        video_listing(resolver_of(site), ctx, uid, 3, None)
    site.login_wall = set()
    site.rate_limit_per_s = 0
    with pytest.raises(RateLimited):
        album_listing(resolver_of(site), ctx, uid, 3, None)
    site.rate_limit_per_s = None
    site.throttle_status = 432
    with pytest.raises(RateLimited):
        user_listing(resolver_of(site), ctx, f"n:{site.posts['playback'].uploader}", 3, None)


def test_a_listing_url_expands_as_its_source(site: WeiboSite, sim: Simulator, ctx: ResolveContext) -> None:
    """A listing URL becomes the source its form names, and expands like a named source."""
    site.page_size = 2
    settings = Settings(platforms=PlatformsSettings(weibo=site.settings()))
    registry = build_registry(settings.platforms)
    pictures = site.posts["pictures"]
    cases = [
        (sim.url(f"/u/{site.posts['playback'].uid}?tabtype=newVideo"),
         newest_first(site, "playback", "playback-1", "playback-2", "playback-3")),
        (sim.url(f"/n/{pictures.uploader}?tabtype=album"), newest_first(site, "pictures", "pictures-1", "pictures-2")),
        (sim.url(f"/p/107603{pictures.uid}"), newest_first(site, "pictures", "pictures-1", "pictures-2", "novideo")),
    ]
    for url, expected in cases:
        route = registry.listing_for(url)
        assert route is not None
        source = source_from_definition(route.definition(max_pages=10))
        assert expand(source, settings, registry, ctx) == expected
    named = SourceSettings(name="v", kind="weibo_videos", id=f"n:{site.posts['playback'].uploader}", max_pages=1)
    assert expand(named, settings, registry, ctx) == cases[0][1][:2]


def test_post_list_containers_and_since_id(site: WeiboSite, sim: Simulator) -> None:
    """The simulated post list answers every profile container by its tab, paged by page or since_id."""
    site.page_size = 2
    pictures = site.posts["pictures"]

    def mids(containerid: str, **paging: str) -> tuple[list[str], dict]:
        doc = httpx.get(sim.url("/api/container/getIndex"), params={"containerid": containerid, **paging}).json()
        return [card["mblog"]["mid"] for card in doc["data"].get("cards", [])], doc["data"].get("cardlistInfo", {})

    everything = [site.posts[k].mid for k in ("pictures-2", "pictures-1", "pictures", "novideo")]
    first, info = mids(f"107603{pictures.uid}")
    assert first == everything[:2] and info["since_id"] == int(everything[2]) and info["page"] == 2
    second, info = mids(f"107603{pictures.uid}", since_id=str(info["since_id"]))
    assert second == everything[2:] and "since_id" not in info
    assert mids(f"107603{pictures.uid}", page="2")[0] == everything[2:]
    assert mids(f"230413{pictures.uid}_-_WEIBO_SECOND_PROFILE_WEIBO_PIC", page="2")[0] == everything[2:3]
    videos, _ = mids(f"230413{site.posts['playback'].uid}_-_WEIBO_SECOND_PROFILE_WEIBO_VIDEO")
    assert videos == [site.posts[k].mid for k in ("playback-3", "playback-2")]
    assert mids("2304131_-_WEIBO_SECOND_PROFILE_WEIBO_ARTICAL")[0] == []
