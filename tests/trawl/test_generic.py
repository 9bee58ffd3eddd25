from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import REFERENCE
from trawl.errors import TrawlError
from trawl.platforms.base import Page, ResolveContext
from trawl.platforms.generic import GenericResolver, parse_page_meta
from trawl.platforms.registry import default_registry
from trawl.simulator import MediaFile, Response, Simulator
from trawl.simulator.demo import og_page
from trawl.urls import canonicalize, web_key


@pytest.fixture
def ctx() -> Iterator[ResolveContext]:
    with httpx.Client(follow_redirects=True) as client:
        yield ResolveContext(client, max_page_bytes=64 * 1024)


def test_ogp_spec_examples() -> None:
    html = (REFERENCE / "ogp_spec_examples.html").read_text()
    page = Page("https://www.imdb.com/title/tt0117500/", 200, httpx.Headers({"content-type": "text/html"}),
                html.encode())
    item = GenericResolver().from_page(page)
    assert item.title == "The Rock"
    assert item.canonical_url == "https://www.imdb.com/title/tt0117500/"
    assert item.canonical_key == web_key("https://www.imdb.com/title/tt0117500/")
    # Both og:video entries are Flash (one by og:video:type, one by extension): no video asset.
    assert [(a.kind, a.urls) for a in item.assets] == [("image", ["https://ia.media-imdb.com/images/rock.jpg"])]


def test_structured_og_properties_attach_to_their_root() -> None:
    meta = parse_page_meta((REFERENCE / "ogp_spec_examples.html").read_text())
    flash = meta.videos[1]
    assert (flash.url, flash.secure_url, flash.type, flash.width) == (
        "http://example.com/movie.swf", "https://secure.example.com/movie.swf", "application/x-shockwave-flash", 400)
    assert [i.url for i in meta.images][-1] == "https://example.com/rock3.jpg"
    assert meta.images[-1].height == 1000


def test_direct_file_by_content_type(sim: Simulator, ctx: ResolveContext) -> None:
    sim.add_file("/v/clip", MediaFile("mp4", "clip", 50_000))
    item = GenericResolver().resolve(sim.url("/v/clip?utm_source=x"), ctx)
    assert item.platform == "generic"
    assert item.canonical_url == sim.url("/v/clip")
    assert [(a.kind, a.expected_size, a.mime) for a in item.assets] == [("video", 50_000, "video/mp4")]


def test_a_probe_leaves_its_connection_to_the_download(sim: Simulator, ctx: ResolveContext) -> None:
    """The one-byte probe is read to its end, so its connection goes back to the pool for the
    download that follows (on HTTPS a TLS handshake less an item), not closed with a byte unread."""
    sim.add_file("/v/clip.mp4", MediaFile("mp4", "clip", 50_000))
    pool = ctx.client._transport._pool  # type: ignore[attr-defined]
    GenericResolver().resolve(sim.url("/v/clip.mp4"), ctx)
    assert [c.is_idle() for c in pool.connections] == [True]
    with ctx.client.stream("GET", sim.url("/v/clip.mp4")) as resp:
        assert len(pool.connections) == 1  # the download rides the probe's connection
        assert len(resp.read()) == 50_000


def test_a_probe_answered_with_the_whole_file_is_not_read(sim: Simulator, ctx: ResolveContext) -> None:
    """A server that ignores the Range sends the whole file: the probe reads none of it."""
    body = MediaFile("mp4", "whole", 300_000).read(0, 300_000)
    sim.add_exact("/whole.mp4", lambda req: Response(200, {"Content-Type": "video/mp4"}, body))
    item = GenericResolver().resolve(sim.url("/whole.mp4"), ctx)
    assert [(a.kind, a.expected_size) for a in item.assets] == [("video", 300_000)]
    assert ctx.client._transport._pool.connections == []  # type: ignore[attr-defined]  # closed unread


