"""The catalog: committed items and their files, streamed from the blob store with Range support.

The catalog and the blob store block: both are called in threads (``ApiState.in_catalog``,
``run_in_threadpool``), never on the event loop."""

from __future__ import annotations

import unicodedata
from collections.abc import AsyncIterator
from datetime import date
from email.utils import formatdate
from functools import lru_cache
from typing import Any
from secrets import token_hex
from urllib.parse import quote

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.responses import MalformedRangeHeader, RangeNotSatisfiable, Response

from trawl.starter import views
from trawl.api.error_responses import declared
from trawl.api.models import (
    ExtraMatch, ExtrasRefresh, ExtrasRefreshCreate, Item, ItemPage, Rechecked, RefreshedExtra)
from trawl.api.state import ApiState, api_state, bearer
from trawl.export import Template, download_name, ext_for
from trawl.storage.blobs import BlobStat, BlobStore
from trawl.storage.catalog import CommittedAsset
from trawl.storage.records import ExtraHit
from trawl.text import shown
from trawl.web.extras import seconds_param
from trawl.storage.library import COUNT_CAP, SORTS, LibraryQuery

MAX_ITEMS_PAGE = 1000
MAX_ITEMS_OFFSET = 1_000_000_000
BINARY = {"schema": {"type": "string", "format": "binary"}}
MEDIA_TYPES = ("video/*", "audio/*", "image/*", "application/octet-stream")
CHUNK = 256 * 1024

router = APIRouter(prefix="/api/v1/items", tags=["catalog"], responses=declared(401, 429, 503),
                   dependencies=[Depends(bearer)])


@router.get("", response_model=ItemPage, responses=declared(422))
async def list_items(platform: str | None = Query(None, max_length=64),
                     q: str | None = Query(None, max_length=500, description=(
                         "search, as the library page's: every word found anywhere in the title, uploader, "
                         "tags or description, or in one line of a subtitle track, a danmaku or a comment, in "
                         "any script and case; items whose title holds every word first, those found by their "
                         "extras alone last, their line in `matched` (docs/library.md)")),
                     uploader: str | None = Query(None, max_length=500, description="exactly this uploader"),
                     kind: str | None = Query(None, max_length=16, description="video, audio or image"),
                     since: str | None = Query(None, max_length=10, description="from this day (YYYY-MM-DD)"),
                     until: str | None = Query(None, max_length=10, description="to this day (YYYY-MM-DD)"),
                     sort: str | None = Query(None, max_length=16, description=", ".join(SORTS)),
                     live: bool | None = Query(None, description="true: live recordings alone"),
                     gone: bool | None = Query(None, description="true: items a re-check found gone upstream alone"),
                     limit: int = Query(100, ge=1, le=MAX_ITEMS_PAGE),
                     offset: int = Query(0, ge=0, le=MAX_ITEMS_OFFSET),
                     state: ApiState = Depends(api_state)) -> ItemPage:
    """The catalog's items. With none of the library's filters, in commit order (oldest first);
    with any (``q``, ``uploader``, ``kind``, ``since``, ``until``, ``sort``, ``live``, ``gone``), the library page's
    query: its order (``sort``, by default the best match, then newest) and ``total``, the
    matches counted up to 10,001 (more: ``more_than_counted``)."""
    if all(v is None for v in (q, uploader, kind, since, until, sort, live, gone)):
        items = await state.in_catalog(state.catalog.list, platform=platform, limit=limit, offset=offset)
        return ItemPage(items=[Item(**views.item_dict(i)) for i in items], limit=limit, offset=offset)
    if offset > MAX_LIBRARY_OFFSET:
        raise HTTPException(422, f"offset must be at most {MAX_LIBRARY_OFFSET} with a search or filter")
    try:
        check_days(since=since, until=until)
        query = LibraryQuery(text=q or "", platform=platform or None, uploader=uploader or None, kind=kind or None,
                             since=since or None, until=until or None, sort=sort or "relevance", limit=limit,
                             offset=offset, live=bool(live), gone=bool(gone))
    except ValueError as err:
        raise HTTPException(422, str(err)) from None
    page = await state.in_catalog(state.catalog.library, query)
    return ItemPage(items=[Item(**views.item_dict(i)) for i in page.items], limit=limit, offset=offset,
                    matched={key: extra_match(key, hit) for key, hit in page.hits.items()},
                    total=min(page.total, COUNT_CAP) if page.more_than_counted else page.total,
                    more_than_counted=page.more_than_counted)


