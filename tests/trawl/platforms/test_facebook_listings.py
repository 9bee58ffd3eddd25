"""Facebook photos and listings: every URL form routed offline (items and listings, both ways),
the photo resolver and each listing kind against the simulated site."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from trawl.errors import LoginRequired, TrawlError
from trawl.platforms.base import ResolveContext
from trawl.platforms.facebook import listings as fb_listings
from trawl.platforms.facebook.listing_site import (
    BLOCKED_PHOTO_ID,
    EMPTY_SET,
    LIGHTHOUSE_SET,
    LOGIN_PHOTO_ID,
    MEMBERS_SET,
    PHOTOS_BY_SET,
    WINTER_SET,
)
from trawl.platforms.facebook.photo import FacebookPhotoResolver, parse_photo_page
from trawl.platforms.facebook.resolver import FacebookResolver
from trawl.platforms.facebook.site import FacebookSite, install_facebook_site
from trawl.platforms.registry import PLATFORMS, Registry, build_registry, default_registry, platforms_model
from trawl.simulator import Simulator

FB = "https://www.facebook.com"
CLASSIC, REEL, OG_ONLY = "1029384756473829", "2847561930284756", "3958271046382910"

# url -> (kind, id) of the listing it names
LISTINGS = [
    # reels tab
    (f"{FB}/harbourcouncil/reels/", "facebook_reels", "harbourcouncil"),
    (f"{FB}/harbourcouncil/reels", "facebook_reels", "harbourcouncil"),
    ("https://m.facebook.com/harbourcouncil/reels/?ref=page_internal", "facebook_reels", "harbourcouncil"),
    (f"{FB}/harbourcouncil?sk=reels_tab", "facebook_reels", "harbourcouncil"),
    (f"{FB}/profile.php?id=100064102938475&sk=reels_tab", "facebook_reels", "100064102938475"),
    (f"{FB}/people/Harbour-Council/100064102938475/reels/", "facebook_reels", "100064102938475"),
    # videos tab
    (f"{FB}/harbourcouncil/videos/", "facebook_videos", "harbourcouncil"),
    (f"{FB}/harbourcouncil/videos", "facebook_videos", "harbourcouncil"),
    ("https://m.facebook.com/harbourcouncil/videos/?ref=page_internal", "facebook_videos", "harbourcouncil"),
    ("https://de-de.facebook.com/pg/harbourcouncil/videos/", "facebook_videos", "harbourcouncil"),
    (f"{FB}/harbourcouncil?sk=videos", "facebook_videos", "harbourcouncil"),
    (f"{FB}/profile.php?id=100064102938475&sk=videos", "facebook_videos", "100064102938475"),
    (f"{FB}/profile.php?sk=videos&id=100064102938475", "facebook_videos", "100064102938475"),
    (f"{FB}/people/Harbour-Council/100064102938475/?sk=videos", "facebook_videos", "100064102938475"),
    # photos tab and the bare profile (gallery-dl's test URLs)
    (f"{FB}/facebook/photos", "facebook_photos", "facebook"),
    (f"{FB}/100064860875397/photos", "facebook_photos", "100064860875397"),
    (f"{FB}/profile.php?id=100074229772340/photos", "facebook_photos", "100074229772340"),
    (f"{FB}/facebook/photos_by", "facebook_photos", "facebook"),
    (f"{FB}/brando.cha.3/photos", "facebook_photos", "brando.cha.3"),
    (f"{FB}/profile.php?id=100064860875397&sk=photos", "facebook_photos", "100064860875397"),
    (f"{FB}/people/facebook/100064860875397/?sk=photos", "facebook_photos", "100064860875397"),
    (f"{FB}/facebook", "facebook_photos", "facebook"),
    (f"{FB}/facebook/", "facebook_photos", "facebook"),
    (f"{FB}/profile.php?id=100064860875397", "facebook_photos", "100064860875397"),
    ("https://web.facebook.com/people/facebook/100064860875397/", "facebook_photos", "100064860875397"),
    # albums tab
    (f"{FB}/facebook/photos_albums", "facebook_albums", "facebook"),
    (f"{FB}/facebook/photos_albums/Mobile%20uploads", "facebook_albums", "facebook/Mobile uploads"),
    (f"{FB}/profile.php?id=100064860875397&sk=photos_albums", "facebook_albums", "100064860875397"),
    # photo sets
    (f"{FB}/media/set/?set=a.10152716010956729&type=3", "facebook_album", "a.10152716010956729"),
    (f"{FB}/media/set/?set=a.127331797422780&type=3", "facebook_album", "a.127331797422780"),
    (f"{FB}/media/set/?type=3&set=pb.100064860875397.-2207520000", "facebook_album", "pb.100064860875397.-2207520000"),
    (f"{FB}/photo/?set=a.10152716010956729", "facebook_album", "a.10152716010956729"),
    (f"{FB}/Facebook/photos/a.10152716010956729/", "facebook_album", "a.10152716010956729"),
    (f"{FB}/photo/?fbid=10152716011076729&set=a.10152716010956729&setextract", "facebook_album",
     "a.10152716010956729:10152716011076729"),
]

# url -> resolver name, offline key
ITEMS = [
    (f"{FB}/photo.php?fbid=10165113568399554&set=t.100064860875397&type=3", "facebook:photo",
     "facebook:photo:10165113568399554"),
    (f"{FB}/photo.php?fbid=1143447107814264&set=pb.100064469571787.-2207520000&type=3", "facebook:photo",
     "facebook:photo:1143447107814264"),
    (f"{FB}/photo.php?fbid=1156625586261770", "facebook:photo", "facebook:photo:1156625586261770"),
    (f"{FB}/photo.php/?fbid=10165113568399554&set=t.100064860875397", "facebook:photo",
     "facebook:photo:10165113568399554"),
    (f"{FB}/photo?fbid=10165113568399554&set=t.100064860875397", "facebook:photo",
     "facebook:photo:10165113568399554"),
    (f"{FB}/photo/?fbid=10165113568399554&set=t.100064860875397&type=3", "facebook:photo",
     "facebook:photo:10165113568399554"),
    (f"{FB}/photo/?fbid=10160743390456729", "facebook:photo", "facebook:photo:10160743390456729"),
    (f"{FB}/photo/?fbs=home&fbid=10160743390456729", "facebook:photo", "facebook:photo:10160743390456729"),
    (f"{FB}/Facebook/photos/a.10152716010956729/10152716011076729", "facebook:photo",
     "facebook:photo:10152716011076729"),
    (f"{FB}/Facebook/photos/a.10152716010956729/10152716011076729/?type=3", "facebook:photo",
     "facebook:photo:10152716011076729"),
    (f"{FB}/harbourcouncil/photos/pb.100064102938475.-2207520000/8810000000000001/", "facebook:photo",
     "facebook:photo:8810000000000001"),
    (f"{FB}/Facebook/photos/10152716011076729", "facebook:photo", "facebook:photo:10152716011076729"),
    ("https://m.facebook.com/photo.php?fbid=1156625586261770", "facebook:photo", "facebook:photo:1156625586261770"),
    ("https://zh-hk.facebook.com/photo/?fbid=1156625586261770", "facebook:photo", "facebook:photo:1156625586261770"),
    # videos: a photo id and a video id never share a key
    (f"{FB}/photo.php?v=10204634152394104", "facebook:video", "facebook:10204634152394104"),
    (f"{FB}/harbourcouncil/videos/{CLASSIC}/", "facebook:video", f"facebook:{CLASSIC}"),
    (f"{FB}/ChristyClarkForBC/videos/vb.22819070941/10153870694020942/?type=2&theater", "facebook:video",
     "facebook:10153870694020942"),
    (f"{FB}/watch/?v={CLASSIC}", "facebook:video", f"facebook:{CLASSIC}"),
    (f"{FB}/reel/{REEL}", "facebook:video", f"facebook:{REEL}"),
    (f"{FB}/video.php?v={CLASSIC}", "facebook:video", f"facebook:{CLASSIC}"),
    # posts and short links: items whose key only their page tells
    (f"{FB}/harbourcouncil/posts/pfbid02Harbour7LightsAtDusk9x", "facebook:video", None),
    (f"{FB}/groups/tidewatchers/posts/4048563708499330", "facebook:video", None),
    (f"{FB}/permalink.php?story_fbid=pfbid0TwoClipsOfTheHarbour1&id=100064102938475", "facebook:video", None),
    (f"{FB}/events/1509582499515440", "facebook:video", None),
    (f"{FB}/share/v/1AbCdEfGhJ/", "facebook:video", None),
    ("https://fb.watch/aBc12XyZ9/", "facebook:video", None),
    # Facebook's own pages are neither profiles nor items of Facebook's
    (f"{FB}/login/", "generic", None),
    (f"{FB}/harbourcouncil/about", "generic", None),
    (f"{FB}/index.html", "generic", None),
    (f"{FB}/marketplace", "generic", None),
]

LOGIN_ONLY = [
    f"{FB}/me",
    f"{FB}/me/photos",
    f"{FB}/saved/",
    f"{FB}/brando.cha.3/photos_of",
    f"{FB}/profile.php?id=100064860875397&sk=photos_of",
    f"{FB}/groups/tidewatchers/media",
    f"{FB}/groups/tidewatchers/media/photos",
    f"{FB}/groups/tidewatchers/videos",
    f"{FB}/watchparty/211641140192478",
]


@pytest.fixture(scope="module")
def registry() -> Registry:
    return default_registry()


@pytest.mark.parametrize(("url", "kind", "listing_id"), LISTINGS)
def test_listing_forms(registry: Registry, url: str, kind: str, listing_id: str) -> None:
    route = registry.listing_for(url)
    assert route is not None and (route.platform, route.kind, route.id) == ("facebook", kind, listing_id)
    # No item resolver of Facebook's claims a listing URL.
    assert registry.resolver_for(url).platform == "generic"


@pytest.mark.parametrize(("url", "name", "key"), ITEMS)
def test_item_forms(registry: Registry, url: str, name: str, key: str | None) -> None:
    assert registry.listing_for(url) is None
    route = registry.route(url)
    assert route.resolver.name == name
    assert route.workflow_id == (f"item-{key}" if key else route.workflow_id)
    assert route.resolver.offline_key(url) == key


@pytest.mark.parametrize("url", LOGIN_ONLY)
def test_login_only_forms_are_refused_offline(registry: Registry, url: str) -> None:
    with pytest.raises(LoginRequired) as caught:
        registry.listing_for(url)
    assert caught.value.error_class == "login_required" and "cookies_file" in caught.value.message


def test_photo_and_video_keys_differ() -> None:
    """One number under both forms is two keys: a photo can never make a video a duplicate."""
    video, photo = default_registry().route(f"{FB}/watch/?v={CLASSIC}"), default_registry().route(
        f"{FB}/photo/?fbid={CLASSIC}")
    assert video.workflow_id == f"item-facebook:{CLASSIC}" and photo.workflow_id == f"item-facebook:photo:{CLASSIC}"


def test_gallery_dl_markers() -> None:
    """The photo page is read at gallery-dl's markers, escapes decoded."""
    page = ('{"__typename":"Photo","image":{"uri":"https:\\/\\/scontent.xx.fbcdn.net\\/v\\/t39.30808-6\\/1_n.jpg'
            '?oh=00_a&oe=6700AB12","width":960},"url":"https:\\/\\/www.facebook.com\\/photo\\/?fbid=55&set=a.77",'
            '"__isNode":"Photo","id":"55"} "created_time":1700000000, "owner":{"__typename":"User","name":"Caf\\u00e9"}'
            ' "message":{"delight_ranges":[],"ranges":[],"text":"Hello \\ud83d\\udc4b"},"message_preferred_body":1'
            ' "nextMediaAfterNodeId":{"__typename":"Photo","id":"56"}')
    photo = parse_photo_page(page)
    assert (photo.id, photo.set_id, photo.next_id, photo.timestamp) == ("55", "a.77", "56", 1700000000)
    assert photo.url == "https://scontent.xx.fbcdn.net/v/t39.30808-6/1_n.jpg?oh=00_a&oe=6700AB12"
    assert (photo.owner, photo.caption) == ("Café", "Hello \U0001f44b")


