"""Inputs and results of the activities: one dataclass in, one out."""

from __future__ import annotations

from dataclasses import dataclass, field

from trawl.models import Asset, Resolved
from trawl.storage.blobs import blob_key
from trawl.storage.records import CatalogItem


@dataclass
class FetchInput:
    url: str
    workflow_id: str
    platform: str = ""
    # A re-fetch for fresh media URLs (after url_expired) must resolve: the catalog's answer has
    # no media URLs, and another URL form may have committed the item meanwhile.
    fresh_urls: bool = False
    quality: int = 0  # the crawl's -f as a height; 0: the platform's setting
    # The stage's attempt limit from the item's options (one source for the whole policy, whichever
    # worker runs it); None: the worker's own setting (runs started before the options carried it).
    stage_attempts: int | None = None


@dataclass
class StoredAsset:
    """A committed file: its blob in the store is ``key`` (``sha256/ab/cd/<sha256>``), wherever
    the store is; no worker's file path travels."""

    name: str
    kind: str
    sha256: str
    size: int
    # Results recorded before blobs had keys carry a ``path`` instead (ignored when read back).
    key: str = ""
    mime: str | None = None

    def __post_init__(self) -> None:
        self.key = self.key or blob_key(self.sha256)


def stored_assets(item: CatalogItem) -> list[StoredAsset]:
    """The committed files of a catalog item."""
    return [StoredAsset(a.name, a.kind, a.sha256, a.size, a.key, a.mime) for a in item.assets]


@dataclass
class FetchResult:
    resolved: Resolved
    committed: bool  # the catalog already holds this canonical key
    stored: list[StoredAsset] = field(default_factory=list)  # its assets, when committed


@dataclass
class DownloadInput:
    workflow_id: str
    asset: Asset
    platform: str = ""
    canonical_url: str = ""
    quality: int = 0  # HLS: the crawl's -f as a height; 0: download.hls_quality
    limit_rate: int = 0  # the crawl's --limit-rate; 0: download.limit_rate
    stage_attempts: int | None = None  # as FetchInput's


@dataclass
class DownloadResult:
    asset_name: str
    path: str
    size: int
    sha256: str
    url: str
    etag: str | None = None
    mime: str | None = None
    total: int | None = None
    resumed_from: int = 0
    transferred: int = 0
    connections: int = 1  # the most connections the download used at once (segments)


@dataclass
class VerifyInput:
    asset: Asset
    download: DownloadResult
    platform: str = ""
    canonical_url: str = ""
    duration: float | None = None  # the platform's, checked with ffprobe when installed
    stage_attempts: int | None = None  # as FetchInput's


@dataclass
class VerifyResult:
    asset_name: str
    sniffed: str
    mime: str


@dataclass
class CommitFile:
    asset: Asset
    download: DownloadResult
    mime: str


@dataclass
class CommitInput:
    workflow_id: str
    source_url: str
    resolved: Resolved
    files: list[CommitFile] = field(default_factory=list)
    stage_attempts: int | None = None  # as FetchInput's


@dataclass
class CommitResult:
    outcome: str  # committed | duplicate
    assets: list[StoredAsset] = field(default_factory=list)


@dataclass
class DiscardInput:
    workflow_id: str
    asset_names: list[str] = field(default_factory=list)  # empty: the whole work directory
    platform: str = ""
    canonical_url: str = ""
