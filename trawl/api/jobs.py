"""Jobs: one item workflow each, in TaskCrawler's shape."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError

from trawl.starter import views
from trawl.api.error_responses import MESSAGE_SHOWN, already_closed, declared, described, finished
from trawl.api.models import Action, Job, JobCreate, JobStatus, Progress
from trawl.api.state import ApiState, api_state, bearer
from trawl.starter.client import item_handle, item_progress, item_result, start_item
from trawl.contracts import ITEM_WORKFLOW
from trawl.errors import TrawlError
from trawl.text import shown

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"], responses=declared(401, 429, 503),
                   dependencies=[Depends(bearer)])


@router.post("", status_code=202, response_model=Job,
             responses=declared(403, 413, 422))
async def create_job(body: JobCreate, state: ApiState = Depends(api_state)) -> Job:
    """Start the item workflow for a URL, or join it: every URL form of one item has one id."""
    try:
        started = await start_item(state.client, state.settings, state.registry, body.url)
    except TrawlError as err:
        raise HTTPException(422, shown(f"{err.error_class}: {err.message}", MESSAGE_SHOWN)) from None
    return await job_view(state, started.workflow_id, body.url)


@router.get("/{job_id}", response_model=Job, responses=declared(404, 422))
async def get_job(job_id: str, state: ApiState = Depends(api_state)) -> Job:
    return await job_view(state, job_id)


@router.post("/{job_id}/{action}", response_model=Job,
             responses=declared(403, 404, 409, 422))
async def steer_job(job_id: str, action: Action, state: ApiState = Depends(api_state)) -> Job:
    """Pause (the download keeps its bytes), resume, or cancel (its partial files are removed)."""
    handle = state.client.get_workflow_handle(job_id)
    desc = await described(handle, "job", ITEM_WORKFLOW)
    if desc.status != WorkflowExecutionStatus.RUNNING:
        raise finished("job", job_id, desc.status, action)
    try:
        if action == "cancel":
            await handle.cancel()
        else:
            await handle.signal(action)
    except RPCError as err:
        if not already_closed(err):
            raise
        raise finished("job", job_id, (await handle.describe()).status, action) from None
    return await job_view(state, job_id)


async def retry_count(handle: WorkflowHandle) -> int:
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


async def job_view(state: ApiState, job_id: str, url: str = "") -> Job:
    """A running job from its progress query; a closed one from its result (``item_result``,
    which turns a failed or cancelled execution into a result too): the status follows the
    result's outcome."""
    handle = item_handle(state.client, job_id)
    desc = await described(handle, "job", ITEM_WORKFLOW)
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
    return Job(id=job_id, url=result.url or url or await views.started_url(state.client, handle), status=job_status,
               retry_count=retries,
               scraped_title=result.title,
               error_log=f"{result.error_class}: {result.error}" if result.error_class else None,
               canonical_key=result.canonical_key, platform=result.platform, stage="done", outcome=result.outcome,
               progress=Progress(bytes_done=size, bytes_total=size, percent=100.0 if size else None),
               assets=views.result_dict(result)["assets"])


def _attr(desc: Any, name: str) -> str | None:
    values = desc.search_attributes.get(name) if desc.search_attributes else None
    return values[0] if values else None
