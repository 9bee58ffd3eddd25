"""``trawl status`` when no Temporal server runs: what can be read without one.

An interrupted crawl leaves its items on a server that may be stopped (its idle time passed, or
``trawl down``); their workflows are out of reach until it runs again, but the catalog and the
worker's partial files are not. So ``trawl status URL`` says whether the catalog holds the item
(committed earlier), and which partial files its workflow left (``<work_dir>/<workflow dir>/``),
how big and when last written: what a new run of the same crawl resumes from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from trawl.cli.common import open_catalog
from trawl.cli.output import CommandError, item_line
from trawl.errors import StorageError
from trawl.formatting import human_size
from trawl.platforms.registry import Registry
from trawl.settings import Settings
from trawl.starter.views import item_dict
from trawl.storage.blobs import open_blob_store
from trawl.workdirs import OWNER_FILE, workdir_name


@dataclass(frozen=True)
class PartialFile:
    name: str
    size: int
    modified: float  # seconds since the epoch

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "size": self.size,
                "modified": datetime.fromtimestamp(self.modified).astimezone().isoformat(timespec="seconds")}


def partial_files(work_dir: Path, workflow_id: str) -> tuple[Path, list[PartialFile]]:
    """The files a workflow's downloads left in its work directory (its owner note left out)."""
    directory = work_dir / workdir_name(workflow_id)
    found: list[PartialFile] = []
    if directory.is_dir():
        for path in sorted(directory.rglob("*")):
            if path.is_file() and path.name != OWNER_FILE:
                stat = path.stat()
                found.append(PartialFile(str(path.relative_to(directory)), stat.st_size, stat.st_mtime))
    return directory, found


def catalog_item(registry: Registry, ident: str, settings: Settings) -> tuple[bool, Any, str]:
    """Whether the catalog could be read, the item ``ident`` names in it (None: not there), and
    why it could not be read ("" when it could)."""
    try:
        catalog = open_catalog(settings, schema=False)
    except CommandError:
        return False, None, ""  # no catalog file: nothing was committed with this data directory
    try:
        key = None
        if ident.startswith(("http://", "https://")):
            key = catalog.keys_for_urls([ident]).get(ident)
            ident = registry.route(ident).workflow_id
        if key is None and ident.startswith("item-"):
            key = ident.removeprefix("item-")
        return True, catalog.get(key) if key else None, ""
    except StorageError as err:  # a database without trawl's tables yet, or unreachable
        return False, None, (str(err).strip().splitlines() or ["unreadable"])[0]
    finally:
        catalog.close()


def offline_status(args: Any, settings: Settings, registry: Registry, workflow_id: str, why: str) -> int:
    """Print what the catalog and the work directory say of ``args.id``; refuse (``why``) when
    neither knows it."""
    read, item, unread = catalog_item(registry, args.id, settings)
    directory, parts = partial_files(settings.work_dir, workflow_id)
    if item is None and not parts:
        raise CommandError(f"{why}; and neither the catalog nor the partial files ({settings.work_dir}) know "
                           f"{args.id}")
    note = f"no Temporal server runs for {settings.data_dir.resolve()}: read from the catalog and the partial files"
    if args.json:
        blobs = open_blob_store(settings) if item is not None else None
        print(json.dumps({"id": workflow_id, "status": None, "note": note,
                          "catalog": item_dict(item, blobs) if item is not None else None,
                          "partial_files": [part.as_dict() for part in parts],
                          "work_dir": str(directory) if parts else None}))
        if blobs is not None:
            blobs.close()
        return 0
    print(f"{workflow_id}: no server to ask ({note})")
    if item is not None:
        print(f"catalog   committed  {item_line(item)}")
    elif read:
        print("catalog   not committed")
    elif unread:
        print(f"catalog   not read: {unread}")
    if parts:
        newest = datetime.fromtimestamp(max(part.modified for part in parts)).astimezone()
        files = ", ".join(f"{part.name} {human_size(part.size)}" for part in parts[:5])
        more = f" and {len(parts) - 5} more" if len(parts) > 5 else ""
        print(f"partial   {files}{more}; last written {newest:%Y-%m-%d %H:%M:%S} (in {directory})")
        print("          run the same `trawl crawl` again to resume it, or `trawl cancel` it to drop them")
    return 0
