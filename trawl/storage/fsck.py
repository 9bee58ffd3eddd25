"""``trawl fsck``: every catalog row against the blob store, every blob against its name."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from trawl.download import file_sha256
from trawl.storage.blobs import LocalBlobStore
from trawl.storage.catalog import Catalog

PAGE = 500


@dataclass
class Problem:
    kind: str  # missing_blob | corrupt_blob | size_mismatch | stray_file
    path: str
    detail: str
    canonical_key: str | None = None
    source_url: str | None = None


@dataclass
class FsckReport:
    items: int = 0
    blobs: int = 0
    orphans: list[str] = field(default_factory=list)  # blobs no catalog row refers to (harmless)
    problems: list[Problem] = field(default_factory=list)

    @property
    def damaged_items(self) -> dict[str, str]:
        """canonical key -> source URL of every item with a missing or corrupt blob."""
        return {p.canonical_key: p.source_url or "" for p in self.problems if p.canonical_key}


def check(catalog: Catalog, blobs: LocalBlobStore) -> FsckReport:
    """Hash every blob once; compare with its name and with every catalog row that uses it."""
    report = FsckReport()
    verdicts: dict[str, str | None] = {}  # sha256 -> None if good, else what is wrong
    for path in sorted(p for p in blobs.root.rglob("*") if p.is_file()) if blobs.root.exists() else []:
        name = path.name
        if len(name) != 64 or path.parent.parent.parent != blobs.root / "sha256":
            report.problems.append(Problem("stray_file", str(path), "not a blob (an interrupted commit?)"))
            continue
        report.blobs += 1
        actual = file_sha256(path)
        verdicts[name] = None if actual == name else f"bytes hash to {actual[:16]}..., not to the name"
        if actual != name:
            report.problems.append(Problem("corrupt_blob", str(path), verdicts[name] or ""))
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
                referenced.add(asset.sha256)
                path = blobs.path(asset.sha256)
                where = dict(canonical_key=item.canonical_key, source_url=item.source_url)
                if asset.sha256 not in verdicts:
                    report.problems.append(Problem("missing_blob", str(path), f"{asset.name} of the item", **where))
                elif verdicts[asset.sha256] is not None:
                    report.problems.append(Problem("corrupt_blob", str(path), f"{asset.name}: {verdicts[asset.sha256]}",
                                                   **where))
                elif os.path.getsize(path) != asset.size:
                    report.problems.append(Problem("size_mismatch", str(path),
                                                   f"{asset.name}: catalog says {asset.size} bytes", **where))
    # A corrupt blob found in the walk is reported again with its item; keep the richer one.
    with_items = {p.path for p in report.problems if p.canonical_key}
    report.problems = [p for p in report.problems if p.canonical_key or p.path not in with_items]
    report.orphans = sorted(sha for sha, verdict in verdicts.items() if verdict is None and sha not in referenced)
    return report


def quarantine(report: FsckReport, catalog: Catalog, blobs: LocalBlobStore, quarantine_dir: Path) -> list[str]:
    """Move damaged blobs aside and drop the rows that used them, so the items can be crawled
    again; returns the source URLs to crawl."""
    quarantine_dir.mkdir(parents=True, exist_ok=True)
    for problem in report.problems:
        path = Path(problem.path)
        if problem.kind in ("corrupt_blob", "size_mismatch", "stray_file") and path.exists():
            shutil.move(str(path), quarantine_dir / path.name)
    urls = []
    for key, source_url in report.damaged_items.items():
        catalog.delete(key)
        urls.append(source_url)
    return urls
