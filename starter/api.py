"""The HTTP API: jobs (TaskCrawler-compatible), crawls and the catalog, over Temporal.

Run with ``trawl api``; OpenAPI docs at ``/docs``. Every mutating endpoint needs
``Authorization: Bearer <api.token>`` when a token is set, and a token is required whenever the
API listens on a non-loopback address. A wrong token is 401 on any endpoint. Every request, reads
included, is rate limited: per token when it carries the right one, per client address otherwise
(``starter.limits.RateLimit``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hmac
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Query, Request, status
from fastapi.responses import FileResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field, field_validator, model_validator
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowQueryFailedError
from temporalio.service import RPCError

from activities.models import StoredAsset
from starter.limits import BodySizeLimit, RateLimit
from starter.client import (
    MAX_CRAWL_BYTES,
    MAX_CRAWL_URLS,
    CrawlRefused,
    CrawlTooLarge,
    add_to_crawl,
    connect,
    ensure_search_attributes,
    item_progress,
    item_result,
    start_crawl,
    start_item,
)
from trawl.errors import TrawlError
from trawl.platforms.registry import Registry, build_registry
from trawl.settings import Settings
from trawl.storage.blobs import LocalBlobStore
from trawl.storage.catalog import Catalog, CatalogItem
from trawl.urls import MAX_URL_LENGTH, validate_url
from workflows.crawl import CrawlWorkflow
from workflows.media_item import MediaItemWorkflow

JobStatus = Literal["PENDING", "PROCESSING", "COMPLETED", "FAILED", "CANCELLED", "PAUSED"]
MAX_ITEMS_PAGE = 1000
MAX_ITEMS_OFFSET = 1_000_000_000
CRAWL_URLS_LIMITS = (f"At most {MAX_CRAWL_URLS} URLs: a crawl holds at most {MAX_CRAWL_URLS} queued or running "
                     f"at once and {MAX_CRAWL_BYTES} bytes of them once encoded (413 beyond that); "
                     "a bigger list goes in several crawls, or is added as the crawl drains.")


# -- request and response bodies ---------------------------------------------------------------
class JobCreate(BaseModel):
    url: str = Field(max_length=MAX_URL_LENGTH, examples=["https://www.bilibili.com/video/BV117411r7R1"])

    @field_validator("url")
    @classmethod
    def _valid_url(cls, value: str) -> str:
        try:
            return validate_url(value)
        except TrawlError as err:
            raise ValueError(err.message) from None


class Progress(BaseModel):
    bytes_done: int = 0
    bytes_total: int | None = None
    percent: float | None = None


class Job(BaseModel):
    """TaskCrawler's job fields, then trawl's own."""

    id: str
    url: str
    status: JobStatus
    retry_count: int
    scraped_title: str | None = None
    error_log: str | None = None
    canonical_key: str | None = None
    platform: str | None = None
    stage: str | None = None
    progress: Progress = Progress()
    outcome: str | None = None
    assets: list[StoredAsset] = []


class CrawlCreate(BaseModel):
    urls: list[str] = Field(default_factory=list, max_length=MAX_CRAWL_URLS, description=CRAWL_URLS_LIMITS)
    source: str | None = Field(default=None, max_length=200)
    concurrency: int = Field(default=8, ge=1, le=256)

    @model_validator(mode="after")
    def _something_to_crawl(self) -> CrawlCreate:
        if not self.urls and not self.source:
            raise ValueError("give urls or source")
        return self


class UrlsAdd(BaseModel):
    urls: list[str] = Field(min_length=1, max_length=MAX_CRAWL_URLS, description=CRAWL_URLS_LIMITS)


class Crawl(BaseModel):
    id: str
    status: str
    stats: dict[str, Any] | None = None
    refused: list[str] = []


# -- the app -------------------------------------------------------------------------------------
class State:
    client: Client
    registry: Registry
    catalog: Catalog
    blobs: LocalBlobStore


def create_app(settings: Settings, client: Client | None = None) -> FastAPI:
    """The API app; ``client`` is connected at start-up when not given (tests pass one)."""
    state = State()

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        state.client = client or await connect(settings)
        await ensure_search_attributes(state.client, settings.temporal.namespace)
        state.registry = build_registry(settings.platforms)
        state.catalog = Catalog(settings.catalog_url)
        state.catalog.create_schema()
        state.blobs = LocalBlobStore(settings.blobs_dir)
        yield
        state.catalog.close()

    app = FastAPI(title="trawl", version="0.1.0", lifespan=lifespan,
                  description="A durable media crawler on Temporal: jobs, crawls and the catalog.")
    app.add_middleware(BodySizeLimit, limit=settings.api.max_body_bytes)
    # Outermost (added last): authenticate and count every request before its body is read.
    app.add_middleware(RateLimit, per_minute=settings.api.requests_per_minute, token=settings.api.token)
    bearer = HTTPBearer(auto_error=False)

    def authorized(credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> None:
        token = settings.api.token
        if not token:
            return
        given = credentials.credentials if credentials else ""
        if not hmac.compare_digest(given.encode(), token.encode()):
            raise HTTPException(status.HTTP_401_UNAUTHORIZED, "missing or wrong bearer token",
                                headers={"WWW-Authenticate": "Bearer"})

    @app.exception_handler(Exception)
    async def _internal(_: Request, exc: Exception) -> JSONResponse:  # no stack traces in answers
        return JSONResponse({"detail": f"internal error: {type(exc).__name__}"}, status_code=500)

    @app.exception_handler(RPCError)
    async def _temporal(_: Request, exc: RPCError) -> JSONResponse:
        # Only an unavailable Temporal is worth retrying; a request it refuses as malformed is not.
        code = {"NOT_FOUND": 404, "INVALID_ARGUMENT": 422}.get(exc.status.name, 503)
        return JSONResponse({"detail": exc.message}, status_code=code)

    @app.exception_handler(WorkflowQueryFailedError)
    async def _unanswered(_: Request, exc: WorkflowQueryFailedError) -> JSONResponse:
        # The workflow exists but its worker cannot answer now (a failing or unpicked task).
        return JSONResponse({"detail": f"the workflow cannot answer now: {exc}"}, status_code=503)

    @app.exception_handler(CrawlRefused)
    async def _refused(_: Request, exc: CrawlRefused) -> JSONResponse:
        # Shaped like FastAPI's own validation errors: one entry per URL, with its reason.
        return JSONResponse({"detail": [
            {"type": r.error_class, "loc": ["body", "urls", r.index], "msg": r.message, "input": r.url}
            for r in exc.refusals]}, status_code=422)

    @app.exception_handler(CrawlTooLarge)
    async def _too_large(_: Request, exc: CrawlTooLarge) -> JSONResponse:
        return JSONResponse({"detail": exc.message}, status_code=413)

    adding = asyncio.Lock()  # the crawl limits count what a crawl holds: one addition at a time

    # -- jobs ---------------------------------------------------------------------------------
    @app.post("/api/v1/jobs", status_code=202, response_model=Job, dependencies=[Depends(authorized)])
    async def create_job(body: JobCreate) -> Job:
        try:
            started = await start_item(state.client, settings, state.registry, body.url)
        except TrawlError as err:
            raise HTTPException(422, f"{err.error_class}: {err.message}") from None
        return await job_view(state, started.workflow_id, body.url)

    @app.get("/api/v1/jobs/{job_id}", response_model=Job)
    async def get_job(job_id: str) -> Job:
        return await job_view(state, job_id)

    @app.post("/api/v1/jobs/{job_id}/{action}", response_model=Job, dependencies=[Depends(authorized)])
    async def steer_job(job_id: str, action: Literal["pause", "resume", "cancel"]) -> Job:
        handle = state.client.get_workflow_handle(job_id)
        await handle.describe()
        if action == "cancel":
            await handle.cancel()
        else:
            await handle.signal(action)
        return await job_view(state, job_id)

    # -- crawls -------------------------------------------------------------------------------
    @app.post("/api/v1/crawls", status_code=202, response_model=Crawl, dependencies=[Depends(authorized)])
    async def create_crawl(body: CrawlCreate) -> Crawl:
        if body.source and not any(s.name == body.source for s in settings.sources):
            raise HTTPException(422, f"no source named {body.source!r}")
        handle, refused = await start_crawl(state.client, settings, state.registry, body.urls,
                                            source=body.source, concurrency=body.concurrency)
        view = await crawl_view(state, handle.id)
        view.refused = refused
        return view

    @app.get("/api/v1/crawls/{crawl_id}", response_model=Crawl)
    async def get_crawl(crawl_id: str) -> Crawl:
        return await crawl_view(state, crawl_id)

    @app.post("/api/v1/crawls/{crawl_id}/urls", status_code=202, response_model=Crawl,
              dependencies=[Depends(authorized)])
    async def add_crawl_urls(crawl_id: str, body: UrlsAdd) -> Crawl:
        async with adding:
            refused = await add_to_crawl(state.client, state.registry, crawl_id, body.urls)
        view = await crawl_view(state, crawl_id)
        view.refused = refused
        return view

    @app.post("/api/v1/crawls/{crawl_id}/{action}", response_model=Crawl, dependencies=[Depends(authorized)])
    async def steer_crawl(crawl_id: str, action: Literal["pause", "resume", "cancel"]) -> Crawl:
        await state.client.get_workflow_handle(crawl_id).signal(action)
        return await crawl_view(state, crawl_id)

    # -- catalog ------------------------------------------------------------------------------
    @app.get("/api/v1/items")
    async def list_items(platform: str | None = Query(None, max_length=64),
                         limit: int = Query(100, ge=1, le=MAX_ITEMS_PAGE),
                         offset: int = Query(0, ge=0, le=MAX_ITEMS_OFFSET)) -> dict[str, Any]:
        items = state.catalog.list(platform=platform, limit=limit, offset=offset)
        return {"items": [item_body(i, state.blobs) for i in items], "limit": limit, "offset": offset}

    @app.get("/api/v1/items/{key:path}/assets/{kind}")
    async def get_asset(key: str, kind: str) -> FileResponse:
        item = state.catalog.get(key)
        asset = next((a for a in (item.assets if item else []) if a.kind == kind or a.name == kind), None)
        if asset is None:
            raise HTTPException(404, f"no {kind} asset for {key!r}")
        path = state.blobs.path(asset.sha256)
        if not path.is_file():
            raise HTTPException(404, f"blob {asset.sha256} is missing from the store (run trawl fsck)")
        return FileResponse(path, media_type=asset.mime or "application/octet-stream",
                            filename=f"{asset.sha256[:16]}{Path(asset.blob_path).suffix}")

    @app.get("/api/v1/items/{key:path}")
    async def get_item(key: str) -> dict[str, Any]:
        item = state.catalog.get(key)
        if item is None:
            raise HTTPException(404, f"no item {key!r} in the catalog")
        return item_body(item, state.blobs)

    @app.get("/healthz")
    async def healthz() -> JSONResponse:
        checks = {}
        try:
            checks["temporal"] = "ok" if await state.client.service_client.check_health() else "unhealthy"
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            checks["temporal"] = f"unreachable: {type(exc).__name__}"
        try:
            state.catalog.count()
            checks["catalog"] = "ok"
        except Exception as exc:  # noqa: BLE001
            checks["catalog"] = f"unreachable: {type(exc).__name__}"
        healthy = all(v == "ok" for v in checks.values())
        return JSONResponse({"status": "ok" if healthy else "degraded", **checks}, status_code=200 if healthy else 503)

    return app


def item_body(item: CatalogItem, blobs: LocalBlobStore) -> dict[str, Any]:
    body = dataclasses.asdict(item)
    for asset in body["assets"]:
        asset["path"] = str(blobs.root / asset.pop("blob_path"))
    return body


async def retry_count(handle: Any) -> int:
    """Failed activity attempts so far: retried attempts leave no events, only the attempt number
    on the activity's start event (written when it closes) or on the pending activity."""
    failed = 0
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            failed += max(0, event.activity_task_started_event_attributes.attempt - 1)
        elif event.event_type in (EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
                                  EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT):
            failed += 1
    return failed


