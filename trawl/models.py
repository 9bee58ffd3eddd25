"""What a resolver returns: an item and the files (assets) it consists of."""

from __future__ import annotations

from dataclasses import dataclass, field

ASSET_KINDS = ("video", "audio", "image", "thumbnail")


@dataclass
class Asset:
    """One file to download.

    Attributes:
        name: unique within the item (``video``, ``audio``, ``image-2``); names the partial file.
        kind: one of :data:`ASSET_KINDS`.
        urls: the primary URL first, then backups serving the same bytes.
        headers: request headers the media host requires (Referer, User-Agent).
    """

    name: str
    kind: str
    urls: list[str]
    headers: dict[str, str] = field(default_factory=dict)
    expected_size: int | None = None
    expected_md5: str | None = None
    mime: str | None = None


@dataclass
class Resolved:
    """A canonical item: the same item under any URL form resolves to the same key."""

    canonical_key: str
    canonical_url: str
    platform: str
    assets: list[Asset]
    title: str | None = None
    uploader: str | None = None
    duration: float | None = None
    published_at: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
