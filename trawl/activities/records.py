"""The worker's record of its work: one log line and the metrics per stage attempt, whatever its outcome.

The activity interceptor records each activity attempt as one stage; an activity that runs several
stages itself (``small_item``: download, verify and commit of a small item) records each of them
with :func:`recorded`, so the log holds one line per stage either way.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError, CancelledError

from trawl.errors import UnsupportedUrl
from trawl.logs import get_logger
from trawl.urls import canonicalize

log = get_logger("trawl.activity")
R = TypeVar("R")

# Activity name -> pipeline stage: discard (removing partial files) and claim (choosing the host) are
# stages of their own; a crawl expands a source like a fetch and waits on an item started elsewhere
# as on a download.
STAGE_OF = {"fetch": "fetch", "fetch_and_store_tiny": "fetch", "download": "download", "discard": "discard", "verify": "verify", "commit": "commit",
            "expand_source": "fetch", "join_item": "download", "claim_host": "claim"}


def describe(arg: Any) -> dict[str, Any]:
    """platform and canonical_url (and the asset, when there is one) of an activity input."""
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


def is_last_attempt(err: ApplicationError, info: activity.Info) -> bool:
    policy = info.retry_policy
    if err.non_retryable:
        return True
    if policy is None:
        return False
    if err.type in (policy.non_retryable_error_types or ()):
        return True
    return bool(policy.maximum_attempts) and info.attempt >= policy.maximum_attempts


@contextlib.contextmanager
def recorded(stage: str, arg: Any) -> Iterator[Callable[[R], R]]:
    """Record one attempt of ``stage`` (of the running activity) on ``arg``, the stage's input.

    The block hands its result to the yielded function (which returns it), so the line can carry
    what the result tells (bytes transferred, the resolved item); a block that raises is recorded
    as a retry, a final failure or a cancellation, and the exception goes on.
    """
    info = activity.info()
    fields: dict[str, Any] = {"task_id": info.workflow_id, "stage": stage, "attempt": info.attempt, **describe(arg)}
    if info.activity_type != stage:
        fields["activity"] = info.activity_type
    meter = activity.metric_meter()
    started = time.monotonic()
    results: list[Any] = []

    def keep(result: R) -> R:
        results.append(result)
        return result

    try:
        yield keep
    except ApplicationError as err:
        outcome = "failed" if is_last_attempt(err, info) else "retry"
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
    result = results[0] if results else None
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


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
