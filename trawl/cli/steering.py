"""One item or crawl at a time: ``status``, ``pause``, ``resume``, ``cancel``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from trawl.cli.common import session, workflow_id_for
from trawl.starter.embedded import NothingToRead
from trawl.cli.output import (
    EXIT_FAILED_ITEMS,
    CommandError,
    Rate,
    StatusLine,
    fitted_progress_bar,
    is_terminal,
    progress_bar,
    result_line,
)
from trawl.formatting import eta_seconds
from trawl.starter.client import cancel_crawl, item_handle, item_progress, item_result
from trawl.starter.views import result_dict, started_url, status_name
from trawl.platforms.registry import build_registry
from trawl.settings import Settings
from trawl.storage.blobs import open_blob_store

FOLLOW_EVERY_S = 0.5
MEASURE_EVERY_S = 1.0
MEASURE_TRIES = 3  # a one-off look takes this many more samples, the speed over all of them
QUERY_WAIT_S = 10.0


def _remaining(progress: dict[str, Any]) -> int | None:
    total = progress["bytes_total"]
    return max(0, total - progress["bytes_done"]) if total else None


def _downloading(progress: dict[str, Any]) -> bool:
    return progress["stage"] == "download" and not progress["paused"]


NO_WORKER = ("no worker answers for it now (none polls its queues): it goes on when one does; start "
             "`trawl worker` or `trawl up`, or run the same `trawl crawl` again")


class NoWorker(Exception):
    """A running item's progress is a query, and no worker is there to answer it."""


async def progress_of(client: Client, handle: Any) -> dict[str, Any]:
    """``item_progress``, for an item just described: a query that fails or times out now means no
    worker answers (the server did answer the description), unless the server went away."""
    try:
        return await asyncio.wait_for(item_progress(client, handle), QUERY_WAIT_S)
    except (WorkflowQueryFailedError, asyncio.TimeoutError):
        raise NoWorker from None
    except RPCError as err:
        if err.status == RPCStatusCode.UNAVAILABLE:
            raise
        raise NoWorker from None


async def measured_progress(client: Client, handle: Any, *, every: float = MEASURE_EVERY_S,
                            clock: Callable[[], float] = time.monotonic,
                            look: Callable[[Client, Any], Awaitable[dict[str, Any]]] = progress_of,
                            ) -> tuple[dict[str, Any], float | None]:
    """A running item's progress and, while it downloads, its speed over a few samples a second
    apart: all of them, since the bytes can move in steps (heartbeats a second apart) and the
    first step's size per second is no speed."""
    rate = Rate()
    progress = await look(client, handle)
    rate.update(clock(), progress["bytes_done"])
    for _ in range(MEASURE_TRIES if _downloading(progress) else 0):
        await asyncio.sleep(every)
        progress = await look(client, handle)
        rate.update(clock(), progress["bytes_done"])
        if not _downloading(progress):
            break
    return progress, rate.speed


async def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    """An item's workflow; without a server (none runs, and this command starts none) or once the
    server has forgotten the workflow, what the catalog and the partial files say of it."""
    registry = build_registry(settings.platforms)
    workflow_id = workflow_id_for(registry, args.id)
    try:
        async with session(settings, worker=False) as client:
            return await _status(args, settings, client, workflow_id)
    except (NothingToRead, _Forgotten) as err:
        from trawl.cli.offline_status import offline_status

        return offline_status(args, settings, registry, workflow_id, str(err))


class _Forgotten(Exception):
    """The server does not know the workflow (never started, or past its retention)."""


async def _status(args: argparse.Namespace, settings: Settings, client: Client, workflow_id: str) -> int:
    handle = item_handle(client, workflow_id)
    try:
        desc = await handle.describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise _Forgotten(f"no item {args.id!r}: {err.message}") from None
        raise CommandError(f"no item {args.id!r}: {err.message}") from None
    live = is_terminal(sys.stdout) and not args.json and not args.once
    line = StatusLine(sys.stdout)
    rate = Rate(steady=True)
    no_worker = False
    while live and desc.status == WorkflowExecutionStatus.RUNNING:
        try:
            progress = await progress_of(client, handle)
        except NoWorker:
            no_worker = True
            break
        speed = rate.update(time.monotonic(), progress["bytes_done"]) if _downloading(progress) else None
        line.show(fitted_progress_bar(progress, line.columns(), speed,
                                      rate.eta(_remaining(progress)) if speed is not None else None))
        await asyncio.sleep(FOLLOW_EVERY_S)
        desc = await handle.describe()
    if live and line.text:
        print()
    record: dict[str, Any] = {"id": handle.id, "status": status_name(desc.status)}
    result = None
    speed = None
    if desc.status == WorkflowExecutionStatus.RUNNING:
        try:
            if no_worker:
                raise NoWorker
            if args.json:
                record["progress"] = await progress_of(client, handle)
            else:
                record["progress"], speed = await measured_progress(client, handle)
        except NoWorker:
            record["progress"], record["note"] = None, NO_WORKER
    elif desc.status is not None:
        result = await item_result(handle, "")
        result.url = result.url or await started_url(client, handle)
        blobs = open_blob_store(settings)
        record["result"] = result_dict(result, blobs)
        blobs.close()
    code = EXIT_FAILED_ITEMS if result is not None and result.outcome == "failed" else 0  # as `trawl crawl`
    if args.json:
        print(json.dumps(record))
        return code
    print(f"{record['id']}: {record['status'].lower()}")
    if record.get("note"):
        print(f"running, but {record['note']}")
    if record.get("progress"):
        progress = record["progress"]
        print(progress_bar(progress, speed=speed, eta=eta_seconds(_remaining(progress), speed)))
    if result is not None:
        print(result_line(result))
    return code


async def _finished_as(client: Client, handle: Any, desc: Any) -> str:
    """How a workflow that is no longer running ended: an item's outcome, else its status."""
    status = status_name(desc.status).lower()
    if handle.id.startswith("crawl-"):
        return status
    try:
        return (await item_result(item_handle(client, handle.id), "")).outcome
    except RPCError:
        return status


async def cmd_signal(args: argparse.Namespace, settings: Settings) -> int:
    dropped: str | None = None
    async with session(settings, worker=False) as client:
        handle = client.get_workflow_handle(workflow_id_for(build_registry(settings.platforms), args.id))
        try:
            desc = await handle.describe()
        except RPCError as err:
            raise CommandError(f"no item or crawl {args.id!r}: {err.message}") from None
        try:
            if desc.status != WorkflowExecutionStatus.RUNNING:
                raise LookupError
            if args.command == "cancel":
                # Temporal cancellation: an item or a crawl (which cancels its items) ends Canceled.
                await (cancel_crawl(handle) if handle.id.startswith("crawl-") else handle.cancel())
                from trawl.cli.dropping import drop_partials

                dropped = await drop_partials(client, settings, handle)
            else:
                await handle.signal(args.command)
        except (LookupError, RPCError) as err:
            if isinstance(err, RPCError) and "already completed" not in err.message:
                raise CommandError(f"{args.id}: {err.message}") from None
            if isinstance(err, RPCError):
                desc = await handle.describe()
            raise CommandError(f"{handle.id} had already finished ({await _finished_as(client, handle, desc)}); "
                               f"nothing to {args.command}", EXIT_FAILED_ITEMS) from None
    print(f"{args.command}: {handle.id}" + (f" ({dropped})" if dropped else ""))
    return 0
