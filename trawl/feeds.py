"""RSS and Atom feeds as sources: the URLs of their entries, parsed by feedparser.

An entry with media attached (RSS ``<enclosure>``, Atom ``<link rel="enclosure">``, Media RSS
``<media:content>``) stands for those files, as a podcast episode stands for its audio; an entry
without is its page (``<link>``), which the platform's resolver or the generic one resolves. Paged
feeds (RFC 5005 ``<link rel="next">``, in Atom or in RSS through the Atom namespace) are followed up
to ``max_pages``, and no further than the first page whose entries are all known when a caller
says so (``enough``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

import feedparser

from trawl.errors import ParseError
from trawl.platforms.base import ResolveContext
from trawl.platforms.generic import GenericResolver

MEDIA_TYPES = ("video/", "audio/", "image/")
MEDIA_KINDS = ("video", "audio", "image")


@dataclass
class FeedPage:
    title: str | None
    urls: list[str] = field(default_factory=list)  # one or more per entry, in the feed's order
    next_url: str | None = None


def parse_feed(body: bytes, url: str) -> FeedPage:
    """The entries' URLs of one feed document fetched from ``url`` (relative links resolved).

    Raises:
        ParseError: the document is not an RSS or Atom feed.
    """
    doc = feedparser.parse(body, response_headers={"content-location": url})
    if not doc.get("version") and not doc.entries:
        reason = doc.get("bozo_exception")
        raise ParseError(f"{url}: not an RSS or Atom feed" + (f" ({reason})" if reason else ""))
    urls: list[str] = []
    for entry in doc.entries:
        urls.extend(entry_urls(entry, url))
    next_url = next((link.get("href") for link in doc.feed.get("links", [])
                     if link.get("rel") == "next" and link.get("href")), None)
    return FeedPage(doc.feed.get("title"), list(dict.fromkeys(urls)),
                    urljoin(url, next_url) if next_url else None)


def entry_urls(entry: Any, base: str) -> list[str]:
    """An entry's media files when it has any, else its page."""
    media = [link.get("href") for link in entry.get("links", [])
             if link.get("rel") == "enclosure" and _is_media(link.get("type"), None)]
    media += [content.get("url") for content in entry.get("media_content", [])
              if _is_media(content.get("type"), content.get("medium"))]
    found = [urljoin(base, href.strip()) for href in media if isinstance(href, str) and href.strip()]
    if found:
        return list(dict.fromkeys(found))
    link = entry.get("link")
    return [urljoin(base, link.strip())] if isinstance(link, str) and link.strip() else []


def _is_media(mime: Any, medium: Any) -> bool:
    if isinstance(medium, str) and medium in MEDIA_KINDS:
        return True
    # An enclosure without a type is taken: the resolver decides what the file is.
    return not mime or (isinstance(mime, str) and mime.lower().startswith(MEDIA_TYPES))


def feed_urls(ctx: ResolveContext, url: str, max_pages: int = 3,
              enough: Callable[[list[str]], bool] | None = None) -> list[str]:
    """The URLs a feed lists, newest first as it lists them, over at most ``max_pages`` pages.

    Raises:
        TrawlError: classified (the feed is gone, rate limited, not a feed...).
    """
    fetcher = GenericResolver()  # the generic site's limits and error classification
    urls: list[str] = []
    seen_pages: set[str] = set()
    page_url: str | None = url
    for _ in range(max_pages):
        if page_url is None or page_url in seen_pages:
            break
        seen_pages.add(page_url)
        page = fetcher.fetch_page(page_url, ctx, item_url=url)
        parsed = parse_feed(page.body, page.url)
        urls.extend(parsed.urls)
        if enough is not None and parsed.urls and enough(parsed.urls):
            break
        page_url = parsed.next_url
    return list(dict.fromkeys(urls))
