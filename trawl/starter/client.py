"""Connecting to Temporal and starting item workflows, shared by the CLI and the API."""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from temporalio.api.common.v1 import Payloads
from temporalio.api.enums.v1 import EventType, IndexedValueType, PendingActivityState, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.common import SearchAttributePair, TypedSearchAttributes, WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError, CancelledError, TerminatedError
from temporalio.exceptions import TimeoutError as WorkflowTimeoutError
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig
from temporalio.envconfig import ClientConfigProfile
from temporalio.service import RPCError, RPCStatusCode, TLSConfig

from trawl.starter.embedded import SEARCH_ATTRIBUTES
from trawl.errors import UnsupportedUrl
from trawl.logs import get_logger
from trawl.platforms.registry import Registry
from trawl.settings import Settings, StageRetry
from trawl.listing_filters import ListingFilters
from trawl.sources import SourceError, find_source, source_definition, with_filters
from trawl.starter.views import POLLER_FRESH_S
from trawl.text import shown
from trawl.worker.runtime import BACKGROUND_MARK, ONE_SHOT_MARK, core_logging
from trawl.contracts import (
    ADD_URLS, CRAWL_ID, CRAWL_WORKFLOW, EXTRAS_WORKFLOW, FRONTIER_ADDED, FRONTIER_PAGE, ITEM_WORKFLOW, KEPT_REFUSALS,
    PLATFORM, PROGRESS, STATS, CrawlInput, CrawlState, CrawlStats, FrontierGrew, FrontierPage, ItemInput, ItemOptions,
    ItemResult, LiveParts, Progress, Refusal, RefreshInput, RefreshResult, StagePolicy, download_queue,
    extras_workflow_id, workflow_queue)
from trawl.routing import frontier_page, route_all, routed

if TYPE_CHECKING:  # SQLAlchemy loads only in the commands that open the catalog
    from trawl.storage.catalog import Catalog


_log = get_logger("trawl.client")

CONNECT_PATIENCE_S = 30.0
UNREACHABLE_CODES = (RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED)
MAX_RECONNECT_DELAY_S = 5.0


def unreachable(err: RPCError) -> bool:
    """The server could not be reached (down, restarting, network): a reason to wait, not a result."""
    return err.status in UNREACHABLE_CODES or "connect error" in err.message or "transport error" in err.message


Notice = Callable[[str], None]


# A second worker on a host finds the metrics port taken (by the first): it takes the next free
# one of this many, or runs without metrics. Either way it says so.
METRICS_PORT_TRIES = 10
_metrics_served: weakref.WeakKeyDictionary[Runtime, str] = weakref.WeakKeyDictionary()


def metrics_runtime(settings: Settings) -> Runtime | None:
    """A runtime serving Prometheus metrics at ``worker.metrics_port``, or the next free port
    after it; None (no metrics, with a warning) when none of them can be bound."""
    host, first = settings.worker.metrics_host, settings.worker.metrics_port
    problem = ""
    for port in range(first, min(first + METRICS_PORT_TRIES, 65536)):
        try:
            runtime = Runtime(telemetry=TelemetryConfig(logging=core_logging(), metrics=PrometheusConfig(
                bind_address=f"{host}:{port}", counters_total_suffix=True, durations_as_seconds=True)))
        except ValueError as err:  # "Failed starting Prometheus exporter: Address already in use"
            problem = str(err)
            if "in use" not in problem:
                break
            continue
        if port != first:
            _log.warning(f"metrics port {first} is in use (another worker on this host?); serving metrics on "
                         f"{port} instead", metrics=f"http://{host}:{port}/metrics")
        _metrics_served[runtime] = f"http://{host}:{port}/metrics"
        return runtime
    _log.warning(f"metrics port {first} is in use and so are the next {METRICS_PORT_TRIES - 1}; running without "
                 "metrics (set worker.metrics_port to a free port, or 0)" if "in use" in problem else
                 f"cannot serve metrics on {host}:{first} ({problem}); running without metrics "
                 "(check worker.metrics_host and worker.metrics_port)")
    return None