# -- against the simulated site --------------------------------------------------------------
@pytest.fixture
def site(sim: Simulator) -> FacebookSite:
    return install_facebook_site(sim)


@pytest.fixture
def sim_registry(site: FacebookSite) -> Registry:
    return build_registry(platforms_model(PLATFORMS)(facebook=site.settings()))


@pytest.fixture
def ctx() -> Iterator[ResolveContext]:
    with httpx.Client(follow_redirects=True) as client:
        yield ResolveContext(client, max_page_bytes=5 * 1024 * 1024)


def _expand(registry: Registry, ctx: ResolveContext, url: str, max_pages: int = 3,
            enough=None) -> list[str]:  # noqa: ANN001
    route = registry.listing_for(url)
    assert route is not None, url
    resolver = registry.resolver_of("facebook")
    assert isinstance(resolver, FacebookResolver)
    return fb_listings.LISTINGS[route.kind](resolver, ctx, route.id, max_pages, enough)


def test_simulator_urls_are_claimed(sim: Simulator, sim_registry: Registry) -> None:
    route = sim_registry.listing_for(sim.url("/harbourcouncil/videos/"))
    assert route is not None and (route.kind, route.id) == ("facebook_videos", "harbourcouncil")
    assert sim_registry.route(sim.url("/photo/?fbid=8810000000000001")).workflow_id == \
        "item-facebook:photo:8810000000000001"


