"""Orphan blobs (trawl.storage.orphans) on both backends and both catalogs: a blob an attempt
stored and never recorded is reclaimed once old; a blob an item uses, or one a running commit has
announced, never is, not even when the commit meets it while the reclaim is removing it."""

from __future__ import annotations

import hashlib
import os
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.trawl.storage.test_blobs import keys, store, write  # noqa: F401 - store: the fixture of both backends
from trawl.errors import StorageError
from trawl.storage.blobs import BlobStore, blob_key
from trawl.storage.catalog import Catalog, CommittedAsset
from trawl.storage.orphans import reclaim, reclaim_announced, reclaimable
from trawl.worker.cleanup import clean_orphans

LATER = datetime.now(UTC) + timedelta(days=2)  # when every blob made by a test is old
DAY = timedelta(hours=24)


def put(store: BlobStore, tmp_path: Path, data: bytes) -> str:
    source, sha = write(tmp_path / f"{os.urandom(4).hex()}.part", data)
    return store.put(source, sha, len(data))


def record(catalog: Catalog, name: str, key: str, size: int) -> None:
    catalog.commit_item(canonical_key=f"web:{name}", platform="generic", canonical_url=f"https://e.com/{name}",
                        source_url=f"https://e.com/{name}", title=name, uploader=None, duration=None,
                        published_at=None, metadata={}, workflow_id=f"item-{name}",
                        assets=[CommittedAsset("video", "video", key.rsplit("/", 1)[1], size, "video/mp4", key)])


def test_an_attempt_killed_between_put_and_row_leaves_a_blob_the_clean_up_reclaims(
        store: BlobStore, catalog: Catalog, tmp_path: Path) -> None:
    # The chaos test's case: the HD stream stored, the worker killed before the row; the retry fell
    # back to the backup URL's SD stream and recorded that.
    hd_bytes, sd_bytes = b"hd" * 3000, b"sd" * 1000
    catalog.intend_blobs([blob_key(hashlib.sha256(hd_bytes).hexdigest())], "item-fb", "run-1")
    hd = put(store, tmp_path, hd_bytes)
    sd_intents = catalog.intend_blobs([blob_key(hashlib.sha256(sd_bytes).hexdigest())], "item-fb", "run-1")
    sd = put(store, tmp_path, sd_bytes)
    record(catalog, "fb", sd, len(sd_bytes))
    catalog.release_intents(sd_intents)

    assert reclaim_announced(catalog, store, DAY) == []  # the attempt may still be running
    removed = reclaim_announced(catalog, store, DAY, now=LATER)
    assert [(b.key, b.size) for b in removed] == [(hd, 6000)]
    assert keys(store) == [sd] and catalog.stale_intent_keys(LATER) == []
    assert reclaim_announced(catalog, store, DAY, now=LATER) == []  # once


def test_a_used_blob_and_an_announced_one_are_never_reclaimed(store: BlobStore, catalog: Catalog,
                                                               tmp_path: Path) -> None:
    used = put(store, tmp_path, b"used")
    record(catalog, "used", used, 4)
    catalog.intend_blobs([used], "item-used", "run-0")  # a second item's commit of the same bytes, say
    # An old orphan that a commit meets now (the same bytes from another URL): it announced the
    # blob before its put found it there, so the blob is its own from here on.
    met = put(store, tmp_path, b"met again")
    later_commit = LATER - timedelta(minutes=1)
    orphans = [s for s in store.iterate() if s.key == met]
    assert [b.key for b in reclaimable(catalog, orphans, DAY, LATER)] == [met]
    with _frozen_now(later_commit):
        catalog.intend_blobs([met], "item-other", "run-2")
    assert reclaimable(catalog, orphans, DAY, LATER) == []
    assert reclaim(catalog, store, [used, met], DAY, now=LATER) == []
    assert sorted(keys(store)) == sorted([used, met])


