"""``trawl cancel``'s clean-up: a cancelled item's partial files go, as the docs promise.

The item workflow removes them itself as it ends cancelled (its ``discard`` activity, on the host
that holds them), so with a worker running the command only waits a moment for that. With no
worker polling the deployment's queues the cancel waits in Temporal until one runs, and the
files would stay until then; nothing can be writing them (a download runs in a worker), so the
command removes them from this host's work directory itself. When a worker that polls has not
ended the item within :data:`CANCEL_WAIT_S`, the command leaves the files to it: that worker may
be writing them now. A crawl with no worker has its running items cancelled one by one (its
own cancel would reach them only through a worker), and their files removed alike.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

from trawl.contracts import ITEM_WORKFLOW
from trawl.formatting import human_size
from trawl.settings import Settings
from trawl.starter.client import pollers
from trawl.starter.views import visibility_literal
from trawl.workdirs import remove_work_dir, workdir_name

CANCEL_WAIT_S = 10.0  # a polled item's own clean-up is waited for this long
WAIT_EVERY_S = 0.2
CRAWL_ITEMS_CANCELLED = 10_000  # a crawl's running items cancelled one by one when no worker runs


def _size(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())


def remove_partials(settings: Settings, workflow_ids: list[str]) -> int:
    """Remove the work directories of ``workflow_ids`` on this host; the bytes they held."""
    removed = 0
    for workflow_id in workflow_ids:
        directory = settings.work_dir / workdir_name(workflow_id)
        if directory.is_dir():
            removed += _size(directory)
            remove_work_dir(directory)
    return removed


async def _closed_within(handle: Any, seconds: float) -> bool:
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        try:
            if (await handle.describe()).status != WorkflowExecutionStatus.RUNNING:
                return True
        except RPCError:
            return False
        if asyncio.get_running_loop().time() >= deadline:
            return False
        await asyncio.sleep(WAIT_EVERY_S)


async def _running_items(client: Client, crawl_id: str) -> list[str]:
    query = (f"WorkflowType = '{ITEM_WORKFLOW}' AND CrawlId = {visibility_literal(crawl_id)} "
             "AND ExecutionStatus = 'Running'")
    return [e.id async for e in client.list_workflows(query, limit=CRAWL_ITEMS_CANCELLED, page_size=1000)]


async def drop_partials(client: Client, settings: Settings, handle: Any) -> str | None:
    """After ``handle``'s cancel was requested: make sure its partial files (a crawl's: its running
    items') are gone from this host, or say who removes them; a line to print, or None."""
    crawl = handle.id.startswith("crawl-")
    if not await pollers(client, settings):
        ids = [handle.id]
        if crawl:
            ids = await _running_items(client, handle.id)
            for item in ids:
                try:
                    await client.get_workflow_handle(item).cancel()
                except RPCError:
                    pass  # ended meanwhile
        removed = remove_partials(settings, ids)
        files = f"removed {human_size(removed)} of partial files here" if removed else "no partial files here"
        if crawl:
            return (f"no worker runs: cancelled its {len(ids)} running item(s) too, which end when a worker next "
                    f"runs; {files}")
        return f"no worker runs: it ends when one next does; {files}"
    if crawl:
        return None  # a worker runs the crawl: it cancels its items, each of which removes its own files
    if await _closed_within(handle, CANCEL_WAIT_S):
        leftover = remove_partials(settings, [handle.id])  # its clean-up ran on another host: these are stale
        return f"removed its partial files left here ({human_size(leftover)})" if leftover else None
    return "the worker running it removes its partial files as it ends it"