def test_a_compressed_probe_answer_is_not_decoded(sim: Simulator, ctx: ResolveContext,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A short answer that says it is compressed is drained raw (64 KiB of gzip can be gigabytes),
    and its connection still goes back to the pool."""
    import gzip

    packed = gzip.compress(b"\0" * (4 << 20))
    sim.add_exact("/packed.mp4", lambda req: Response(206, {"Content-Type": "video/mp4", "Content-Encoding": "gzip",
                                                            "Content-Range": "bytes 0-0/5000"}, packed))
    decoded: list[int] = []
    real = httpx.Response.iter_bytes
    monkeypatch.setattr(httpx.Response, "iter_bytes", lambda self, *a: decoded.append(1) or real(self, *a))
    GenericResolver().resolve(sim.url("/packed.mp4"), ctx)
    assert decoded == []
    assert [c.is_idle() for c in ctx.client._transport._pool.connections] == [True]  # type: ignore[attr-defined]


def test_direct_file_by_extension_when_served_as_octet_stream(sim: Simulator, ctx: ResolveContext) -> None:
    sim.add_exact("/dl/song.mp3", lambda req: Response(200, {"Content-Type": "application/octet-stream"},
                                                          MediaFile("mp3", "s", 3000).read(0, 3000)))
    item = GenericResolver().resolve(sim.url("/dl/song.mp3"), ctx)
    assert [a.kind for a in item.assets] == ["audio"]


def test_og_page_with_video_thumbnail_and_canonical(sim: Simulator, ctx: ResolveContext) -> None:
    sim.add_page("/m/watch/1", og_page("Clip <one>", "/cdn/1.mp4", image="/cdn/1.jpg", canonical="/watch/1"))
    item = GenericResolver().resolve(sim.url("/m/watch/1"), ctx)
    assert item.title == "Clip <one>"
    assert item.canonical_url == sim.url("/watch/1")
    assert [(a.name, a.kind, a.urls) for a in item.assets] == [
        ("video", "video", [sim.url("/cdn/1.mp4")]), ("thumbnail", "thumbnail", [sim.url("/cdn/1.jpg")])]


def test_canonical_link_to_another_host_is_ignored(sim: Simulator, ctx: ResolveContext) -> None:
    sim.add_page("/p", og_page("x", "/v.mp4", canonical="https://victim.example/watch/1"))
    item = GenericResolver().resolve(sim.url("/p"), ctx)
    assert item.canonical_url == canonicalize(sim.url("/p"))


def test_json_ld_content_url_and_twitter_stream(sim: Simulator, ctx: ResolveContext) -> None:
    sim.add_page("/ld", '<html><head><title>T</title><script type="application/ld+json">'
                        '{"@type":"VideoObject","contentUrl":"/ld.mp4"}</script></head></html>')
    sim.add_page("/tw", '<html><head><meta name="twitter:player:stream" content="/tw.webm"></head></html>')
    assert GenericResolver().resolve(sim.url("/ld"), ctx).assets[0].urls == [sim.url("/ld.mp4")]
    assert GenericResolver().resolve(sim.url("/tw"), ctx).assets[0].urls == [sim.url("/tw.webm")]


@pytest.mark.parametrize(
    ("setup", "error_class"),
    [
        (lambda s: None, "not_found"),
        (lambda s: s.add_page("/x", "<html><head><title>no media</title></head></html>"), "unsupported_url"),
        (lambda s: s.add_exact("/x", lambda r: Response(200, {"Content-Type": "application/json"}, b"{}")),
         "unsupported_url"),
        (lambda s: s.add_exact("/x", lambda r: Response(503, {}, b"down")), "http_5xx"),
        (lambda s: s.add_exact("/x", lambda r: Response(429, {"Retry-After": "3"}, b"")), "rate_limited"),
        (lambda s: s.add_page("/x", "<html>" + "a" * 100_000 + "</html>"), "too_large"),
        (lambda s: s.add_exact("/x", lambda r: Response(200, {"Content-Type": "application/vnd.apple.mpegurl"},
                                                          b"#EXTM3U")), "unsupported_url"),
    ],
)
def test_failures_are_classified(sim: Simulator, ctx: ResolveContext, setup, error_class: str) -> None:
    setup(sim)
    with pytest.raises(TrawlError) as caught:
        GenericResolver().resolve(sim.url("/x"), ctx)
    assert caught.value.error_class == error_class


def test_registry_routes_generic_last_and_ids_are_stable() -> None:
    registry = default_registry()
    route = registry.route("https://example.com/v?utm_source=a&id=1")
    assert route.platform == "generic"
    assert route.workflow_id == registry.route("HTTPS://EXAMPLE.com/v?id=1#x").workflow_id
    assert route.workflow_id.startswith("url-")
    with pytest.raises(TrawlError, match="unsupported scheme"):
        registry.route("file:///etc/passwd")


def test_a_live_playlist_is_a_recording_named_by_its_start(sim: Simulator, ctx: ResolveContext) -> None:
    """A media playlist without EXT-X-ENDLIST, or a master whose chosen variant is one, resolves to
    an hls-live asset under a key of its own per broadcast; a finished one stays plain HLS."""
    from trawl.simulator.hls_site import install_hls_site
    from trawl.simulator.live_site import LiveSite, LiveStream

    live = LiveSite(sim).install()
    url = live.add_stream("now", LiveStream(length=None))
    item = GenericResolver().resolve(url, ctx)
    assert [(a.kind, a.protocol, a.urls) for a in item.assets] == [("video", "hls-live", [url])]
    assert item.canonical_key.startswith(web_key(url) + "-live-") and "(live " in (item.title or "")
    assert item.metadata == {"live_status": "is_live"} and item.published_at
    hls = install_hls_site(sim)
    hls.add_master("live-master", [("live", 800_000, (640, 360), None)])  # its one variant is live
    master = GenericResolver().resolve(sim.url("/hls/live-master/master.m3u8"), ctx)
    assert master.assets[0].protocol == "hls-live"
    vod = GenericResolver().resolve(sim.url("/hls/vod/master.m3u8"), ctx)
    assert vod.assets[0].protocol == "hls" and vod.canonical_key == web_key(sim.url("/hls/vod/master.m3u8"))


def test_a_page_whose_og_video_is_a_live_playlist_is_a_recording(sim: Simulator) -> None:
    """An og:video naming a live HLS playlist records (docs/live.md); one naming a finished
    playlist stays a VOD stream; the page's key gains when the recording began."""
    from trawl.models import LIVE_PROTOCOL
    from trawl.simulator.live_site import LiveSite, LiveStream

    site = LiveSite(sim).install()
    live = site.add_stream("onpage", LiveStream(length=None).start())
    over = site.add_stream("replay", LiveStream(length=2.0).start(0))
    sim.add_page("/p/live", og_page("Live now", live, video_type="application/x-mpegURL"))
    sim.add_page("/p/replay", og_page("Replay", over, video_type="application/x-mpegURL"))
    with httpx.Client() as client:
        ctx = ResolveContext(client, 5 << 20)
        recording = GenericResolver().resolve(sim.url("/p/live"), ctx)
        replay = GenericResolver().resolve(sim.url("/p/replay"), ctx)
    (video,) = recording.assets
    assert video.protocol == LIVE_PROTOCOL and video.urls == [live]
    assert recording.canonical_key.startswith(web_key(canonicalize(sim.url("/p/live"))) + "-live-")
    assert recording.title and recording.title.startswith("Live now (live ")
    assert recording.metadata["live_status"] == "is_live"
    assert [a.protocol for a in replay.assets] == ["hls"] and replay.canonical_key == web_key(
        canonicalize(sim.url("/p/replay")))


@pytest.mark.parametrize(("tag", "kept"), [
    ('<meta property="og:description" content="  Waves,\n at dawn. " />', "Waves, at dawn."),
    ('<meta name="description" content="Waves at dawn." />', "Waves at dawn."),
    ('<meta name="twitter:description" content="Waves at dawn." />', "Waves at dawn."),
    ("", None),
])
def test_a_pages_description_is_kept_for_the_info_json(tag: str, kept: str | None) -> None:
    html = (f'<html><head><meta property="og:title" content="Dawn" />{tag}'
            '<meta property="og:video" content="https://example.org/dawn.mp4" /></head></html>')
    page = Page("https://example.org/watch/dawn", 200, httpx.Headers({"content-type": "text/html"}), html.encode())
    assert GenericResolver().from_page(page).metadata.get("description") == kept
