"""Activities of the crawl workflow: expanding a source, joining an item started elsewhere.

A source comes as its definition when the crawl carries one (a watch's runs do): the worker
expands that, whatever its own settings hold; otherwise by its name in the worker's settings.

A source's listing pages only as far as needed: the first page whose items the catalog holds
already (by the key their URL gives offline, or a URL form it remembers) is the last one read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from temporalio import activity
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.service import RPCError, RPCStatusCode

from trawl.activities.application_errors import stage_attempts, stage_max_delay, to_application_error
from trawl.activities.liveness import heartbeating
from trawl.errors import TrawlError
from trawl.http_client import make_client
from trawl.logs import get_logger
from trawl.platforms.base import ResolveContext
from trawl.platforms.platform import Listed
from trawl.platforms.registry import Registry
from trawl.recheck import platform_pace, recheck, split_recheck
from trawl.settings import Settings, SourceSettings
from trawl.storage.records import ListingEntry
from trawl.sources import SourceError, expand, find_source, source_from_definition

from trawl.contracts import (  # noqa: F401 - CrawlItem: imported from here by tools
    CrawlItem, ExpandInput, ExpandResult, FrontierAdd, FrontierGrew, FrontierPage, FrontierRead, JoinInput, JoinResult,
    SweepInput, SweepResult)
from trawl.known import all_known, known_urls
from trawl.routing import frontier_page, route_all

if TYPE_CHECKING:  # the catalog (SQLAlchemy) is built by the worker and handed in
    from trawl.storage.catalog import Catalog

_log = get_logger(__name__)


def route_items(registry: Registry, urls: list[str]) -> tuple[list[CrawlItem], list[str]]:
    """Route URLs offline; the refused ones come back as ``"url: reason"``."""
    items, refusals = route_all(registry, urls)
    return items, [str(r) for r in refusals]


# The refusals an expansion into a frontier carries back (the latest ones; a crawl shows ten).
MAX_REFUSALS_CARRIED = 20


def _entries(items: list[CrawlItem]) -> Iterator[tuple[str, str, str, dict[str, Any] | None]]:
    return ((item.url, item.platform, item.workflow_id, item.listing) for item in items)


def record_listing(catalog: Catalog, source: SourceSettings, urls: list[str]) -> str:
    """Keep what a read of a listing gave, in its order (the web UI's page of it): its URLs, and
    what the platform's listing said besides (``Listed``: its title, the entries' titles, the
    dead entries)."""
    listed = urls if isinstance(urls, Listed) else Listed(urls)
    dead = {url: (title, why) for url, title, why in listed.gone}
    entries = [ListingEntry(url, dead[url][0] if url in dead else listed.titles.get(url),
                            dead[url][1] if url in dead else None) for url in listed.order]
    return catalog.record_listing(source.kind, source.url if source.kind == "feed" else source.id, entries,
                                  listed.title)


class CrawlActivities:
    def __init__(self, client: Client, settings: Settings, registry: Registry, catalog: Catalog) -> None:
        self.client = client
        self.settings = settings
        self.registry = registry
        self.catalog = catalog  # the worker's one catalog (its connection pool), as fetch's

    @activity.defn(name="expand_source")
    @heartbeating
    def expand_source(self, inp: ExpandInput) -> ExpandResult:
        from trawl.storage.catalog_state import CatalogState  # with the catalog: see TYPE_CHECKING above

        definition, rechecks = split_recheck(inp.definition)  # a watch's --recheck
        listing = None
        try:
            source = (source_from_definition(definition) if definition is not None
                      else find_source(self.settings, inp.source))
            shared = CatalogState(self.catalog)  # the platform's visitor session, proxies' rests
            with make_client(self.settings.net, shared) as http:
                urls = expand(source, self.settings, self.registry,
                              ResolveContext(http, self.settings.net.max_page_bytes, shared=shared),
                              known=lambda page: all_known(self.catalog, self.registry, page))
            if source.kind != "url_file":
                listing = record_listing(self.catalog, source, urls)
        except SourceError as err:
            raise ApplicationError(str(err), type="unsupported_url", non_retryable=True) from None
        except TrawlError as err:
            raise to_application_error(err, stage_max_delay(self.settings.retry.fetch.maximum_interval),
                                       stage_attempts=stage_attempts(inp, self.settings.retry.fetch.maximum_attempts)
                                       ) from None
        items, refused = route_items(self.registry, urls)
        if inp.crawl_id is not None:  # into the crawl's frontier: the result stays small, whatever the size
            added = self.catalog.frontier_add(inp.crawl_id, _entries(items))
            result = ExpandResult(refused=refused[-MAX_REFUSALS_CARRIED:], added=added, repeated=len(items) - added)
        else:
            known = known_urls(self.catalog, self.registry, [item.url for item in items if item.listing is None])
            result = ExpandResult([item for item in items if item.url not in known], refused,
                                  [item.url for item in items if item.url in known])
        if listing is not None and rechecks:
            self._recheck(listing, rechecks)
        return result

    def _recheck(self, listing: str, count: int) -> None:
        """A watch's re-check (trawl.recheck): the listing's ``count`` items checked longest ago
        asked again, what the platform says recorded. Nothing of it fails the expansion: an item
        the platform could not be asked about is asked again at a later run (it stays the oldest)."""
        from trawl.storage.catalog_state import CatalogState

        outcomes = dict.fromkeys(("there", "gone", "unknown"), 0)
        shared = CatalogState(self.catalog)
        try:
            with make_client(self.settings.net, shared) as http:
                ctx = ResolveContext(http, self.settings.net.max_page_bytes, shared=shared)
                for found in recheck(self.catalog, self.registry, ctx, self.catalog.listing_to_recheck(listing, count),
                                     platform_pace(self.settings)):
                    outcomes[found.outcome] += 1
        except TrawlError as err:
            _log.warning("listing re-check stopped", listing=listing, error=f"{err.error_class}: {err}", **outcomes)
            return
        _log.info("listing re-checked", listing=listing, **outcomes)

    @activity.defn(name="frontier_add")
    def frontier_add(self, inp: FrontierAdd) -> FrontierGrew:
        """Add items (a watch run's URLs) to a crawl's frontier."""
        added = self.catalog.frontier_add(inp.crawl_id, _entries(inp.items))
        return FrontierGrew(added, len(inp.items) - added)

    @activity.defn(name="frontier_next")
    def frontier_next(self, inp: FrontierRead) -> FrontierPage:
        """The next page of a crawl's frontier after its cursor. Items the catalog knows committed
        (offline key or a remembered URL form) come apart (``known_items``): they start nothing and
        take no fetch slot. Reading is idempotent: the cursor moves only in the workflow."""
        return frontier_page(self.catalog, self.registry, inp.crawl_id, inp.after, inp.limit)

    @activity.defn(name="refresh_watch_extras")
    async def refresh_watch_extras(self, inp: SweepInput) -> SweepResult:
        """Start an extras refresh (ExtrasRefreshWorkflow, a dated snapshot) of each of a watch's
        items younger than its ``days`` (CrawlInput.refresh_extras), at most ``limit``; a refresh of
        an item already running is joined. It does not wait for them: each goes on on its own."""
        from datetime import UTC, datetime, timedelta

        from temporalio.common import SearchAttributePair, TypedSearchAttributes, WorkflowIDConflictPolicy

        from trawl.contracts import EXTRAS_WORKFLOW, PLATFORM, RefreshInput, extras_workflow_id, workflow_queue

        since = datetime.now(UTC) - timedelta(days=inp.sweep.days)
        items = await asyncio.to_thread(self.catalog.items_of_runs, inp.sweep.runs_like, since, inp.sweep.limit)
        for key, platform in items:
            await self.client.start_workflow(
                EXTRAS_WORKFLOW, RefreshInput(key, platform, [], inp.options), id=extras_workflow_id(key),
                task_queue=workflow_queue(inp.options.queue_prefix),
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                static_summary=f"{platform}: extras of {key} (a watch's run)"[:200],
                search_attributes=TypedSearchAttributes([SearchAttributePair(PLATFORM, platform)]))
        return SweepResult(started=len(items))

    @activity.defn(name="join_item")
    async def join_item(self, inp: JoinInput) -> JoinResult:
        """Wait for an item workflow this crawl did not start (or started before continuing as new)."""
        from trawl.contracts import ItemResult

        handle = self.client.get_workflow_handle(inp.workflow_id, result_type=ItemResult)
        try:
            await handle.describe()
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return JoinResult("missing")
            raise
        waiting = asyncio.ensure_future(handle.result())
        try:
            while True:
                done, _ = await asyncio.wait({waiting}, timeout=10)
                if done:
                    break
                activity.heartbeat()
            result = waiting.result()
        except WorkflowFailureError as err:
            if isinstance(err.cause, CancelledError):
                return JoinResult("cancelled")
            kind = err.cause.type if isinstance(err.cause, ApplicationError) else None
            return JoinResult("failed", error_class=kind or "internal_error")
        finally:
            waiting.cancel()
        return JoinResult(result.outcome, sum(a.size for a in result.assets), result.error_class)