def metrics_url(client: Client) -> str | None:
    """Where the runtime of a client connected with ``metrics=True`` serves its metrics, if it does."""
    runtime = client.service_client.config.runtime
    return _metrics_served.get(runtime) if runtime is not None else None


def connect_options(settings: Settings, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The arguments of ``Client.connect``: the SDK's environment configuration, then trawl's settings.

    The SDK's conventions come first (``temporalio.envconfig``: TOML profiles and ``TEMPORAL_*``
    variables, as the Temporal CLI reads them); a trawl setting that was set explicitly wins over
    them, and trawl's defaults fill what neither says.
    """
    temporal = settings.temporal
    explicit = temporal.model_fields_set
    profile = ClientConfigProfile.load(profile=temporal.profile or None, override_env_vars=env)
    options: dict[str, Any] = dict(profile.to_client_connect_config())
    if "address" in explicit or "target_host" not in options:
        options["target_host"] = temporal.address
    if "namespace" in explicit or "namespace" not in options:
        options["namespace"] = temporal.namespace
    if temporal.api_key:
        options["api_key"] = temporal.api_key
        options.setdefault("tls", True)
    files = (temporal.tls_server_ca, temporal.tls_client_cert, temporal.tls_client_key)
    if temporal.tls or any(files) or temporal.tls_server_name:
        ca, cert, key = (path.read_bytes() if path else None for path in files)
        options["tls"] = TLSConfig(server_root_ca_cert=ca, client_cert=cert, client_private_key=key,
                                   domain=temporal.tls_server_name or None)
    return options


async def connect(settings: Settings, *, metrics: bool = False) -> Client:
    """A client; with ``metrics``, its runtime serves Prometheus metrics for the worker using it."""
    runtime = None
    if metrics and settings.worker.metrics_port:
        runtime = metrics_runtime(settings)
    options = connect_options(settings)
    # A server that has just started accepts connections before its frontend is healthy; wait
    # for it rather than failing the command.
    deadline = time.monotonic() + CONNECT_PATIENCE_S
    while True:
        try:
            return await Client.connect(**options, runtime=runtime or Runtime.default())
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


async def _pollers(client: Client, settings: Settings) -> list[str]:
    """Identities of the workers polling this prefix's workflow and shared activity queues now
    (one that died less than :data:`POLLER_FRESH_S` ago may still be listed)."""
    prefix = settings.temporal.task_queue_prefix
    now = time.time()
    found: dict[str, None] = {}
    for queue, kind in ((workflow_queue(prefix), TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW),
                        (download_queue(prefix), TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY)):
        described = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
            namespace=settings.temporal.namespace, task_queue=TaskQueue(name=queue), task_queue_type=kind))
        for poller in described.pollers:
            seen = poller.last_access_time.ToMicroseconds() / 1e6 if poller.HasField("last_access_time") else 0.0
            if now - seen < POLLER_FRESH_S:
                found[poller.identity] = None
    return list(found)


async def pollers(client: Client, settings: Settings) -> list[str]:
    """Identities of every worker polling this prefix's queues now, one-shot and background ones
    included: none means nothing runs the deployment's workflows or activities."""
    return await _pollers(client, settings)


async def live_workers(client: Client, settings: Settings) -> list[str]:
    """Identities of the deployment's long-running workers polling this prefix's queues now.

    One-shot commands' own in-process workers are left out: they leave with their command; so is
    the background worker of an embedded server, which runs the one-shot commands' settings.
    A worker that died less than :data:`POLLER_FRESH_S` ago may still be listed.
    """
    return [name for name in await _pollers(client, settings) if not name.endswith((ONE_SHOT_MARK, BACKGROUND_MARK))]


async def background_workers(client: Client, settings: Settings) -> list[str]:
    """Identities of the background workers (an embedded server's, see ``trawl.starter.embedded``)
    polling this prefix's queues now; each names its data directory (``...@DIR/background``)."""
    return [name for name in await _pollers(client, settings) if name.endswith(BACKGROUND_MARK)]


def _policy(stage: StageRetry) -> StagePolicy:
    return StagePolicy(
        initial_interval_s=stage.initial_interval.total_seconds(),
        backoff_coefficient=stage.backoff_coefficient,
        maximum_interval_s=stage.maximum_interval.total_seconds(),
        maximum_attempts=stage.maximum_attempts,
        start_to_close_s=stage.start_to_close.total_seconds(),
        schedule_to_close_s=stage.schedule_to_close.total_seconds() if stage.schedule_to_close else None,
    )


