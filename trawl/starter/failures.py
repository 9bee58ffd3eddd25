"""Failed items, named: each with its URL, error class and message, the most recent first.

Shared by ``trawl crawl-status`` (one crawl's failures) and the web page's activity (the
deployment's). They are found by their ``Outcome`` search attribute and read from their results:
a finished item's result is in Temporal's history, so no worker needs to answer.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError

from trawl.contracts import ITEM_WORKFLOW, ItemResult
from trawl.starter.client import REFUSAL_MESSAGE_CHARS, item_result
from trawl.starter.views import visibility_literal
from trawl.text import shown

FAILED_SHOWN = 20  # failed items named, most recent first
RESULT_WAIT_S = 10.0  # a closed item's result is read from its history; a slow server is not waited on longer


def crawl_scope(crawl_id: str) -> str:
    """The visibility query for one crawl's items."""
    return f"WorkflowType = '{ITEM_WORKFLOW}' AND CrawlId = {visibility_literal(crawl_id)}"


async def failed_items(client: Client, scope: str, limit: int = FAILED_SHOWN) -> list[ItemResult]:
    """The failed items of ``scope`` (a visibility query naming item workflows), at most ``limit``,
    the most recent first; an item whose result cannot be read now is left out."""
    try:
        runs = [(execution.id, execution.run_id) async for execution in
                client.list_workflows(f"{scope} AND Outcome = 'failed'", limit=limit, page_size=limit)]
    except RPCError:
        return []

    async def one(workflow_id: str, run_id: str | None) -> ItemResult:
        # That run's result: a later run of the same id (the URL crawled again) may have committed it.
        handle = client.get_workflow_handle(workflow_id, run_id=run_id, result_type=ItemResult)
        async with asyncio.timeout(RESULT_WAIT_S):
            return await item_result(handle, "")

    found = await asyncio.gather(*(one(*run) for run in runs), return_exceptions=True)
    return [result for result in found if isinstance(result, ItemResult) and result.outcome == "failed"]


def failure_message(result: ItemResult) -> str:
    """The failure's message, escaped and bounded, for a line or a page."""
    return shown(result.error or "", REFUSAL_MESSAGE_CHARS)


def failed_dict(result: ItemResult) -> dict[str, Any]:
    return {"id": result.workflow_id, "url": result.url, "error_class": result.error_class,
            "error": failure_message(result), "canonical_key": result.canonical_key}
