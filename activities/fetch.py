"""fetch: resolve a page URL to a canonical item, then look it up in the catalog."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity

from activities.errors import classified
from activities.models import FetchInput, FetchResult
from trawl.platforms.base import ResolveContext
from trawl.platforms.registry import Registry
from trawl.storage.catalog import Catalog


class FetchActivities:
    def __init__(self, registry: Registry, context: ResolveContext, catalog: Catalog, max_delay: timedelta) -> None:
        self.registry = registry
        self.context = context
        self.catalog = catalog
        self.max_delay = max_delay

    @activity.defn(name="fetch")
    @classified(lambda self: self.max_delay)
    def fetch(self, inp: FetchInput) -> FetchResult:
        resolver = self.registry.resolver_for(inp.url)
        resolved = resolver.resolve(inp.url, self.context)
        return FetchResult(resolved=resolved, committed=self.catalog.is_committed(resolved.canonical_key))
