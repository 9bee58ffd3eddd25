"""Running items a new crawl joins keep the options of their first run.

An item's workflow id is idempotent: crawling a URL again while its item runs joins that run
(``USE_EXISTING``) and its options, fixed in its input when it started (the crawl's ``-f`` and
``--limit-rate``), stay. A person who interrupted ``trawl crawl --limit-rate 500K`` and runs it
again without the flag would otherwise believe the new rate applies; :func:`kept_rates` finds
those items, from each running item's start input, so the command can say which rate applies.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterable
from dataclasses import dataclass

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

from trawl.contracts import ITEM_WORKFLOW, ItemInput
from trawl.errors import TrawlError
from trawl.formatting import format_speed
from trawl.platforms.registry import Registry
from trawl.starter.views import visibility_literal

URLS_CHECKED = 200  # the first URLs of a crawl whose running items are looked at (a request each)
AT_ONCE = 16


@dataclass(frozen=True)
class KeptRate:
    workflow_id: str
    limit_rate: int  # bytes per second the running item keeps; 0: the workers' download.limit_rate


async def _started_input(client: Client, workflow_id: str) -> ItemInput | None:
    """A running item's start input, or None when it is not running (or not an item run)."""
    handle = client.get_workflow_handle(workflow_id)
    desc = await handle.describe()
    if desc.status != WorkflowExecutionStatus.RUNNING:
        return None
    async for event in handle.fetch_history_events():
        payloads = event.workflow_execution_started_event_attributes.input.payloads
        if not payloads:
            return None
        [inp] = await client.data_converter.decode(payloads, [ItemInput])
        return inp if isinstance(inp, ItemInput) else None
    return None


async def kept_rates(client: Client, registry: Registry, urls: Iterable[str], limit_rate: int) -> list[KeptRate]:
    """The running items among the first :data:`URLS_CHECKED` of ``urls`` whose ``--limit-rate``
    (from their start) is not ``limit_rate``, the new crawl's; URLs that name no item are skipped."""
    ids: dict[str, None] = {}
    for url in itertools.islice(urls, URLS_CHECKED):
        try:
            ids[registry.route(url).workflow_id] = None
        except (TrawlError, ValueError):
            continue  # refused or a listing: the crawl says so itself
    if not ids:
        return []
    # One visibility query finds which of them run (an earlier run's items were listed long ago),
    # rather than a request per URL: a crawl of 200 URLs paid 180 ms for those on a loaded machine.
    query = (f"WorkflowType = '{ITEM_WORKFLOW}' AND ExecutionStatus = 'Running' AND WorkflowId IN "
             f"({', '.join(visibility_literal(i) for i in ids)})")
    try:
        running = [e.id async for e in client.list_workflows(query, limit=len(ids), page_size=len(ids))]
    except RPCError:
        return []  # no answer now: the crawl goes on, silent on this as before
    slots = asyncio.Semaphore(AT_ONCE)

    async def look(workflow_id: str) -> KeptRate | None:
        async with slots:
            try:
                inp = await _started_input(client, workflow_id)
            except RPCError:
                return None  # ended meanwhile
        if inp is None or inp.options.limit_rate == limit_rate:
            return None
        return KeptRate(workflow_id, inp.options.limit_rate)

    return [kept for kept in await asyncio.gather(*(look(i) for i in running)) if kept is not None]


def kept_rates_line(kept: list[KeptRate], limit_rate: int) -> str:
    """What the command says of them: which rate applies, and how to change it."""
    def rate(value: int) -> str:
        return format_speed(value) if value else "none (the workers' download.limit_rate)"

    rates = sorted({k.limit_rate for k in kept})
    named = ", ".join(k.workflow_id for k in kept[:3]) + (f" and {len(kept) - 3} more" if len(kept) > 3 else "")
    one = len(kept) == 1
    return (f"{len(kept)} item{'' if one else 's'} already running ({named}) keep{'s' if one else ''} the "
            f"--limit-rate of {'its' if one else 'their'} first run, {' or '.join(rate(r) for r in rates)}, "
            f"not this run's {rate(limit_rate)}: a running item's options do not change; `trawl cancel` "
            f"{'it' if one else 'them'} and crawl again for this run's")
