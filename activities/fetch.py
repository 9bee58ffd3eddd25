"""fetch: resolve a page URL to a canonical item, then look it up in the catalog."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity

from activities.errors import classified
from activities.liveness import heartbeating
from activities.models import FetchInput, FetchResult, stored_assets
from trawl.platforms.base import ResolveContext
from trawl.platforms.registry import Registry
from trawl.storage.catalog import Catalog


class FetchActivities:
    def __init__(self, registry: Registry, context: ResolveContext, catalog: Catalog,
                 max_delay: timedelta, max_attempts: int = 0) -> None:
        self.registry = registry
        self.context = context
        self.catalog = catalog
        self.max_delay = max_delay
        self.max_attempts = max_attempts

    @activity.defn(name="fetch")
    @classified(lambda self: self.max_delay)
    @heartbeating
    def fetch(self, inp: FetchInput) -> FetchResult:
        resolver = self.registry.resolver_for(inp.url)
        resolved = resolver.resolve(inp.url, self.context)
        existing = self.catalog.get(resolved.canonical_key)
        if existing is None or existing.status != "committed":
            return FetchResult(resolved=resolved, committed=False)
        return FetchResult(resolved=resolved, committed=True, stored=stored_assets(existing))
