"""The one rendering of items, results and crawls shared by the CLI and the API (trawl.starter.views)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from temporalio.client import WorkflowExecutionStatus

from trawl.contracts import StoredAsset
from trawl.starter.views import crawl_dict, item_dict, result_dict
from trawl.storage.blobs import LocalBlobStore
from trawl.storage.catalog import CatalogItem, CommittedAsset
from trawl.workflows.crawl import CrawlStats
from trawl.workflows.media_item import ItemResult

ASSET_KEYS = {"kind", "name", "sha256", "size", "key", "path", "mime"}


def test_a_result_and_a_catalog_item_share_their_field_names(tmp_path: Path) -> None:
    sha = "ab" * 32
    result = ItemResult("url-1", "http://x/a.mp4", "committed", canonical_key="web:1", platform="generic",
                        title="A", assets=[StoredAsset("video", "video", sha, 10, mime="video/mp4")])
    item = CatalogItem(canonical_key="web:1", platform="generic", canonical_url="http://x/a.mp4",
                       source_url="http://x/a.mp4", title="A", uploader=None, duration=None, published_at=None,
                       status="committed", workflow_id="url-1", created_at="2026-11-30T00:00:00+00:00",
                       assets=[CommittedAsset("video", "video", sha, 10, "video/mp4", f"sha256/ab/ab/{sha}")])
    store = LocalBlobStore(tmp_path / "blobs")
    from_result, from_item = result_dict(result, store), item_dict(item, store)
    shared = {"id", "url", "canonical_key", "platform", "outcome", "title", "assets"}
    assert shared <= from_result.keys() and shared <= from_item.keys()
    assert {k: from_result[k] for k in shared - {"assets"}} == {k: from_item[k] for k in shared - {"assets"}}
    assert set(from_result["assets"][0]) == set(from_item["assets"][0]) == ASSET_KEYS
    assert from_result["assets"] == from_item["assets"]
    assert from_item["assets"][0]["path"] == str(tmp_path / "blobs" / f"sha256/ab/ab/{sha}")
    assert item_dict(item, tmp_path / "blobs") == from_item  # a local store's root does as well
    assert item_dict(item)["assets"][0]["path"] is None


def test_crawl_dict() -> None:
    stats = CrawlStats(queued=0, running=0, finished=2, outcomes={"committed": 2}, bytes=10, refused=0,
                       started_at="t", finished_at="u", paused=False, cancelled=False, runs=1)
    done = crawl_dict("crawl-1", SimpleNamespace(status=WorkflowExecutionStatus.COMPLETED), stats)
    assert done == {"id": "crawl-1", "status": "COMPLETED", "stats": {**stats.__dict__}}
    assert crawl_dict("crawl-1", SimpleNamespace(status=None), None) == {"id": "crawl-1", "status": "UNKNOWN",
                                                                         "stats": None}


def test_a_cancelled_run_is_spelled_as_trawl_spells_the_outcome() -> None:
    from trawl.starter.views import status_name

    assert status_name(WorkflowExecutionStatus.CANCELED) == "CANCELLED"
    assert status_name(WorkflowExecutionStatus.RUNNING) == "RUNNING" and status_name(None) == "UNKNOWN"
    cancelled = crawl_dict("crawl-1", SimpleNamespace(status=WorkflowExecutionStatus.CANCELED), None)
    assert cancelled["status"] == "CANCELLED"