@dataclass(frozen=True)
class CrawlChoices:
    """What one crawl asks for over the workers' settings (``trawl crawl -f``, ``--limit-rate``);
    carried in the items' options, so every worker applies them. 0: the worker's setting."""

    quality: int = 0  # the tallest video wanted, in lines
    limit_rate: int = 0  # bytes per second for each download
    keep_previews: bool | None = None  # None: the settings' download.keep_previews
    audio: str = ""  # lossless, dolby or aac; "": the platform's setting
    # --dateafter, --match-filter, ...: carried in the definition of each listing and source the
    # crawl expands (trawl.listing_filters), applied while they page.
    filters: ListingFilters | None = None


def item_options(settings: Settings, choices: CrawlChoices | None = None) -> ItemOptions:
    retry = settings.retry
    choices = choices or CrawlChoices()
    return ItemOptions(
        queue_prefix=settings.temporal.task_queue_prefix,
        fetch=_policy(retry.fetch),
        download=_policy(retry.download),
        verify=_policy(retry.verify),
        commit=_policy(retry.commit),
        extras=_policy(retry.extras),
        heartbeat_timeout_s=settings.download.heartbeat_timeout.total_seconds(),
        local_schedule_to_start_s=settings.worker.local_schedule_to_start.total_seconds(),
        max_redownloads=settings.download.max_redownloads,
        small_item_size=settings.download.small_item_size,
        with_fetch_size=settings.download.with_fetch_size,
        tiny_activity=True,
        one_activity_on_host=settings.download.one_activity_on_host,
        quality=choices.quality,
        limit_rate=choices.limit_rate,
        audio=choices.audio,
        keep_previews=settings.download.keep_previews if choices.keep_previews is None else choices.keep_previews,
        live_parts=LiveParts(seconds=settings.download.live_part_duration.total_seconds(),
                             bytes=settings.download.live_part_size),
        broadcast_workflows=True,
    )


@dataclass
class Started:
    url: str
    workflow_id: str
    handle: WorkflowHandle


async def start_item(client: Client, settings: Settings, registry: Registry, url: str,
                     crawl_id: str | None = None, choices: CrawlChoices | None = None) -> Started:
    """Start (or join) the item workflow for ``url``; starting twice is harmless.

    The Web UI's list reads the item from the start: its summary is the platform and URL, and
    Platform (and CrawlId) are set with the start, so the workflow need not upsert them.

    Raises:
        UnsupportedUrl: ``url`` is a listing (it stands for many items: crawl it), or no
            resolver takes it.
    """
    listing = registry.listing_for(url)
    if listing is not None:
        raise UnsupportedUrl(f"{listing.url} is a listing ({listing.kind} {listing.id}), many items: crawl it "
                             "(`trawl crawl URL`, POST /api/v1/crawls)")
    route = registry.route(url)
    attrs = [SearchAttributePair(PLATFORM, route.platform)]
    if crawl_id:
        attrs.append(SearchAttributePair(CRAWL_ID, crawl_id))
    handle = await client.start_workflow(
        ITEM_WORKFLOW,
        ItemInput(url=url.strip(), platform=route.platform, crawl_id=crawl_id,
                  options=item_options(settings, choices)),
        result_type=ItemResult,
        id=route.workflow_id,
        task_queue=workflow_queue(settings.temporal.task_queue_prefix),
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        static_summary=f"{route.platform}: {url.strip()[:200]}",
        search_attributes=TypedSearchAttributes(attrs),
        memo={"url": url.strip()},
    )
    return Started(url, route.workflow_id, handle)


