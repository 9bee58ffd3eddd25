"""fetch_and_store_tiny: a tiny item's first fetch, which also downloads, verifies and commits it.

A tiny item (every asset's size known from the platform and their total at most
``FetchInput.with_fetch_size``) is resolved, downloaded, verified and committed in this one
activity, as small_item would (the same code): the whole item is one activity, which is most of
what an item costs the Temporal server. An item that is not tiny is only resolved, as ``fetch``
does, and goes on through the stages. Any failure of the storing part is left to the workflow's
usual path (the result is then only resolved), so retries and their classes stay the stages'
own. A cancel stops that part before its commit (the activity then ends cancelled, nothing
stored); a commit that has begun runs to its end and the result says committed: the run's
outcome and the catalog agree when the workflow waits for the cancellation to complete.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from temporalio import activity
from temporalio.exceptions import ApplicationError, CancelledError

from trawl.activities.application_errors import classified
from trawl.activities.fetch import FetchActivities
from trawl.activities.small import SmallItemActivities
from trawl.contracts import CommitResult, FetchInput, FetchResult, SmallItemInput
from trawl.models import known_total
from trawl.storage.records import CatalogItem

# A limit_rate that would keep a tiny item's download longer than this in a fetch slot leaves it
# to the download queue.
WITH_FETCH_MAX_S = 10.0


class TinyItemActivities:
    def __init__(self, fetch: FetchActivities, small: SmallItemActivities, max_delay: timedelta) -> None:
        self.fetch = fetch
        self.small = small
        self.max_delay = max_delay

    # As the download's: cancellation is polled at heartbeats, never raised into the thread.
    @activity.defn(name="fetch_and_store_tiny", no_thread_cancel_exception=True)
    @classified(lambda self: self.max_delay)
    def fetch_and_store_tiny(self, inp: FetchInput) -> FetchResult:
        return self.fetched_and_stored(inp)

    def fetched_and_stored(self, inp: FetchInput) -> FetchResult:
        """The item resolved and, when tiny, committed (``finished``)."""
        fetched, existing = self.fetch.resolved(inp)
        if existing is not None and _own_commit(inp, existing):
            return FetchResult(fetched.resolved, committed=False, finished=CommitResult("committed", fetched.stored))
        if self._stores(inp, fetched) and not activity.is_cancelled():
            fetched.finished = self._stored(inp, fetched)
        if fetched.finished is None and activity.is_cancelled():
            # Told to stop, and nothing was stored: the answer is the cancellation, so a run
            # waiting for it ends cancelled. A tiny item whose commit had begun is committed,
            # and the result says so.
            raise CancelledError("fetch cancelled; nothing stored")
        return self.fetch.claim_host(inp, fetched)

    def _stores(self, inp: FetchInput, fetched: FetchResult) -> bool:
        """Whether this activity also downloads, verifies and commits the item: a first attempt
        (a retry means something was wrong: the usual path handles it) at a tiny item, not slowed
        by a rate limit."""
        total = known_total(fetched.resolved.assets)
        return (not fetched.committed and not inp.fresh_urls
                and total is not None and total <= inp.with_fetch_size and activity.info().attempt == 1
                and not (inp.limit_rate and total / inp.limit_rate > WITH_FETCH_MAX_S))

    def _stored(self, inp: FetchInput, fetched: FetchResult) -> CommitResult | None:
        whole = SmallItemInput(inp.workflow_id, inp.url, fetched.resolved, inp.quality, inp.limit_rate,
                               stage_attempts=inp.download_attempts)
        try:
            return self.small.small_item(whole)
        except ApplicationError as err:  # the stage's own line logged it; the workflow goes on as usual
            activity.logger.info(f"tiny item left to the download queue: {err.type}: {err.message}")
            return None


def _own_commit(inp: FetchInput, item: CatalogItem) -> bool:
    """The catalog's item is this run's own: a tiny item this activity committed on an attempt
    whose reply was lost (its worker died just after), not a duplicate. A run of the same workflow
    id that ended before this one started (the same URL crawled again) committed before it began."""
    if not (inp.with_fetch_size and inp.run_started_at and activity.info().attempt > 1
            and item.workflow_id == inp.workflow_id and item.created_at):
        return False
    return _utc(item.created_at) >= _utc(inp.run_started_at)


def _utc(stamp: str) -> datetime:
    moment = datetime.fromisoformat(stamp)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
