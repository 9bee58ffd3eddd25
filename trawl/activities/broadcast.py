"""record_broadcast: the run of a URL that found a live broadcast hands its recording to the
broadcast's own workflow (one per broadcast, its id naming it) and waits for its result.

However many URLs lead to one broadcast (a room's short and long ids, a b23.tv link, a crawl and
a watch at once), they start or join the same workflow (``USE_EXISTING``), so it is recorded
once; a broadcast recorded to its end already is not recorded again (its result is the answer),
one whose recording failed or was cancelled may be.
"""

from __future__ import annotations

import asyncio

from temporalio import activity
from temporalio.client import Client, WorkflowFailureError
from temporalio.common import SearchAttributePair, TypedSearchAttributes, WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, CancelledError, WorkflowAlreadyStartedError

from trawl.contracts import CRAWL_ID, ITEM_WORKFLOW, PLATFORM, BroadcastInput, ItemResult

WAIT_BEAT = 10.0  # seconds between heartbeats while the recording goes on


class BroadcastActivities:
    def __init__(self, client: Client) -> None:
        self.client = client

    @activity.defn(name="record_broadcast")
    async def record_broadcast(self, inp: BroadcastInput) -> ItemResult:
        """The broadcast's recording, started or joined, to its result (a failed one's as its
        failure carries it)."""
        attrs = [SearchAttributePair(PLATFORM, inp.item.platform)]
        if inp.item.crawl_id:
            attrs.append(SearchAttributePair(CRAWL_ID, inp.item.crawl_id))
        try:
            handle = await self.client.start_workflow(
                ITEM_WORKFLOW, inp.item, id=inp.workflow_id, task_queue=inp.task_queue, result_type=ItemResult,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
                static_summary=inp.summary[:200] or None, search_attributes=TypedSearchAttributes(attrs),
                memo={"url": inp.item.url})
        except WorkflowAlreadyStartedError:  # recorded to its end already: that is the answer
            handle = self.client.get_workflow_handle(inp.workflow_id, result_type=ItemResult)
        waiting = asyncio.ensure_future(handle.result())
        try:
            while True:
                done, _ = await asyncio.wait({waiting}, timeout=WAIT_BEAT)
                if done:
                    break
                activity.heartbeat()
            return waiting.result()
        except WorkflowFailureError as err:
            cause = err.cause
            if isinstance(cause, ApplicationError) and cause.details and isinstance(cause.details[0], dict):
                return ItemResult.from_details(cause.details[0], inp.item.url)
            if isinstance(cause, CancelledError):
                return ItemResult(inp.workflow_id, inp.item.url, "cancelled")
            return ItemResult(inp.workflow_id, inp.item.url, "failed", error_class="internal_error",
                              error=str(cause or err))
        finally:
            waiting.cancel()