async def start_extras_refresh(client: Client, settings: Settings, canonical_key: str, platform: str,
                               extras: list[str] | None = None) -> WorkflowHandle[Any, RefreshResult]:
    """Fetch a committed item's extras again, as a dated snapshot (docs/extras.md); a refresh of
    the item already running is joined."""
    return await client.start_workflow(
        EXTRAS_WORKFLOW, RefreshInput(canonical_key, platform, list(extras or []), item_options(settings)),
        result_type=RefreshResult, id=extras_workflow_id(canonical_key),
        task_queue=workflow_queue(settings.temporal.task_queue_prefix),
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        static_summary=f"{platform}: extras of {canonical_key}"[:200],
        search_attributes=TypedSearchAttributes([SearchAttributePair(PLATFORM, platform)]))


def item_handle(client: Client, workflow_id: str, run_id: str | None = None) -> WorkflowHandle[Any, ItemResult]:
    """An item workflow by its id (its result an ``ItemResult``)."""
    return client.get_workflow_handle(workflow_id, run_id=run_id, result_type=ItemResult)


def crawl_handle(client: Client, crawl_id: str, run_id: str | None = None) -> WorkflowHandle[Any, CrawlStats]:
    """A crawl workflow by its id (its result a ``CrawlStats``)."""
    return client.get_workflow_handle(crawl_id, run_id=run_id, result_type=CrawlStats)


# Activities whose heartbeats carry a download's state (its offset, and its total once known):
# a small item's one activity and a tiny item's fetch beat with their download's while it runs.
DOWNLOADING = ("download", "small_item", "fetch_and_store_tiny")


async def item_progress(client: Client, handle: WorkflowHandle) -> dict[str, Any]:
    """Live progress of a running item: the workflow's own view plus the downloads' heartbeats."""
    progress = await handle.query(PROGRESS, result_type=Progress)
    if progress.recording:  # the broadcast's own workflow records it: its progress is the item's
        try:
            followed = await item_progress(client, client.get_workflow_handle(progress.recording))
        except RPCError as err:
            # The item names it as it starts it: until that start reaches the server, the item's
            # own view is all there is to show.
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
        else:
            return {**followed, "recording": progress.recording}
    desc = await handle.describe()
    total = progress.bytes_total
    attempt = progress.attempt
    last_error = progress.last_error
    from trawl.download.live import recording_view  # here: the commands that never read progress skip it

    running_total = 0
    live = progress.bytes_finished
    recording: dict[str, Any] | None = None
    retry: dict[str, Any] | None = None  # an attempt that failed and waits for the next one
    for pending in desc.raw_description.pending_activities:
        attempt = max(attempt, pending.attempt)
        failure = pending.last_failure
        if failure.message and not failure.HasField("canceled_failure_info"):  # a pause is no error
            last_error = f"{failure.application_failure_info.type or 'error'}: {failure.message}"
            if (pending.state == PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
                    and pending.HasField("next_attempt_schedule_time")):
                retry = {"activity": pending.activity_type.name, "attempt": pending.attempt,
                         "error_class": failure.application_failure_info.type or "error", "message": failure.message,
                         "next_at": pending.next_attempt_schedule_time.ToMicroseconds() / 1e6}
        if pending.activity_type.name in DOWNLOADING and pending.heartbeat_details.payloads:
            details = (await client.data_converter.decode(pending.heartbeat_details.payloads))[0]
            recording = recording or recording_view(details)
            if recording is not None:  # a live recording: its parts committed so far and the one in progress
                live = max(live, recording["bytes"])
            elif isinstance(details, dict):
                live += int(details.get("offset") or 0)
                running_total += int(details.get("total") or 0)
    # The heartbeats are the freshest; the workflow's own count also holds a paused item's kept bytes.
    done = max(progress.bytes_done, live)
    if total is None and running_total:
        # Downloads ended but not verified yet count in ``done`` and in no running total.
        total = max(done, progress.bytes_finished + running_total)
    answer = {"stage": progress.stage, "bytes_done": done, "bytes_total": total, "attempt": attempt,
              "last_error": last_error, "paused": progress.paused, "retry": retry}
    if recording is not None:  # a recording: "recording" where a download would be, and its measures
        answer.update(stage="recording" if progress.stage == "download" else progress.stage, live=recording)
    return answer


