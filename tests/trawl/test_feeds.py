"""Feeds as sources: RSS and Atom parsed, enclosures before links, paging that stops at known items."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from trawl.errors import ParseError, TrawlError
from trawl.feeds import feed_urls, parse_feed
from trawl.platforms.base import ResolveContext
from trawl.platforms.registry import build_registry
from trawl.settings import Settings, SourceSettings
from trawl.simulator import MediaFile, Simulator
from trawl.simulator.feed import FeedSite, install_feed_site
from trawl.sources import expand

BASE = "https://example.org/podcast/feed.xml"

RSS = b"""<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/" xmlns:atom="http://www.w3.org/2005/Atom">
<channel><title>A show</title><atom:link rel="next" href="feed.xml?page=2"/>
  <item><title>Ep 2</title><link>https://example.org/ep2</link>
    <enclosure url="/media/ep2.mp3" type="audio/mpeg" length="100"/></item>
  <item><title>Ep 1 (video via Media RSS)</title><link>https://example.org/ep1</link>
    <media:content url="https://cdn.example.org/ep1.mp4" type="video/mp4" medium="video"/></item>
  <item><title>Notes only</title><link>https://example.org/notes</link>
    <enclosure url="https://example.org/notes.pdf" type="application/pdf" length="9"/></item>
</channel></rss>"""

ATOM = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Videos</title><id>urn:x</id><updated>2026-01-01T00:00:00Z</updated>
  <entry><id>urn:1</id><title>Clip</title><updated>2026-01-01T00:00:00Z</updated>
    <link rel="alternate" href="/watch/clip"/></entry>
  <entry><id>urn:2</id><title>Talk</title><updated>2026-01-01T00:00:00Z</updated>
    <link rel="alternate" href="/watch/talk"/><link rel="enclosure" href="/files/talk.webm" type="video/webm"/></entry>
</feed>"""


@pytest.mark.parametrize(("body", "url", "expected", "next_url"), [
    (RSS, BASE, ["https://example.org/media/ep2.mp3", "https://cdn.example.org/ep1.mp4", "https://example.org/notes"],
     "https://example.org/podcast/feed.xml?page=2"),
    (ATOM, "https://videos.example.net/feed.atom",
     ["https://videos.example.net/watch/clip", "https://videos.example.net/files/talk.webm"], None),
])
def test_entries_give_their_media_else_their_page(body: bytes, url: str, expected: list[str],
                                                  next_url: str | None) -> None:
    page = parse_feed(body, url)
    assert page.urls == expected and page.next_url == next_url


@pytest.mark.parametrize("body", [b"<html><body>not a feed</body></html>", b"{\"items\": []}", b""])
def test_a_document_that_is_no_feed_is_a_parse_error(body: bytes) -> None:
    with pytest.raises(ParseError, match="not an RSS or Atom feed"):
        parse_feed(body, BASE)


@pytest.fixture
def ctx() -> Iterator[ResolveContext]:
    with httpx.Client() as client:
        yield ResolveContext(client, 1 << 20)


def feed_requests(sim: Simulator, feed: FeedSite) -> int:
    return sim.stats_snapshot().get(feed.path, {}).get("requests", 0)


def test_a_paged_feed_stops_at_the_first_page_of_known_entries(sim: Simulator, ctx: ResolveContext) -> None:
    feed = install_feed_site(sim, 5, page_size=2)
    assert feed_urls(ctx, feed.url, max_pages=10) == feed.entry_urls()
    assert feed_requests(sim, feed) == 3
    known = set(feed.entry_urls())
    feed.add_entry("new", MediaFile("mp4", "new", 1000))
    seen: list[list[str]] = []

    def enough(urls: list[str]) -> bool:
        seen.append(urls)
        return set(urls) <= known

    urls = feed_urls(ctx, feed.url, max_pages=10, enough=enough)
    assert urls[0] == sim.url("/feeds/media/new.mp4") and len(urls) == 4  # page 1 (new + e4), page 2 (known)
    assert len(seen) == 2 and feed_requests(sim, feed) == 3 + 2


def test_a_feed_source_and_full_listing(sim: Simulator, ctx: ResolveContext) -> None:
    feed = install_feed_site(sim, 4, kind="atom", page_size=2)
    feed.add_entry("page", MediaFile("webm", "page", 1000), as_page=True)
    registry = build_registry()
    quick = SourceSettings(name="f", kind="feed", url=feed.url, max_pages=5)
    full = quick.model_copy(update={"full_listing": True})
    everything_known = lambda urls: True  # noqa: E731
    assert expand(quick, Settings(), registry, ctx, known=everything_known) == feed.entry_urls()[:2]
    assert expand(full, Settings(), registry, ctx, known=everything_known) == feed.entry_urls()
    assert feed.entry_urls()[0] == sim.url("/feeds/watch/page")


def test_a_missing_feed_is_classified(sim: Simulator, ctx: ResolveContext) -> None:
    with pytest.raises(TrawlError) as err:
        feed_urls(ctx, sim.url("/feeds/gone.xml"))
    assert err.value.error_class == "not_found"


def test_a_feed_source_needs_its_url() -> None:
    with pytest.raises(ValueError, match="kind feed needs url"):
        SourceSettings(name="f", kind="feed")
