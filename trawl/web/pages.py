"""The pages a person reads: the library, an item, the activity, and the sign-in form."""

from __future__ import annotations

import hmac
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from trawl.api.items import export_template
from trawl.api.state import ApiState, api_state
from trawl.formatting import clock, human_size
from trawl.export import download_name
from trawl.storage.library import COUNT_CAP, KINDS, SORTS, LibraryQuery
from trawl.storage.records import CatalogItem, CommittedAsset
from trawl.text import shown
from trawl.web.sessions import LOGIN_PATH, LOGOUT_PATH, session_cookie
from trawl.web.activity import activity_view

PAGE_SIZE = 48
MAX_PAGE = 10_000

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=Path(__file__).resolve().parent / "templates")


def size_text(size: int | None) -> str:
    return "" if size is None else human_size(size)


def duration_text(seconds: float | None) -> str:
    return clock(seconds) if seconds else ""


def when_text(iso: str | None) -> str:
    """An ISO time as ``2026-12-02 11:40:05 UTC``."""
    if not iso:
        return ""
    try:
        moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def item_path(key: str) -> str:
    return "/items/" + quote(key, safe=":")


def asset_path(key: str, asset: CommittedAsset) -> str:
    return f"/api/v1/items/{quote(key, safe=':')}/assets/{quote(asset.name, safe='')}"


def main_asset(item: CatalogItem) -> CommittedAsset | None:
    for kind in KINDS:
        found = next((a for a in item.assets if a.kind == kind), None)
        if found:
            return found
    return None


def picture(item: CatalogItem) -> CommittedAsset | None:
    """What stands for the item in a grid: its thumbnail, else the image it is."""
    return next((a for a in item.assets if a.kind == "thumbnail"), None) or next(
        (a for a in item.assets if a.kind == "image"), None)


templates.env.filters.update(size=size_text, duration=duration_text, when=when_text)
templates.env.globals.update(item_path=item_path, asset_path=asset_path, picture=picture, main_asset=main_asset)


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    state: ApiState = request.app.state.trawl
    context.setdefault("said", said_on(request, state))
    return templates.TemplateResponse(request, name, {
        "signed_in": state.sessions.access(request.cookies.get(session_cookie(state.settings.api.port))) is not None,
        "workflows": web_ui_workflows(state.settings.temporal), **context}, status_code=status_code)


def web_ui_workflows(temporal: Any) -> str:
    """The Temporal Web UI's page of the namespace's workflows (a workflow's page is under it)."""
    host = urlsplit(f"//{temporal.address}").hostname or "127.0.0.1"
    return f"http://{host}:{temporal.ui_port}/namespaces/{quote(temporal.namespace, safe='')}/workflows"


