"""Activities of the crawl workflow: expanding a named source, joining an item started elsewhere.

A source's listing pages only as far as needed: the first page whose items the catalog holds
already (by the key their URL gives offline, or a URL form it remembers) is the last one read.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from temporalio import activity
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.service import RPCError, RPCStatusCode

from activities.errors import to_application_error
from activities.fetch import fully_known
from activities.liveness import heartbeating
from trawl.errors import TrawlError
from trawl.http import make_client
from trawl.platforms.base import ResolveContext
from trawl.platforms.registry import Registry
from trawl.settings import Settings
from trawl.sources import SourceError, expand, find_source
from trawl.storage.catalog import Catalog


@dataclass
class CrawlItem:
    url: str
    platform: str
    workflow_id: str


@dataclass
class ExpandInput:
    source: str


@dataclass
class ExpandResult:
    items: list[CrawlItem] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # URLs no resolver takes, with the reason
    # URLs of committed items, known without a request: duplicates that need no item workflow
    # (nor a slot of their platform's rate-limited fetch queue).
    known: list[str] = field(default_factory=list)


@dataclass
class JoinInput:
    workflow_id: str


@dataclass
class JoinResult:
    outcome: str  # an item outcome, or "missing" when no such workflow exists
    bytes: int = 0
    error_class: str | None = None


def route_items(registry: Registry, urls: list[str]) -> tuple[list[CrawlItem], list[str]]:
    """Route URLs offline; the refused ones come back as ``"url: reason"``."""
    items, refused = [], []
    for url in urls:
        try:
            route = registry.route(url)
        except TrawlError as err:
            refused.append(f"{url}: {err.error_class}: {err.message}")
            continue
        items.append(CrawlItem(url.strip(), route.platform, route.workflow_id))
    return items, refused


def all_known(catalog: Catalog, registry: Registry, urls: list[str]) -> bool:
    """Whether the catalog holds a committed item for every URL, knowing it without a request."""
    keys: dict[str, str] = {}
    unkeyed: list[str] = []
    for url in urls:
        try:
            key = registry.resolver_for(url).offline_key(url)
        except TrawlError:
            return False  # a URL no resolver takes is not known; the crawl refuses it
        if key:
            keys[url] = key
        else:
            unkeyed.append(url)
    if unkeyed:
        remembered = catalog.keys_for_urls(unkeyed)
        if len(remembered) < len(unkeyed):
            return False
        keys.update(remembered)
    return catalog.committed_keys(list(keys.values())) >= set(keys.values())


class CrawlActivities:
    def __init__(self, client: Client, settings: Settings, registry: Registry,
                 catalog: Catalog | None = None) -> None:
        self.client = client
        self.settings = settings
        self.registry = registry
        self._catalog = catalog

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:  # the worker's own catalog connection, made on first use
            self._catalog = Catalog(self.settings.catalog_url)
        return self._catalog

    @activity.defn(name="expand_source")
    @heartbeating
    def expand_source(self, inp: ExpandInput) -> ExpandResult:
        try:
            source = find_source(self.settings, inp.source)
            with make_client(self.settings.net) as http:
                urls = expand(source, self.settings, self.registry,
                              ResolveContext(http, self.settings.net.max_page_bytes),
                              known=lambda page: all_known(self.catalog, self.registry, page))
        except SourceError as err:
            raise ApplicationError(str(err), type="unsupported_url", non_retryable=True) from None
        except TrawlError as err:
            raise to_application_error(err, self.settings.retry.fetch.maximum_interval,
                                       stage_attempts=self.settings.retry.fetch.maximum_attempts) from None
        items, refused = route_items(self.registry, urls)
        known = [item.url for item in items if fully_known(self.catalog, self.registry, item.url)]
        if known:
            skipped = set(known)
            items = [item for item in items if item.url not in skipped]
        return ExpandResult(items, refused, known)

    @activity.defn(name="join_item")
    async def join_item(self, inp: JoinInput) -> JoinResult:
        """Wait for an item workflow this crawl did not start (or started before continuing as new)."""
        from workflows.media_item import ItemResult

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
