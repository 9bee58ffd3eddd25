"""Connecting to Temporal and starting item workflows, shared by the CLI and the API."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from typing import Any

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import CancelledError, TerminatedError, TimeoutError as WorkflowTimeoutError
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig
from temporalio.service import RPCError

from starter.embedded import SEARCH_ATTRIBUTES
from trawl.platforms.registry import Registry
from trawl.settings import Settings, StageRetry
from activities.crawl import route_items
from workflows.crawl import CrawlInput, CrawlWorkflow
from workflows.media_item import ItemInput, ItemResult, MediaItemWorkflow, Progress
from workflows.policies import ItemOptions, StagePolicy, workflow_queue


CONNECT_PATIENCE_S = 30.0


async def connect(settings: Settings, *, metrics: bool = False) -> Client:
    """A client; with ``metrics``, its runtime serves Prometheus metrics for the worker using it."""
    runtime = None
    if metrics and settings.worker.metrics_port:
        bind = f"{settings.worker.metrics_host}:{settings.worker.metrics_port}"
        runtime = Runtime(telemetry=TelemetryConfig(metrics=PrometheusConfig(
            bind_address=bind, counters_total_suffix=True, durations_as_seconds=True)))
    # A server that has just started accepts connections before its frontend is healthy; wait
    # for it rather than failing the command.
    deadline = time.monotonic() + CONNECT_PATIENCE_S
    while True:
        try:
            return await Client.connect(settings.temporal.address, namespace=settings.temporal.namespace,
                                        runtime=runtime or Runtime.default())
        except RuntimeError as err:
            if "not healthy" not in str(err) or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.25)


async def ensure_search_attributes(client: Client, namespace: str) -> None:
    """Register trawl's search attributes where they are missing (``trawl setup`` on a real server)."""
    existing = await client.operator_service.list_search_attributes(ListSearchAttributesRequest(namespace=namespace))
    missing = {name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD for name in SEARCH_ATTRIBUTES
               if name not in existing.custom_attributes}
    if missing:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=namespace, search_attributes=missing))


def _policy(stage: StageRetry) -> StagePolicy:
    return StagePolicy(
        initial_interval_s=stage.initial_interval.total_seconds(),
        backoff_coefficient=stage.backoff_coefficient,
        maximum_interval_s=stage.maximum_interval.total_seconds(),
        maximum_attempts=stage.maximum_attempts,
        start_to_close_s=stage.start_to_close.total_seconds(),
        schedule_to_close_s=stage.schedule_to_close.total_seconds() if stage.schedule_to_close else None,
    )


def item_options(settings: Settings) -> ItemOptions:
    retry = settings.retry
    return ItemOptions(
        queue_prefix=settings.temporal.task_queue_prefix,
        fetch=_policy(retry.fetch),
        download=_policy(retry.download),
        verify=_policy(retry.verify),
        commit=_policy(retry.commit),
        heartbeat_timeout_s=settings.download.heartbeat_timeout.total_seconds(),
        max_redownloads=settings.download.max_redownloads,
    )


@dataclass
class Started:
    url: str
    workflow_id: str
    handle: WorkflowHandle


async def start_item(client: Client, settings: Settings, registry: Registry, url: str,
                     crawl_id: str | None = None) -> Started:
    """Start (or join) the item workflow for ``url``; starting twice is harmless."""
    route = registry.route(url)
    handle = await client.start_workflow(
        MediaItemWorkflow.run,
        ItemInput(url=url.strip(), platform=route.platform, crawl_id=crawl_id, options=item_options(settings)),
        id=route.workflow_id,
        task_queue=workflow_queue(settings.temporal.task_queue_prefix),
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        static_summary=f"{route.platform}: {url.strip()[:200]}",
        memo={"url": url.strip()},
    )
    return Started(url, route.workflow_id, handle)


async def item_progress(client: Client, handle: WorkflowHandle) -> dict[str, Any]:
    """Live progress of a running item: the workflow's own view plus the downloads' heartbeats."""
    progress = await handle.query(MediaItemWorkflow.progress, result_type=Progress)
    desc = await handle.describe()
    done = progress.bytes_done
    total = progress.bytes_total
    attempt = progress.attempt
    last_error = progress.last_error
    running_total = 0
    for pending in desc.raw_description.pending_activities:
        attempt = max(attempt, pending.attempt)
        if pending.last_failure.message:
            last_error = f"{pending.last_failure.application_failure_info.type or 'error'}: {pending.last_failure.message}"
        if pending.activity_type.name == "download" and pending.heartbeat_details.payloads:
            details = (await client.data_converter.decode(pending.heartbeat_details.payloads))[0]
            if isinstance(details, dict):
                done += int(details.get("offset") or 0)
                running_total += int(details.get("total") or 0)
    if total is None and running_total:
        total = progress.bytes_done + running_total
    return {"stage": progress.stage, "bytes_done": done, "bytes_total": total, "attempt": attempt,
            "last_error": last_error, "paused": progress.paused}


async def item_result(handle: WorkflowHandle, url: str) -> ItemResult:
    """Wait for an item workflow; a cancelled or terminated one becomes a result too."""
    try:
        result = await handle.result()
        # Several URL forms may share one workflow; each caller hears about the URL it gave.
        result.url = url or result.url
        return result
    except WorkflowFailureError as err:
        cause = err.cause
        if isinstance(cause, CancelledError):
            return ItemResult(handle.id, url, "cancelled")
        if isinstance(cause, TerminatedError):
            return ItemResult(handle.id, url, "failed", error_class="terminated", error=str(cause))
        if isinstance(cause, WorkflowTimeoutError):
            return ItemResult(handle.id, url, "failed", error_class="timeout", error=str(cause))
        return ItemResult(handle.id, url, "failed", error_class="internal_error", error=str(cause or err))
    except RPCError as err:
        return ItemResult(handle.id, url, "failed", error_class="internal_error", error=str(err))


async def start_crawl(client: Client, settings: Settings, registry: Registry, urls: list[str], *,
                      source: str | None = None, concurrency: int = 8, crawl_id: str | None = None,
                      history_limit: int = 10_000) -> tuple[WorkflowHandle, list[str]]:
    """Start a CrawlWorkflow; returns its handle and the URLs refused before starting."""
    items, refused = route_items(registry, urls)
    crawl_id = crawl_id or f"crawl-{uuid.uuid4().hex[:12]}"
    handle = await client.start_workflow(
        CrawlWorkflow.run,
        CrawlInput(items=items, source=source, concurrency=concurrency, options=item_options(settings),
                   history_limit=history_limit),
        id=crawl_id,
        task_queue=workflow_queue(settings.temporal.task_queue_prefix),
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        static_summary=f"crawl of {len(items)} URL(s)" + (f" and source {source}" if source else ""),
    )
    return handle, refused
