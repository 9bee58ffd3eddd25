"""What the command modules share: a Temporal session, stop signals, naming an item by id or URL."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from temporalio.client import Client

from starter.cli.output import CommandError, StatusLine
from starter.client import connect, ensure_search_attributes, live_workers
from starter.embedded import temporal_server
from trawl.logs import get_logger
from trawl.platforms.registry import Registry
from trawl.settings import Settings
from workers.main import running_worker

if TYPE_CHECKING:
    from trawl.storage.catalog import Catalog

log = get_logger("trawl.cli")


def open_catalog(settings: Settings, *, schema: bool = True) -> Catalog:
    """The catalog, for a command that reads or writes it; its tables are made or migrated first
    unless ``schema`` is False (a catalog the same command's crawl already used). SQLAlchemy
    loads here, so the commands that never open the catalog start without it."""
    from trawl.storage.catalog import Catalog

    catalog = Catalog(settings.catalog_url)
    if schema:
        catalog.create_schema()
    return catalog


def connect_failed(err: BaseException) -> bool:
    """The SDK's way of saying nothing answered at the address (a RuntimeError, not an RPCError)."""
    return isinstance(err, RuntimeError) and "Failed client connect" in str(err)


def unreachable_error(settings: Settings, err: BaseException) -> CommandError:
    reason = str(err)
    for known in ("Connection refused", "timed out", "No route to host", "Name or service not known",
                  "failed to lookup address"):
        if known in reason:
            reason = known.lower()
            break
    else:
        reason = reason.removeprefix("Failed client connect: ")[:120]
    return CommandError(f"no Temporal server answers at {settings.temporal.address} ({reason}): start one with "
                        "`trawl server` (or `trawl up`), or set temporal.address (TRAWL_TEMPORAL__ADDRESS) to yours")


async def connect_or_explain(settings: Settings, *, metrics: bool = False) -> Client:
    """``connect``, with an unreachable server turned into a :class:`CommandError`."""
    try:
        return await connect(settings, metrics=metrics)
    except RuntimeError as err:
        if connect_failed(err):
            raise unreachable_error(settings, err) from None
        raise


@contextlib.asynccontextmanager
async def session(settings: Settings, *, worker: bool, registry: Registry | None = None,
                  metrics: bool = False, one_shot: bool = False) -> AsyncIterator[Client]:
    """A Temporal client (starting the embedded server if needed) and, optionally, a worker.

    A ``one_shot`` command (crawl, fsck --repair) runs its own worker only when none of the
    deployment's workers polls its queues: workers on one queue must be interchangeable, and the
    running ones carry the operator's settings (net policy, limits, platforms), which a client's
    settings may not widen or change.
    """
    with temporal_server(settings) as settings:  # this data directory's server may listen elsewhere
        client = await connect_or_explain(settings, metrics=metrics)
        await ensure_search_attributes(client, settings.temporal.namespace)
        if worker and one_shot:
            running = await live_workers(client, settings)
            if running:
                shown = ", ".join(running[:3]) + (f" and {len(running) - 3} more" if len(running) > 3 else "")
                print(f"trawl: the workers already polling the {settings.temporal.task_queue_prefix!r} queues "
                      f"({shown}) do this work, under their own settings; no worker started here",
                      file=sys.stderr)
                worker = False
        if worker:
            async with running_worker(client, settings, registry, one_shot=one_shot):
                yield client
        else:
            yield client


def workflow_id_for(registry: Registry, ident: str) -> str:
    """An item's workflow id from what a person typed: the id itself or one of the item's URLs."""
    if ident.startswith(("http://", "https://")):
        return registry.route(ident).workflow_id
    return ident


def stop_event() -> asyncio.Event:
    """Set by SIGINT or SIGTERM: the foreground commands' way to stop."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


class OutageNotice:
    """Says, at most every few seconds, that the server is unreachable while results are awaited."""

    EVERY_S = 10.0

    def __init__(self, address: str, line: StatusLine | None = None) -> None:
        self.address = address
        self.line = line  # a terminal's live status line, kept below the notice
        self.last = 0.0

    def unreachable(self, message: str) -> None:
        now = time.monotonic()
        if now - self.last < self.EVERY_S:
            return
        self.last = now
        if sys.stderr.isatty():
            text = f"trawl: Temporal server at {self.address} unreachable, still waiting ({message})"
            if self.line is not None:
                self.line.print(text, file=sys.stderr)
            else:
                print(text, file=sys.stderr, flush=True)
        else:
            log.warning("temporal server unreachable, still waiting", address=self.address, error=message)
