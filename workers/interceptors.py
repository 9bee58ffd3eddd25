"""One log line and the metrics for every activity attempt, whatever its outcome."""

from __future__ import annotations

import time
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from trawl.errors import UnsupportedUrl
from trawl.logs import get_logger
from trawl.urls import canonicalize

log = get_logger("trawl.activity")

# Activity name -> pipeline stage: discard (removing partial files) and claim (choosing the host) are
# stages of their own; a crawl expands a source like a fetch and waits on an item started elsewhere
# as on a download.
STAGE_OF = {"fetch": "fetch", "download": "download", "discard": "discard", "verify": "verify", "commit": "commit",
            "expand_source": "fetch", "join_item": "download", "claim_host": "claim"}


def _describe(arg: Any) -> dict[str, Any]:
    """platform and canonical_url of an activity input."""
    fields: dict[str, Any] = {}
    resolved = getattr(arg, "resolved", None)
    platform = getattr(arg, "platform", "") or (resolved.platform if resolved is not None else "")
    canonical = getattr(arg, "canonical_url", "") or (resolved.canonical_url if resolved is not None else "")
    if not canonical and getattr(arg, "url", None):
        try:
            canonical = canonicalize(arg.url)
        except UnsupportedUrl:
            canonical = str(arg.url)[:2000]
    fields["platform"] = platform or None
    fields["canonical_url"] = canonical or None
    asset = getattr(arg, "asset", None)
    if asset is not None:
        fields["asset"] = asset.name
    return fields


def _is_last_attempt(err: ApplicationError, info: activity.Info) -> bool:
    policy = info.retry_policy
    if err.non_retryable:
        return True
    if policy is None:
        return False
    if err.type in (policy.non_retryable_error_types or ()):
        return True
    return bool(policy.maximum_attempts) and info.attempt >= policy.maximum_attempts


class _ActivityObserver(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        stage = STAGE_OF.get(info.activity_type, info.activity_type)
        fields: dict[str, Any] = {
            "task_id": info.workflow_id, "stage": stage, "attempt": info.attempt,
            **_describe(input.args[0] if input.args else None),
        }
        if info.activity_type != stage:
            fields["activity"] = info.activity_type
        meter = activity.metric_meter()
        started = time.monotonic()
        try:
            result = await self.next.execute_activity(input)
        except ApplicationError as err:
            outcome = "failed" if _is_last_attempt(err, info) else "retry"
            meter.create_counter("trawl_activity_failures", "Failed activity attempts").add(
                1, {"stage": stage, "error_class": err.type or "internal_error"})
            log.warning("activity", outcome=outcome, error_class=err.type, error=err.message,
                        duration_ms=_ms(started), **fields)
            raise
        except CancelledError:
            log.info("activity", outcome="cancelled", duration_ms=_ms(started), **fields)
            raise
        except BaseException as err:
            if type(err).__name__ == "CancelledError":  # asyncio's, from a cancelled async activity
                log.info("activity", outcome="cancelled", duration_ms=_ms(started), **fields)
            else:
                meter.create_counter("trawl_activity_failures", "Failed activity attempts").add(
                    1, {"stage": stage, "error_class": "internal_error"})
                log.warning("activity", outcome="retry", error_class="internal_error", error=str(err)[:500],
                            duration_ms=_ms(started), **fields)
            raise
        extra: dict[str, Any] = {}
        transferred = getattr(result, "transferred", None)
        if transferred is not None:
            extra["bytes"] = transferred
            platform = fields.get("platform") or "unknown"
            meter.create_counter("trawl_bytes_downloaded", "Bytes received by downloads", "By").add(
                transferred, {"platform": platform})
            meter.create_histogram_float("trawl_download_duration_seconds", "Seconds per download attempt", "s").record(
                time.monotonic() - started, {"platform": platform})
        resolved = getattr(result, "resolved", None)
        if resolved is not None:
            fields["platform"], fields["canonical_url"] = resolved.platform, resolved.canonical_url
        log.info("activity", outcome="ok", duration_ms=_ms(started), **fields, **extra)
        return result


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


class ObservingInterceptor(Interceptor):
    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ActivityObserver(next)
