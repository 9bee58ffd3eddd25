"""Facebook's captions (issue 41, point 4): where a page names them, the subtitles extra against the
simulated site, stored as tracks an export writes as SRT or WebVTT."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from trawl.extras import ExtraContext
from trawl.platforms.base import ResolveContext
from trawl.platforms.facebook import PLATFORM
from trawl.platforms.facebook.captions import find_captions
from trawl.platforms.facebook.captions_extra import CaptionsExtra
from trawl.platforms.facebook.resolver import FacebookResolver
from trawl.platforms.facebook.site import CAPTIONS, CLASSIC_ID, REEL_ID, FacebookSite, install_facebook_site
from trawl.simulator import Simulator
from trawl.subtitles import convert


@pytest.fixture
def site(sim: Simulator) -> FacebookSite:
    return install_facebook_site(sim)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(follow_redirects=True) as c:
        yield c


def test_the_lone_captions_url_takes_the_page_locale() -> None:
    node = {"captions_url": "https://video.xx.fbcdn.net/v/t39.2093-6/1_n.srt?oe=1"}
    (caption,) = find_captions(node, "de_DE", lambda url: url)
    assert (caption.language, caption.automatic) == ("de_DE", False)
    assert find_captions(node, None, lambda url: url)[0].locale == "en_US"
    listed = {**node, "video_available_captions_locales": [
        {"locale": "en_US", "captions_url": "https://x/1.srt"},
        {"locale": "es_LA", "captions_url": "https://x/2.srt", "localized_creation_method": "Auto-generated"},
        {"locale": "../etc", "captions_url": "https://x/3.srt"}, {"locale": "fr_FR"}, "junk"]}
    assert [c.language for c in find_captions(listed, "de_DE", lambda url: url)] == ["en_US", "ai-es_LA"]


def test_the_resolver_names_the_tracks_without_their_expiring_urls(site: FacebookSite, client: httpx.Client) -> None:
    resolver = FacebookResolver(site.settings())
    ctx = ResolveContext(client, max_page_bytes=5 * 1024 * 1024)
    item = resolver.resolve(site.sim.url(f"/watch/?v={CLASSIC_ID}"), ctx)
    assert item.metadata["captions"] == [{"language": "en_US", "name": "English (US)", "automatic": False},
                                         {"language": "ai-fr_FR", "name": "French (France)", "automatic": True}]
    assert "captions" not in resolver.resolve(site.sim.url(f"/reel/{REEL_ID}"), ctx).metadata


def test_the_extra_stores_each_track_as_cues(site: FacebookSite, client: httpx.Client) -> None:
    assert PLATFORM.extras == {"subtitles": CaptionsExtra}
    ctx = ResolveContext(client, max_page_bytes=5 * 1024 * 1024)
    resolver = FacebookResolver(site.settings())
    item = resolver.resolve(site.sim.url(f"/watch/?v={CLASSIC_ID}"), ctx)
    reel = resolver.resolve(site.sim.url(f"/reel/{REEL_ID}"), ctx)
    extra = CaptionsExtra(site.settings())
    assert extra.applies(item) and not extra.applies(reel)
    files = extra.fetch(item, ExtraContext(client))
    assert [(f.name, f.language, f.missing) for f in files] == [("subtitles.en_US", "en_US", ""),
                                                                ("subtitles.ai-fr_FR", "ai-fr_FR", "")]
    assert json.loads(files[0].body)["body"][1] == {"from": 5.0, "to": 9.25,
                                                    "content": "The ferry leaves & the gulls follow\nsecond line"}
    assert convert(files[0].body, "srt").decode().startswith("1\n00:00:00,000 --> 00:00:04,500\nHarbour lights at <i>dusk</i>\n")
    assert "Harbour lights at &lt;i&gt;dusk&lt;/i&gt;" in convert(files[0].body, "vtt").decode()


def test_a_broken_track_is_missing_alone(site: FacebookSite, client: httpx.Client, sim: Simulator,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CAPTIONS, "fr_FR", ("French (France)", "Auto-generated", "no timing here"))
    ctx = ResolveContext(client, max_page_bytes=5 * 1024 * 1024)
    item = FacebookResolver(site.settings()).resolve(sim.url(f"/watch/?v={CLASSIC_ID}"), ctx)
    files = CaptionsExtra(site.settings()).fetch(item, ExtraContext(client))
    assert [(f.name, f.missing) for f in files] == [("subtitles.en_US", ""), ("subtitles.ai-fr_FR", "parse_error")]
