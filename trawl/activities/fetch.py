"""fetch: resolve a page URL to a canonical item, then look it up in the catalog.

The catalog is asked first: a URL whose canonical key follows from the URL alone (most platform
URLs), or a URL form the catalog remembers leading to a committed item (a direct file, a page, a
short link), is answered from the catalog without a single request to its platform. A watch that
lists 500 known items and 3 new ones resolves the 3 new ones only.

A tiny item's first fetch, which also stores it whole, is an activity of its own:
``fetch_and_store_tiny`` (trawl/activities/tiny.py). Runs started before it existed ask ``fetch``
with ``FetchInput.with_fetch_size`` set; ``fetch`` hands those to it (until ``lean-history`` is
retired, docs/upgrading.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from temporalio import activity

from trawl.activities.application_errors import classified
from trawl.activities.host import HostRoom, claims_a_host
from trawl.activities.liveness import heartbeating
from trawl.contracts import FetchInput, FetchResult
from trawl.download.live import resume_point
from trawl.known import known_with_more, recording_unfinished, route_more
from trawl.models import LIVE_PROTOCOL, Resolved, as_preview, refuse_previews
from trawl.routing import stored_assets
from trawl.platforms.base import ResolveContext
from trawl.platforms.registry import Registry
from trawl.storage.records import CatalogItem

if TYPE_CHECKING:  # the catalog (SQLAlchemy) is built by the worker and handed in
    from trawl.storage.catalog import Catalog

def as_resolved(item: CatalogItem) -> Resolved:
    """A catalog item as fetch would have resolved it (no media URLs: nothing is downloaded)."""
    return Resolved(canonical_key=item.canonical_key, canonical_url=item.canonical_url, platform=item.platform,
                    assets=[], title=item.title, uploader=item.uploader, duration=item.duration,
                    published_at=item.published_at)


class FetchActivities:
    def __init__(self, registry: Registry, context: ResolveContext, catalog: Catalog,
                 max_delay: timedelta, max_attempts: int = 0) -> None:
        self.registry = registry
        self.context = context
        self.catalog = catalog
        self.max_delay = max_delay
        self.max_attempts = max_attempts
        # The runs started before fetch_and_store_tiny existed still ask fetch to store a tiny
        # item (FetchInput.with_fetch_size): the worker hands them the activity that does.
        self.older_tiny: Callable[[FetchInput], FetchResult] | None = None
        self.room: HostRoom | None = None  # this worker's host, which a first fetch may claim

    def claim_host(self, inp: FetchInput, fetched: FetchResult) -> FetchResult:
        """``fetched`` with this worker's host claimed for it when the fetch was asked to
        (``inp.claim_host_over``), the item goes on to claim one, and the host has room."""
        if (self.room is not None and not fetched.committed and fetched.finished is None
                and claims_a_host(fetched.resolved, inp.claim_host_over)):
            fetched.host_queue = self.room.claim(inp.workflow_id)
        return fetched

    # Cancellation is polled (a tiny item's download may run here for an older run), never raised
    # into the thread; a resolve is bounded by the HTTP timeouts.
    @activity.defn(name="fetch", no_thread_cancel_exception=True)
    @classified(lambda self: self.max_delay)
    def fetch(self, inp: FetchInput) -> FetchResult:
        if inp.with_fetch_size and self.older_tiny is not None:
            return self.older_tiny(inp)
        fetched, _ = self.resolved(inp)
        return self.claim_host(inp, fetched)

    @heartbeating
    def resolved(self, inp: FetchInput) -> tuple[FetchResult, CatalogItem | None]:
        """The item resolved, and the catalog's committed item when it holds it already."""
        known = None if inp.fresh_urls else known_with_more(self.catalog, self.registry, inp.url)
        if known is not None:
            item, more = known
            resolved = as_resolved(item)
            resolved.more = route_more(self.registry, more, inp.workflow_id)
            return FetchResult(resolved=resolved, committed=True, stored=stored_assets(item)), item
        # Not known, or known but what else the URL stands for (its other parts) is not: ask.
        resolver = self.registry.resolver_for(inp.url)
        context = self.context
        if inp.quality or inp.audio:
            context = dataclasses.replace(context, quality=inp.quality or context.quality, audio=inp.audio)
        resolved = resolver.resolve(inp.url, context)
        if inp.keep_previews:
            resolved = as_preview(resolved)
        refuse_previews(resolved)
        resolved.more = route_more(self.registry, [m.url for m in resolved.more], inp.workflow_id)
        resolved.extras = self.registry.extras.names(resolved)  # fetched once it is committed (ItemOptions.extras)
        existing = self.catalog.get(resolved.canonical_key)
        if existing is None or existing.status != "committed":
            return FetchResult(resolved=resolved, committed=False), None
        if recording_unfinished(existing.metadata):  # recorded again: after what the catalog holds
            resume = resume_point(existing.metadata.get("live"))
            for asset in resolved.assets:
                if asset.protocol == LIVE_PROTOCOL and resume is not None:
                    asset.live_after = resume
            return FetchResult(resolved=resolved, committed=False), None
        # Another URL form of a stored item: remember this one, so next time costs no request.
        # (A bare URL of a video committed before its parts were recorded asks every time.)
        self.catalog.remember_urls([inp.url], resolved.canonical_key)
        return FetchResult(resolved=resolved, committed=True, stored=stored_assets(existing)), existing