def item_page(key: str, seconds: float | None = None) -> str:
    """An item's web page, its player starting at ``seconds`` when given (the page's own
    ``item_path`` and ``at_path``: trawl.web.pages)."""
    path = "/items/" + quote(key, safe=":")
    return path if seconds is None else f"{path}?t={seconds_param(seconds)}"


def extra_match(key: str, hit: ExtraHit) -> ExtraMatch:
    return ExtraMatch(kind=hit.kind, text=hit.text, seconds=hit.seconds,  # type: ignore[arg-type]
                      page=item_page(key, hit.seconds))


# A filtered or searched listing goes this deep at most (the web page's 10,000 pages of 48).
MAX_LIBRARY_OFFSET = 480_000


def check_days(**days: str | None) -> None:
    """A day filter must be a day of the calendar (``9999-99-99`` has the shape and is none);
    its shape is ``LibraryQuery``'s to check."""
    for name, value in days.items():
        try:
            if value:
                date.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{name} must be a day as YYYY-MM-DD, not {shown(value, 40)!r}") from None


@router.post("/{key:path}/recheck", response_model=Rechecked, responses=declared(403, 404, 422))
async def recheck_item(key: str, state: ApiState = Depends(api_state)) -> Rechecked:
    """Ask the item's platform whether it still has it (as ``trawl recheck KEY`` does) and record
    what it says: ``gone`` upstream with the platform's reason (deleted, private, region-locked)
    and the time, or ``there``; ``unknown`` when it could not tell (nothing is recorded). The
    archived copy is never touched."""
    from trawl.http_client import make_client
    from trawl.platforms.base import ResolveContext
    from trawl.recheck import recheck

    item = await state.in_catalog(state.catalog.get, key)
    if item is None:
        raise HTTPException(404, f"no such item: {key!r}")
    net = state.settings.net

    def ask() -> Any:
        with make_client(net) as http:
            return next(recheck(state.catalog, state.registry, ResolveContext(http, net.max_page_bytes), [item]))

    found = await run_in_threadpool(ask)
    after = await state.in_catalog(state.catalog.get, key)
    return Rechecked(canonical_key=key, outcome=found.outcome, reason=found.reason,
                     gone_at=after.gone_at if after else None, checked_at=after.checked_at if after else None)


@router.post("/{key:path}/extras/refresh", status_code=202, response_model=ExtrasRefresh,
             responses=declared(403, 404, 413, 422))
async def refresh_extras(key: str, body: ExtrasRefreshCreate | None = None,
                         state: ApiState = Depends(api_state)) -> ExtrasRefresh:
    """Fetch a committed item's extras again (as ``trawl extras KEY`` does), each stored as a new
    dated snapshot beside the earlier ones (docs/extras.md); a refresh of the item already running
    is joined. Its progress and result: ``GET`` on the same path."""
    from trawl.starter.client import start_extras_refresh

    item = await state.in_catalog(state.catalog.get, key)
    if item is None or item.status != "committed":
        raise HTTPException(404, f"no committed item {key!r}")
    wanted = body.extras if body else []
    offered = state.registry.extras.by_platform.get(item.platform, {})
    unknown = [name for name in wanted if name not in offered]
    if unknown:
        raise HTTPException(422, f"{item.platform} offers no extra {unknown[0]!r} here; its extras: "
                                 f"{', '.join(offered) or 'none'}")
    handle = await start_extras_refresh(state.client, state.settings, item.canonical_key, item.platform, wanted)
    return ExtrasRefresh(canonical_key=item.canonical_key, id=handle.id, status="RUNNING")


