"""The pages a person reads: the library, an item, the activity, and the sign-in form."""

from __future__ import annotations

import asyncio
import hmac
import re
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from fastapi.templating import Jinja2Templates
from temporalio.service import RPCError
from markupsafe import Markup, escape

from trawl.api.items import check_days, export_template
from trawl.api.state import ApiState, api_state
from trawl.formatting import clock, human_size
from trawl.export import download_name
from trawl.storage.blobs import BlobStore
from trawl.storage.library import COUNT_CAP, KINDS, SORTS, LibraryQuery
from trawl.storage.records import CatalogItem, CommittedAsset, ExtraHit, Listing
from trawl.subtitles import SubtitleError, convert
from trawl.web.extras import (
    MAX_SHOWN_BYTES,
    CommentThreads,
    DanmakuView,
    Recent,
    chapters,
    comment_threads,
    comments_view,
    danmaku_view,
    extras_of,
    seconds_param,
    snapshot_time,
    start_at,
    tracks,
)
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


def place_text(seconds: float | None) -> str:
    """Where a viewer stopped, ``m:ss`` (the second it is in: 0:00 for its first)."""
    return clock(max(0, int(seconds or 0)))


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


def at_path(key: str, seconds: float) -> str:
    """The item's page with its player starting at ``seconds`` (``/items/<key>?t=162``)."""
    return f"{item_path(key)}?t={seconds_param(seconds)}"


def track_path(key: str, name: str) -> str:
    """A subtitle track of the item as WebVTT, for the player's ``<track>``."""
    return f"{item_path(key)}/subtitles/{quote(name, safe='')}.vtt"


def uploader_path(name: str) -> str:
    return "/uploaders/" + quote(name, safe="")


def listing_path(key: str) -> str:
    return "/listings/" + quote(key, safe=":")


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


# What a listing's source kind is called on its page (a kind not named here: its own name).
LISTING_KINDS = {"collection": "collection", "series": "series", "favorites": "favourites", "uploader": "uploads",
                 "album": "album", "feed": "feed", "user": "posts", "page": "page"}


def listing_name(listing: Listing) -> str:
    """A listing by its platform, kind and id, ``<platform> favourites 123`` (or the title it gave, with its kind)."""
    platform, _, kind = listing.kind.partition("_")
    what = f"{platform} {LISTING_KINDS.get(kind, kind)}".strip() if kind else LISTING_KINDS.get(platform, platform)
    return f"{listing.title} ({what})" if listing.title else f"{what} {listing.ident}"


def _words_pattern(words: list[str]) -> re.Pattern[str] | None:
    # Longest first, so that a word inside another is not marked instead of it.
    return re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)),
                      re.IGNORECASE) if words else None


def marked(value: str | None, words: list[str]) -> Markup:
    """``value`` escaped (text is never read as HTML), each search word found in it, in any case,
    inside ``<mark>``."""
    value = value or ""
    pattern = _words_pattern(words)
    if pattern is None:
        return escape(value)
    parts, at = [], 0
    for found in pattern.finditer(value):
        parts += [escape(value[at:found.start()]), Markup("<mark>%s</mark>") % found.group()]
        at = found.end()
    parts.append(escape(value[at:]))
    return Markup("").join(parts)


SNIPPET = 48  # characters either side of the first match


def snippet(item: CatalogItem, words: list[str]) -> Markup:
    """Where the search found an item whose title does not hold its words: the description around
    the first word found in it, marked; else its matching tags. Empty when the title shows it."""
    pattern = _words_pattern(words)
    title = item.title or ""
    if pattern is None or all(re.search(re.escape(w), title, re.IGNORECASE) for w in words):
        return Markup("")
    description = item.metadata.get("description")
    found = pattern.search(description) if isinstance(description, str) else None
    if found and isinstance(description, str):
        start, end = max(0, found.start() - SNIPPET), found.end() + SNIPPET
        text = ("…" if start else "") + description[start:end] + ("…" if end < len(description) else "")
        return marked(" ".join(text.split()), words)
    tags = item.metadata.get("tags")
    hits = [str(t) for t in tags if pattern.search(str(t))] if isinstance(tags, list) else []
    return marked(" · ".join(hits[:5]), words)


HIT_KINDS = {"subtitles": "subtitle", "danmaku": "danmaku", "comments": "comment"}


def hit_label(hit: ExtraHit) -> str:
    """What kind of line a search found an item by, and when it shows: ``subtitle 1:23``, ``comment``."""
    kind = HIT_KINDS.get(hit.kind, hit.kind)
    return kind if hit.seconds is None else f"{kind} {clock(max(0, int(hit.seconds)))}"