def test_a_commit_that_announces_a_blob_during_its_removal_waits_and_stores_it_again(
        store: BlobStore, catalog: Catalog, tmp_path: Path) -> None:
    """The race the catalog's lock closes: the reclaim checked the blob is unused and is deleting
    it; a commit announcing it then waits until the delete is done, so its put stores it again."""
    orphan = put(store, tmp_path, b"about to go")
    removing, go_on = threading.Event(), threading.Event()

    def slow_delete() -> bool:
        removing.set()
        assert go_on.wait(30)
        return store.delete(orphan)

    reclaimed: list[bool] = []
    reclaimer = threading.Thread(target=lambda: reclaimed.append(
        catalog.reclaim_blob(orphan, LATER - DAY, slow_delete)))
    reclaimer.start()
    assert removing.wait(30)
    announced = threading.Event()
    committer = threading.Thread(target=lambda: (catalog.intend_blobs([orphan], "item-x", "run-x"), announced.set()))
    committer.start()
    assert not announced.wait(0.5)  # held by the reclaim's lock
    go_on.set()
    reclaimer.join(30)
    committer.join(30)
    assert reclaimed == [True] and announced.is_set()
    assert not store.exists(orphan)
    assert put(store, tmp_path, b"about to go") == orphan and store.exists(orphan)  # the commit's put
    assert reclaim(catalog, store, [orphan], DAY, now=datetime.now(UTC)) == []  # announced: kept


async def test_the_workers_clean_up_removes_orphans(store: BlobStore, catalog: Catalog, tmp_path: Path) -> None:
    orphan = put(store, tmp_path, b"left behind")
    with _frozen_now(datetime.now(UTC) - timedelta(hours=2)):
        catalog.intend_blobs([orphan], "item-y", "run-y")
    assert await clean_orphans(catalog, store, timedelta(hours=3)) == 0  # announced 2 h ago: may be running
    # Stored a moment ago: a blob younger than the bound is kept whatever its intents say.
    assert await clean_orphans(catalog, store, timedelta(hours=1)) == 0
    assert await clean_orphans(catalog, store, timedelta(0)) == 1
    assert keys(store) == []


class _frozen_now:
    """Intents written inside the block carry ``moment`` as their time (the catalog's clock)."""

    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def __enter__(self) -> None:
        import trawl.storage.catalog as module

        self._patch = pytest.MonkeyPatch()
        self._patch.setattr(module, "_now", lambda: self.moment)

    def __exit__(self, *exc: object) -> None:
        self._patch.undo()


def test_a_commit_ends_its_announcements_in_its_own_transaction(catalog: Catalog) -> None:
    def commit(name: str, intents: list[int], assets: list[CommittedAsset]) -> bool:
        return catalog.commit_item(canonical_key=f"web:{name}", platform="generic", canonical_url=f"https://e.com/{name}",
                                   source_url=f"https://e.com/{name}", title=name, uploader=None, duration=None,
                                   published_at=None, metadata={}, workflow_id=f"item-{name}", assets=assets,
                                   release=intents)

    video = CommittedAsset("video", "video", "a" * 64, 4, "video/mp4", blob_key("a" * 64))
    first = catalog.intend_blobs([video.key], "item-new", "run-1")
    assert commit("new", first, [video]) is True
    assert catalog.stale_intent_keys(LATER) == []
    # A second URL form of the same item, the same bytes: nothing new is written, and its
    # announcement ends too (the row names that blob).
    again = catalog.intend_blobs([video.key], "item-new", "run-2")
    assert commit("new", again, [video]) is False
    assert catalog.stale_intent_keys(LATER) == []
    # One that lost the race with other bytes (another format): no row names its blob, so its
    # announcement stays, for the clean-up to reclaim that blob once it is old.
    other = CommittedAsset("video", "video", "b" * 64, 5, "video/mp4", blob_key("b" * 64))
    lost = catalog.intend_blobs([other.key], "item-new", "run-3")
    assert commit("new", lost, [other]) is False
    assert catalog.stale_intent_keys(LATER) == [other.key]
    catalog.release_intents(lost)
    # A commit that fails (two assets of one name) writes nothing: its announcement stays, so the
    # blob it stored is not taken for an orphan while its retry may still name it.
    failed = catalog.intend_blobs([video.key], "item-bad", "run-1")
    with pytest.raises(StorageError):
        commit("bad", failed, [video, video])
    assert catalog.get("web:bad") is None
    assert catalog.stale_intent_keys(LATER) == [video.key]


def test_an_extras_commit_ends_the_announcements_of_the_blobs_it_records(catalog: Catalog) -> None:
    record(catalog, "with-extras", blob_key("a" * 64), 4)
    danmaku = CommittedAsset("danmaku", "danmaku", "d" * 64, 7, "application/xml", blob_key("d" * 64))
    recorded = catalog.intend_blobs([danmaku.key], "extras-with-extras", "run-1")
    unrecorded = catalog.intend_blobs([blob_key("e" * 64)], "extras-with-extras", "run-1")  # stored, then not recorded
    assert catalog.add_extras("web:with-extras", [danmaku], [], release=recorded + unrecorded)
    assert catalog.stale_intent_keys(LATER) == [blob_key("e" * 64)]
