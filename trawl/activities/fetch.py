"""fetch: resolve a page URL to a canonical item, then look it up in the catalog.

The catalog is asked first: a URL whose canonical key follows from the URL alone (most platform
URLs), or a URL form the catalog remembers leading to a committed item (a direct file, a page, a
short link), is answered from the catalog without a single request to its platform. A watch that
lists 500 known items and 3 new ones resolves the 3 new ones only.

A tiny item (``FetchInput.with_fetch_size``) is downloaded, verified and committed by its first
fetch, as small_item would (the same code): the whole item is one activity, which is most of
what an item costs the Temporal server. Any failure of that part is left to the workflow's usual
path (the result is then only resolved), so retries and their classes stay the stages' own. A
cancel stops that part before its commit (the fetch then ends cancelled, nothing stored); a commit
that has begun runs to its end and the result says committed: the run's outcome and the catalog
agree when the workflow waits for the fetch's cancellation to complete.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from temporalio import activity
from temporalio.exceptions import ApplicationError, CancelledError

from trawl.activities.application_errors import classified
from trawl.activities.liveness import heartbeating
from trawl.contracts import CommitResult, FetchInput, FetchResult, SmallItemInput
from trawl.known import known_with_more, route_more
from trawl.models import Resolved, as_preview, known_total, refuse_previews
from trawl.routing import stored_assets
from trawl.platforms.base import ResolveContext
from trawl.platforms.registry import Registry
from trawl.storage.records import CatalogItem

if TYPE_CHECKING:  # the catalog (SQLAlchemy) is built by the worker and handed in
    from trawl.activities.small import SmallItemActivities
    from trawl.storage.catalog import Catalog

# A limit_rate that would keep a tiny item's download longer than this in a fetch slot leaves it
# to the download queue.
WITH_FETCH_MAX_S = 10.0


def as_resolved(item: CatalogItem) -> Resolved:
    """A catalog item as fetch would have resolved it (no media URLs: nothing is downloaded)."""
    return Resolved(canonical_key=item.canonical_key, canonical_url=item.canonical_url, platform=item.platform,
                    assets=[], title=item.title, uploader=item.uploader, duration=item.duration,
                    published_at=item.published_at)


class FetchActivities:
    def __init__(self, registry: Registry, context: ResolveContext, catalog: Catalog,
                 max_delay: timedelta, max_attempts: int = 0, small: SmallItemActivities | None = None) -> None:
        self.registry = registry
        self.context = context
        self.catalog = catalog
        self.max_delay = max_delay
        self.max_attempts = max_attempts
        self.small = small

    # As the download's: cancellation is polled at heartbeats (a tiny item's download may run
    # here), never raised into the thread; a resolve is bounded by the HTTP timeouts.
    @activity.defn(name="fetch", no_thread_cancel_exception=True)
    @classified(lambda self: self.max_delay)
    def fetch(self, inp: FetchInput) -> FetchResult:
        fetched, existing = self._resolved(inp)
        if existing is not None and _own_commit(inp, existing):
            return FetchResult(fetched.resolved, committed=False, finished=CommitResult("committed", fetched.stored))
        if self._finishes(inp, fetched) and not activity.is_cancelled():
            fetched.finished = self._finished(inp, fetched.resolved)
        if fetched.finished is None and activity.is_cancelled():
            # Told to stop, and nothing was stored: the answer is the cancellation, so a run
            # waiting for it ends cancelled. A tiny item whose commit had begun is committed,
            # and the result says so.
            raise CancelledError("fetch cancelled; nothing stored")
        return fetched

    def _finishes(self, inp: FetchInput, fetched: FetchResult) -> bool:
        """Whether this fetch also downloads, verifies and commits the item: a first attempt (a
        retry means something was wrong: the usual path handles it) at a tiny item, not slowed
        by a rate limit."""
        total = known_total(fetched.resolved.assets)
        return (self.small is not None and not fetched.committed and not inp.fresh_urls
                and total is not None and total <= inp.with_fetch_size and activity.info().attempt == 1
                and not (inp.limit_rate and total / inp.limit_rate > WITH_FETCH_MAX_S))

    def _finished(self, inp: FetchInput, resolved: Resolved) -> CommitResult | None:
        assert self.small is not None
        whole = SmallItemInput(inp.workflow_id, inp.url, resolved, inp.quality, inp.limit_rate,
                               stage_attempts=inp.download_attempts)
        try:
            return self.small.small_item(whole)
        except ApplicationError as err:  # the stage's own line logged it; the workflow goes on as usual
            activity.logger.info(f"tiny item left to the download queue: {err.type}: {err.message}")
            return None

    @heartbeating
    def _resolved(self, inp: FetchInput) -> tuple[FetchResult, CatalogItem | None]:
        """The item resolved, and the catalog's committed item when it holds it already."""
        known = None if inp.fresh_urls else known_with_more(self.catalog, self.registry, inp.url)
        if known is not None:
            item, more = known
            resolved = as_resolved(item)
            resolved.more = route_more(self.registry, more, inp.workflow_id)
            return FetchResult(resolved=resolved, committed=True, stored=stored_assets(item)), item
        # Not known, or known but what else the URL stands for (its other parts) is not: ask.
        resolver = self.registry.resolver_for(inp.url)
        context = self.context
        if inp.quality or inp.audio:
            context = dataclasses.replace(context, quality=inp.quality or context.quality, audio=inp.audio)
        resolved = resolver.resolve(inp.url, context)
        if inp.keep_previews:
            resolved = as_preview(resolved)
        refuse_previews(resolved)
        resolved.more = route_more(self.registry, [m.url for m in resolved.more], inp.workflow_id)
        existing = self.catalog.get(resolved.canonical_key)
        if existing is None or existing.status != "committed":
            return FetchResult(resolved=resolved, committed=False), None
        # Another URL form of a stored item: remember this one, so next time costs no request.
        # (A bare URL of a video committed before its parts were recorded asks every time.)
        self.catalog.remember_urls([inp.url], resolved.canonical_key)
        return FetchResult(resolved=resolved, committed=True, stored=stored_assets(existing)), existing


def _own_commit(inp: FetchInput, item: CatalogItem) -> bool:
    """The catalog's item is this run's own: a tiny item this fetch committed on an attempt whose
    reply was lost (its worker died just after), not a duplicate. A run of the same workflow id
    that ended before this one started (the same URL crawled again) committed before it began."""
    if not (inp.with_fetch_size and inp.run_started_at and activity.info().attempt > 1
            and item.workflow_id == inp.workflow_id and item.created_at):
        return False
    return _utc(item.created_at) >= _utc(inp.run_started_at)


def _utc(stamp: str) -> datetime:
    moment = datetime.fromisoformat(stamp)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
