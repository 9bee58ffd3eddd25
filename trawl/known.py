"""What the catalog knows of a URL without a request: the committed item it stands for."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    return item if item is not None and item.status == "committed" else None
