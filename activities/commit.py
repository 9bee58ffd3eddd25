"""commit: put verified files into the blob store and record the item, idempotently.

The store verifies each put (size, and sha256 against what verify computed) before the catalog
row is written; a blob is named by its key, never by a path on this worker.
"""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

from temporalio import activity

from activities.errors import classified, workdir_name
from activities.liveness import heartbeating
from activities.models import CommitFile, CommitInput, CommitResult, DownloadResult, StoredAsset, stored_assets
from trawl.download import file_sha256, state_path
from trawl.merge import merge_dash
from trawl.models import Asset
from trawl.storage.blobs import BlobStore, blob_key
from trawl.storage.catalog import Catalog, CommittedAsset


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
            published_at=item.published_at, metadata=item.metadata, workflow_id=inp.workflow_id, assets=rows,
        )
        shutil.rmtree(self.work_dir / workdir_name(inp.workflow_id), ignore_errors=True)
        # The catalog lists assets by name; a fresh commit answers in the same order.
        return CommitResult(outcome="committed" if created else "duplicate",
                            assets=sorted(stored, key=lambda a: a.name))

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
