"""ExtrasRefreshWorkflow: a committed item's extras fetched again, as a dated snapshot.

Comments and danmaku grow: a refresh stores each extra's files anew under ``<name>@<snapshot>``
(``comments@20261205T130800Z``), the run's start time, beside the earlier ones and never over
them. The item is read from the catalog (``plan_extras``: its ids are in its metadata), then each
extra runs in its own ``fetch_extra`` activity under the item options' ``extras`` policy, as after
a commit; one that keeps failing is told in the result (the snapshot simply lacks it).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from trawl.activities.extras import ExtraActivities
    from trawl.contracts import (
        EXTRAS_WORKFLOW, ExtraInput, ExtraResult, PlanInput, PlanResult, RefreshInput, RefreshResult, StagePolicy,
        StoredExtra)
    # The sandbox resolves the contracts' field types in the modules it has seen imported.
    from trawl.models import Asset, MoreItem, Resolved  # noqa: F401

SNAPSHOT_FORMAT = "%Y%m%dT%H%M%SZ"
REASON = 300  # a failed extra's reason as the result carries it


@workflow.defn(name=EXTRAS_WORKFLOW)
class ExtrasRefreshWorkflow:
    @workflow.run
    async def run(self, inp: RefreshInput) -> RefreshResult:
        policy = inp.options.extras or StagePolicy()
        queue = inp.options.fetch_queue(inp.platform)
        plan: PlanResult = await workflow.execute_activity_method(
            ExtraActivities.plan_extras, PlanInput(inp.canonical_key, inp.extras), task_queue=queue,
            start_to_close_timeout=timedelta(minutes=1), schedule_to_close_timeout=timedelta(minutes=30),
            retry_policy=inp.options.fetch.retry_policy())
        snapshot = workflow.now().strftime(SNAPSHOT_FORMAT)

        async def one(name: str) -> ExtraResult:
            try:
                return await workflow.execute_activity_method(
                    ExtraActivities.fetch_extra,
                    ExtraInput(workflow.info().workflow_id, plan.resolved, name,
                               stage_attempts=policy.maximum_attempts, snapshot=snapshot),
                    task_queue=queue, start_to_close_timeout=policy.start_to_close,
                    schedule_to_close_timeout=policy.schedule_to_close,
                    heartbeat_timeout=timedelta(seconds=inp.options.heartbeat_timeout_s),
                    retry_policy=policy.retry_policy())
            except ActivityError as err:
                cause = err.cause
                error_class = cause.type if isinstance(cause, ApplicationError) and cause.type else "internal_error"
                reason = cause.message if isinstance(cause, ApplicationError) else str(cause or err)
                return ExtraResult(name, [StoredExtra(f"{name}@{snapshot}", "", missing=error_class,
                                                      reason=reason[:REASON])])

        done = await asyncio.gather(*(one(name) for name in plan.extras))
        return RefreshResult(inp.canonical_key, snapshot, [file for extra in done for file in extra.files])
