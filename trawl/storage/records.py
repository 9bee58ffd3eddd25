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