def test_videos_tab_pages_through_cursors(sim: Simulator, site: FacebookSite, sim_registry: Registry,
                                          ctx: ResolveContext) -> None:
    urls = _expand(sim_registry, ctx, sim.url("/harbourcouncil/videos/"))
    assert urls == [sim.url(f"/watch/?v={v}") for v in (CLASSIC, REEL, OG_ONLY)]
    assert [sim_registry.route(u).workflow_id for u in urls] == [f"item-facebook:{v}" for v in (CLASSIC, REEL, OG_ONLY)]
    assert site.media.tab_requests["/harbourcouncil/videos/"] == 2  # two pages of two (the second: ?cursor=)
    # max_pages and "enough" stop after the first page; the suggested video is never listed.
    assert _expand(sim_registry, ctx, sim.url("/harbourcouncil/videos/"), max_pages=1) == urls[:2]
    assert _expand(sim_registry, ctx, sim.url("/harbourcouncil/videos/"), enough=lambda page: True) == urls[:2]
    assert _expand(sim_registry, ctx, sim.url("/keepersdiary/videos/")) == []


def test_reels_tab_lists_reel_urls_page_by_page(sim: Simulator, site: FacebookSite, sim_registry: Registry,
                                                ctx: ResolveContext) -> None:
    urls = _expand(sim_registry, ctx, sim.url("/harbourcouncil/reels/"))
    assert urls == [sim.url(f"/reel/{v}") for v in (REEL, CLASSIC)]
    assert [sim_registry.route(u).workflow_id for u in urls] == [f"item-facebook:{v}" for v in (REEL, CLASSIC)]
    assert site.media.tab_requests["/harbourcouncil/reels/"] == 2  # one reel a page, the second by ?cursor=
    assert _expand(sim_registry, ctx, sim.url("/harbourcouncil/reels/"), max_pages=1) == urls[:1]
    assert _expand(sim_registry, ctx, sim.url("/harbourcouncil/reels/"), enough=lambda page: True) == urls[:1]
    # a tab page without the list: its links to reels
    assert _expand(sim_registry, ctx, sim.url("/keepersdiary/reels/")) == [sim.url(f"/reel/{OG_ONLY}")]
    assert _expand(sim_registry, ctx, sim.url("/emptypage/reels/")) == []