@router.get("/{key:path}/extras/refresh", response_model=ExtrasRefresh, responses=declared(404, 422))
async def extras_refresh(key: str, state: ApiState = Depends(api_state)) -> ExtrasRefresh:
    """The item's latest extras refresh: running, or its result (404 when it has had none, or the
    item is not in this archive)."""
    from temporalio.client import WorkflowExecutionStatus
    from temporalio.service import RPCError, RPCStatusCode

    from trawl.contracts import RefreshResult, extras_workflow_id

    # The refresh's workflow id is the item's key, and a Temporal namespace may serve several
    # archives: another archive's refresh of the same video is not this one's to show.
    if await state.in_catalog(state.catalog.get, key) is None:
        raise HTTPException(404, f"no such item: {key!r}")
    handle = state.client.get_workflow_handle(extras_workflow_id(key), result_type=RefreshResult)
    try:
        desc = await handle.describe()
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        raise HTTPException(404, f"no extras refresh of {key!r}") from None
    view = ExtrasRefresh(canonical_key=key, id=handle.id, status=views.status_name(desc.status))
    if desc.status == WorkflowExecutionStatus.COMPLETED:
        result = await handle.result()
        view.snapshot = result.snapshot
        view.extras = [RefreshedExtra(name=e.name, kind=e.kind, language=e.language or None, size=e.size,
                                      sha256=e.sha256 or None, missing=e.missing or None, reason=e.reason or None)
                       for e in result.extras]
    return view


@router.get("/{key:path}/assets/{kind}", response_class=Response, responses={
    200: {"description": "The whole file.", "content": dict.fromkeys(MEDIA_TYPES, BINARY)},
    206: {"description": "The range asked for (`Range: bytes=...`).", "content": dict.fromkeys(MEDIA_TYPES, BINARY)},
    **declared(404, 416, 422)})
async def get_asset(key: str, kind: str, request: Request, state: ApiState = Depends(api_state)) -> Response:
    """One of an item's files by kind (``video``, ``audio``, ``image``) or name, streamed from the
    blob store (a directory or a bucket); ``Range`` and ``If-Range`` are honoured. It is offered
    under the name ``trawl export`` gives it (the template's last part, ``Title [id].mp4``)."""
    item = await state.in_catalog(state.catalog.get, key)
    if item is None:
        raise HTTPException(404, f"no such item: {key!r}")
    asset = next((a for a in item.assets if a.kind == kind or a.name == kind), None)
    if asset is None:
        has = ", ".join(sorted({a.kind for a in item.assets})) or "none"
        raise HTTPException(404, f"no {kind} asset for {key!r} (it has: {has})")
    blob = await run_in_threadpool(state.blobs.stat, asset.key)
    if blob is None:
        raise HTTPException(404, f"blob {asset.sha256} is missing from the store (run trawl fsck)")
    # The catalog item carries its metadata, so fields only it has (uploader_id, part, ...) name
    # the file as `trawl export` does.
    export = state.settings.export
    name = download_name(item, asset, export_template(export.template), windows=export.windows_names)
    return blob_response(state.blobs, asset, blob, request.headers, filename=name)


@router.get("/{key:path}", response_model=Item, responses=declared(404, 422))
async def get_item(key: str, state: ApiState = Depends(api_state)) -> Item:
    item = await state.in_catalog(state.catalog.get, key)
    if item is None:
        raise HTTPException(404, f"no such item: {key!r}")
    return Item(**views.item_dict(item))


@lru_cache(maxsize=8)
def export_template(text: str) -> Template:
    """The export template, parsed once per text (the API and the web page name files by it)."""
    return Template.parse(text)


def content_disposition(filename: str, fallback: str) -> str:
    """``attachment`` with the name for every client: an ASCII ``filename`` and, when the name is
    not plain ASCII, the exact name as RFC 6266 / RFC 5987 ``filename*`` in UTF-8."""
    stem, dot, ext = filename.rpartition(".") if "." in filename else (filename, "", "")
    ascii_stem = _ascii(stem).lstrip(" .")  # what went with the non-ASCII letters may leave a hidden name
    ascii_name = ascii_stem + dot + _ascii(ext) if ascii_stem.strip(" ._-[]") else fallback
    header = f'attachment; filename="{ascii_name}"'
    if ascii_name != filename:
        header += f"; filename*=UTF-8''{quote(filename, safe='')}"
    return header