@router.get("/", response_class=HTMLResponse)
async def library(request: Request, q: str = Query("", max_length=500), platform: str = Query("", max_length=64),
                  uploader: str = Query("", max_length=500), kind: str = Query("", max_length=16),
                  since: str = Query("", max_length=10), until: str = Query("", max_length=10),
                  sort: str = Query("new", max_length=16), page: int = Query(1, ge=1, le=MAX_PAGE),
                  state: ApiState = Depends(api_state)) -> HTMLResponse:
    form = {"q": q, "platform": platform, "uploader": uploader, "kind": kind, "since": since, "until": until,
            "sort": sort}
    platforms = sorted(state.registry.platforms)
    try:
        _check_days(since=since, until=until)
        query = LibraryQuery(text=q, platform=platform or None, uploader=uploader or None, kind=kind or None,
                             since=since or None, until=until or None, sort=sort or "new", limit=PAGE_SIZE,
                             offset=(page - 1) * PAGE_SIZE)
    except ValueError as err:
        return render(request, "library.html", 422, form=form, error=str(err), items=[], total=0, page=page,
                      pages=0, sorts=SORTS, kinds=KINDS, platforms=platforms, link=lambda **_: "", counted=None)
    result = await state.in_catalog(state.catalog.library, query)
    # Past the count's cap the matches beyond this page are known to exist, not how many.
    pages = max(1, -(-result.total // PAGE_SIZE)) if not result.more_than_counted else (
        page + 1 if len(result.items) == PAGE_SIZE else page)

    def link(**changes: Any) -> str:
        params = {k: v for k, v in {**form, "page": page, **changes}.items() if v not in ("", None)}
        if params.get("sort") == "new":
            del params["sort"]
        if params.get("page") == 1:
            del params["page"]
        return "/?" + urlencode(params) if params else "/"

    return render(request, "library.html", form=form, items=result.items, total=result.total, page=page,
                  pages=pages, sorts=SORTS, kinds=KINDS, platforms=platforms, link=link, error="",
                  counted=COUNT_CAP if result.more_than_counted else None)


def _check_days(**days: str) -> None:
    """A day filter must be a day of the calendar (``9999-99-99`` has the shape and is none);
    its shape is ``LibraryQuery``'s to check."""
    for name, value in days.items():
        try:
            if value:
                date.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{name} must be a day as YYYY-MM-DD, not {shown(value, 40)!r}") from None


@router.get("/items/{key:path}", response_class=HTMLResponse)
async def item_page(key: str, request: Request, state: ApiState = Depends(api_state)) -> HTMLResponse:
    item = await state.in_catalog(state.catalog.get, key)
    if item is None:
        return render(request, "missing.html", 404, what=f"No item {key!r} in the catalog.")
    forms = await state.in_catalog(state.catalog.url_forms, key)
    export = state.settings.export
    template = export_template(export.template)
    files = [(a, download_name(item, a, template, windows=export.windows_names)) for a in item.assets]
    workflow_link = (f"{web_ui_workflows(state.settings.temporal)}/{quote(item.workflow_id, safe='')}"
                     if item.workflow_id else None)
    shown = {k: v for k, v in item.metadata.items()
             if k in ("description", "tags", "uploader_id", "view_count", "like_count", "width", "height",
                      "upload_date", "channel", "series", "part") and v not in (None, "", [], {})}
    return render(request, "item.html", item=item, main=main_asset(item), poster=picture(item), files=files,
                  forms=forms, workflow_link=workflow_link, metadata=shown)


@router.get("/activity", response_class=HTMLResponse)
async def activity(request: Request, state: ApiState = Depends(api_state)) -> HTMLResponse:
    return render(request, "activity.html", view=await activity_view(state), form_token=form_token(state))


@router.get("/activity/live", response_class=HTMLResponse)
async def activity_live(request: Request, state: ApiState = Depends(api_state)) -> HTMLResponse:
    """The activity's live part alone, which the page's script fetches every few seconds."""
    return render(request, "live.html", view=await activity_view(state), form_token=form_token(state))


def _page_key(state: ApiState) -> bytes:
    """What the page's form tokens and sealed messages are keyed by: the API token when there is
    one, so that every API process behind one address agrees, else this process's own secret."""
    return state.settings.api.token.encode() or state.form_secret


def seal(state: ApiState, message: str) -> str:
    """The seal a message the server says on the page carries in its link (``said`` and ``seal``)."""
    return hmac.new(_page_key(state), b"trawl said\0" + message.encode(), "sha256").hexdigest()


def said_link(state: ApiState, message: str, where: str = "/activity") -> str:
    """A link to ``where`` that shows ``message`` (sealed: the page shows only what it said itself)."""
    return f"{where}?{urlencode({'said': message, 'seal': seal(state, message)})}"


def said_on(request: Request, state: ApiState) -> str:
    """The message a link asks the page to show, when the server sealed it; else nothing (any
    site can link here with words of its own)."""
    message, given = request.query_params.get("said", ""), request.query_params.get("seal", "")
    if message and hmac.compare_digest(given.encode(), seal(state, message).encode()):
        return message
    return ""


def form_token(state: ApiState) -> str:
    """The value every steering form carries (``same_origin`` checks it): a page of another site
    cannot read it, so it cannot make a form that passes. Keyed by the API token when there is
    one, so that every API process behind one address agrees on it."""
    return hmac.new(_page_key(state), b"trawl steering form", "sha256").hexdigest()


@router.get(LOGIN_PATH, response_class=HTMLResponse)
async def login_form(request: Request, next: str = Query("/", max_length=2000)) -> HTMLResponse:  # noqa: A002
    return render(request, "login.html", next=_local(next), error="")


@router.post(LOGIN_PATH, response_class=HTMLResponse)
async def login(request: Request, token: str = Form("", max_length=4096), next: str = Form("/", max_length=2000),  # noqa: A002
                state: ApiState = Depends(api_state)) -> Response:
    api = state.settings.api
    given = token.strip().encode()
    right = [t for t in (api.token, api.read_token) if t and hmac.compare_digest(given, t.encode())]
    if not api.token:
        return RedirectResponse(_local(next), status_code=303)
    if not right:
        return render(request, "login.html", 401, next=_local(next), error="That token is not this trawl's api.token or api.read_token.")
    response = RedirectResponse(_local(next), status_code=303)
    session = state.sessions.start("all" if right[0] == api.token else "read")
    response.set_cookie(session_cookie(api.port), session, max_age=int(state.sessions.lifetime.total_seconds()),
                        httponly=True, samesite="strict", path="/", secure=request.url.scheme == "https")
    return response


@router.post(LOGOUT_PATH)
async def logout(request: Request, state: ApiState = Depends(api_state)) -> Response:
    """End the session on the server (its cookie, kept or copied, no longer lets anyone in) and
    drop the cookie."""
    name = session_cookie(state.settings.api.port)
    state.sessions.end(request.cookies.get(name))
    response = RedirectResponse(LOGIN_PATH, status_code=303)
    response.delete_cookie(name, path="/")
    return response


def _local(target: str) -> str:
    """Where to go after signing in: a path on this site only, never another site."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return "/"
    return target

