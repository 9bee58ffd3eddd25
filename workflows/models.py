"""The item workflow's input, result and what it reports (progress, a download's bytes).

Apart from the workflow module so the sandbox does not build these classes again for every
item it starts (it re-imports workflows/media_item.py per run; this module is passed through),
and so clients (the CLI, the API) read results without importing the workflow and its activities.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from activities.models import StoredAsset
from trawl.models import MoreItem
from workflows.policies import ItemOptions


@dataclass
class ItemInput:
    url: str
    platform: str = "generic"
    crawl_id: str | None = None
    options: ItemOptions = field(default_factory=ItemOptions)


@dataclass
class ItemResult:
    workflow_id: str
    url: str
    outcome: str  # committed | duplicate | failed | cancelled
    canonical_key: str | None = None
    platform: str | None = None
    title: str | None = None
    error_class: str | None = None
    error: str | None = None
    assets: list[StoredAsset] = field(default_factory=list)
    # Other items the URL stands for (parts 2..N of a bare multi-part video URL), routed: whoever
    # started this item starts them as their own items.
    more: list[MoreItem] = field(default_factory=list)


@dataclass
class Progress:
    stage: str = "queued"
    bytes_done: int = 0  # verified assets plus the bytes last reported (or kept) by running downloads
    bytes_total: int | None = None
    attempt: int = 1
    last_error: str | None = None
    paused: bool = False
    bytes_finished: int = 0  # verified assets only


@dataclass
class DownloadProgress:
    """What a running download reports to its item now and then (and what a paused one kept)."""

    asset: str
    bytes_done: int
    bytes_total: int | None = None
