"""One log line and the metrics for every activity attempt, whatever its outcome."""

from __future__ import annotations

from typing import Any

from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from activities.records import STAGE_OF, recorded

# Activities that run several stages and record each of them themselves (activities.records).
SELF_RECORDED = frozenset({"small_item"})


class _ActivityObserver(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        activity_type = activity.info().activity_type
        if activity_type in SELF_RECORDED:
            return await self.next.execute_activity(input)
        with recorded(STAGE_OF.get(activity_type, activity_type), input.args[0] if input.args else None) as record:
            return record(await self.next.execute_activity(input))


class ObservingInterceptor(Interceptor):
    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ActivityObserver(next)