async def item_result(handle: WorkflowHandle, url: str, on_unreachable: Notice | None = None) -> ItemResult:
    """Wait for an item workflow; a cancelled or terminated one becomes a result too.

    The wait rides out server outages and restarts: while the server cannot be reached it keeps
    trying with backoff (telling ``on_unreachable`` each time), since the item itself goes on.
    """
    delay = 0.25
    while True:
        try:
            return await _item_result_once(handle, url)
        except RPCError as err:
            if not unreachable(err):
                return ItemResult(handle.id, url, "failed", error_class="internal_error", error=str(err))
            if on_unreachable is not None:
                on_unreachable(err.message)
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_RECONNECT_DELAY_S)


async def _item_result_once(handle: WorkflowHandle, url: str) -> ItemResult:
    try:
        result = await handle.result()
        # Several URL forms may share one workflow; each caller hears about the URL it gave.
        result.url = url or result.url
        return result
    except WorkflowFailureError as err:
        cause = err.cause
        if isinstance(cause, ApplicationError) and cause.details and isinstance(cause.details[0], dict):
            return ItemResult.from_details(cause.details[0], url)  # a failed item: its result is in the details
        if isinstance(cause, CancelledError):
            return await _cancelled_result(handle, url)
        if isinstance(cause, TerminatedError):
            return ItemResult(handle.id, url, "failed", error_class="terminated", error=str(cause))
        if isinstance(cause, WorkflowTimeoutError):
            return ItemResult(handle.id, url, "failed", error_class="timeout", error=str(cause))
        return ItemResult(handle.id, url, "failed", error_class="internal_error", error=str(cause or err))


async def cancel_crawl(handle: WorkflowHandle) -> None:
    """Cancel a crawl through Temporal, so it ends as Canceled (its items are cancelled with it)."""
    await handle.cancel()


async def _cancelled_result(handle: WorkflowHandle, url: str) -> ItemResult:
    """A cancelled item keeps its identity: the URL and what fetch found, from its search attributes
    (runs before lean-history: from its memo)."""
    try:
        desc = await handle.describe()
        memo = await desc.memo()
    except RPCError:
        return ItemResult(handle.id, url, "cancelled")
    attrs = desc.search_attributes or {}

    def attr(name: str) -> str | None:
        values = attrs.get(name)
        return str(values[0]) if values else None

    return ItemResult(handle.id, url or str(memo.get("url") or ""), "cancelled",
                      canonical_key=memo.get("canonical_key") or attr("CanonicalKey"),
                      platform=memo.get("platform") or attr("Platform"),
                      title=memo.get("title") or attr("Title"))


# -- crawls --------------------------------------------------------------------------------------
# What one crawl can hold. A CrawlWorkflow carries its queued and running items in its input and
# again in every continue-as-new, so the whole list is one Temporal payload, again and again:
#  - Temporal refuses a payload over 2 MiB (the blob size limit): a start over it fails with
#    "Blob data size exceeds limit", and a continue-as-new over it fails its workflow task on
#    every retry (PayloadsTooLarge), which leaves the crawl stuck. URLs added by signal end up in
#    that same list, so adding in batches does not raise the limit.
#  - a worker decodes the whole list in one activation, within the SDK's 2 s deadlock timeout.
#    Measured on the 2-core reference machine, shared (load average 5): 2,000 items of 1 MiB went
#    through ten continue-as-new with no failed workflow task; 5,000 items (1.1 MB) and 10,000
#    (1.2 MB) failed tasks on "Potential deadlock detected" again and again.
# MAX_CRAWL_BYTES is half the payload limit, leaving room for what the state gathers on the way.
MAX_CRAWL_URLS = 2_000
MAX_CRAWL_BYTES = 1024 * 1024
MAX_CRAWL_CONCURRENCY = 256  # items in flight at once in one crawl (the CLI, the API, a watch's runs)
# URLs one API request may carry (a crawl holds any number: send a long list in parts). Routing and
# writing 10,000 URLs to the frontier takes about a second on the reference machine, so a request
# stays short, and 10,000 URLs of 100 characters fit the default api.max_body_bytes (1 MiB).
MAX_URLS_PER_REQUEST = 10_000
_REFUSED_KEPT_CHARS = 300  # a crawl's state keeps each refusal this short
REFUSAL_MESSAGE_CHARS = 400  # a refusal's reason may quote the URL (escaped, 200 characters of it)