def hit_text(hit: ExtraHit, words: list[str]) -> Markup:
    """The line a search found an item by, around its first match, marked."""
    pattern = _words_pattern(words)
    found = pattern.search(hit.text) if pattern else None
    if found is None:
        return marked(hit.text, words)
    start, end = max(0, found.start() - SNIPPET), found.end() + SNIPPET
    return marked(("…" if start else "") + hit.text[start:end] + ("…" if end < len(hit.text) else ""), words)


templates.env.filters.update(size=size_text, duration=duration_text, when=when_text, place=place_text)
templates.env.globals.update(item_path=item_path, at_path=at_path, track_path=track_path,
                             seconds_param=seconds_param, uploader_path=uploader_path, listing_path=listing_path,
                             listing_name=listing_name, asset_path=asset_path, picture=picture, main_asset=main_asset,
                             marked=marked, snippet=snippet, hit_label=hit_label, hit_text=hit_text)


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    state: ApiState = request.app.state.trawl
    context.setdefault("said", said_on(request, state))
    return templates.TemplateResponse(request, name, {
        "signed_in": state.sessions.access(request.cookies.get(session_cookie(state.settings.api.port))) is not None,
        "workflows": web_ui_workflows(state.settings.temporal), **context}, status_code=status_code)


VIEWER = re.compile(r"[0-9a-f]{32}")
VIEWER_DAYS = 400  # a browser keeps its watched state this long after its last visit


def viewer_of(request: Request, state: ApiState) -> tuple[str, bool]:
    """The viewer a browser is (its cookie: a random id, never the token nor derived from it), and
    whether it is new (``remember_viewer`` then sets the cookie). Watched state is kept by it."""
    given = request.cookies.get(f"trawl_viewer_{state.settings.api.port}", "")
    if VIEWER.fullmatch(given):
        return given, False
    return secrets.token_hex(16), True


def remember_viewer(response: Response, request: Request, state: ApiState, viewer: str, new: bool) -> Response:
    if new:
        response.set_cookie(f"trawl_viewer_{state.settings.api.port}", viewer, max_age=VIEWER_DAYS * 86400,
                            httponly=True, samesite="strict", path="/", secure=request.url.scheme == "https")
    return response


def web_ui_workflows(temporal: Any) -> str:
    """The Temporal Web UI's page of the namespace's workflows (a workflow's page is under it)."""
    host = urlsplit(f"//{temporal.address}").hostname or "127.0.0.1"
    return f"http://{host}:{temporal.ui_port}/namespaces/{quote(temporal.namespace, safe='')}/workflows"


