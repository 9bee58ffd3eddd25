"""From the core's answers to what crosses Temporal, offline: a URL routed as a crawl carries it
(:func:`crawl_item`: an item, or a listing to expand; :func:`routed`, :func:`route_all` for many,
refusals apart), a committed catalog item's files as a result carries them
(:func:`stored_assets`), and a page of a crawl's frontier as the crawl reads it
(:func:`frontier_page`).

It sits beside :mod:`trawl.contracts` (which holds the data and the names only): it builds their
classes from the registry's and the catalog's answers, so the clients, the activities and the
starter route a URL the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from trawl.contracts import CrawlItem, FrontierPage, Refusal, StoredAsset
from trawl.errors import TrawlError
from trawl.extras import EXTRA_KINDS
from trawl.known import MAX_KNOWN_ITEMS, known_urls, route_more

if TYPE_CHECKING:
    from trawl.platforms.registry import Registry
    from trawl.storage.catalog import Catalog
    from trawl.storage.records import CatalogItem


def crawl_item(registry: Registry, url: str) -> CrawlItem:
    """``url`` as a crawl carries it, routed offline: a listing to expand, or an item.

    Raises:
        TrawlError: no resolver takes it (``unsupported_url``), or it is a listing form only a
            logged-in account can list (``login_required``).
    """
    listing = registry.listing_for(url)
    if listing is not None:
        return CrawlItem(listing.url, listing.platform, listing.workflow_id, listing=listing.definition())
    route = registry.route(url)
    return CrawlItem(url.strip(), route.platform, route.workflow_id)


def routed(registry: Registry, urls: Iterable[str]) -> Iterator[CrawlItem | Refusal]:
    """Each URL as a crawl carries it (:func:`crawl_item`), or its refusal, in order, as they come."""
    for index, url in enumerate(urls):
        try:
            yield crawl_item(registry, url)
        except TrawlError as err:
            yield Refusal(index, url, err.error_class, err.message)


def route_all(registry: Registry, urls: Iterable[str]) -> tuple[list[CrawlItem], list[Refusal]]:
    """:func:`routed`, the items and the refusals apart."""
    items: list[CrawlItem] = []
    refusals: list[Refusal] = []
    for routed_url in routed(registry, urls):
        (refusals if isinstance(routed_url, Refusal) else items).append(routed_url)  # type: ignore[arg-type]
    return items, refusals


def stored_assets(item: CatalogItem) -> list[StoredAsset]:
    """The committed media files of a catalog item: what its first commit answered. Its extras
    (danmaku, subtitles, comments) are added later and not counted, or a duplicate's size would
    depend on whether they had landed yet."""
    return [StoredAsset(a.name, a.kind, a.sha256, a.size, a.key, a.mime) for a in item.assets
            if a.kind not in EXTRA_KINDS]


def frontier_page(catalog: Catalog, registry: Registry, crawl_id: str, after: int, limit: int) -> FrontierPage:
    """The next page of a crawl's frontier after ``after``. Items the catalog knows committed
    (offline key or a remembered URL form) come apart (``known_items``): they start nothing and
    take no fetch slot. Reading is idempotent: the cursor moves only in whoever keeps it (the
    crawl's state)."""
    entries = catalog.frontier_page(crawl_id, after, limit)
    items = [CrawlItem(e.url, e.platform, e.workflow_id, listing=e.listing) for e in entries]
    known = known_urls(catalog, registry, [item.url for item in items if item.listing is None])
    page = FrontierPage(read=0, cursor=after)
    for entry, item in zip(entries, items):
        if item.listing is None and item.url in known:
            page.known += 1
            page.known_items.append(item)
            # The parts it stands for are known too: each is a duplicate of its own.
            page.known_items.extend(CrawlItem(m.url, m.platform, m.workflow_id)
                                    for m in route_more(registry, known[item.url], item.workflow_id))
        else:
            page.items.append(item)
        page.read, page.cursor = page.read + 1, entry.seq
        if len(page.known_items) >= MAX_KNOWN_ITEMS:
            break  # the rest next time: a page's payload stays small whatever the parts
    return page


__all__ = ["crawl_item", "frontier_page", "route_all", "routed", "stored_assets"]
