"""What a resolver returns: an item and the files (assets) it consists of."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from trawl.errors import PreviewOnly

ASSET_KINDS = ("video", "audio", "image", "thumbnail")
# The protocol of a live HLS stream's asset: its download is a recording (trawl.download.live),
# which the item workflow runs with a short heartbeat timeout.
LIVE_PROTOCOL = "hls-live"
# Kinds an item does without when they cannot be had: a missing cover must not lose the video.
OPTIONAL_KINDS = ("thumbnail",)


@dataclass
class Asset:
    """One file to download.

    Attributes:
        name: unique within the item (``video``, ``audio``, ``image-2``); names the partial file.
        kind: one of :data:`ASSET_KINDS`.
        urls: the primary URL first, then backups serving the same bytes.
        headers: request headers the media host requires (Referer, User-Agent).
        protocol: ``http`` (one file), ``hls`` (``urls`` are HLS playlists: their segments
            make the file) or ``hls-live`` (:data:`LIVE_PROTOCOL`: a live HLS playlist, recorded
            until the broadcast ends).
        preview: empty, or why the platform says this file is only a preview or trailer of the
            item (never stored as the item: :func:`refuse_previews`).
        live_after: a live recording's: where an earlier recording of the same broadcast stopped
            (its parts are in the catalog, it never ended: trawl.download.live.resume_point), so a
            new recording goes on after it instead of recording its sequences again.
        duration: how long this file lasts when it is a piece of the item (one of several
            segments), as the platform says, checked instead of the item's duration; 0: a piece
            whose length the platform does not give (nothing to check it against). None: the
            file lasts as long as the item.
    """

    name: str
    kind: str
    urls: list[str]
    headers: dict[str, str] = field(default_factory=dict)
    expected_size: int | None = None
    expected_md5: str | None = None
    mime: str | None = None
    protocol: str = "http"
    preview: str = ""
    live_after: dict[str, Any] | None = None
    duration: float | None = None


@dataclass
class MoreItem:
    """Another item the resolved page stands for (another part of a video, another video of a post).

    The resolver gives ``url``; the fetch activity routes it (``platform``, ``workflow_id``) so
    whoever started the item can start this one as its own item without a registry.
    """

    url: str
    platform: str = ""
    workflow_id: str = ""

    @classmethod
    def of(cls, value: object) -> MoreItem | None:
        """``value`` as a MoreItem: one already, or the dict a failed item's result carries (in its
        failure's details, which arrive undecoded); None for anything without a URL."""
        if isinstance(value, dict):
            value = cls(**{k: v for k, v in value.items() if k in ("url", "platform", "workflow_id")})
        return value if isinstance(value, cls) and isinstance(value.url, str) and value.url else None


@dataclass
class Resolved:
    """A canonical item: the same item under any URL form resolves to the same key.

    ``metadata`` holds what the platform says beyond the columns, under the names of yt-dlp's
    info JSON where it has one (``id``, ``description``, ``uploader_id``, ``timestamp``,
    ``upload_date``, ``view_count``, ``like_count``, ``tags``, ``thumbnail``, ``parts``...), plus
    platform ids the pipeline needs (``mid``, ``aid``, ``cid``, ``merge``); JSON values only.
    ``more``: the other items the URL stands for (parts 2..N of a bare multi-part video URL).
    ``extras``: the names of the extras fetched after its commit (:mod:`trawl.extras`).
    """

    canonical_key: str
    canonical_url: str
    platform: str
    assets: list[Asset]
    title: str | None = None
    uploader: str | None = None
    duration: float | None = None
    published_at: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    more: list[MoreItem] = field(default_factory=list)
    # The names of its platform's extras (danmaku, subtitles, comments: trawl.extras) to fetch
    # once the item is committed, each in an activity of its own; set by the fetch activity.
    extras: list[str] = field(default_factory=list)


def known_total(assets: list[Asset]) -> int | None:
    """The bytes of all ``assets`` when the platform gave every size; None when one is unknown."""
    sizes = [asset.expected_size for asset in assets]
    return sum(sizes) if sizes and all(s is not None for s in sizes) else None  # type: ignore[misc]


def small_item(assets: list[Asset], small_item_size: int) -> bool:
    """Whether an item of ``assets`` is small (``download.small_item_size``; 0: none is): every
    size known and at most that many bytes in all. A small item runs in one activity on any host;
    any other claims a host."""
    total = known_total(assets)
    return small_item_size > 0 and total is not None and total <= small_item_size


def count_or_none(value: Any) -> int | None:
    """A platform's count (views, likes) as a non-negative int that fits a 64-bit column, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = int(value)
    except (ValueError, OverflowError):
        return None
    return number if 0 <= number < 2**63 else None


def upload_date(timestamp: int | None) -> str | None:
    """``YYYYMMDD`` (UTC) of a Unix time, as yt-dlp's ``upload_date``."""
    if timestamp is None or not 0 <= timestamp < 253402300800:  # year 10000
        return None
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y%m%d")


def compact(metadata: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` without the fields the platform did not give (None, "", [])."""
    return {k: v for k, v in metadata.items() if v is not None and v != "" and v != []}



PREVIEW_KEY_SUFFIX = ":preview"


def as_preview(resolved: Resolved) -> Resolved:
    """A preview kept as an item of its own: its key is the item's with ``:preview`` after it, so
    the real item keeps its key; ``metadata.preview`` says why it is one. Unchanged when no file
    of ``resolved`` is a preview."""
    reason = next((asset.preview for asset in resolved.assets if asset.preview), "")
    if not reason:
        return resolved
    return replace(resolved, canonical_key=resolved.canonical_key + PREVIEW_KEY_SUFFIX,
                   assets=[replace(asset, preview="") for asset in resolved.assets],
                   metadata={**resolved.metadata, "preview": reason})


def refuse_previews(resolved: Resolved) -> None:
    """Raise :class:`trawl.errors.PreviewOnly` when the platform says a file of ``resolved`` is only
    a preview: stored under the item's key, the preview would make the real item a duplicate."""
    previews = [asset for asset in resolved.assets if asset.preview]
    if previews:
        raise PreviewOnly(f"{resolved.platform}: {resolved.canonical_url}: {previews[0].preview}")
