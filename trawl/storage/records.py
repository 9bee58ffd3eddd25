"""What the catalog gives and takes: plain records, apart from the SQLAlchemy models.

Clients that only pass these around (the CLI, the activities' inputs, the export) need not
import SQLAlchemy for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class CommittedAsset:
    name: str
    kind: str
    sha256: str
    size: int
    mime: str | None
    key: str  # in the blob store: sha256/ab/cd/<sha256>
    source_url: str | None = None
    language: str | None = None  # an extra's (a subtitle track's ``zh-CN``); None for media


@dataclass
class MissingExtra:
    """An extra's file recorded missing (trawl.extras): what it is, its error class and why."""

    name: str
    kind: str
    language: str | None
    error_class: str
    reason: str
    recorded_at: str = ""


@dataclass(frozen=True)
class ExtraHit:
    """Where a search found an item in its extras rather than its own text: the line's kind
    (``subtitles``, ``danmaku``, ``comments``), its time in the video (seconds; None for a
    comment) and its text as indexed (trawl.extras_text)."""

    kind: str
    seconds: float | None
    text: str


@dataclass
class CatalogItem:
    canonical_key: str
    platform: str
    canonical_url: str
    source_url: str
    title: str | None
    uploader: str | None
    duration: float | None
    published_at: str | None
    status: str
    workflow_id: str | None
    created_at: str
    assets: list[CommittedAsset]
    metadata: dict[str, Any] = field(default_factory=dict)  # what the item was committed with
    # A re-check found the platform no longer has it (its archived copy stays): when (ISO UTC) and
    # the platform's reason; when it last asked.
    gone_at: str | None = None
    gone_reason: str | None = None
    checked_at: str | None = None


@dataclass
class ListingEntry:
    """An entry of a listing as the catalog keeps it, in its order: the URL it gave, the title it
    showed, the words it marks a dead entry with (``gone``), and the catalog's item for the URL,
    when it holds one. (An entry as a page gives it while the listing is walked, for the filters,
    is trawl.listing_filters.PageEntry.)"""

    url: str
    title: str | None = None
    gone: str | None = None
    item: CatalogItem | None = None


@dataclass
class Listing:
    """A listing trawl expanded (a collection, a series, a favourites folder, an uploader's
    videos, an album, a feed): its source kind and id, as ``key`` ``<kind>:<id>``."""

    key: str
    kind: str
    ident: str
    title: str | None
    updated_at: str
    entries: list[ListingEntry] = field(default_factory=list)
    total: int = 0  # its entries (``entries`` may be one page of them)
