"""Watches: a source or URLs crawled every interval, each one Temporal Schedule (``trawl.starter.watches``)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException
from pydantic import BaseModel, Field

from trawl.api.error_responses import declared
from trawl.api.models import CRAWL_URLS_LIMITS, ListingFilterFields
from trawl.api.state import ApiState, api_state, bearer
from trawl.platforms.registry import listing_kinds
from trawl.recheck import MAX_RECHECK
from trawl.starter.client import MAX_CRAWL_CONCURRENCY, MAX_CRAWL_URLS
from trawl.starter.watches import (
    Watch as WatchRecord,
    WatchError,
    WatchExists,
    WatchNotFound,
    MAX_REFRESH_EXTRAS_DAYS,
    add_watch,
    get_watch,
    list_watches,
    pause_watch,
    remove_watch,
    resume_watch,
    trigger_watch,
    watch_dict,
)

router = APIRouter(prefix="/api/v1/watches", tags=["watches"], responses=declared(401, 429, 503),
                   dependencies=[Depends(bearer)])


class WatchCreate(ListingFilterFields):
    """A source named in the settings, or URLs (not both), crawled every ``every``. The watch
    carries the source's definition as the settings have it now (a ``url_file`` needs an absolute
    path: the worker that runs the watch reads it on its host)."""

    name: str = Field(min_length=1, max_length=63, examples=["news"])
    source: str | None = Field(default=None, max_length=200)
    urls: list[str] = Field(default_factory=list, max_length=MAX_CRAWL_URLS, description=CRAWL_URLS_LIMITS)
    every: str | None = Field(default=None, examples=["1h", "30m"], max_length=32,
                              description="interval between runs (a live room's URL: how often to ask whether it "
                                          "is live, default watch.live_poll_interval)")
    jitter: str | None = Field(default=None, max_length=32, description="random delay per run, at most the interval")
    concurrency: int = Field(default=8, ge=1, le=MAX_CRAWL_CONCURRENCY)
    refresh_extras_days: int = Field(default=0, ge=0, le=MAX_REFRESH_EXTRAS_DAYS, description=(
        "each run also fetches again the extras of the watch's items younger than this many days, each a dated "
        "snapshot (at most watch.refresh_extras_limit a run); 0: never"))
    paused: bool = False
    recheck: int = Field(default=0, ge=0, le=MAX_RECHECK,
                         description="each run also re-checks this many items of the listings it reads, the "
                                     "oldest-checked first (gone upstream is recorded)")


class WatchedSource(BaseModel):
    """A source's definition as a watch carries it: its ``[[sources]]`` table when the watch was added."""

    name: str
    kind: str = Field(examples=["feed", "url_file", *listing_kinds()])
    id: str = ""
    path: str = Field(default="", description="url_file: read by the worker that runs the watch, on its host")
    url: str = ""
    max_pages: int = 3
    full_listing: bool = False


class WatchRun(BaseModel):
    """One run: a crawl (``GET /api/v1/crawls/{crawl_id}``) and its counts (null until known);
    ``error`` says why a ``FAILED`` run failed (a source it could not expand)."""

    crawl_id: str
    scheduled_at: str
    started_at: str
    status: str
    new: int | None = None
    duplicate: int | None = None
    failed: int | None = None
    outcomes: dict[str, int] = {}
    error: str | None = None


class Watch(BaseModel):
    """A watch as ``trawl watch list --json`` prints it; ``refused`` lists URLs this request gave
    that were refused."""

    name: str
    schedule_id: str
    source: str | None
    source_description: str | None
    source_settings: WatchedSource | None = Field(
        default=None, description="the source's definition the watch carries (null for URLs, and for a watch added "
                                  "before watches carried it: its runs use the source of that name in the worker's "
                                  "settings)")
    urls: int
    every: str
    jitter: str
    concurrency: int
    paused: bool
    note: str | None
    runs: int
    skipped_overlap: int
    missed_catchup: int
    running: list[str]
    last_run: WatchRun | None
    next_run: str | None
    created_at: str
    refresh_extras_days: int = 0
    recheck: int = 0
    refused: list[str] = []


class WatchList(BaseModel):
    watches: list[Watch]


def _model(watch: WatchRecord, refused: list[str] | None = None) -> Watch:
    return Watch(**watch_dict(watch), refused=refused or [])


def _http(err: WatchError) -> HTTPException:
    code = 404 if isinstance(err, WatchNotFound) else 409 if isinstance(err, WatchExists) else 422
    return HTTPException(code, str(err))


@router.post("", status_code=201, response_model=Watch,
             responses=declared(403, 409, 413, 422))
async def create_watch(body: WatchCreate, state: ApiState = Depends(api_state)) -> Watch:
    """Create a watch (a Temporal Schedule); 409 when the name is taken."""
    try:
        watch, refused = await add_watch(state.client, state.settings, state.registry, body.name, source=body.source,
                                         urls=body.urls, every=body.every, jitter=body.jitter,
                                         concurrency=body.concurrency, paused=body.paused,
                                         filters=body.filters(), refresh_extras_days=body.refresh_extras_days,
                                         recheck=body.recheck)
    except WatchError as err:
        raise _http(err) from None
    return _model(watch, refused)


@router.get("", response_model=WatchList)
async def get_watches(state: ApiState = Depends(api_state)) -> WatchList:
    """This deployment's watches by name, each with its last run's counts and its next run."""
    return WatchList(watches=[_model(w) for w in await list_watches(state.client, state.settings)])


@router.get("/{name}", response_model=Watch, responses=declared(404, 422))
async def get_one(name: str, state: ApiState = Depends(api_state)) -> Watch:
    try:
        return _model(await get_watch(state.client, state.settings, name))
    except WatchError as err:
        raise _http(err) from None


@router.delete("/{name}", response_model=Watch, responses=declared(403, 404, 422))
async def delete_watch(name: str, state: ApiState = Depends(api_state)) -> Watch:
    """Delete the watch; a run going on finishes (cancel it as any crawl). Answers the watch as it was."""
    try:
        return _model(await remove_watch(state.client, state.settings, name))
    except WatchError as err:
        raise _http(err) from None


@router.post("/{name}/pause", response_model=Watch,
             responses=declared(403, 404, 409, 422))
async def pause(name: str, state: ApiState = Depends(api_state)) -> Watch:
    """Start no more runs until resumed; a run going on finishes."""
    try:
        return _model(await pause_watch(state.client, state.settings, name))
    except WatchError as err:
        raise _http(err) from None


@router.post("/{name}/resume", response_model=Watch,
             responses=declared(403, 404, 409, 422))
async def resume(name: str, state: ApiState = Depends(api_state)) -> Watch:
    try:
        return _model(await resume_watch(state.client, state.settings, name))
    except WatchError as err:
        raise _http(err) from None


@router.post("/{name}/trigger", status_code=202, response_model=Watch,
             responses=declared(403, 404, 409, 422))
async def trigger(name: str, state: ApiState = Depends(api_state)) -> Watch:
    """Run now; 409 while a run is going on (a watch never runs twice at once)."""
    try:
        watch, started = await trigger_watch(state.client, state.settings, name)
    except WatchError as err:
        raise _http(err) from None
    if not started:
        raise HTTPException(409, f"watch {name} has a run going on ({', '.join(watch.running)}): nothing started")
    return _model(watch)