async def job_view(state: State, job_id: str, url: str = "") -> Job:
    handle = state.client.get_workflow_handle_for(MediaItemWorkflow.run, job_id)
    desc = await handle.describe()
    retries = await retry_count(handle)
    if desc.status == WorkflowExecutionStatus.RUNNING:
        progress = await item_progress(state.client, handle)
        retries += sum(max(0, p.attempt - 1) for p in desc.raw_description.pending_activities)
        total = progress["bytes_total"]
        job_status: JobStatus = "PAUSED" if progress["paused"] else (
            "PENDING" if progress["stage"] == "queued" else "PROCESSING")
        return Job(id=job_id, url=url or await desc.memo_value("url", ""), status=job_status, retry_count=retries,
                   error_log=progress["last_error"], stage=progress["stage"], platform=_attr(desc, "Platform"),
                   canonical_key=_attr(desc, "CanonicalKey"),
                   progress=Progress(bytes_done=progress["bytes_done"], bytes_total=total,
                                     percent=round(100 * progress["bytes_done"] / total, 1) if total else None))
    result = await item_result(handle, url)
    job_status = {"committed": "COMPLETED", "duplicate": "COMPLETED", "cancelled": "CANCELLED"}.get(
        result.outcome, "FAILED")
    size = sum(a.size for a in result.assets)
    return Job(id=job_id, url=result.url or url, status=job_status, retry_count=retries,
               scraped_title=result.title,
               error_log=f"{result.error_class}: {result.error}" if result.error_class else None,
               canonical_key=result.canonical_key, platform=result.platform, stage="done", outcome=result.outcome,
               progress=Progress(bytes_done=size, bytes_total=size, percent=100.0 if size else None),
               assets=result.assets)


def _attr(desc: Any, name: str) -> str | None:
    values = desc.search_attributes.get(name) if desc.search_attributes else None
    return values[0] if values else None


async def crawl_view(state: State, crawl_id: str) -> Crawl:
    handle = state.client.get_workflow_handle_for(CrawlWorkflow.run, crawl_id)
    desc = await handle.describe()
    stats = None
    if desc.status == WorkflowExecutionStatus.RUNNING:
        stats = await handle.query(CrawlWorkflow.stats)
    elif desc.status == WorkflowExecutionStatus.COMPLETED:
        stats = await handle.result()
    return Crawl(id=crawl_id, status=desc.status.name if desc.status else "UNKNOWN",
                 stats=dataclasses.asdict(stats) if stats else None)
