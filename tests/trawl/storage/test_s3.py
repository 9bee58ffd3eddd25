"""The S3 store's client rides out a short outage of the store itself: SeaweedFS stopped with
SIGSTOP, or killed and started again, answers the request that was waiting for it, with no
storage_error in between (trawl.storage.s3._RideOutOutages)."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.s3server import BUCKET, SeaweedFS, seaweedfs
from tests.polling import wait_until
from trawl.errors import StorageError
from trawl.storage.blobs import blob_key
from trawl.storage.s3 import S3BlobStore

MiB = 1024 * 1024
PART = 5 * MiB
OUTAGE_S = 6.0  # longer than botocore's own 3 attempts (with backoff) take


@pytest.fixture(scope="module")
def weed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedFS]:
    """A server of this module's own (stopped and killed here), on ports no other process takes meanwhile."""
    with seaweedfs(tmp_path_factory.mktemp("weed"), restartable=True) as server, pytest.MonkeyPatch.context() as env:
        for name, value in server.env().items():
            env.setenv(name, value)
        yield server


def later(seconds: float, action: Callable[[], object]) -> threading.Thread:
    def run() -> None:
        time.sleep(seconds)
        action()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def source(tmp_path: Path, size: int) -> tuple[Path, str]:
    data = os.urandom(size)
    path = tmp_path / "a.part"
    path.write_bytes(data)
    return path, hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("size", [100_000, 2 * PART + 1], ids=["whole", "parts"])
def test_a_put_waits_through_a_frozen_store(weed: SeaweedFS, tmp_path: Path, size: int) -> None:
    store = S3BlobStore(BUCKET, f"frozen-{size}", endpoint_url=weed.endpoint, part_size=PART, timeout=1.0,
                        outage_wait=60)
    path, sha = source(tmp_path, size)
    weed.freeze()
    thawing = later(OUTAGE_S, weed.thaw)
    try:
        assert store.put(path, sha, size) == blob_key(sha)
    finally:
        thawing.join()
        weed.thaw()
    assert store.stat(blob_key(sha)).size == size
    store.close()


def test_a_put_waits_through_a_store_killed_and_started_again(weed: SeaweedFS, tmp_path: Path) -> None:
    store = S3BlobStore(BUCKET, "killed", endpoint_url=weed.endpoint, part_size=PART, timeout=1.0, outage_wait=60)
    path, sha = source(tmp_path, 2 * PART + 1)
    assert not store.exists(blob_key(sha))  # a connection in the pool, which the kill resets
    weed.stop()
    restarting = later(OUTAGE_S, weed.restart)
    try:
        assert store.put(path, sha, 2 * PART + 1) == blob_key(sha)
    finally:
        restarting.join()
    assert store.stat(blob_key(sha)).size == 2 * PART + 1
    store.close()


def test_an_outage_longer_than_the_wait_is_a_storage_error(weed: SeaweedFS) -> None:
    store = S3BlobStore(BUCKET, "longer", endpoint_url=weed.endpoint, timeout=0.5, outage_wait=1.0)
    weed.freeze()
    try:
        # Frozen for sure before the request (a fresh-check once saw this request answered).
        wait_until(lambda: not weed.answers(timeout=0.5), "the store to stop answering", 30)
        with pytest.raises(StorageError, match="(?i)timeout"):
            store.stat(blob_key(hashlib.sha256(b"x").hexdigest()))
    finally:
        weed.thaw()
    store.close()
