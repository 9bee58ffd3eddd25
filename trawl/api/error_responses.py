"""Errors as JSON ``{"detail": ...}``: how exceptions become answers, and how each route declares
the errors it can answer, so the OpenAPI schema lists them with their body.

Which errors an endpoint can answer:

- 401: with ``api.token`` set, no token on any endpoint but ``/healthz`` and the docs, and a wrong
  token on any endpoint at all (``trawl.api.limits.RateLimit``).
- 403: ``api.read_token`` on an endpoint that changes something.
- 429: every request is counted by the rate limit; the answer carries ``Retry-After``.
- 413: a request body over ``api.max_body_bytes`` (``trawl.api.limits.BodySizeLimit``), or a crawl
  over what one crawl can carry.
- 422: a request that does not fit the schema, a URL refused, an id Temporal refuses as malformed.
  Refused input is shown escaped and cut (``trawl.text.shown``), never echoed whole.
- 404: no such job, crawl or item.
- 409: steering a job or crawl that has finished.
- 503: Temporal or the catalog is unreachable, or the workflow's worker cannot answer now.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from temporalio.client import (WorkflowExecutionDescription, WorkflowExecutionStatus, WorkflowHandle,
                              WorkflowQueryFailedError)
from temporalio.service import RPCError

from trawl.api.models import Error, RequestInvalid
from trawl.starter.client import CrawlRefused, CrawlTooLarge
from trawl.starter.views import Unanswered, status_name
from trawl.errors import StorageError
from trawl.text import shown

WHY = {
    401: "Missing or wrong bearer token.",
    403: "A read-only token (api.read_token) on an endpoint that changes something.",
    404: "No such job, crawl or item.",
    409: "It has finished: there is nothing left to steer.",
    413: "The request body, or the crawl it would make, is over its limit.",
    416: "The range asked for starts beyond the end of the file.",
    422: "The request does not fit the schema, or a URL in it is refused.",
    429: "Too many requests: wait for the seconds in Retry-After.",
    503: "Temporal or the catalog is unreachable, or the workflow's worker cannot answer now.",
}


# The most characters of a refusal's message shown (it may quote the input it refuses).
MESSAGE_SHOWN = 300


def _shown_deep(value: Any) -> Any:
    """Every string in ``value`` (lists and mappings walked) shown as refused input is."""
    if isinstance(value, str):
        return shown(value, MESSAGE_SHOWN)
    if isinstance(value, list):
        return [_shown_deep(v) for v in value]
    if isinstance(value, dict):
        return {k: _shown_deep(v) for k, v in value.items()}
    return value


def declared(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for these error codes, each with its JSON body."""
    return {code: {"model": RequestInvalid if code == 422 else Error, "description": WHY[code]} for code in codes}


def finished(kind: str, ident: str, status: WorkflowExecutionStatus | None, what: str) -> HTTPException:
    """409 for steering a ``kind`` ("job", "crawl") that has finished."""
    return HTTPException(409, f"{kind} {ident} has finished ({status_name(status)}): nothing to {what}")


# A route's path parameter -> what the API calls the thing it names.
NAMED_BY = {"job_id": "job", "crawl_id": "crawl"}


def not_found(request: Request) -> str | None:
    """``no such job: 'url-nope'``, as the items' 404s say, for Temporal's "workflow not found"."""
    for param, kind in NAMED_BY.items():
        if param in request.path_params:
            return f"no such {kind}: {request.path_params[param]!r}"
    return None


async def described(handle: WorkflowHandle, kind: str, workflow_type: str) -> WorkflowExecutionDescription:
    """The workflow's description, when it is a ``workflow_type`` (a job route takes item
    workflows only, a crawl route crawls only); any other workflow is no such ``kind`` (404), so
    a route never reads or steers a workflow of another kind, or one that is not trawl's."""
    desc = await handle.describe()
    if desc.workflow_type != workflow_type:
        raise HTTPException(404, f"no such {kind}: {handle.id!r}")
    return desc


def already_closed(err: RPCError) -> bool:
    """Temporal's answer to a signal sent to a workflow that has just closed."""
    return "already completed" in err.message


def install(app: FastAPI) -> None:
    """JSON answers for what the routes let escape; no stack traces."""

    @app.exception_handler(Exception)
    async def _internal(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": f"internal error: {type(exc).__name__}"}, status_code=500)

    @app.exception_handler(RPCError)
    async def _temporal(request: Request, exc: RPCError) -> JSONResponse:
        # Only an unavailable Temporal is worth retrying; a request it refuses as malformed is not.
        code = {"NOT_FOUND": 404, "INVALID_ARGUMENT": 422}.get(exc.status.name, 503)
        detail = (not_found(request) if code == 404 else None) or exc.message
        return JSONResponse({"detail": detail}, status_code=code)

    @app.exception_handler(WorkflowQueryFailedError)
    async def _unanswered(_: Request, exc: WorkflowQueryFailedError) -> JSONResponse:
        # The workflow exists but its worker cannot answer now (a failing or unpicked task).
        return JSONResponse({"detail": f"the workflow cannot answer now: {exc}"}, status_code=503)

    @app.exception_handler(Unanswered)
    async def _no_worker(_: Request, exc: Unanswered) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=503)

    @app.exception_handler(CrawlRefused)
    async def _refused(_: Request, exc: CrawlRefused) -> JSONResponse:
        # Shaped like FastAPI's own validation errors: one entry per URL, with its reason.
        return JSONResponse({"detail": [
            {"type": r.error_class, "loc": ["body", "urls", r.index], "msg": shown(r.message, MESSAGE_SHOWN),
             "input": shown(r.url)} for r in exc.refusals]}, status_code=422)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's own answer, with what it echoes of the input shown as refused input is.
        return JSONResponse({"detail": _shown_deep(jsonable_encoder(exc.errors()))}, status_code=422)

    @app.exception_handler(CrawlTooLarge)
    async def _too_large(_: Request, exc: CrawlTooLarge) -> JSONResponse:
        return JSONResponse({"detail": exc.message}, status_code=413)

    @app.exception_handler(StorageError)
    async def _catalog(_: Request, exc: StorageError) -> JSONResponse:
        # The catalog did not answer in time, or failed: worth retrying, as for Temporal.
        return JSONResponse({"detail": exc.message}, status_code=503)
