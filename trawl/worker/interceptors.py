"""What a worker adds around its work: one log line and the metrics for every activity attempt,
whatever its outcome; and failures told by their class and message (:class:`TrawlFailureConverter`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import temporalio.api.failure.v1
from temporalio import activity
from temporalio.converter import DataConverter, DefaultFailureConverter, PayloadConverter
from temporalio.exceptions import ApplicationError
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from trawl.activities.records import STAGE_OF, recorded
from trawl.contracts import EXPECTED_FAILURES

# Activities that run several stages and record each of them themselves (trawl.activities.records).
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


class TrawlFailureConverter(DefaultFailureConverter):
    """The SDK's failure converter, without the stack trace of an expected, classified failure.

    A 404 or a login wall (an ``ApplicationError`` whose type is in ``EXPECTED_FAILURES``, raised
    by an activity or by the item workflow) is told in full by its class and message; its stack
    trace is the SDK's own frames, noise in the Web UI and the history. ``internal_error``, other
    types and every other exception keep theirs. Only the encoding side differs from the SDK's
    default, so clients and workers with either converter read each other's failures.
    """

    def to_failure(self, exception: BaseException, payload_converter: PayloadConverter,
                   failure: temporalio.api.failure.v1.Failure) -> None:
        super().to_failure(exception, payload_converter, failure)
        if (isinstance(exception, ApplicationError) and exception.type in EXPECTED_FAILURES
                and failure.HasField("application_failure_info")):
            failure.stack_trace = ""


def trawl_data_converter(base: DataConverter | None = None) -> DataConverter:
    """``base`` (the SDK's default data converter) with :class:`TrawlFailureConverter`."""
    return dataclasses.replace(base or DataConverter.default, failure_converter_class=TrawlFailureConverter)


DATA_CONVERTER = trawl_data_converter()
