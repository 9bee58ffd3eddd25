"""What the catalog knows of a URL without a request: the committed item it stands for, and the
other items it stands for besides (parts 2..N of a video), routed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trawl.errors import TrawlError
from trawl.models import MoreItem
from trawl.platforms.registry import Registry
from trawl.storage.records import CatalogItem

if TYPE_CHECKING:  # the catalog (SQLAlchemy) is built by whoever asks and handed in
    from trawl.storage.catalog import Catalog


def known_item(catalog: Catalog, registry: Registry, url: str) -> CatalogItem | None:
    """The committed catalog item ``url`` stands for, when that is known without a request: the
    key the URL gives offline, or the one a URL form the catalog remembers led to."""
    key = registry.resolver_for(url).offline_key(url) or catalog.key_for_url(url)
    if key is None:
        return None
    item = catalog.get(key)
    return item if item is not None and item.status == "committed" and not recording_unfinished(item.metadata) else None


def recording_unfinished(metadata: dict[str, Any]) -> bool:
    """Whether a committed item is a live recording that has not ended (``live_status: is_live``:
    its parts so far are stored, its broadcast's workflow runs, or failed or was cancelled). Such
    an item is not *known*: asked again, the URL joins the recording that runs, or records the rest
    of the broadcast (its parts after those stored)."""
    return metadata.get("live_status") == "is_live"


def known_with_more(catalog: Catalog, registry: Registry, url: str) -> tuple[CatalogItem, list[str]] | None:
    """The committed item ``url`` stands for and the URLs of the other items it stands for, when
    both are known without a request (from what the item was committed with); None otherwise."""
    item = known_item(catalog, registry, url)
    if item is None:
        return None
    more = registry.resolver_for(url).more_offline(url, item.metadata)
    return None if more is None else (item, more)


def route_more(registry: Registry, urls: list[str], own_workflow_id: str) -> list[MoreItem]:
    """The other items' URLs routed offline, each item once; URLs no resolver takes, and the item
    itself (``own_workflow_id``), drop out."""
    routed: dict[str, MoreItem] = {}
    for url in urls:
        try:
            route = registry.route(url)
        except TrawlError:
            continue
        if route.workflow_id != own_workflow_id:
            routed.setdefault(route.workflow_id, MoreItem(url, route.platform, route.workflow_id))
    return list(routed.values())


def _keys_known_offline(catalog: Catalog, registry: Registry, urls: list[str]) -> dict[str, str]:
    """URL -> canonical key, for the URLs whose key is known without a request: the key the URL
    gives offline, or the one a URL form the catalog remembers led to (one batched query)."""
    keys: dict[str, str] = {}
    unkeyed: list[str] = []
    for url in urls:
        try:
            key = registry.resolver_for(url).offline_key(url)
        except TrawlError:
            continue  # a URL no resolver takes is not known; the crawl refuses it
        if key:
            keys[url] = key
        else:
            unkeyed.append(url)
    if unkeyed:
        keys.update(catalog.keys_for_urls(unkeyed))
    return keys


def known_urls(catalog: Catalog, registry: Registry, urls: list[str]) -> dict[str, list[str]]:
    """The URLs that stand for committed items only, known without a request, each with the other
    items it stands for: each one's item is committed, and so is every other item it stands for
    (the parts of a multi-part video, from the stored metadata). A few batched queries, whatever
    the number of URLs."""
    keys = _keys_known_offline(catalog, registry, urls)
    stored = catalog.committed_metadata(sorted(set(keys.values())))
    more: dict[str, list[str]] = {}
    for url, key in keys.items():
        if key in stored and not recording_unfinished(stored[key]):
            others = registry.resolver_for(url).more_offline(url, stored[key])
            if others is not None:
                more[url] = others
    other_keys = {u: registry.resolver_for(u).offline_key(u) for others in more.values() for u in others}
    committed = catalog.committed_keys(sorted({k for k in other_keys.values() if k}))
    return {url: others for url, others in more.items() if all(other_keys[u] in committed for u in others)}


def all_known(catalog: Catalog, registry: Registry, urls: list[str]) -> bool:
    """Whether the catalog holds a committed item for every URL, knowing it without a request
    (where a listing page stops: its items were listed, and so crawled, before)."""
    keys = _keys_known_offline(catalog, registry, urls)
    return len(keys) == len(set(urls)) and catalog.committed_keys(list(keys.values())) >= set(keys.values())


# Known items a frontier page returns at most (with the parts they stand for: a page of 500
# hundred-part videos would otherwise weigh megabytes).
MAX_KNOWN_ITEMS = 1000
