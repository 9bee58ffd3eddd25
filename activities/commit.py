"""commit: move verified files into the blob store and record the item, idempotently."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

from temporalio import activity

from activities.errors import classified, workdir_name
from activities.models import CommitInput, CommitResult, StoredAsset, stored_assets
from trawl.download import state_path
from trawl.storage.blobs import LocalBlobStore
from trawl.storage.catalog import Catalog, CommittedAsset


class CommitActivities:
    def __init__(self, catalog: Catalog, blobs: LocalBlobStore, work_dir: Path, max_delay: timedelta) -> None:
        self.catalog = catalog
        self.blobs = blobs
        self.work_dir = Path(work_dir)
        self.max_delay = max_delay

    @activity.defn(name="commit")
    @classified(lambda self: self.max_delay)
    def commit(self, inp: CommitInput) -> CommitResult:
        item = inp.resolved
        existing = self.catalog.get(item.canonical_key)
        if existing is not None:
            # Committed already: by this workflow on an attempt whose reply was lost, or by
            # another URL form of the same item. Either way nothing new enters the store.
            shutil.rmtree(self.work_dir / workdir_name(inp.workflow_id), ignore_errors=True)
            return CommitResult(
                outcome="committed" if existing.workflow_id == inp.workflow_id else "duplicate",
                assets=stored_assets(existing, self.blobs),
            )
        stored: list[StoredAsset] = []
        rows: list[CommittedAsset] = []
        for file in inp.files:
            sha = file.download.sha256
            part = Path(file.download.path)
            if part.exists():
                relative = self.blobs.put(part, sha)
            elif self.blobs.exists(sha):  # a retry after the move already happened
                relative = self.blobs.relative(sha)
            else:
                raise FileNotFoundError(f"{part} vanished before commit and no blob {sha[:12]} exists")
            state_path(part).unlink(missing_ok=True)
            rows.append(CommittedAsset(file.asset.name, file.asset.kind, sha, file.download.size, file.mime,
                                       relative, file.download.url))
            stored.append(StoredAsset(file.asset.name, file.asset.kind, sha, file.download.size,
                                      str(self.blobs.root / relative), file.mime))
        created = self.catalog.commit_item(
            canonical_key=item.canonical_key, platform=item.platform, canonical_url=item.canonical_url,
            source_url=inp.source_url, title=item.title, uploader=item.uploader, duration=item.duration,
            published_at=item.published_at, metadata=item.metadata, workflow_id=inp.workflow_id, assets=rows,
        )
        shutil.rmtree(self.work_dir / workdir_name(inp.workflow_id), ignore_errors=True)
        return CommitResult(outcome="committed" if created else "duplicate", assets=stored)
