"""commit: put verified files into the blob store and record the item, idempotently.

The store verifies each put (size, and sha256 against what verify computed) before the catalog
row is written; a blob is named by its key, never by a path on this worker. The blobs are
announced in the catalog before the first put and the announcement released after the row
(trawl.storage.orphans): an attempt killed between put and row leaves a blob the clean-up can
tell from one a running attempt is about to record. The row's
``metadata`` is the item's info JSON (:func:`info_json`): what the platform said, in yt-dlp's
field names, with the stored files and the crawl time.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio import activity

from trawl.activities.application_errors import classified
from trawl.activities.liveness import heartbeating
from trawl.contracts import CommitFile, CommitInput, CommitResult, DownloadResult, StoredAsset
from trawl.download import file_sha256, state_path
from trawl.errors import StorageError
from trawl.merge import merge_dash
from trawl.models import Asset, Resolved, compact, refuse_previews
from trawl.routing import stored_assets
from trawl.storage.blobs import BlobStore, blob_key
from trawl.storage.records import CommittedAsset
from trawl.workdirs import workdir_name

if TYPE_CHECKING:  # the catalog (SQLAlchemy) is built by the worker and handed in
    from trawl.storage.catalog import Catalog


class CommitActivities:
    def __init__(self, catalog: Catalog, blobs: BlobStore, work_dir: Path, max_delay: timedelta,
                 max_attempts: int = 0) -> None:
        self.catalog = catalog
        self.blobs = blobs
        self.work_dir = Path(work_dir)
        self.max_delay = max_delay
        self.max_attempts = max_attempts

    @activity.defn(name="commit")
    @classified(lambda self: self.max_delay)
    @heartbeating
    def commit(self, inp: CommitInput) -> CommitResult:
        item = inp.resolved
        refuse_previews(item)  # whatever path led here, a preview never enters the catalog
        existing = self.catalog.get(item.canonical_key)
        if existing is not None:
            # Committed already: by this workflow on an attempt whose reply was lost, or by
            # another URL form of the same item. Either way nothing new enters the store.
            shutil.rmtree(self.work_dir / workdir_name(inp.workflow_id), ignore_errors=True)
            return CommitResult(
                outcome="committed" if existing.workflow_id == inp.workflow_id else "duplicate",
                assets=stored_assets(existing),
            )
        stored: list[StoredAsset] = []
        rows: list[CommittedAsset] = []
        files = self._merged(inp) or inp.files
        run_id = activity.info().workflow_run_id if activity.in_activity() else ""
        intents = self.catalog.intend_blobs([blob_key(f.download.sha256) for f in files], inp.workflow_id, run_id)
        for file in files:
            sha, size = file.download.sha256, file.download.size
            part = Path(file.download.path)
            if part.exists():
                key = self.blobs.put(part, sha, size)
            else:  # a retry after the put already moved the file into the store
                key = blob_key(sha)
                blob = self.blobs.stat(key)
                if blob is None or blob.size != size:
                    raise FileNotFoundError(f"{part} vanished before commit and no blob {sha[:12]} of {size} bytes "
                                            f"is in the store")
            state_path(part).unlink(missing_ok=True)
            rows.append(CommittedAsset(file.asset.name, file.asset.kind, sha, size, file.mime, key,
                                       file.download.url))
            stored.append(StoredAsset(file.asset.name, file.asset.kind, sha, size, key, file.mime))
        created = self.catalog.commit_item(
            canonical_key=item.canonical_key, platform=item.platform, canonical_url=item.canonical_url,
            source_url=inp.source_url, title=item.title, uploader=item.uploader, duration=item.duration,
            published_at=item.published_at, workflow_id=inp.workflow_id, assets=rows,
            metadata=info_json(item, inp.source_url, rows, datetime.now(UTC)),
        )
        self._release(intents)
        shutil.rmtree(self.work_dir / workdir_name(inp.workflow_id), ignore_errors=True)
        # The catalog lists assets by name; a fresh commit answers in the same order.
        return CommitResult(outcome="committed" if created else "duplicate",
                            assets=sorted(stored, key=lambda a: a.name))

    def _release(self, intents: list[int]) -> None:
        """The row names the blobs now. A release that fails costs nothing but a stale intent,
        which the clean-up drops once it finds the blob in use: the commit stands."""
        try:
            self.catalog.release_intents(intents)
        except StorageError as err:
            activity.logger.warning(f"blob intents left for the clean-up: {err}")

    def _merged(self, inp: CommitInput) -> list[CommitFile] | None:
        """DASH video + audio as one file, when the platform asks for it and ffmpeg manages."""
        if inp.resolved.metadata.get("merge") != "dash":
            return None
        video = next((f for f in inp.files if f.asset.kind == "video"), None)
        audio = next((f for f in inp.files if f.asset.kind == "audio"), None)
        if video is None or audio is None or not Path(video.download.path).exists():
            return None
        out = Path(video.download.path).with_name("merged.mp4.part")
        if not merge_dash(Path(video.download.path), Path(audio.download.path), out):
            return None
        size = out.stat().st_size
        merged = DownloadResult(asset_name="video", path=str(out), size=size, sha256=file_sha256(out),
                                url=video.download.url, total=size)
        rest = [f for f in inp.files if f is not video and f is not audio]
        return [CommitFile(Asset("video", "video", video.asset.urls, mime="video/mp4"), merged, "video/mp4"), *rest]


def info_json(item: Resolved, source_url: str, assets: list[CommittedAsset], crawled_at: datetime) -> dict[str, Any]:
    """The catalog's record of an item, in the field names of yt-dlp's info JSON where it has one.

    The resolver's metadata (description, uploader_id, counts, tags, parts...) comes first; the
    item's own columns fill what it leaves out; then the stored files (``assets``: name, kind,
    size, sha256, mime, the URL they came from) and the crawl time (``crawled_at``, ISO UTC, and
    ``epoch``, yt-dlp's name for it).
    """
    published = item.published_at
    info: dict[str, Any] = {
        "id": item.canonical_key.split(":", 1)[-1],
        "title": item.title,
        "uploader": item.uploader,
        "duration": item.duration,
        "webpage_url": item.canonical_url,
        "upload_date": published[:10].replace("-", "") if published and len(published) >= 10 else None,
        **compact(item.metadata),
    }
    info.update(
        canonical_key=item.canonical_key,
        platform=item.platform,
        extractor=item.platform,
        original_url=source_url,
        published_at=published,
        assets=[compact({"name": a.name, "kind": a.kind, "size": a.size, "sha256": a.sha256, "mime": a.mime,
                         "url": a.source_url}) for a in assets],
        crawled_at=crawled_at.isoformat(),
        epoch=int(crawled_at.timestamp()),
    )
    return compact(info)