def test_a_listed_reel_resolves(sim: Simulator, sim_registry: Registry, ctx: ResolveContext) -> None:
    url = _expand(sim_registry, ctx, sim.url("/harbourcouncil/reels/"))[0]
    item = sim_registry.resolver_for(url).resolve(url, ctx)
    assert item.canonical_key == f"facebook:{REEL}" and item.assets[0].kind == "video"


def test_photos_tab_walks_the_profiles_set(sim: Simulator, site: FacebookSite, sim_registry: Registry,
                                          ctx: ResolveContext) -> None:
    urls = _expand(sim_registry, ctx, sim.url("/harbourcouncil/photos"))
    ids = site.media.set_photos(PHOTOS_BY_SET)
    assert urls == [sim.url(f"/photo/?fbid={i}&set={PHOTOS_BY_SET}") for i in ids]  # the walk's loop ends it
    assert site.media.photo_page_requests == len(ids)
    # A set named as /<profile>/photos/<set>/<id>/ (the other form gallery-dl reads), an empty profile.
    assert _expand(sim_registry, ctx, sim.url("/keepersdiary/photos_by")) == [
        sim.url(f"/photo/?fbid={i}&set={LIGHTHOUSE_SET}") for i in site.media.set_photos(LIGHTHOUSE_SET)]
    assert _expand(sim_registry, ctx, sim.url("/emptypage/photos")) == []


