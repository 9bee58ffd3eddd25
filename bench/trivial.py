"""The yardstick of bench/scale.py: a trivial workflow of four no-op activities, in a module of its
own so the workflow sandbox can import it, as it imports any workflow run the default way."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow


@activity.defn
async def noop(step: int) -> int:
    return step


@workflow.defn
class TrivialWorkflow:
    @workflow.run
    async def run(self) -> None:
        for step in range(4):
            await workflow.execute_activity(noop, step, start_to_close_timeout=timedelta(seconds=30))


@workflow.defn
class OneActivityWorkflow:
    """A tiny item's shape: one activity (bench/activity_kinds.py)."""

    @workflow.run
    async def run(self) -> None:
        await workflow.execute_activity(noop, 0, start_to_close_timeout=timedelta(seconds=30))


@workflow.defn
class OneLocalActivityWorkflow:
    """The same as a local activity: run by the workflow's own worker within its workflow task, no
    activity task through the server (bench/activity_kinds.py)."""

    @workflow.run
    async def run(self) -> None:
        await workflow.execute_local_activity(noop, 0, start_to_close_timeout=timedelta(seconds=30))
