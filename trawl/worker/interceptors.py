"""What a worker adds around its work: one log line and the metrics for every activity attempt,
whatever its outcome; and failures told by their class and message (:class:`TrawlFailureConverter`)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

import temporalio.api.failure.v1
from temporalio import activity
from temporalio.converter import DataConverter, DefaultFailureConverter, PayloadConverter
from temporalio.exceptions import ApplicationError
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from trawl.activities.host import HostRoom
from trawl.activities.records import STAGE_OF, describe, is_last_attempt, recorded
from trawl.notify import NEEDS_PERSON, Notifier
from trawl.proxies import ROUTE
from trawl.contracts import EXPECTED_FAILURES

# Activities that run several stages and record each of them themselves (trawl.activities.records).
SELF_RECORDED = frozenset({"small_item"})


class _ActivityObserver(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, notifier: Notifier | None) -> None:
        super().__init__(next)
        self.notifier = notifier

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        # Its requests take the platform's turn among net.proxies (copied into a sync activity's thread).
        route = ROUTE.set(describe(input.args[0] if input.args else None).get("platform") or "")
        try:
            return await self._observed(input)
        except ApplicationError as err:
            info = activity.info()
            if self.notifier is not None and err.type in NEEDS_PERSON and is_last_attempt(err, info):
                # a failure a person must fix (cookies, an account, an address to allow): the webhooks hear of it
                self.notifier.emit("needs_person", {
                    "workflow_id": info.workflow_id, "stage": STAGE_OF.get(info.activity_type, info.activity_type),
                    "error_class": err.type, "message": err.message, **describe(input.args[0] if input.args else None)})
            raise
        finally:
            ROUTE.reset(route)

    async def _observed(self, input: ExecuteActivityInput) -> Any:
        activity_type = activity.info().activity_type
        if activity_type in SELF_RECORDED:
            return await self.next.execute_activity(input)
        with recorded(STAGE_OF.get(activity_type, activity_type), input.args[0] if input.args else None) as record:
            return record(await self.next.execute_activity(input))


class ObservingInterceptor(Interceptor):
    def __init__(self, notifier: Notifier | None = None) -> None:
        self.notifier = notifier

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ActivityObserver(next, self.notifier)


class BusyInterceptor(Interceptor):
    """Tells ``on_busy(True)`` when an activity starts with none running, ``on_busy(False)`` when
    the last running one ends: the background worker keeps its server from stopping while busy."""

    def __init__(self, on_busy: Callable[[bool], None]) -> None:
        self.on_busy = on_busy
        self.running = 0
        self.guard = threading.Lock()

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _BusyActivity(next, self)

    def change(self, by: int) -> None:
        with self.guard:
            self.running += by
            if self.running == (1 if by > 0 else 0):
                self.on_busy(by > 0)


class _BusyActivity(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, root: BusyInterceptor) -> None:
        super().__init__(next)
        self.root = root

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        self.root.change(+1)
        try:
            return await self.next.execute_activity(input)
        finally:
            self.root.change(-1)


class HostWorkInterceptor(Interceptor):
    """Counts the activities running on a host's own queue into its
    :class:`trawl.activities.host.HostRoom` (put on that queue's worker only)."""

    def __init__(self, room: HostRoom) -> None:
        self.room = room

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _HostWork(next, self.room)


class _HostWork(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, room: HostRoom) -> None:
        super().__init__(next)
        self.room = room

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        self.room.began(activity.info().workflow_id)
        try:
            return await self.next.execute_activity(input)
        finally:
            self.room.ended()


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
