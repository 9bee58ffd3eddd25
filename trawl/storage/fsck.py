"""``trawl fsck``: every catalog row against the blob store, every blob against its name.

Works on any :class:`~trawl.storage.blobs.BlobStore`: blobs are listed with ``iterate`` and hashed
by streaming them from the store, so a bucket is checked like a directory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from trawl.storage.blobs import BlobStat, BlobStore, IncompleteUpload, abandoned_uploads, hash_blob, key_sha256
from trawl.storage.catalog import Catalog
from trawl.storage.orphans import reclaim, reclaimable

PAGE = 500


@dataclass
class Problem:
    kind: str  # missing_blob | corrupt_blob | size_mismatch | stray_file | abandoned_upload | orphan_blob
    key: str  # the object's key in the store
    detail: str
    canonical_key: str | None = None
    source_url: str | None = None


@dataclass
class FsckReport:
    items: int = 0
    blobs: int = 0
    # Keys of sound blobs no catalog row refers to, and their bytes. Those stored at least
    # storage.abandon_uploads_after ago and not announced by a commit since were left behind by
    # an attempt that died before its row: problems (orphan_blob) that --repair removes. The
    # younger ones may be a running commit's, between its put and its row.
    orphans: list[str] = field(default_factory=list)
    orphan_bytes: int = 0
    # Filled by quarantine(): the orphan blobs the repair removed.
    reclaimed: list[BlobStat] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # Keys of local blobs with more than one hard link: an exported file (trawl export --link
    # hardlink) is the blob itself, so editing that file in place changes the blob. Not damage.
    shared: list[str] = field(default_factory=list)
    # Multipart uploads not completed or aborted (an object store's); the abandoned ones (older
    # than storage.abandon_uploads_after) are problems too.
    uploads: list[IncompleteUpload] = field(default_factory=list)
    abandoned: list[IncompleteUpload] = field(default_factory=list)

    @property
    def damaged_items(self) -> dict[str, str]:
        """canonical key -> source URL of every item with a missing or corrupt blob."""
        return {p.canonical_key: p.source_url or "" for p in self.problems if p.canonical_key}


def check(catalog: Catalog, blobs: BlobStore, abandon_after: timedelta = timedelta(hours=24),
          now: datetime | None = None) -> FsckReport:
    """Hash every blob once; compare with its name and with every catalog row that uses it; list
    the store's incomplete uploads, those begun ``abandon_after`` ago or more as problems, and
    the blobs no row uses, those stored ``abandon_after`` ago or more (and not announced by a
    commit since: trawl.storage.orphans) as problems too.

    A local blob with other hard links (an exported file) is listed in ``shared``; when its bytes
    changed, the ``corrupt_blob`` problem says so, as an in-place edit of that file is the likely cause.
    """
    report = FsckReport()
    now = now or datetime.now(UTC)
    report.uploads = blobs.incomplete_uploads()
    report.abandoned = abandoned_uploads(report.uploads, abandon_after, now)
    report.problems += [Problem("abandoned_upload", u.key, _upload_detail(u, now)) for u in report.abandoned]
    verdicts: dict[str, str | None] = {}  # key -> None if good, else what is wrong
    sizes: dict[str, int] = {}
    stats: dict[str, BlobStat] = {}
    for stat in blobs.iterate():
        sha = key_sha256(stat.key)
        if sha is None:
            report.problems.append(Problem("stray_file", stat.key, "not a blob (an interrupted commit?)"))
            continue
        report.blobs += 1
        stats[stat.key] = stat
        links = _link_count(blobs, stat.key)
        if links > 1:
            report.shared.append(stat.key)
        actual, sizes[stat.key] = hash_blob(blobs, stat.key)
        verdict = None if actual == sha else f"bytes hash to {actual[:16]}..., not to the name"
        if verdict is not None and links > 1:
            verdict += (f"; it has {links - 1} other hard link{'s' if links > 2 else ''}: most likely an exported "
                        "file edited in place (export with --link copy what you edit)")
        verdicts[stat.key] = verdict
        if actual != sha:
            report.problems.append(Problem("corrupt_blob", stat.key, verdicts[stat.key] or ""))
    referenced: set[str] = set()
    offset = 0
    while True:
        page = catalog.list(limit=PAGE, offset=offset)
        if not page:
            break
        offset += len(page)
        for item in page:
            report.items += 1
            for asset in item.assets:
                key = asset.key
                referenced.add(key)
                where = dict(canonical_key=item.canonical_key, source_url=item.source_url)
                if key not in verdicts:
                    report.problems.append(Problem("missing_blob", key, f"{asset.name} of the item", **where))
                elif verdicts[key] is not None:
                    report.problems.append(Problem("corrupt_blob", key, f"{asset.name}: {verdicts[key]}", **where))
                elif sizes[key] != asset.size:
                    report.problems.append(Problem("size_mismatch", key,
                                                   f"{asset.name}: catalog says {asset.size} bytes", **where))
    # A corrupt blob found in the walk is reported again with its item; keep the richer one.
    with_items = {p.key for p in report.problems if p.canonical_key}
    report.problems = [p for p in report.problems if p.canonical_key or p.key not in with_items]
    report.orphans = sorted(key for key, verdict in verdicts.items() if verdict is None and key not in referenced)
    report.orphan_bytes = sum(sizes[key] for key in report.orphans)
    for blob in reclaimable(catalog, [stats[key] for key in report.orphans], abandon_after, now):
        hours = (now - blob.modified).total_seconds() / 3600
        report.problems.append(Problem("orphan_blob", blob.key, f"no item refers to it: {blob.size} bytes, stored "
                                       f"{hours:.1f} h ago ({blob.modified:%Y-%m-%d %H:%M:%S} UTC), by an attempt "
                                       "that died before recording it"))
    return report


def _upload_detail(upload: IncompleteUpload, now: datetime) -> str:
    hours = upload.age(now).total_seconds() / 3600
    return (f"incomplete upload {upload.upload_id[:16]}: {upload.parts} part(s), {upload.size / 2**20:.1f} MiB, "
            f"begun {hours:.1f} h ago ({upload.started:%Y-%m-%d %H:%M:%S} UTC)")


def _link_count(blobs: BlobStore, key: str) -> int:
    """How many names the blob's file has (1 for a blob no export links to, and for remote stores)."""
    path = blobs.local_path(key)
    if path is None:
        return 1
    try:
        return os.stat(path, follow_symlinks=False).st_nlink
    except OSError:
        return 1


def quarantine(report: FsckReport, catalog: Catalog, blobs: BlobStore,
               abandon_after: timedelta = timedelta(hours=24)) -> list[str]:
    """Move damaged blobs aside (the store's quarantine) and drop the rows that used them, so the
    items can be crawled again; remove the orphan blobs (checked again, under the catalog's lock,
    in case a commit has met one since: ``report.reclaimed`` lists those removed); returns the
    source URLs to crawl. (The report's abandoned uploads are aborted by
    :func:`trawl.storage.blobs.abort_uploads`.)"""
    for problem in report.problems:
        if problem.kind in ("corrupt_blob", "size_mismatch", "stray_file"):
            blobs.quarantine(problem.key)
    orphans = [p.key for p in report.problems if p.kind == "orphan_blob"]
    report.reclaimed = reclaim(catalog, blobs, orphans, abandon_after)
    urls = []
    for key, source_url in report.damaged_items.items():
        catalog.delete(key)
        urls.append(source_url)
    return urls
