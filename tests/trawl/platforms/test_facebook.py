"""Facebook: URL routing, the resolver against the simulated site, signed media, mangled pages."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest

from trawl.errors import TrawlError, classify_response
from trawl.models import Resolved
from trawl.platforms.base import Page, ResolveContext
from trawl.platforms.facebook.resolver import FacebookResolver, resolvers
from trawl.platforms.generic import GenericResolver
from trawl.platforms.registry import Registry
from trawl.platforms.facebook import FacebookSettings
from trawl.simulator import Request, Response, Simulator
from trawl.platforms.facebook.site import (
    BLOCKED_ID,
    LOGIN_WALL_ID,
    NO_VIDEO_ID,
    REMOVED_ID,
    UNAVAILABLE_ID,
    FacebookSite,
    FbVideo,
    install_facebook_site,
)

CLASSIC, REEL, OG_ONLY = "1029384756473829", "2847561930284756", "3958271046382910"


@pytest.fixture
def site(sim: Simulator) -> FacebookSite:
    return install_facebook_site(sim)


@pytest.fixture
def resolver(site: FacebookSite) -> FacebookResolver:
    return FacebookResolver(site.settings())


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(follow_redirects=True) as c:
        yield c


@pytest.fixture
def ctx(client: httpx.Client) -> ResolveContext:
    return ResolveContext(client, max_page_bytes=5 * 1024 * 1024)


def _error_class(call: Any) -> str:
    with pytest.raises(TrawlError) as caught:
        call()
    return caught.value.error_class


# -- routing (no network) --------------------------------------------------------------------
ROUTES = [
    # url, claimed, offline key
    (f"https://www.facebook.com/harbourcouncil/videos/{CLASSIC}", True, f"facebook:{CLASSIC}"),
    (f"https://www.facebook.com/harbourcouncil/videos/{CLASSIC}/", True, f"facebook:{CLASSIC}"),
    (f"https://www.facebook.com/harbourcouncil/videos/harbour-lights/{CLASSIC}/", True, f"facebook:{CLASSIC}"),
    (f"https://www.facebook.com/watch/?v={CLASSIC}", True, f"facebook:{CLASSIC}"),
    (f"https://www.facebook.com/watch?v={CLASSIC}", True, f"facebook:{CLASSIC}"),
    (f"https://www.facebook.com/watch/?ref=saved&v={CLASSIC}&t=3#c", True, f"facebook:{CLASSIC}"),
    (f"https://www.facebook.com/video.php?v={CLASSIC}", True, f"facebook:{CLASSIC}"),
    (f"https://www.facebook.com/reel/{REEL}", True, f"facebook:{REEL}"),
    (f"https://www.facebook.com/reel/{REEL}/?s=ifu", True, f"facebook:{REEL}"),
    (f"https://m.facebook.com/watch/?v={CLASSIC}", True, f"facebook:{CLASSIC}"),
    (f"https://web.facebook.com/harbourcouncil/videos/{CLASSIC}", True, f"facebook:{CLASSIC}"),
    (f"https://de-de.facebook.com/watch/?v={CLASSIC}", True, f"facebook:{CLASSIC}"),
    (f"https://facebook.com/reel/{REEL}", True, f"facebook:{REEL}"),
    ("https://www.facebook.com/share/v/1AbCdEfGhJ/", True, None),
    ("https://www.facebook.com/share/r/9ZyXwVuTsR/", True, None),
    ("https://fb.watch/aBc12XyZ9/", True, None),
    ("https://fb.watch/aBc12XyZ9", True, None),
    ("https://www.facebook.com/somepage", False, None),
    ("https://www.facebook.com/", False, None),
    ("https://www.facebook.com/watch/", False, None),
    ("https://www.facebook.com/watch/?v=abc", False, None),
    ("https://www.facebook.com/watch/?vv=123", False, None),
    ("https://www.facebook.com/harbourcouncil/photos/123", False, None),
    ("https://www.facebook.com/reel/", False, None),
    ("https://fb.watch/", False, None),
    ("https://notfacebook.com/watch/?v=123", False, None),
    ("https://www.facebook.com.evil.example/watch/?v=123", False, None),
    ("https://evil.example/?u=https://www.facebook.com/watch/?v=123", False, None),
]


@pytest.mark.parametrize(("url", "claimed", "key"), ROUTES)
def test_routing_table(url: str, claimed: bool, key: str | None) -> None:
    fb = FacebookResolver(FacebookSettings())
    assert fb.claims(url) is claimed
    assert fb.offline_key(url) == key


def test_configured_bases_are_claimed_and_registry_ids_follow_the_key(site: FacebookSite) -> None:
    fb = resolvers(site.settings())[0]
    assert fb.offline_key(site.sim.url(f"/reel/{REEL}")) == f"facebook:{REEL}"
    assert fb.claims(site.short_url("aBc12XyZ9")) and fb.offline_key(site.short_url("aBc12XyZ9")) is None
    assert not fb.claims(site.sim.url("/harbourcouncil"))
    registry = Registry([fb, GenericResolver()])
    ids = {registry.route(u).workflow_id for u in (f"https://m.facebook.com/watch/?v={CLASSIC}",
                                                     f"https://de-de.facebook.com/harbourcouncil/videos/{CLASSIC}/",
                                                     site.sim.url(f"/video.php?v={CLASSIC}"))}
    assert ids == {f"item-facebook:{CLASSIC}"}
    assert registry.route("https://www.facebook.com/somepage").platform == "generic"


# -- resolving against the simulator ---------------------------------------------------------
def _sizes(client: httpx.Client, item: Resolved) -> list[int]:
    return [int(client.head(u).headers["content-length"]) for u in item.assets[0].urls]


def _check(item: Resolved, video: FbVideo, resolver: FacebookResolver, client: httpx.Client) -> None:
    assert item.canonical_key == f"facebook:{video.id}"
    assert item.canonical_url == f"https://www.facebook.com/watch/?v={video.id}"
    assert (item.platform, item.title, item.uploader, item.duration) == (
        "facebook", video.title, video.uploader, video.duration)
    asset, cover = item.assets
    assert (asset.name, asset.kind, asset.headers) == ("video", "video", {"User-Agent": resolver.config.user_agent})
    # The cover: the node's preferred_thumbnail, or og:image on a page without a video node.
    assert (cover.name, cover.kind, cover.headers) == ("thumbnail", "thumbnail", asset.headers)
    assert urlsplit(cover.urls[0]).path.endswith(f"/{video.id}_cover_g0_n.jpg")
    assert client.get(cover.urls[0]).content[:3] == b"\xff\xd8\xff"
    assert (item.metadata["id"], item.metadata["thumbnail"]) == (video.id, cover.urls[0])
    qualities = [q for q, size in (("hd", video.hd_size), ("sd", video.sd_size)) if size]
    assert [urlsplit(u).path.split("_")[1] for u in asset.urls] == qualities  # HD first, SD as backup
    assert _sizes(client, item) == [s for s in (video.hd_size, video.sd_size) if s]


@pytest.mark.parametrize("path", [
    "/watch/?v={id}", "/watch?v={id}", "/video.php?v={id}", "/harbourcouncil/videos/{id}/",
    "/harbourcouncil/videos/some-slug/{id}", "/reel/{id}/",
])
@pytest.mark.parametrize("video_id", [CLASSIC, REEL, OG_ONLY])
def test_video_pages(site: FacebookSite, resolver: FacebookResolver, ctx: ResolveContext,
                     client: httpx.Client, path: str, video_id: str) -> None:
    item = resolver.resolve(site.sim.url(path.format(id=video_id)), ctx)
    _check(item, site.videos[video_id], resolver, client)


@pytest.mark.parametrize("host", ["www", "m", "web", "de-de"])
def test_real_host_forms_resolve_on_the_configured_base_to_one_key(
        site: FacebookSite, resolver: FacebookResolver, ctx: ResolveContext, host: str) -> None:
    url = f"https://{host}.facebook.com/watch/?v={CLASSIC}"
    assert resolver.resolve(url, ctx).canonical_key == f"facebook:{CLASSIC}" == resolver.offline_key(url)


def test_classic_page_with_header_login_form_is_not_a_login_wall(
        site: FacebookSite, resolver: FacebookResolver, ctx: ResolveContext) -> None:
    assert 'id="login_form"' in site.page_html(CLASSIC)
    assert resolver.resolve(site.sim.url(f"/watch/?v={CLASSIC}"), ctx).title == site.videos[CLASSIC].title


@pytest.mark.parametrize(("link", "video_id"), [
    ("short:aBc12XyZ9", CLASSIC), ("/share/v/1AbCdEfGhJ/", CLASSIC), ("/share/r/9ZyXwVuTsR/", REEL),
])
def test_short_links_are_followed(site: FacebookSite, resolver: FacebookResolver, ctx: ResolveContext,
                                  client: httpx.Client, link: str, video_id: str) -> None:
    url = site.short_url(link[6:]) if link.startswith("short:") else site.sim.url(link)
    assert resolver.offline_key(url) is None
    _check(resolver.resolve(url, ctx), site.videos[video_id], resolver, client)


@pytest.mark.parametrize(("url", "error_class"), [
    ("short:Pr0f1le7", "unsupported_url"),  # leads to a page's profile, not a video
    ("short:nosuchcode", "not_found"),
    ("/share/v/nosuchcode/", "not_found"),
    (f"/watch/?v={LOGIN_WALL_ID}", "login_required"),
    (f"/reel/{REMOVED_ID}", "not_found"),
    (f"/watch/?v={UNAVAILABLE_ID}", "not_found"),
    (f"/watch/?v={NO_VIDEO_ID}", "parse_error"),  # only a neighbour's video is on the page
])
def test_failures_are_classified(site: FacebookSite, resolver: FacebookResolver, ctx: ResolveContext,
                                 url: str, error_class: str) -> None:
    url = site.short_url(url[6:]) if url.startswith("short:") else site.sim.url(url)
    assert _error_class(lambda: resolver.resolve(url, ctx)) == error_class


@pytest.mark.parametrize(("video_id", "error_class", "says"), [
    (BLOCKED_ID, "rate_limited", "You’re Temporarily Blocked"),
    (UNAVAILABLE_ID, "not_found", "This content isn't available right now"),
    (LOGIN_WALL_ID, "login_required", "You must log in to continue"),
])
def test_error_pages_carry_their_own_words_and_the_users_url(site: FacebookSite, resolver: FacebookResolver,
                                                              ctx: ResolveContext, video_id: str,
                                                              error_class: str, says: str) -> None:
    url = site.sim.url(f"/reel/{video_id}/")
    with pytest.raises(TrawlError) as caught:
        resolver.resolve(url, ctx)
    assert caught.value.error_class == error_class
    assert says in str(caught.value) and url in str(caught.value)


def test_parse_error_names_platform_url_and_missing_fields(
        site: FacebookSite, resolver: FacebookResolver, ctx: ResolveContext) -> None:
    with pytest.raises(TrawlError) as caught:
        resolver.resolve(f"https://www.facebook.com/watch/?v={NO_VIDEO_ID}", ctx)
    message = str(caught.value)
    assert message.startswith("facebook: ") and NO_VIDEO_ID in message and site.sim.base_url in message
    assert "playable_url" in message and "og:video" in message


def test_anonymous_soft_ban_is_a_login_wall_and_cookies_pass(
        site: FacebookSite, ctx: ResolveContext, tmp_path: Path) -> None:
    site.max_anonymous_requests = 1
    anonymous = FacebookResolver(site.settings())
    url = f"https://www.facebook.com/watch/?v={CLASSIC}"
    assert anonymous.resolve(url, ctx).canonical_key == f"facebook:{CLASSIC}"
    assert _error_class(lambda: anonymous.resolve(url, ctx)) == "login_required"
    cookies = tmp_path / "cookies.txt"
    cookies.write_text("# Netscape HTTP Cookie File\n"
                       ".facebook.com\tTRUE\t/\tTRUE\t2147483647\tc_user\t100000000000001\n"
                       ".facebook.com\tTRUE\t/\tTRUE\t2147483647\txs\t12%3Aabc\n")
    logged_in = FacebookResolver(site.settings(cookies_file=str(cookies)))
    assert logged_in.resolve(url, ctx).title == site.videos[CLASSIC].title
    assert site.page_requests == 3


def test_page_request_carries_configured_user_agent_headers_and_cookies(
        site: FacebookSite, ctx: ResolveContext, tmp_path: Path) -> None:
    seen: list[dict[str, str]] = []

    def capture(req: Request) -> Response:
        seen.append(req.headers)
        return Response(200, {"Content-Type": "text/html"}, site.page_html(CLASSIC).encode())

    site.sim.add_exact("/watch/", capture)  # exact paths win over the site's routes
    cookies = tmp_path / "cookies.txt"
    cookies.write_text("# Netscape HTTP Cookie File\n.facebook.com\tTRUE\t/\tTRUE\t2147483647\tc_user\t42\n")
    config = site.settings(user_agent="UA/1", headers={"X-Extra": "1"}, cookies_file=str(cookies))
    item = FacebookResolver(config).resolve(f"https://www.facebook.com/reel/{CLASSIC}", ctx)
    assert item.assets[0].headers == {"User-Agent": "UA/1"}
    [headers] = seen
    assert (headers["user-agent"], headers["x-extra"], headers["cookie"]) == ("UA/1", "1", "c_user=42")


def test_og_video_typed_as_a_player_is_not_taken(site: FacebookSite, resolver: FacebookResolver) -> None:
    html = ('<meta property="og:title" content="Old clip" />'
            '<meta property="og:video" content="https://x.example/p.swf" />'
            '<meta property="og:video:type" content="application/x-shockwave-flash" />')
    page = Page(site.sim.url("/watch/?v=7"), 200, httpx.Headers({"content-type": "text/html"}), html.encode())
    assert _error_class(lambda: resolver.from_page(page, "7")) == "parse_error"


# -- signed media ----------------------------------------------------------------------------
def test_media_url_is_signed_like_facebook_and_serves_the_file(
        site: FacebookSite, resolver: FacebookResolver, ctx: ResolveContext, client: httpx.Client) -> None:
    url = resolver.resolve(f"https://www.facebook.com/reel/{REEL}", ctx).assets[0].urls[0]
    assert re.search(r"[?&]oe=[0-9a-f]{8}(&|$)", url) and re.search(r"[?&]oh=[0-9a-f]{32}(&|$)", url)
    assert "_nc_cat=" in url and "_nc_ht=" in url
    got = client.get(url)
    assert got.status_code == 200 and len(got.content) == site.videos[REEL].hd_size
    assert got.content[4:8] == b"ftyp" and got.headers["content-type"] == "video/mp4"


def test_expired_media_url_answers_403_url_expired_and_a_fresh_resolve_works(
        site: FacebookSite, resolver: FacebookResolver, ctx: ResolveContext, client: httpx.Client) -> None:
    url = f"https://www.facebook.com/watch/?v={CLASSIC}"
    old = resolver.resolve(url, ctx).assets[0].urls[0]
    site.expire_media_urls()
    stale = client.get(old)
    assert (stale.status_code, stale.text) == (403, "URL signature expired")
    error = classify_response(stale.status_code, stale.headers, stale.content, url=old, signed_media=False)
    assert error is not None and error.error_class == "url_expired"
    fresh = resolver.resolve(url, ctx).assets[0].urls[0]
    assert fresh != old and client.get(fresh).status_code == 200
    assert client.get(site.media_url(CLASSIC, "sd", ttl=-5)).text == "URL signature expired"


# -- mangled pages ---------------------------------------------------------------------------
_BLOCK = re.compile(r"(<script [^>]*data-sjs>)(.*?)(</script>)", re.DOTALL)
WRONG_VALUES: list[Any] = [None, 0, -1, 1.5, True, "", "x", "nan", [], {}, [None], {"text": 7}, "javascript:x"]


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        yield prefix + (key,)
        yield from _paths(value, prefix + (key,))


def _mutated(doc: Any, path: tuple[Any, ...], value: Any, delete: bool) -> Any:
    doc = copy.deepcopy(doc)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


def _variants(html: str) -> Iterator[str]:
    """The page with one JSON value removed or of a wrong type, or one block broken, at a time."""
    blocks = _BLOCK.findall(html)
    for head, text, tail in blocks:
        original = head + text + tail
        doc = json.loads(text)
        for path in _paths(doc):
            for value, delete in [(None, True)] + [(v, False) for v in WRONG_VALUES]:
                mangled = json.dumps(_mutated(doc, path, value, delete)).replace("/", "\\/")
                yield html.replace(original, head + mangled + tail)
        for broken in (text[: len(text) // 2], text[:-1], "", "null", "[]", '"x"', "{", "1e999",
                       "[" * 100_000 + "]" * 100_000, text.replace('"', "'")):
            yield html.replace(original, head + broken + tail)


@pytest.mark.parametrize("video_id", [CLASSIC, REEL, OG_ONLY, NO_VIDEO_ID])
def test_mangled_json_raises_only_trawl_errors(site: FacebookSite, resolver: FacebookResolver,
                                               video_id: str) -> None:
    html = site.page_html(video_id)
    headers = httpx.Headers({"content-type": "text/html; charset=utf-8"})
    outcomes: dict[str, int] = {}
    for variant in _variants(html):
        page = Page(site.sim.url(f"/watch/?v={video_id}"), 200, headers, variant.encode())
        try:
            item = resolver.from_page(page, video_id)
        except TrawlError as exc:
            outcomes[exc.error_class] = outcomes.get(exc.error_class, 0) + 1
            continue
        assert item.canonical_key == f"facebook:{video_id}"
        assert item.assets[0].urls and all(u.startswith("http") for u in item.assets[0].urls)
        outcomes["ok"] = outcomes.get("ok", 0) + 1
    # The classic page has a login form in its header: once its video is gone, it reads as a wall.
    assert set(outcomes) <= {"ok", "parse_error", "login_required"}
    assert sum(outcomes.values()) > 100


# -- issue 17: every URL form people paste (the forms of yt-dlp's extractor tests) -------------
PASTED_FORMS = [
    # url, offline key (None: the key needs the page; a post's videos are found on it)
    ("https://www.facebook.com/watch/live/?v=1823658634322275", "facebook:1823658634322275"),
    ("https://www.facebook.com/video/embed?video_id=10153231379946729", "facebook:10153231379946729"),
    ("https://www.facebook.com/ChristyClarkForBC/videos/vb.22819070941/10153870694020942/?type=2&theater",
     "facebook:10153870694020942"),
    ("https://zh-hk.facebook.com/peoplespower/videos/1135894589806027/", "facebook:1135894589806027"),
    ("https://www.facebook.com/video.php?v=637842556329505&fref=nf", "facebook:637842556329505"),
    ("https://www.facebook.com/plugins/video.php?href=https%3A%2F%2Fwww.facebook.com%2Fgov.sg%2Fvideos%2F"
     "10154383743583686%2F&show_text=0&width=560", "facebook:10154383743583686"),
    ("https://www.facebook.com/plugins/video.php?href=https%3A%2F%2Fwww.facebook.com%2Fvideo.php%3Fv%3D10204634152394104",
     "facebook:10204634152394104"),
    ("https://www.facebook.com/plugins/video.php?href=https://www.facebook.com/gov.sg/videos/10154383743583686/"
     "&show_text=0&width=560", "facebook:10154383743583686"),
    ("https://www.facebook.com/maxlayn/posts/10153807558977570", None),
    ("https://m.facebook.com/Alliance.Police.Department/posts/4048563708499330", None),
    ("https://www.facebook.com/attn/posts/pfbid0j1Czf2gGDVqeQ8KiMLFm3pWN8GxsQmeRrVhimWDzMuKQoR8r4b1knNsejELmUgyhl",
     None),
    ("https://www.facebook.com/groups/1024490957622648/permalink/1396382447100162/", None),
    ("https://www.facebook.com/groups/ateistiskselskab/permalink/10154930137678856/", None),
    ("https://www.facebook.com/groups/1645456212344334/posts/3737828833107051/", None),
    ("https://www.facebook.com/groups/1513990329015294/posts/d41d8cd9/2013209885760000/?app=fbl", None),
    ("https://www.facebook.com/permalink.php?story_fbid=pfbid0fqQuVEQyXRa9Dp4RcaTR14KHU3uULHV1EK7eckNXSH63JMuoALsAv"
     "VCJ97zAGitil&id=100068861234290", None),
    ("https://m.facebook.com/story.php?story_fbid=1035862816472149&id=116132035111903", None),
    ("https://m.facebook.com/events/1509582499515440", None),
    ("https://www.facebook.com/events/some-festival/1509582499515440/", None),
    ("https://www.facebook.com/plugins/video.php?href=https%3A%2F%2Fwww.facebook.com%2Fmaxlayn%2Fposts%2F1", None),
]
NOT_CLAIMED_FORMS = [
    "https://www.facebook.com/plugins/video.php?href=https%3A%2F%2Fevil.example%2Fclip.mp4",  # not a Facebook URL
    "https://www.facebook.com/plugins/video.php?href=https%3A%2F%2Fwww.facebook.com%2Fsomepage",
    "https://www.facebook.com/groups/1024490957622648/",
    "https://www.facebook.com/events/",
    "https://www.facebook.com/somepage/posts/",
]


@pytest.mark.parametrize(("url", "key"), PASTED_FORMS)
def test_pasted_forms_are_claimed_with_the_right_key(url: str, key: str | None) -> None:
    fb = FacebookResolver(FacebookSettings())
    assert fb.claims(url)
    assert fb.offline_key(url) == key
    assert fb.is_post(url) is (key is None)


@pytest.mark.parametrize("url", NOT_CLAIMED_FORMS)
def test_forms_that_name_no_video_are_left_to_the_generic_resolver(url: str) -> None:
    assert not FacebookResolver(FacebookSettings()).claims(url)


@pytest.mark.parametrize(("path", "first", "others"), [
    ("/harbourcouncil/posts/pfbid02Harbour7LightsAtDusk9x", CLASSIC, []),
    ("/groups/tidewatchers/posts/4048563708499330/", REEL, []),
    ("/groups/tidewatchers/permalink/4048563708499331/", CLASSIC, []),
    ("/events/1509582499515440", REEL, []),
    ("/permalink.php?story_fbid=pfbid0TwoClipsOfTheHarbour1&id=100064102938475", CLASSIC, [REEL]),
])
@pytest.mark.parametrize("host", ["https://www.facebook.com", "https://m.facebook.com", "sim"])
def test_posts_resolve_to_their_videos(site: FacebookSite, resolver: FacebookResolver, ctx: ResolveContext,
                                       client: httpx.Client, path: str, first: str, others: list[str],
                                       host: str) -> None:
    url = (site.sim.base_url if host == "sim" else host) + path
    item = resolver.resolve(url, ctx)
    # The first attached video is the item, the same as under its own URL; the suggested
    # neighbour on the page is not the post's.
    assert item.canonical_key == f"facebook:{first}"
    _check(item, site.videos[first], resolver, client)
    assert [m.url for m in item.more] == [site.sim.url(f"/watch/?v={other}") for other in others]
    assert item.metadata.get("playlist_count") == (1 + len(others) if others else None)


def test_embed_player_resolves_to_the_video_in_its_href(site: FacebookSite, resolver: FacebookResolver,
                                                        ctx: ResolveContext, client: httpx.Client) -> None:
    inner = f"https://www.facebook.com/harbourcouncil/videos/{CLASSIC}/"
    item = resolver.resolve(f"https://www.facebook.com/plugins/video.php?href={quote(inner, safe='')}&width=560", ctx)
    _check(item, site.videos[CLASSIC], resolver, client)


def test_post_without_video_and_post_behind_login(site: FacebookSite, resolver: FacebookResolver,
                                                  ctx: ResolveContext) -> None:
    assert _error_class(lambda: resolver.resolve(site.sim.url("/harbourcouncil/posts/3141592653589793"), ctx)) \
        == "unsupported_url"
    # A post page behind the login wall says so: not "no video".
    site.sim.add_page("/walled/posts/1", "<html><body><h2>You must log in to continue.</h2>"
                      '<form id="login_form"></form></body></html>')
    assert _error_class(lambda: resolver.resolve(site.sim.url("/walled/posts/1"), ctx)) == "login_required"


def test_registry_routes_posts_to_facebook_and_their_more_items_by_video_key(site: FacebookSite) -> None:
    registry = Registry([resolvers(site.settings())[0], GenericResolver()])
    post = registry.route("https://m.facebook.com/maxlayn/posts/10153807558977570")
    assert post.platform == "facebook" and post.workflow_id.startswith("url-")
    assert registry.route(site.sim.url(f"/watch/?v={REEL}")).workflow_id == f"item-facebook:{REEL}"


def test_thumbnails_setting_off_leaves_the_cover_out(site: FacebookSite, ctx: ResolveContext) -> None:
    item = FacebookResolver(site.settings(thumbnails=False)).resolve(site.sim.url(f"/watch/?v={CLASSIC}"), ctx)
    assert [a.kind for a in item.assets] == ["video"] and item.metadata["thumbnail"]  # still named in metadata
