"""A cancel that arrives while a tiny item's fetch is committing it (download.with_fetch_size):
the run's outcome and the catalog agree, committed or nothing stored.

A real worker (running_worker) against the dev server, the simulator and a real catalog; its blob
store holds the commit's put until the test lets it go, and the test lets it go only once the
workflow has acted on the cancel (the history shows the fetch's cancellation requested), so the
order of events is fixed, not left to timing.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from tests.conftest import make_settings
from tests.polling import until
from trawl.platforms.registry import default_registry
from trawl.settings import Settings
from trawl.simulator import MediaFile, Simulator
from trawl.starter.client import item_result, start_item
from trawl.storage.blobs import LocalBlobStore
from trawl.storage.catalog import Catalog
import trawl.worker.main as worker_main
from trawl.worker.main import running_worker

TINY = MediaFile("mp4", "tiny-cancel-while-committing", 20_000)


class HeldStore(LocalBlobStore):
    """The worker's local store, with a put that waits until the test lets it go."""

    def __init__(self, root: Path, quarantine_dir: Path) -> None:
        super().__init__(root, quarantine_dir)
        self.putting = threading.Event()
        self.go_on = threading.Event()

    def put(self, source: Path, sha256: str, size: int) -> str:
        self.putting.set()
        assert self.go_on.wait(120), "the test never let the put go on"
        return super().put(source, sha256, size)


@pytest.mark.timeout(180)
async def test_a_cancel_during_a_tiny_item_s_commit_leaves_outcome_and_catalog_agreeing(
        temporal_client: Client, temporal_address: str, sim: Simulator, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make_settings(tmp_path, temporal_address, download={"with_fetch_size": 1 << 20})
    stores: list[HeldStore] = []

    def held_store(given: Settings) -> HeldStore:
        stores.append(HeldStore(given.blobs_dir, given.data_dir / "quarantine"))
        return stores[-1]

    monkeypatch.setattr(worker_main, "open_blob_store", held_store)
    sim.add_file("/tiny.mp4", TINY)
    async with running_worker(temporal_client, settings):
        [store] = stores
        started = await start_item(temporal_client, settings, default_registry(), sim.url("/tiny.mp4"))
        assert await asyncio.to_thread(store.putting.wait, 60), "the fetch never began its commit"
        await started.handle.cancel()
        await _until_cancel_requested(started.handle)
        store.go_on.set()
        result = await asyncio.wait_for(item_result(started.handle, ""), 60)
    catalog = Catalog(settings.catalog_url)
    stored = catalog.list()
    catalog.close()
    # The cancel came while the commit was storing the item: the commit goes through and the run
    # says so (a run that says cancelled must leave nothing stored).
    assert (result.outcome, [i.canonical_key for i in stored]) == ("committed", [result.canonical_key])
    assert [a.sha256 for a in stored[0].assets] == [TINY.sha256()]


async def _until_cancel_requested(handle: object) -> None:
    """Until the workflow has answered the cancel (it asked the fetch to stop): what it does next
    is decided by then."""
    async def cancel_requested() -> bool:
        history = await handle.fetch_history()  # type: ignore[attr-defined]
        return any(e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED for e in history.events)

    await until(cancel_requested, "the workflow to ask the fetch to stop", 60)
