"""Activities run for real (ActivityEnvironment) over real files, catalogs and the simulator."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import httpx

from trawl.activities.commit import CommitActivities
from trawl.activities.download import DownloadActivities
from trawl.activities.small import SmallItemActivities
from trawl.activities.verify import VerifyActivities
from trawl.settings import DownloadSettings
from trawl.storage.blobs import BlobStore
from trawl.storage.catalog import Catalog


def one_activity_parts(http: httpx.Client, catalog: Catalog, store: BlobStore, work: Path) -> SmallItemActivities:
    """download, verify and commit over ``store`` and ``catalog``, as small_item runs them."""
    download = DownloadActivities(http, work, DownloadSettings(), timedelta(seconds=5))
    commit = CommitActivities(catalog, store, work, timedelta(seconds=5))
    return SmallItemActivities(download, VerifyActivities(timedelta(seconds=5)), commit)
