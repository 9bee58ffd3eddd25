"""The page's forms: pause, resume or cancel a crawl or an item, pause, resume or run a watch, and
start a crawl from pasted URLs (listing URLs included). Each does what the JSON API's route of
the same name does (it calls it), then goes back to the activity page saying what happened.

A form is taken only from the page itself: it must carry the page's form token, and a browser's
``Origin`` (sent with every POST) must be this site. Without that, any site the person visits
could post to a trawl listening on their loopback.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Form, HTTPException, Request
from fastapi.responses import RedirectResponse, Response
from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError

from trawl.api import crawls, jobs, watches
from trawl.api.models import CrawlCreate
from trawl.api.state import ApiState, api_state
from trawl.errors import TrawlError
from trawl.text import shown
from trawl.web.activity import reason
from trawl.web.pages import form_token, item_path, said_link, viewer_of

router = APIRouter(prefix="/steer", include_in_schema=False)

MAX_PASTED = 1_000_000  # characters of pasted URLs; the API's body limit applies before this


async def same_origin(request: Request, token: str = Form("", alias="form_token", max_length=128),
                      state: ApiState = Depends(api_state)) -> ApiState:
    """Refuse (403) a form from anywhere but this site's pages."""
    origin = request.headers.get("origin")
    if origin is not None:
        parts = urlsplit(origin)
        if parts.netloc != request.headers.get("host", "") or parts.scheme not in ("http", "https"):
            raise HTTPException(403, "this form came from another site")
    elif request.headers.get("sec-fetch-site") not in (None, "same-origin", "none"):
        raise HTTPException(403, "this form came from another site")
    if not hmac.compare_digest(token.encode(), form_token(state).encode()):
        raise HTTPException(403, "this form is not from this page (reload the page and try again)")
    return state


# What steering can meet, said on the page in one line: the API's refusals (HTTPException: not
# found, finished already), Temporal's answers, trawl's own (URLs refused, a catalog that fails).
STEER_ERRORS = (HTTPException, RPCError, TrawlError, WorkflowQueryFailedError, TimeoutError)


def back(state: ApiState, said: str, where: str = "/activity") -> RedirectResponse:
    """Back to ``where``, which then says ``said`` (sealed by the server: no other link can make
    the page say anything)."""
    return RedirectResponse(said_link(state, said[:500], where), status_code=303)


@router.post("/crawl")
async def new_crawl(urls: str = Form("", max_length=MAX_PASTED), state: ApiState = Depends(same_origin)) -> RedirectResponse:
    lines = [line.strip() for line in urls.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        return back(state, "Paste at least one URL, one per line.")
    try:
        crawl = await crawls.create_crawl(CrawlCreate(urls=lines), state)
    except STEER_ERRORS as err:
        return back(state, f"Nothing started: {reason(err)}")
    refused = f"; refused {len(crawl.refused)}: {'; '.join(crawl.refused[:3])}" if crawl.refused else ""
    return back(state, f"Started crawl {crawl.id} of {len(lines)} URL(s){refused}")


async def _steer_watch(name: str, action: str, state: ApiState) -> object:
    route = {"pause": watches.pause, "resume": watches.resume, "trigger": watches.trigger}[action]
    return await route(name, state)


# What each button does: the API's route for it, called with (id, action, state).
STEERING: dict[str, tuple[frozenset[str], Callable[[str, str, ApiState], Awaitable[object]]]] = {
    "crawl": (frozenset({"pause", "resume", "cancel"}), crawls.steer_crawl),  # type: ignore[dict-item]
    "item": (frozenset({"pause", "resume", "cancel"}), jobs.steer_job),  # type: ignore[dict-item]
    "watch": (frozenset({"pause", "resume", "trigger"}), _steer_watch),
}
DONE = {"pause": "pause sent", "resume": "resume sent", "cancel": "cancel sent", "trigger": "run started"}


@router.post("/{action}/{kind}/{ident:path}")
async def steer(action: str, kind: str, ident: str, state: ApiState = Depends(same_origin)) -> RedirectResponse:
    """Pause, resume or cancel a crawl or an item; pause, resume or run (``trigger``) a watch."""
    actions, route = STEERING.get(kind, (frozenset(), None))
    if route is None or action not in actions:
        raise HTTPException(404, f"nothing to {action} a {kind} with")
    try:
        await route(ident, action, state)
    except STEER_ERRORS as err:
        return back(state, f"Could not {action} {kind} {shown(ident, 100)}: {reason(err)}")
    return back(state, f"{kind.capitalize()} {shown(ident, 100)}: {DONE[action]}")


@router.post("/viewing/{key:path}")
async def viewing(key: str, request: Request, position: float | None = Form(None, ge=0, le=10**7),
                  watched: str = Form("", pattern="^(|0|1)$"), state: ApiState = Depends(same_origin)) -> Response:
    """This browser's watched state of an item: where it stopped (``position``, seconds: the
    player's script saves it, 204) and whether it watched it (``watched`` 1 or 0: the item page's
    button, back to the item)."""
    viewer, new = viewer_of(request, state)
    if new:  # a browser that never had a page of this site: nothing to keep its state by
        raise HTTPException(403, "open the item's page first")
    found = await state.in_catalog(state.catalog.save_viewing, viewer, key, position=position,
                                   watched=None if watched == "" else watched == "1")
    if not found:
        raise HTTPException(404, f"no such item: {shown(key, 200)!r}")
    if watched == "":
        return Response(status_code=204)
    return RedirectResponse(item_path(key), status_code=303)