def _ascii(text: str) -> str:
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return " ".join("".join(c if c.isprintable() and c not in '"\\' else "_" for c in plain).split())


def blob_response(store: BlobStore, asset: CommittedAsset, blob: BlobStat, headers: Headers,
                  filename: str | None = None) -> Response:
    """The blob whole (200) or the ranges asked for (206, several as ``multipart/byteranges``).

    Range errors are JSON like every other error: 400 for a malformed header, 416 with
    ``Content-Range: bytes */<size>`` for a range past the end. A blob never changes under its
    key, so its sha256 is a strong ETag; a ``Range`` is honoured only while ``If-Range`` (if any)
    still matches it or the Last-Modified date. Starlette is pinned, so its range parser is safe
    to reuse.
    """
    size = blob.size
    media_type = asset.mime or "application/octet-stream"
    fallback = f"{asset.sha256[:16]}.{ext_for(asset.mime)}"  # for a name with no ASCII left, or none
    # A blob never changes under its hash; an item's asset can only by its item being crawled anew.
    common = {"accept-ranges": "bytes", "etag": f'"{asset.sha256}"', "cache-control": "private, max-age=3600",
              "last-modified": formatdate(blob.modified.timestamp(), usegmt=True),
              "content-disposition": content_disposition(filename or fallback, fallback)}
    requested, if_range = headers.get("range"), headers.get("if-range")
    ranges: list[tuple[int, int]] = []
    if requested is not None and (if_range is None or if_range in (common["etag"], common["last-modified"])):
        try:
            ranges = FileResponse._parse_range_header(requested, size)
        except MalformedRangeHeader as exc:
            return JSONResponse({"detail": exc.content}, status_code=400)
        except RangeNotSatisfiable:
            return JSONResponse({"detail": f"range {requested!r} starts beyond the end of the file ({size} bytes)"},
                                status_code=416, headers={"Content-Range": f"bytes */{size}"})
    if not ranges:
        return StreamingResponse(_read(store, asset.key, [(b"", 0, size)]), media_type=media_type,
                                 headers={**common, "content-length": str(size)})
    if len(ranges) == 1:
        start, end = ranges[0]
        return StreamingResponse(_read(store, asset.key, [(b"", start, end)]), status_code=206, media_type=media_type,
                                 headers={**common, "content-length": str(end - start),
                                          "content-range": f"bytes {start}-{end - 1}/{size}"})
    boundary = token_hex(13)
    pieces = [((b"\r\n" if i else b"") + f"--{boundary}\r\nContent-Type: {media_type}\r\n"
               f"Content-Range: bytes {start}-{end - 1}/{size}\r\n\r\n".encode("latin-1"), start, end)
              for i, (start, end) in enumerate(ranges)]
    closing = f"\r\n--{boundary}--\r\n".encode("latin-1")
    length = sum(len(head) + end - start for head, start, end in pieces) + len(closing)
    return StreamingResponse(_read(store, asset.key, pieces, closing), status_code=206,
                             media_type=f"multipart/byteranges; boundary={boundary}",
                             headers={**common, "content-length": str(length)})


async def _read(store: BlobStore, key: str, pieces: list[tuple[bytes, int, int]],
                closing: bytes = b"") -> AsyncIterator[bytes]:
    """Each piece's header, then bytes ``[start, end)`` of the blob, read in a thread (the store blocks)."""
    for head, start, end in pieces:
        if head:
            yield head
        if start == end:
            continue
        reader = await run_in_threadpool(store.open, key, start, end)
        try:
            while chunk := await run_in_threadpool(reader.read, CHUNK):
                yield chunk
        finally:
            await run_in_threadpool(reader.close)
    if closing:
        yield closing
