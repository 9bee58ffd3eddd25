"""The workers' clean-up: partial files that no running item needs any more, the frontiers of
crawls that ended, abandoned uploads in the object store, and blobs that attempts stored and
never recorded (orphans); and the catch-up of search over the extras stored before it read them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from trawl.extras_text import MAX_BODY_BYTES
from trawl.logs import get_logger
from trawl.workdirs import idle_work_dirs, remove_work_dir

from trawl.storage.blobs import BlobStore, read_blob, reclaim_uploads
from trawl.storage.orphans import reclaim_announced

if TYPE_CHECKING:
    from trawl.storage.catalog import Catalog

log = get_logger("trawl.cleanup")
MAX_INTERVAL_S = 600.0
# How often a worker looks for catalog tables whose statistics PostgreSQL should read again (those
# autovacuum does not look after: Catalog.analyze_stale).
STATISTICS_INTERVAL_S = 60.0


async def clean_work_dir(client: Client, work_dir: Path, keep: timedelta) -> list[str]:
    """Remove the partial files of items that ended (failed) at least ``keep`` ago.

    A directory idle for ``keep`` is removed when its workflow is closed or unknown to the server;
    a running one (paused, or waiting for a retry) keeps its bytes. Directories made before owners
    were recorded are left alone. Returns the workflow ids whose files were removed.
    """
    removed: list[str] = []
    for work in await asyncio.to_thread(lambda: list(idle_work_dirs(work_dir, keep.total_seconds(), time.time()))):
        if work.workflow_id is None:
            continue
        try:
            described = await client.get_workflow_handle(work.workflow_id).describe()
            if described.status == WorkflowExecutionStatus.RUNNING:
                continue
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                continue  # the server cannot tell now: ask again next round
        await asyncio.to_thread(remove_work_dir, work.path)
        removed.append(work.workflow_id)
        log.info("removed partial files of an ended item", task_id=work.workflow_id, stage="cleanup",
                 idle_s=int(work.idle_s))
    return removed


async def clean_frontiers(client: Client, catalog: Catalog, keep: timedelta) -> list[str]:
    """Remove the frontiers of crawls that ended, once their last entry is ``keep`` old.

    The age matters: a starter writes a crawl's frontier before the crawl exists, so a frontier the
    server does not know is an ended crawl's (or an abandoned start's) only once it is old. A
    running crawl (continued as new or not) keeps its frontier. Returns the crawl ids removed.
    """
    removed: list[str] = []
    idle = await asyncio.to_thread(catalog.frontier_idle_crawls, datetime.now(UTC) - keep)
    for crawl_id in idle:
        try:
            described = await client.get_workflow_handle(crawl_id).describe()
            if described.status == WorkflowExecutionStatus.RUNNING:
                continue
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                continue  # the server cannot tell now: ask again next round
        entries = await asyncio.to_thread(catalog.frontier_drop, crawl_id)
        removed.append(crawl_id)
        log.info("removed the frontier of an ended crawl", task_id=crawl_id, stage="cleanup", entries=entries)
    return removed


async def clean_uploads(blobs: BlobStore, abandon_after: timedelta) -> int:
    """Abort the object store's uploads begun ``abandon_after`` ago or more (a worker killed
    mid-upload, an abort that could not reach the store); how many this worker aborted."""
    aborted = await asyncio.to_thread(reclaim_uploads, blobs, abandon_after)
    for upload in aborted:
        log.info("aborted an abandoned upload", stage="cleanup", key=upload.key, bytes=upload.size,
                 parts=upload.parts, started=upload.started.isoformat())
    return len(aborted)


async def clean_orphans(catalog: Catalog, blobs: BlobStore, abandon_after: timedelta) -> int:
    """Remove the blobs that commit attempts announced ``abandon_after`` ago or more and never
    recorded (trawl.storage.orphans); how many this worker removed."""
    removed = await asyncio.to_thread(reclaim_announced, catalog, blobs, abandon_after)
    for blob in removed:
        log.info("removed a blob no item refers to", stage="cleanup", key=blob.key, bytes=blob.size,
                 stored=blob.modified.isoformat())
    return len(removed)


async def index_pending_extras(catalog: Catalog, blobs: BlobStore, lines: int) -> int:
    """Read into search's lines the extras stored before search read them (migration 0009's
    pending pairs), from the blob store, at most ``lines`` of each; how many pairs were read."""
    return await asyncio.to_thread(catalog.index_pending_extras, lambda key: read_blob(blobs, key, MAX_BODY_BYTES),
                                   lines)


async def keep_statistics(catalog: Catalog, interval: float = STATISTICS_INTERVAL_S) -> None:
    """Every ``interval``, :meth:`Catalog.analyze_stale` (PostgreSQL; on SQLite it ends at once);
    says once, at the first tables it reads, that autovacuum does not look after them."""
    told = False
    while True:
        try:
            stale = await asyncio.to_thread(catalog.analyze_stale)
        except Exception as exc:  # noqa: BLE001 - statistics must never stop a worker
            log.warning("reading the catalog's statistics failed", error=str(exc))
        else:
            if stale is None:
                return
            if stale and not told:
                log.warning("autovacuum does not look after these tables of the catalog's PostgreSQL: the workers "
                            "read their statistics themselves (turn autovacuum on)", tables=stale)
                told = True
        await asyncio.sleep(interval)


async def clean_periodically(client: Client, work_dir: Path, keep: timedelta, catalog: Catalog | None = None,
                             blobs: BlobStore | None = None, abandon_after: timedelta | None = None,
                             extras_lines: int | None = None) -> None:
    """Run :func:`clean_work_dir` (and :func:`clean_frontiers`, :func:`clean_uploads`,
    :func:`clean_orphans`, :func:`index_pending_extras` with ``extras_lines``) now and then every
    ``keep / 4`` (at most ten minutes)."""
    interval = max(1.0, min(keep.total_seconds() / 4, MAX_INTERVAL_S))
    parts: list[Callable[[], Awaitable[object]]] = [lambda: clean_work_dir(client, work_dir, keep)]
    if catalog is not None:
        parts.append(lambda: clean_frontiers(client, catalog, keep))
    if blobs is not None and abandon_after is not None:
        parts.append(lambda: clean_uploads(blobs, abandon_after))
        if catalog is not None:
            parts.append(lambda: clean_orphans(catalog, blobs, abandon_after))
    if catalog is not None and blobs is not None and extras_lines is not None:
        # Once after an upgrade it may read many blobs: here, not before the worker polls, so a
        # worker starts at once; search finds those extras when it is done. Later rounds find none.
        parts.append(lambda: index_pending_extras(catalog, blobs, extras_lines))
    while True:
        for part in parts:  # one failing (the store down, say) does not hold up the others
            try:
                await part()
            except Exception as exc:  # noqa: BLE001 - a clean-up must never stop a worker
                log.warning("clean-up failed", error=str(exc))
        await asyncio.sleep(interval)