def refusal_line(refusal: Refusal) -> str:
    """A refusal as it is shown (CLI, API, a crawl's state): the URL and the reason escaped and cut,
    for a refused line may hold terminal escapes, bidi overrides or megabytes."""
    return f"{shown(refusal.url)}: {refusal.error_class}: {shown(refusal.message, REFUSAL_MESSAGE_CHARS)}"


class CrawlRefused(UnsupportedUrl):
    """Nothing to crawl: every URL given was refused (and no source was named)."""

    def __init__(self, refusals: list[Refusal]) -> None:
        listed = "; ".join(refusal_line(r) for r in refusals[:5])
        more = f" (and {len(refusals) - 5} more)" if len(refusals) > 5 else ""
        super().__init__(f"nothing to crawl: every URL was refused: {listed}{more}")
        self.refusals = refusals


class CrawlTooLarge(UnsupportedUrl):
    """More than one crawl can carry (see MAX_CRAWL_URLS, MAX_CRAWL_BYTES)."""

    error_class = "too_large"


async def encoded_size(client: Client, value: Any) -> int:
    """Bytes of ``value`` as Temporal receives it (the client's converter and codec)."""
    return Payloads(payloads=await client.data_converter.encode([value])).ByteSize()


def _too_many(count: int, already: int = 0) -> CrawlTooLarge:
    held = f"already holds {already} and would hold {already + count}" if already else f"would hold {count}"
    return CrawlTooLarge(
        f"a crawl holds at most {MAX_CRAWL_URLS} URLs queued or running at once; this one {held}: "
        f"split the list into several crawls, or add the rest as it drains")


def _too_big(size: int, already: int = 0) -> CrawlTooLarge:
    held = f"{already} bytes carried already plus {size}" if already else f"{size} bytes"
    return CrawlTooLarge(
        f"a crawl carries at most {MAX_CRAWL_BYTES} bytes of queued URLs (encoded; Temporal refuses a payload "
        f"over 2 MiB); these make {held}: split the list into several crawls, or add the rest as it drains")


def _definition(settings: Settings, source: str | None, filters: ListingFilters | None = None
                ) -> dict[str, Any] | None:
    """The source as the crawl carries it (any worker expands it, whatever its settings hold), with
    the crawl's filters; None when these settings do not know it: the workers' settings may, and if
    not the run fails saying so.

    Raises:
        CrawlRefused: filters given for a source these settings do not know (they would be lost).
    """
    if not source:
        return None
    try:
        return source_definition(find_source(settings, source), filters)
    except SourceError as err:
        if filters:
            raise CrawlRefused([Refusal(0, source, "unsupported_url", f"{err}: filters need the source's "
                                        "definition where the crawl starts")]) from None
        return None


# Refusals a start reports back whole (the CLI prints them); more are counted.
MAX_REFUSALS_REPORTED = 1000
MAX_REPEATS_REPORTED = 10_000  # repeated URLs a start reports back (about 200 bytes each); more are counted


@dataclass
class Filled:
    """What adding URLs to a crawl's frontier did."""

    routed: int = 0  # URLs a resolver or a listing form takes
    added: int = 0  # entries new to the frontier (an item or listing the crawl holds is not added twice)
    refused: int = 0  # URLs refused offline (the first MAX_REFUSALS_REPORTED in ``refusals``)
    refusals: list[Refusal] = dataclasses.field(default_factory=list)
    # URLs given for an item the frontier held already (the same URL twice, or two forms of one
    # item), with its workflow id: the first MAX_REPEATS_REPORTED (a following command shows each
    # one's line beside its item's).
    repeats: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    # The frontier's first page, read back at once (``fill_frontier``'s ``first_page``), or None.
    page: FrontierPage | None = None


