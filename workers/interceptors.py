"""One log line per activity attempt, whatever its outcome."""

from __future__ import annotations

import time
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from trawl.logs import get_logger

log = get_logger("trawl.activity")


def _describe(arg: Any) -> dict[str, Any]:
    """platform and canonical_url of an activity input, where it carries them."""
    fields: dict[str, Any] = {}
    resolved = getattr(arg, "resolved", None)
    if resolved is not None:
        fields["platform"] = resolved.platform
        fields["canonical_url"] = resolved.canonical_url
    elif getattr(arg, "url", None):
        fields["canonical_url"] = arg.url
    asset = getattr(arg, "asset", None)
    if asset is not None:
        fields["asset"] = asset.name
        if "canonical_url" not in fields and asset.urls:
            fields["media_url"] = asset.urls[0]
    if getattr(arg, "platform", None):
        fields["platform"] = arg.platform
    return fields


def _result_fields(result: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if hasattr(result, "transferred"):
        fields["bytes"] = result.transferred
    resolved = getattr(result, "resolved", None)
    if resolved is not None:
        fields["platform"] = resolved.platform
        fields["canonical_url"] = resolved.canonical_url
    return fields


class _ActivityLogger(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        fields: dict[str, Any] = {
            "task_id": info.workflow_id,
            "stage": info.activity_type,
            "attempt": info.attempt,
            **_describe(input.args[0] if input.args else None),
        }
        started = time.monotonic()
        try:
            result = await self.next.execute_activity(input)
        except ApplicationError as err:
            policy = info.retry_policy
            last = err.non_retryable or (policy is not None and policy.maximum_attempts and
                                         info.attempt >= policy.maximum_attempts)
            if policy is not None and err.type in (policy.non_retryable_error_types or ()):
                last = True
            log.warning("activity", outcome="failed" if last else "retry", error_class=err.type,
                        error=err.message, duration_ms=_ms(started), **fields)
            raise
        except (CancelledError, BaseException) as err:
            if isinstance(err, CancelledError) or type(err).__name__ == "CancelledError":
                log.info("activity", outcome="cancelled", duration_ms=_ms(started), **fields)
            else:
                log.warning("activity", outcome="retry", error_class="internal_error", error=str(err),
                            duration_ms=_ms(started), **fields)
            raise
        log.info("activity", outcome="ok", duration_ms=_ms(started), **{**fields, **_result_fields(result)})
        return result


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


class LoggingInterceptor(Interceptor):
    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ActivityLogger(next)
