"""Crawls: one CrawlWorkflow each, its items as child workflows; listed from Temporal's visibility.

A crawl whose source could not be expanded is ``FAILED``; its ``stats`` (with ``error``, the
reason) come from the failure itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses

from fastapi import APIRouter, Depends, HTTPException, Query
from temporalio.client import WorkflowExecution, WorkflowExecutionStatus, WorkflowQueryFailedError
from temporalio.service import RPCError

from trawl.starter import views
from trawl.api.error_responses import MESSAGE_SHOWN, already_closed, declared, described, finished
from trawl.api.models import Action, Crawl, CrawlCreate, CrawlPage, UrlsAdd
from trawl.api.state import ApiState, api_state, bearer
from trawl.starter.client import (MAX_URLS_PER_REQUEST, CrawlChoices, CrawlRefused, add_to_crawl, cancel_crawl, crawl_handle,
                                  start_crawl)
from trawl.starter.views import crawl_failure, crawls_query
from trawl.starter.waiting import running_items
from trawl.contracts import CRAWL_WORKFLOW, CrawlStats
from trawl.routing import route_all
from trawl.text import shown

MAX_CRAWLS_PAGE = 100
MAX_CRAWLS_OFFSET = 10_000
# A listed crawl's counts come from its worker (a query) or its history; a crawl whose worker
# cannot answer within this long is listed without them rather than holding up the list.
LISTED_STATS_WAIT_S = 5.0
ITEMS_WAIT_S = 5.0  # a crawl's running items are read within this long, or left out

router = APIRouter(prefix="/api/v1/crawls", tags=["crawls"], responses=declared(401, 429, 503),
                   dependencies=[Depends(bearer)])


@router.post("", status_code=202, response_model=Crawl,
             responses=declared(403, 413, 422))
async def create_crawl(body: CrawlCreate, state: ApiState = Depends(api_state)) -> Crawl:
    """Start a crawl of URLs, or of a source named in the settings; URLs refused offline are
    listed in ``refused`` (all of them refused: 422, one reason per URL)."""
    if body.source and not any(s.name == body.source for s in state.settings.sources):
        raise HTTPException(422, f"no source named {body.source!r}")
    _one_part(body.urls, "start the crawl with the first part, then POST the rest to /api/v1/crawls/{id}/urls")
    handle, refused = await start_crawl(state.client, state.settings, state.registry, body.urls,
                                        source=body.source, concurrency=body.concurrency, catalog=state.catalog,
                                        choices=CrawlChoices(filters=body.filters()))
    return await crawl_view(state, handle.id, refused, written=True)


def _one_part(urls: list[str], how: str) -> None:
    if len(urls) > MAX_URLS_PER_REQUEST:
        raise HTTPException(413, f"{len(urls)} URLs: a request carries at most {MAX_URLS_PER_REQUEST} "
                                 f"(a crawl holds any number): {how}, each of at most {MAX_URLS_PER_REQUEST}")


@router.get("", response_model=CrawlPage, responses=declared(422))
async def list_crawls(limit: int = Query(20, ge=1, le=MAX_CRAWLS_PAGE),
                      offset: int = Query(0, ge=0, le=MAX_CRAWLS_OFFSET),
                      state: ApiState = Depends(api_state)) -> CrawlPage:
    """This deployment's crawls (its task queue prefix), newest first as Temporal's visibility
    orders them: running crawls by start, newest first, then finished ones by when they finished,
    most recent first. A crawl that continued as new is listed once, as its current run."""
    query = crawls_query(state.settings.temporal.task_queue_prefix)
    wanted = offset + limit
    executions = [e async for e in state.client.list_workflows(query, limit=wanted, page_size=min(wanted, 1000))]
    crawls = await asyncio.gather(*(_listed(state, e) for e in executions[offset:]))
    return CrawlPage(crawls=list(crawls), limit=limit, offset=offset)


@router.get("/{crawl_id}", response_model=Crawl, responses=declared(404, 422))
async def get_crawl(crawl_id: str, state: ApiState = Depends(api_state)) -> Crawl:
    await described(crawl_handle(state.client, crawl_id), "crawl", CRAWL_WORKFLOW)
    return await crawl_view(state, crawl_id)


@router.post("/{crawl_id}/urls", status_code=202, response_model=Crawl,
             responses=declared(403, 404, 409, 413, 422))
async def add_crawl_urls(crawl_id: str, body: UrlsAdd, state: ApiState = Depends(api_state)) -> Crawl:
    """Queue more URLs on a running crawl."""
    _one_part(body.urls, f"POST them to /api/v1/crawls/{crawl_id}/urls in parts")
    handle = crawl_handle(state.client, crawl_id)
    desc = await described(handle, "crawl", CRAWL_WORKFLOW)
    if desc.status != WorkflowExecutionStatus.RUNNING:
        # A list that is refused whatever the crawl's state is a 422 first, as for a running one.
        items, refusals = await asyncio.to_thread(route_all, state.registry, body.urls)
        if not items:
            raise CrawlRefused(refusals)
        raise finished("crawl", crawl_id, desc.status, "add URLs to")
    async with state.adding:
        try:
            refused = await add_to_crawl(state.client, state.settings, state.registry, crawl_id, body.urls,
                                         state.catalog)
        except RPCError as err:
            if not already_closed(err):
                raise
            raise finished("crawl", crawl_id, (await handle.describe()).status, "add URLs to") from None
    return await crawl_view(state, crawl_id, refused, written=True)


@router.post("/{crawl_id}/{action}", response_model=Crawl,
             responses=declared(403, 404, 409, 422))
async def steer_crawl(crawl_id: str, action: Action, state: ApiState = Depends(api_state)) -> Crawl:
    """Pause (no new items; running ones paused), resume, or cancel (its items are cancelled)."""
    handle = crawl_handle(state.client, crawl_id)
    desc = await described(handle, "crawl", CRAWL_WORKFLOW)
    if desc.status != WorkflowExecutionStatus.RUNNING:
        raise finished("crawl", crawl_id, desc.status, action)
    try:
        if action == "cancel":
            await cancel_crawl(handle)
        else:
            await handle.signal(action)
    except RPCError as err:
        if not already_closed(err):
            raise
        raise finished("crawl", crawl_id, (await handle.describe()).status, action) from None
    return await crawl_view(state, crawl_id, written=True)


async def crawl_view(state: ApiState, crawl_id: str, refused: list[str] | None = None, *,
                     written: bool = False) -> Crawl:
    """A crawl as the API shows it. ``written``: this request started it or added to it, which
    stands even when no worker answers for its counts yet (they are then left out), as a steering
    signal sent does."""
    handle = crawl_handle(state.client, crawl_id)
    try:
        desc, stats = await _crawl_state(handle)
    except views.Unanswered:
        if not written:
            raise
        desc, stats = await handle.describe(), None
    items = None
    if desc.status == WorkflowExecutionStatus.RUNNING and stats is not None and not written:
        with contextlib.suppress(RPCError, TimeoutError):  # the counts stand without it
            items = await asyncio.wait_for(running_items(state.client, crawl_id, stats.running), ITEMS_WAIT_S)
    return Crawl(**views.crawl_dict(crawl_id, desc, _shown(stats)),
                 refused=[shown(r, MESSAGE_SHOWN) for r in refused or []], items=items)


def _shown(stats: CrawlStats | None) -> CrawlStats | None:
    """The stats with their refusals (``URL: why``) shown as refused input is: escaped and cut."""
    if stats is None or not stats.refusals:
        return stats
    return dataclasses.replace(stats, refusals=[shown(r, MESSAGE_SHOWN) for r in stats.refusals])


async def _crawl_state(handle) -> tuple[object, CrawlStats | None]:  # noqa: ANN001 - a workflow handle
    """``views.crawl_state``, and a failed crawl's counts and reason from its failure."""
    desc, stats = await views.crawl_state(handle)
    if stats is None and desc.status == WorkflowExecutionStatus.FAILED:
        _, stats = await crawl_failure(handle)
    return desc, stats


async def _listed(state: ApiState, execution: WorkflowExecution) -> Crawl:
    handle = crawl_handle(state.client, execution.id)
    try:
        desc, stats = await asyncio.wait_for(_crawl_state(handle), LISTED_STATS_WAIT_S)
    except (RPCError, WorkflowQueryFailedError, TimeoutError):
        desc, stats = execution, None
    return Crawl(**views.crawl_dict(execution.id, desc, _shown(stats)))