def test_album_walk_start_and_pages(sim: Simulator, site: FacebookSite, sim_registry: Registry, ctx: ResolveContext,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    ids = site.media.set_photos(WINTER_SET)
    url = sim.url(f"/media/set/?set={WINTER_SET}&type=3")
    assert _expand(sim_registry, ctx, url) == [sim.url(f"/photo/?fbid={i}&set={WINTER_SET}") for i in ids]
    start = sim.url(f"/photo/?fbid={ids[2]}&set={WINTER_SET}&setextract")
    assert _expand(sim_registry, ctx, start) == [sim.url(f"/photo/?fbid={i}&set={WINTER_SET}") for i in ids[2:]]
    assert _expand(sim_registry, ctx, sim.url(f"/media/set/?set={EMPTY_SET}")) == []
    # A page of a set walk is PHOTOS_PER_PAGE photos: max_pages and "enough" count in those.
    monkeypatch.setattr(fb_listings, "PHOTOS_PER_PAGE", 3)
    assert len(_expand(sim_registry, ctx, url, max_pages=1)) == 3
    pages: list[list[str]] = []
    assert len(_expand(sim_registry, ctx, url, enough=lambda page: pages.append(page) or True)) == 3
    assert [len(p) for p in pages] == [3]


def test_albums_tab_lists_set_listings(sim: Simulator, sim_registry: Registry, ctx: ResolveContext) -> None:
    urls = _expand(sim_registry, ctx, sim.url("/harbourcouncil/photos_albums"))
    assert urls == [sim.url(f"/media/set/?set={s}&type=3") for s in (WINTER_SET, MEMBERS_SET, EMPTY_SET)]
    assert all(sim_registry.listing_for(u).kind == "facebook_album" for u in urls)  # type: ignore[union-attr]
    assert _expand(sim_registry, ctx, sim.url("/harbourcouncil/photos_albums/HARBOUR%20in%20winter")) == urls[:1]


@pytest.mark.parametrize(("path", "error_class", "words"), [
    ("/membersonly/videos/", "login_required", "You must log in to continue."),
    ("/membersonly/photos", "login_required", "You must log in to continue."),
    ("/membersonly/photos_albums", "login_required", "You must log in to continue."),
    ("/gonepage/photos", "login_required", "This content isn't available right now"),
    ("/gonepage/videos/", "login_required", "This content isn't available right now"),
    ("/membersonly/reels/", "login_required", "You must log in to continue."),
    ("/gonepage/reels/", "login_required", "This content isn't available right now"),
    ("/nobody/reels/", "not_found", "404"),
    ("/nobody/videos/", "not_found", "404"),
    (f"/media/set/?set={MEMBERS_SET}", "login_required", f"crawl {{base}}/photo/?fbid={LOGIN_PHOTO_ID}&set={MEMBERS_SET}&setextract"),
])
def test_listing_refusals(sim: Simulator, sim_registry: Registry, ctx: ResolveContext, path: str, error_class: str,
                          words: str) -> None:
    with pytest.raises(TrawlError) as caught:
        _expand(sim_registry, ctx, sim.url(path))
    assert caught.value.error_class == error_class
    assert words.format(base=sim.base_url) in caught.value.message


def test_hidden_profile_with_cookies_is_gone(sim: Simulator, site: FacebookSite, ctx: ResolveContext,
                                             tmp_path) -> None:  # noqa: ANN001
    cookies = tmp_path / "cookies.txt"
    cookies.write_text("# Netscape HTTP Cookie File\n.facebook.com\tTRUE\t/\tTRUE\t0\tc_user\t100001\n")
    registry = build_registry(platforms_model(PLATFORMS)(facebook=site.settings(cookies_file=str(cookies))))
    with pytest.raises(TrawlError) as caught:
        _expand(registry, ctx, sim.url("/gonepage/photos"))
    assert caught.value.error_class == "not_found"


def test_anonymous_photo_views_end_at_the_login_page(sim: Simulator, site: FacebookSite, sim_registry: Registry,
                                                     ctx: ResolveContext) -> None:
    site.media.max_anonymous_photo_views = 2
    with pytest.raises(LoginRequired) as caught:
        _expand(sim_registry, ctx, sim.url(f"/media/set/?set={WINTER_SET}"))
    third = site.media.set_photos(WINTER_SET)[2]
    assert f"/photo/?fbid={third}&set={WINTER_SET}&setextract" in caught.value.message


# -- the photo item ----------------------------------------------------------------------------
def test_photo_resolves_to_its_full_size_image(sim: Simulator, site: FacebookSite, sim_registry: Registry,
                                               ctx: ResolveContext) -> None:
    url = sim.url(f"/photo.php?fbid=8810000000000004&set={WINTER_SET}&type=3")
    resolver = sim_registry.resolver_for(url)
    assert isinstance(resolver, FacebookPhotoResolver)
    item = resolver.resolve(url, ctx)
    assert (item.canonical_key, item.canonical_url) == ("facebook:photo:8810000000000004",
                                                       f"{FB}/photo/?fbid=8810000000000004")
    assert (item.title, item.uploader) == ("Café by the harbour \u2615", "Harbour Council")
    assert item.metadata["timestamp"] == 1704445200 and item.metadata["set_id"] == WINTER_SET
    [image] = item.assets
    assert image.kind == "image" and "/v/t39.30808-6/" in image.urls[0] and "oe=" in image.urls[0]
    answer = ctx.client.get(image.urls[0])
    assert answer.status_code == 200 and answer.headers["content-type"] == "image/jpeg"
    # The same photo by its /<page>/photos/<set>/<id>/ form is the same item.
    other = sim.url(f"/harbourcouncil/photos/{WINTER_SET}/8810000000000004/")
    assert sim_registry.resolver_for(other).resolve(other, ctx).canonical_key == item.canonical_key


@pytest.mark.parametrize(("photo_id", "error_class"), [
    (LOGIN_PHOTO_ID, "login_required"),
    (BLOCKED_PHOTO_ID, "rate_limited"),
    ("8810000000000077", "not_found"),  # "This content isn't available right now"
])
def test_photo_refusals(sim: Simulator, sim_registry: Registry, ctx: ResolveContext, photo_id: str,
                        error_class: str) -> None:
    url = sim.url(f"/photo/?fbid={photo_id}")
    with pytest.raises(TrawlError) as caught:
        sim_registry.resolver_for(url).resolve(url, ctx)
    assert caught.value.error_class == error_class
