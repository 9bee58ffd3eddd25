"""Workflows for the sandbox runner's tests (trawl.worker.sandbox): one hands its input to an
activity and returns the activity's answer (payloads both ways, through a command); one reads a
random number, which the sandbox refuses. A module of their own: the sandbox validates the whole
module a workflow lives in."""

from __future__ import annotations

import random
from datetime import timedelta

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    from trawl.contracts import ItemResult


@activity.defn
async def stamp(result: ItemResult) -> ItemResult:
    result.error = f"seen by {activity.info().activity_type}"
    return result


@workflow.defn
class Relays:
    @workflow.run
    async def run(self, result: ItemResult) -> ItemResult:
        return await workflow.execute_activity(stamp, result, start_to_close_timeout=timedelta(seconds=30))


@workflow.defn
class Gambles:
    @workflow.run
    async def run(self) -> float:
        return random.random()