def fill_frontier(settings: Settings, registry: Registry, crawl_id: str, urls: Iterable[str],
                  catalog: Catalog | None = None, filters: ListingFilters | None = None, *,
                  first_page: bool = False) -> Filled:
    """Route ``urls`` offline and add them to the crawl's frontier in the catalog, in batches, as
    they come (a file of a million lines is never held whole). ``catalog``: the caller's (the
    API's); None: the settings' catalog, opened (and brought to the newest schema) for this call.
    ``filters``: into each listing's definition, applied when it is expanded. ``first_page``: read
    the frontier's first page back too (``Filled.page``), as the crawl's first read would."""
    filled = Filled()

    def entries() -> Iterator[tuple[str, str, str, dict[str, Any] | None]]:
        for item in routed(registry, urls):
            if isinstance(item, Refusal):
                filled.refused += 1
                if len(filled.refusals) < MAX_REFUSALS_REPORTED:
                    filled.refusals.append(item)
                continue
            filled.routed += 1
            yield item.url, item.platform, item.workflow_id, with_filters(item.listing, filters)

    def repeated(url: str, workflow_id: str) -> None:
        if len(filled.repeats) < MAX_REPEATS_REPORTED:
            filled.repeats.append((url, workflow_id))

    def fill(into: Catalog) -> Filled:
        filled.added = into.frontier_add(crawl_id, entries(), repeated)
        if first_page and filled.added:
            filled.page = frontier_page(into, registry, crawl_id, 0, FRONTIER_PAGE)
        return filled

    if catalog is not None:
        return fill(catalog)
    from trawl.storage.catalog import Catalog  # here: only the commands that start a crawl need it

    own = Catalog(settings.catalog_url)
    try:
        own.create_schema()
        return fill(own)
    finally:
        own.close()


def _kept(refusals: list[Refusal]) -> list[str]:
    """The refusals a crawl's state keeps: the latest, each cut shorter than callers get them."""
    return [refusal_line(r)[:_REFUSED_KEPT_CHARS] for r in refusals[-KEPT_REFUSALS:]]


async def start_crawl(client: Client, settings: Settings, registry: Registry, urls: Iterable[str], *,
                      source: str | None = None, concurrency: int = 8, crawl_id: str | None = None,
                      history_limit: int = 10_000, choices: CrawlChoices | None = None,
                      catalog: Catalog | None = None) -> tuple[WorkflowHandle, list[str]]:
    """Start a CrawlWorkflow over ``urls`` (any number: they go to the crawl's frontier in the
    catalog, not into its input); returns its handle and the URLs refused before starting (the
    first MAX_REFUSALS_REPORTED; the crawl's stats count them all).

    Raises:
        CrawlRefused: every URL was refused and there is no source (nothing was started).
    """
    handle, filled = await begin_crawl(client, settings, registry, urls, source=source, concurrency=concurrency,
                                       crawl_id=crawl_id, history_limit=history_limit, choices=choices,
                                       catalog=catalog)
    return handle, [refusal_line(r) for r in filled.refusals]


async def begin_crawl(client: Client, settings: Settings, registry: Registry, urls: Iterable[str], *,
                      source: str | None = None, concurrency: int = 8, crawl_id: str | None = None,
                      history_limit: int = 10_000, choices: CrawlChoices | None = None,
                      catalog: Catalog | None = None, follow: bool = False) -> tuple[WorkflowHandle, Filled]:
    """:func:`start_crawl`, returning what filling the frontier did (the refusals themselves).
    ``follow``: a command reads the crawl's results as they come (CrawlInput.follow).

    Raises:
        CrawlRefused: every URL was refused and there is no source (nothing was started).
    """
    crawl_id = crawl_id or f"crawl-{uuid.uuid4().hex[:12]}"
    filters = choices.filters if choices else None
    definition = _definition(settings, source, filters)
    # A followed crawl (an attached `trawl crawl`) starts with its frontier's first page read here,
    # from the catalog just written: its first items start at once, not after a first activity
    # reads back what this command wrote (about 30 ms of a one-shot command). A page holding
    # known items is left to the crawl, which reports each one's line; a detached crawl reads its
    # own, so one whose starter wrote to another catalog than its workers' fails saying so.
    filled = await asyncio.to_thread(fill_frontier, settings, registry, crawl_id, urls, catalog, filters,
                                     first_page=follow and not source)
    if not filled.routed and not source:
        raise CrawlRefused(filled.refusals)
    kept = _kept(filled.refusals)
    # The refusals go into the state the workflow starts from (the state continue-as-new carries,
    # with ``runs`` one short: the run counts itself), so its ``stats.refused`` counts them too.
    repeated = filled.routed - filled.added  # the same item given twice: one entry, one duplicate
    state = CrawlState(started_at=datetime.now(timezone.utc).isoformat(), runs=0, refused=kept,
                       refused_dropped=filled.refused - len(kept), frontier_added=filled.added,
                       outcomes={"duplicate": repeated} if repeated else {})
    page = filled.page
    if page is not None and not page.known_items:
        state.pending, state.cursor, state.frontier_read = page.items, page.cursor, page.read
        state.exhausted = page.read >= filled.added
    inp = CrawlInput(source=source, concurrency=concurrency, options=item_options(settings, choices),
                     history_limit=history_limit, state=state, source_definition=definition,
                     frontier=True, follow=follow)
    handle = await client.start_workflow(
        CRAWL_WORKFLOW,
        inp,
        result_type=CrawlStats,
        id=crawl_id,
        task_queue=workflow_queue(settings.temporal.task_queue_prefix),
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        static_summary=f"crawl of {filled.routed} URL(s)" + (f" and source {source}" if source else ""),
    )
    # By its id alone: queries and signals reach the crawl's current run, whichever it is now.
    return crawl_handle(client, handle.id), filled


