"""A cancel that meets a tiny item's fetch (download, verify and commit inside the fetch:
download.with_fetch_size): before the commit nothing is stored and the fetch ends cancelled;
during the commit the commit runs to its end and the result says committed. Real activities, a
real SQLite or PostgreSQL catalog, real files, the simulator on loopback; the commit is held by a
blob store whose put waits for the test (no timing luck)."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from temporalio.exceptions import CancelledError
from temporalio.testing import ActivityEnvironment

from trawl.activities.fetch import FetchActivities
from trawl.activities.tiny import TinyItemActivities
from tests.activities import one_activity_parts
from trawl.contracts import FetchInput
from trawl.platforms.base import ResolveContext
from trawl.platforms.registry import build_registry
from trawl.simulator import MediaFile, Simulator
from trawl.storage.blobs import LocalBlobStore
from trawl.storage.catalog import Catalog

TINY = MediaFile("mp4", "tiny-cancelled", 20_000)


class HeldStore(LocalBlobStore):
    """A local store whose put waits until the test lets it go: a commit in progress, held."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.putting = threading.Event()
        self.go_on = threading.Event()

    def put(self, source: Path, sha256: str, size: int) -> str:
        self.putting.set()
        assert self.go_on.wait(60), "the test never let the put go on"
        return super().put(source, sha256, size)


@pytest.fixture
def parts(tmp_path: Path, catalog: Catalog) -> Iterator[tuple[TinyItemActivities, HeldStore]]:
    store = HeldStore(tmp_path / "blobs")
    with httpx.Client() as http:
        small = one_activity_parts(http, catalog, store, tmp_path / "work")
        fetch = FetchActivities(build_registry(), ResolveContext(http, 1 << 20), catalog, timedelta(seconds=5))
        yield TinyItemActivities(fetch, small, timedelta(seconds=5)), store


def environment() -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, activity_type="fetch_and_store_tiny", workflow_id="item-tiny",
                                   heartbeat_timeout=timedelta(seconds=10))
    return env


def test_a_cancel_during_the_commit_lets_it_finish_and_the_result_says_committed(
        sim: Simulator, catalog: Catalog, parts: tuple[TinyItemActivities, HeldStore]) -> None:
    fetch, store = parts
    sim.add_file("/tiny.mp4", TINY)
    env = environment()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        running = pool.submit(env.run, fetch.fetch_and_store_tiny, FetchInput(sim.url("/tiny.mp4"), "item-tiny",
                                                               with_fetch_size=1 << 20))
        assert store.putting.wait(60), "the commit never began"
        env.cancel()
        store.go_on.set()
        result = running.result(60)
    assert result.finished is not None and result.finished.outcome == "committed"
    stored = catalog.get(result.resolved.canonical_key)
    assert stored is not None and [a.sha256 for a in stored.assets] == [TINY.sha256()]
    assert store.exists(stored.assets[0].key)


def test_a_cancel_before_the_commit_stores_nothing_and_the_fetch_ends_cancelled(
        sim: Simulator, catalog: Catalog, parts: tuple[TinyItemActivities, HeldStore]) -> None:
    fetch, store = parts
    store.go_on.set()
    env = environment()

    def cancelled_while_served(request: object) -> object:
        env.cancel()  # the cancel arrives while the tiny item's bytes are on their way
        return sim.serve_media(request, TINY)

    sim.add_exact("/tiny.mp4", cancelled_while_served)
    with pytest.raises(CancelledError):
        env.run(fetch.fetch_and_store_tiny, FetchInput(sim.url("/tiny.mp4"), "item-tiny", with_fetch_size=1 << 20))
    assert catalog.count() == 0 and not store.putting.is_set() and list(store.iterate()) == []
