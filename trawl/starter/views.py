"""The one rendering of trawl's records as plain dicts, shared by the CLI (``--json``) and the HTTP API.

- ``result_dict``: an item workflow's result (``ItemResult``).
- ``item_dict``: a catalog item.
- ``crawl_state`` fetches a crawl's status and stats; ``crawl_dict`` renders them.

Field names are the same wherever they mean the same thing: ``id`` is the item workflow id, ``url``
the URL it was crawled from, ``outcome`` ``committed``/``duplicate``/``failed``/``cancelled``, and
every asset is ``{kind, name, sha256, size, key, path, mime}``: ``key`` is the blob's key in the
store, ``path`` where it is for people (a file path, or an ``s3://`` URL), given the store
(``blobs``: anything with ``location(key)``, or a local store's root directory); None without one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol, Union

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowQueryFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from trawl.storage.records import CatalogItem
from trawl.contracts import CRAWL_WORKFLOW, STATS, CrawlStats, ItemInput, ItemResult, workflow_queue

CLOSED_QUERY_PATIENCE_S = 5.0
# How long a running crawl's query may wait for its answer while a worker polls the crawl's queue:
# a loaded worker answers late (at load ~11 on two cores, 12 of 25 looks took over 10 s). The RPC's
# own deadline is a little longer, so the wait ends here and says so.
RUNNING_QUERY_PATIENCE_S = 30.0
# ... and while none does (none polled within POLLER_FRESH_S): no worker will answer, say so sooner.
UNPOLLED_QUERY_PATIENCE_S = 10.0
# A live worker re-polls at least this often (the server answers an idle long poll within about
# a minute), so a poller last seen longer ago than this has stopped.
POLLER_FRESH_S = 75.0


class Unanswered(TimeoutError):
    """A running workflow's query went unanswered: no worker polls its task queue (or all are busy)."""


class _Locates(Protocol):
    def location(self, key: str) -> str: ...


Blobs = Union[_Locates, Path, str, None]  # a blob store, or a local store's root directory


def _location(blobs: Blobs, key: str) -> str | None:
    if blobs is None or not key:
        return None
    if isinstance(blobs, (str, Path)):
        return str(Path(blobs) / key)
    return blobs.location(key)


def _asset(kind: str, name: str, sha256: str, size: int, key: str, mime: str | None, blobs: Blobs) -> dict[str, Any]:
    return {"kind": kind, "name": name, "sha256": sha256, "size": size, "key": key,
            "path": _location(blobs, key), "mime": mime}


def result_dict(result: ItemResult, blobs: Blobs = None) -> dict[str, Any]:
    """An item workflow's result: what ``trawl crawl --json`` prints per item."""
    return {
        "id": result.workflow_id, "url": result.url, "canonical_key": result.canonical_key,
        "platform": result.platform, "outcome": result.outcome, "title": result.title,
        "error_class": result.error_class, "error": result.error,
        "assets": [_asset(a.kind, a.name, a.sha256, a.size, a.key, a.mime, blobs) for a in result.assets],
        # Its extras (docs/extras.md): each stored (sha256, size) or missing (its class and reason).
        "extras": [{"name": e.name, "kind": e.kind, "language": e.language or None, "sha256": e.sha256 or None,
                    "size": e.size, "missing": e.missing or None, "reason": e.reason or None} for e in result.extras],
    }


def item_dict(item: CatalogItem, blobs: Blobs = None) -> dict[str, Any]:
    """A catalog item: what ``trawl items --json`` prints per item."""
    return {
        "id": item.workflow_id, "url": item.source_url, "canonical_key": item.canonical_key,
        "canonical_url": item.canonical_url, "platform": item.platform, "outcome": item.status,
        "title": item.title, "uploader": item.uploader, "duration": item.duration,
        "published_at": item.published_at, "created_at": item.created_at,
        "assets": [_asset(a.kind, a.name, a.sha256, a.size, a.key, a.mime, blobs) for a in item.assets],
        "preview": item.metadata.get("preview") or None,
        "gone_at": item.gone_at, "gone_reason": item.gone_reason,
    }


async def polled(client: Client, task_queue: str) -> bool:
    """Whether a worker polled the workflow task queue ``task_queue`` lately (True when the server
    cannot say: the caller then waits its full patience)."""
    try:
        described = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
            namespace=client.namespace, task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW))
    except RPCError:
        return True
    now = time.time()
    return any(now - p.last_access_time.ToMicroseconds() / 1e6 < POLLER_FRESH_S for p in described.pollers)


