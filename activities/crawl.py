"""Activities of the crawl workflow: expanding a named source, joining an item started elsewhere."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from temporalio import activity
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.service import RPCError, RPCStatusCode

from activities.errors import to_application_error
from activities.liveness import heartbeating
from trawl.errors import TrawlError
from trawl.http import make_client
from trawl.platforms.base import ResolveContext
from trawl.platforms.registry import Registry
from trawl.settings import Settings
from trawl.sources import SourceError, expand, find_source


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


class CrawlActivities:
    def __init__(self, client: Client, settings: Settings, registry: Registry) -> None:
        self.client = client
        self.settings = settings
        self.registry = registry

    @activity.defn(name="expand_source")
    @heartbeating
    def expand_source(self, inp: ExpandInput) -> ExpandResult:
        try:
            source = find_source(self.settings, inp.source)
            with make_client(self.settings.net) as http:
                urls = expand(source, self.settings, self.registry,
                              ResolveContext(http, self.settings.net.max_page_bytes))
        except SourceError as err:
            raise ApplicationError(str(err), type="unsupported_url", non_retryable=True) from None
        except TrawlError as err:
            raise to_application_error(err, self.settings.retry.fetch.maximum_interval,
                                       stage_attempts=self.settings.retry.fetch.maximum_attempts) from None
        items, refused = route_items(self.registry, urls)
        return ExpandResult(items, refused)

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