@router.get("/", response_class=HTMLResponse)
async def library(request: Request, q: str = Query("", max_length=500), platform: str = Query("", max_length=64),
                  uploader: str = Query("", max_length=500), kind: str = Query("", max_length=16),
                  since: str = Query("", max_length=10), until: str = Query("", max_length=10),
                  sort: str = Query("relevance", max_length=16), page: int = Query(1, ge=1, le=MAX_PAGE),
                  live: bool = Query(False), gone: bool = Query(False), unwatched: bool = Query(False),
                  state: ApiState = Depends(api_state)) -> Response:
    form = {"q": q, "platform": platform, "uploader": uploader, "kind": kind, "since": since, "until": until,
            "sort": sort, "live": 1 if live else "", "gone": 1 if gone else "", "unwatched": 1 if unwatched else ""}
    viewer, new_viewer = viewer_of(request, state)
    platforms = sorted(state.registry.platforms)
    try:
        check_days(since=since, until=until)
        query = LibraryQuery(text=q, platform=platform or None, uploader=uploader or None, kind=kind or None,
                             since=since or None, until=until or None, sort=sort or "relevance", limit=PAGE_SIZE,
                             offset=(page - 1) * PAGE_SIZE, live=live, gone=gone,
                             unwatched=viewer if unwatched else None)
    except ValueError as err:
        return render(request, "library.html", 422, form=form, error=str(err), items=[], total=0, page=page, words=[],
                      hits={},
                      pages=0, sorts=SORTS, kinds=KINDS, platforms=platforms, link=lambda **_: "", counted=None)
    result = await state.in_catalog(state.catalog.library, query)
    # Past the count's cap the matches beyond this page are known to exist, not how many.
    pages = max(1, -(-result.total // PAGE_SIZE)) if not result.more_than_counted else (
        page + 1 if len(result.items) == PAGE_SIZE else page)

    def link(**changes: Any) -> str:
        params = {k: v for k, v in {**form, "page": page, **changes}.items() if v not in ("", None)}
        if params.get("sort") == "relevance":
            del params["sort"]
        if params.get("page") == 1:
            del params["page"]
        return "/?" + urlencode(params) if params else "/"

    seen = await state.in_catalog(state.catalog.viewing, viewer, [i.canonical_key for i in result.items])
    return remember_viewer(render(request, "library.html", form=form, items=result.items, total=result.total,
                                  page=page, words=query.words(), seen=seen, hits=result.hits,
                                  pages=pages, sorts=SORTS, kinds=KINDS, platforms=platforms, link=link, error="",
                                  counted=COUNT_CAP if result.more_than_counted else None),
                           request, state, viewer, new_viewer)


def read_extra(store: BlobStore, asset: CommittedAsset) -> bytes | None:
    """A stored extra's bytes for the page, or None when it is too large to show or its blob is
    not in the store (its file is listed all the same)."""
    if asset.size > MAX_SHOWN_BYTES:
        return None
    try:
        with store.open(asset.key) as reader:
            return reader.read(MAX_SHOWN_BYTES + 1)
    except OSError:
        return None


@router.get("/items/{key:path}/subtitles/{name}.vtt", response_class=Response)
async def subtitle_track(key: str, name: str, state: ApiState = Depends(api_state)) -> Response:
    """A subtitle track of an item (the asset ``name``, ``subtitles.zh-CN``) converted from what is
    stored to WebVTT, for the item page's player. Its cue text is escaped: never markup."""
    item = await state.in_catalog(state.catalog.get, key)
    asset = next((a for a in item.assets if a.kind == "subtitles" and a.name == name), None) if item else None
    if item is None or asset is None:
        return PlainTextResponse(f"No subtitle track {name!r} of item {key!r} in the catalog.", 404)
    body = await run_in_threadpool(read_extra, state.blobs, asset)
    try:
        if body is None:
            raise SubtitleError(f"it is over {MAX_SHOWN_BYTES} bytes or missing from the store")
        track = convert(body, "vtt")
    except SubtitleError as err:
        return PlainTextResponse(f"The stored track {name!r} of item {key!r} cannot be shown: {err}", 422)
    return Response(track, media_type="text/vtt",
                    headers={"cache-control": "private, max-age=3600", "etag": f'"{asset.sha256}.vtt"'})


@router.get("/items/{key:path}", response_class=HTMLResponse)
async def item_page(key: str, request: Request, t: str = Query("", max_length=32),
                    comments: int = Query(1, ge=1, le=MAX_PAGE), thread: str = Query("", max_length=200),
                    state: ApiState = Depends(api_state)) -> Response:
    """An item: its media in a player (starting at ``?t=SECONDS`` when given) with its subtitle
    tracks, danmaku and chapters; its facts, files and URL forms; its comments in threads,
    ``THREADS_PER_PAGE`` a page (``?comments=N``), or one thread with all its replies (``?thread=ID``)."""
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
    listings = await state.in_catalog(state.catalog.listings_of, key)
    missing = await state.in_catalog(state.catalog.missing_extras, key)
    viewer, new_viewer = viewer_of(request, state)
    position, watched = (await state.in_catalog(state.catalog.viewing, viewer, [key])).get(key, (None, None))
    main = main_asset(item)
    playing = main is not None and main.kind in ("video", "audio")
    extras = await run_in_threadpool(item_extras, state.blobs, item, comments, thread or None) if playing else {}
    return remember_viewer(render(
        request, "item.html", item=item, main=main, poster=picture(item), files=files, forms=forms,
        workflow_link=workflow_link, metadata=shown, listings=listings, position=position, watched=watched,
        form_token=form_token(state), start=start_at(t), missing=missing, **extras), request, state, viewer, new_viewer)


# Comments documents and danmaku lately shown, read once each (their weight: comments, danmaku listed).
RECENT_COMMENTS: Recent[CommentThreads] = Recent(budget=300_000)
RECENT_DANMAKU: Recent[DanmakuView] = Recent(budget=60_000)


def item_extras(store: BlobStore, item: CatalogItem, page: int, thread: str | None) -> dict[str, Any]:
    """What the item page shows of a playable item's extras (trawl.web.extras), read from the store."""
    danmaku_files = extras_of(item.assets, "danmaku")

    def read_danmaku() -> tuple[DanmakuView, int | None]:
        bodies = [read_extra(store, asset) for asset in danmaku_files]
        view = danmaku_view([body for body in bodies if body is not None])
        view.errors += [f"{a.name}: over {MAX_SHOWN_BYTES:,} bytes, or missing from the store"
                        for a, body in zip(danmaku_files, bodies, strict=True) if body is None]
        return view, None if None in bodies else len(view.bullets) + 1

    danmaku = RECENT_DANMAKU.get(tuple(a.sha256 for a in danmaku_files), read_danmaku) if danmaku_files else None
    comments_asset = next(iter(extras_of(item.assets, "comments")), None)
    comments = None
    if comments_asset is not None:
        def read_comments() -> tuple[CommentThreads, int | None]:
            body = read_extra(store, comments_asset)
            if body is None:
                return CommentThreads(error=f"the document is over {MAX_SHOWN_BYTES:,} bytes, or missing from the store"), None
            read = comment_threads(body)
            return read, read.count + 1

        comments = comments_view(RECENT_COMMENTS.get(comments_asset.sha256, read_comments), page, thread)
    return {"tracks": tracks(item.assets), "chapters": chapters(item.metadata), "danmaku": danmaku,
            "danmaku_files": danmaku_files, "comments": comments, "comments_asset": comments_asset,
            "comments_when": snapshot_time(comments_asset) if comments_asset else None}


@router.get("/uploaders/{name:path}", response_class=HTMLResponse)
async def uploader_page(name: str, request: Request, page: int = Query(1, ge=1, le=MAX_PAGE),
                        state: ApiState = Depends(api_state)) -> HTMLResponse:
    """An uploader's items, newest first, with what the catalog knows of them."""
    if len(name) > 500:
        return render(request, "missing.html", 404, what="No uploader of a name that long.")
    facts = await state.in_catalog(state.catalog.uploader_facts, name)
    result = await state.in_catalog(state.catalog.library, LibraryQuery(
        uploader=name, sort="new", limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE))
    if not facts["items"]:
        return render(request, "missing.html", 404, what=f"No item of uploader {name!r} in the catalog.")
    listings = await state.in_catalog(state.catalog.all_listings)
    own = [entry for entry in listings if entry.kind.endswith("_uploader") and entry.ident in facts["uploader_ids"]]

    def link(**changes: Any) -> str:
        if "platform" in changes:
            return "/?" + urlencode({"uploader": name, "platform": changes["platform"]})
        return uploader_path(name) + (f"?page={changes['page']}" if changes.get("page", 1) != 1 else "")

    return render(request, "uploader.html", uploader=name, facts=facts, items=result.items, page=page,
                  pages=max(1, -(-facts["items"] // PAGE_SIZE)), link=link, listings=own)


@router.get("/listings", response_class=HTMLResponse)
async def listings_page(request: Request, state: ApiState = Depends(api_state)) -> HTMLResponse:
    """Every listing trawl expanded: collections, series, favourites folders, uploaders, albums, feeds."""
    listings = await state.in_catalog(state.catalog.all_listings)
    return render(request, "listings.html", listings=listings)


LISTING_PAGE = 100


@router.get("/listings/{key:path}", response_class=HTMLResponse)
async def listing_page(key: str, request: Request, page: int = Query(1, ge=1, le=MAX_PAGE),
                       order: str = Query("listed", pattern="^(listed|reversed)$"),
                       state: ApiState = Depends(api_state)) -> HTMLResponse:
    """A listing's entries in its order (or reversed), each with its item when the catalog holds
    it, and the entries the listing marks as dead."""
    listing = await state.in_catalog(state.catalog.listing, key, LISTING_PAGE, (page - 1) * LISTING_PAGE,
                                     order == "reversed")
    if listing is None:
        return render(request, "missing.html", 404, what=f"No listing {key!r}: trawl has not expanded it.")

    def link(**changes: Any) -> str:
        params = {k: v for k, v in {"order": order, "page": page, **changes}.items()
                  if not (k == "order" and v == "listed") and not (k == "page" and v == 1)}
        return listing_path(key) + ("?" + urlencode(params) if params else "")

    return render(request, "listing.html", listing=listing, page=page, order=order, link=link,
                  first=(page - 1) * LISTING_PAGE, pages=max(1, -(-listing.total // LISTING_PAGE)))


@router.get("/watches/{name}", response_class=HTMLResponse)
async def watch_page(name: str, request: Request, state: ApiState = Depends(api_state)) -> HTMLResponse:
    """A watch and what each of its runs brought: the runs Temporal remembers (with their counts),
    and every run whose items the catalog holds, the latest first."""
    from trawl.starter.watches import WatchError, get_watch, run_of, schedule_id

    try:
        watch = await get_watch(state.client, state.settings, name)
    except WatchError as err:
        return render(request, "missing.html", 404, what=str(err))
    # A run's crawl is named after the schedule's action (crawl-<schedule id>) and the second it was due.
    brought = await state.in_catalog(state.catalog.crawl_runs, f"crawl-{schedule_id(state.settings, name)}-")
    runs = {crawl_id: (count, items) for crawl_id, count, items in brought}
    recent = []
    try:
        described = await state.client.get_schedule_handle(watch.schedule_id).describe()
        recent = list(reversed(await asyncio.gather(*(run_of(state.client, a) for a in described.info.recent_actions))))
    except RPCError:
        pass  # the catalog's runs are still shown
    shown = {run.crawl_id for run in recent}
    older = [(crawl_id, count, items) for crawl_id, (count, items) in runs.items() if crawl_id not in shown]
    return render(request, "watch.html", watch=watch, recent=recent, runs=runs, older=older,
                  form_token=form_token(state), link=lambda **changes: "/?" + urlencode(changes))


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