async def crawl_state(handle: Any, client: Client | None = None) -> tuple[Any, CrawlStats | None]:
    """A crawl workflow's description and its stats: queried while it runs, its result once
    completed; a failed crawl's from its failure (a source that could not be expanded: ``error``
    says why); a cancelled crawl (which has no result) is queried too, which needs a worker to
    answer: None when none does (and for terminated crawls, and failures that carry no counts).
    A running crawl's query waits :data:`RUNNING_QUERY_PATIENCE_S` for a loaded worker; with
    ``client``, only :data:`UNPOLLED_QUERY_PATIENCE_S` when no worker polls the crawl's queue.

    Raises:
        Unanswered: the crawl runs, and no worker answered its query in time.
    """
    desc = await handle.describe()
    if desc.status == WorkflowExecutionStatus.RUNNING:
        patience = RUNNING_QUERY_PATIENCE_S
        if client is not None and not await polled(client, desc.task_queue):
            patience = min(patience, UNPOLLED_QUERY_PATIENCE_S)
        try:
            return desc, await asyncio.wait_for(
                handle.query(STATS, result_type=CrawlStats, rpc_timeout=timedelta(seconds=patience + 5)), patience)
        except (asyncio.TimeoutError, RPCError) as err:
            # No poller at all (FAILED_PRECONDITION, "no poller seen for task queue recently") is
            # unanswered too: the crawl runs and no worker is there to say how far it is.
            if isinstance(err, RPCError) and err.status not in (RPCStatusCode.DEADLINE_EXCEEDED,
                                                                RPCStatusCode.FAILED_PRECONDITION):
                raise
            raise Unanswered(f"{handle.id} is running, but no worker answered it within {patience:.0f} s: "
                             "start one (`trawl worker`, or `trawl up`) with the same Temporal address and task "
                             "queue prefix, or wait if the workers are busy") from None
    if desc.status == WorkflowExecutionStatus.COMPLETED:
        return desc, await handle.result()
    if desc.status == WorkflowExecutionStatus.FAILED:
        return desc, (await crawl_failure(handle))[1]
    if desc.status == WorkflowExecutionStatus.CANCELED:
        try:
            return desc, await asyncio.wait_for(handle.query(STATS, result_type=CrawlStats), CLOSED_QUERY_PATIENCE_S)
        except (asyncio.TimeoutError, RPCError, WorkflowQueryFailedError):
            return desc, None
    return desc, None


def crawl_dict(crawl_id: str, desc: Any, stats: CrawlStats | None) -> dict[str, Any]:
    """``{id, status, stats}``: status is Temporal's (``RUNNING``, ``COMPLETED``, ...), but a
    cancelled crawl says ``CANCELLED``, as a cancelled job does."""
    return {"id": crawl_id, "status": crawl_status(desc), "stats": dataclasses.asdict(stats) if stats else None}


def crawl_status(desc: Any) -> str:
    """Temporal's status of a crawl's run (``RUNNING``, ``COMPLETED``, ...); ``CANCELLED`` for a
    cancelled one, as a cancelled job says."""
    return status_name(desc.status)


def status_name(status: WorkflowExecutionStatus | None) -> str:
    """Temporal's name of a workflow status, but ``CANCELLED`` as trawl spells a cancelled outcome
    (Temporal's ``CANCELED`` beside it read as two different things)."""
    name = status.name if status else "UNKNOWN"
    return "CANCELLED" if name == "CANCELED" else name


async def started_url(client: Client, handle: Any) -> str:
    """The URL an item workflow was started for: its memo's, else its input's (the items a crawl
    workflow starts carry no memo); "" when neither can be read."""
    try:
        desc = await handle.describe()
        url = await desc.memo_value("url", "")
        if url:
            return str(url)
        async for event in handle.fetch_history_events(page_size=1):
            payloads = event.workflow_execution_started_event_attributes.input.payloads
            if payloads:
                inp = (await client.data_converter.decode(payloads, [ItemInput]))[0]
                return str(getattr(inp, "url", "") or "")
            break
    except RPCError:
        pass
    return ""


async def crawl_failure(handle: Any) -> tuple[str | None, CrawlStats | None]:
    """Why a failed crawl failed (its failure's message), and its counts when the failure carries
    them (a source that could not be expanded): from the failure itself, no worker needed.
    ``(None, None)`` for a crawl that did not fail."""
    try:
        await handle.result()
    except WorkflowFailureError as err:
        cause = err.cause
        message = cause.message if isinstance(cause, ApplicationError) else str(cause or err)
        details = cause.details if isinstance(cause, ApplicationError) else ()
        return message, _stats_of(details[0]) if details and isinstance(details[0], dict) else None
    return None, None


def _stats_of(carried: dict[str, Any]) -> CrawlStats | None:
    known = {f.name for f in dataclasses.fields(CrawlStats)}
    try:
        return CrawlStats(**{k: v for k, v in carried.items() if k in known})
    except TypeError:  # not a crawl's counts
        return None


def visibility_literal(value: str) -> str:
    """A string literal for a visibility query."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def crawls_query(prefix: str) -> str:
    """The visibility query for this deployment's crawls (those on its task queue prefix's
    workflow queue; another deployment on the same server has its own), each listed once: a crawl
    that continued as new is its current run."""
    queue = visibility_literal(workflow_queue(prefix))
    return f"WorkflowType = '{CRAWL_WORKFLOW}' AND TaskQueue = {queue} AND ExecutionStatus != 'ContinuedAsNew'"