async def add_to_crawl(client: Client, settings: Settings, registry: Registry, crawl_id: str,
                       urls: Iterable[str], catalog: Catalog | None = None) -> list[str]:
    """Queue more URLs on a running crawl; returns the refused ones (the first MAX_REFUSALS_REPORTED).

    A crawl reading a frontier gets them there (any number; the same URL twice is queued once)
    and a ``frontier_added`` signal; a crawl started before frontiers gets them by signal
    ``add_urls``, within the limits its payloads allow (MAX_CRAWL_URLS, MAX_CRAWL_BYTES).

    Raises:
        CrawlRefused: every URL was refused (nothing was added).
        CrawlTooLarge: a crawl without a frontier would hold more than it can carry.
        RPCError: no such crawl (NOT_FOUND), or Temporal is unreachable.
    """
    handle = crawl_handle(client, crawl_id)
    stats = await handle.query(STATS, result_type=CrawlStats)
    if stats.frontier:
        filled = await asyncio.to_thread(fill_frontier, settings, registry, crawl_id, urls, catalog)
        if not filled.routed:
            raise CrawlRefused(filled.refusals)
        await handle.signal(FRONTIER_ADDED, FrontierGrew(
            filled.added, filled.routed - filled.added,
            _kept(filled.refusals)))
        return [refusal_line(r) for r in filled.refusals]
    items, refusals = await asyncio.to_thread(route_all, registry, list(urls))
    if not items:
        raise CrawlRefused(refusals)
    held = stats.queued + stats.running
    if held + len(items) > MAX_CRAWL_URLS:
        raise _too_many(len(items), held)
    size = await encoded_size(client, items)
    if size > MAX_CRAWL_BYTES:
        raise _too_big(size)
    desc = await handle.describe()
    if desc.raw_description.workflow_execution_info.history_size_bytes + size > MAX_CRAWL_BYTES:
        carried = await _given_to_current_run(handle)  # the history's size overstates it: look closer
        if carried + size > MAX_CRAWL_BYTES:
            raise _too_big(size, carried)
    await handle.signal(ADD_URLS, items)
    return [refusal_line(r) for r in refusals]


async def _given_to_current_run(handle: WorkflowHandle) -> int:
    """Payload bytes of the items the crawl's current run received: its input, ``add_urls``
    signals and source expansions. What it carries into the next run is a part of these."""
    size = 0
    expansions: set[int] = set()
    async for event in handle.fetch_history_events():
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            size += event.workflow_execution_started_event_attributes.input.ByteSize()
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            if event.workflow_execution_signaled_event_attributes.signal_name == "add_urls":
                size += event.workflow_execution_signaled_event_attributes.input.ByteSize()
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            if event.activity_task_scheduled_event_attributes.activity_type.name == "expand_source":
                expansions.add(event.event_id)
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            if event.activity_task_completed_event_attributes.scheduled_event_id in expansions:
                size += event.activity_task_completed_event_attributes.result.ByteSize()
    return size
