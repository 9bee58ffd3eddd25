"""The BlobStore contract, run against both backends: a local directory and a real S3 server
(SeaweedFS on loopback, see tests/s3server.py). No S3 call is mocked."""

from __future__ import annotations

import hashlib
import os
import socket
import stat
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.s3server import BUCKET, SeaweedFS, s3_url
from trawl.errors import ContentCorrupt, StorageError
from trawl.storage.blobs import (
    BlobNotFound, BlobStore, LocalBlobStore, abandoned_uploads, blob_key, hash_blob, key_sha256, reclaim_uploads)
from trawl.storage.s3 import S3BlobStore
from trawl.worker.cleanup import clean_uploads

MiB = 1024 * 1024
PART = 5 * MiB  # S3's smallest part: a test file of a few MiB is a multipart upload


def make_s3(s3_server: SeaweedFS, **kwargs: object) -> S3BlobStore:
    bucket, _, prefix = s3_url().removeprefix("s3://").partition("/")
    return S3BlobStore(bucket, prefix, endpoint_url=s3_server.endpoint, part_size=PART, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BlobStore]:
    if request.param == "local":
        yield LocalBlobStore(tmp_path / "blobs")
        return
    s3 = make_s3(request.getfixturevalue("s3_server"))
    yield s3
    s3.close()


def write(path: Path, data: bytes) -> tuple[Path, str]:
    path.write_bytes(data)
    return path, hashlib.sha256(data).hexdigest()


def read(store: BlobStore, key: str, start: int = 0, end: int | None = None, chunk: int = 7919) -> bytes:
    with store.open(key, start, end) as reader:
        return b"".join(iter(lambda: reader.read(chunk), b""))


def keys(store: BlobStore) -> list[str]:
    return [s.key for s in store.iterate()]


def test_keys_name_blobs_by_sha256() -> None:
    sha = hashlib.sha256(b"x").hexdigest()
    assert blob_key(sha) == f"sha256/{sha[:2]}/{sha[2:4]}/{sha}"
    assert key_sha256(blob_key(sha)) == sha
    assert key_sha256(f"sha256/00/00/{sha}") is None  # the directories must be the hash's own
    assert key_sha256(f".{sha}.1.tmp") is None


@pytest.mark.parametrize("bad", ["../../etc/passwd", "A" * 64, "abc", ""])
def test_blob_names_must_be_sha256_hex(bad: str) -> None:
    with pytest.raises(ValueError):
        blob_key(bad)


@pytest.mark.parametrize("bad", ["../outside", "sha256/../../x", "/etc/passwd", ""])
def test_a_key_never_leaves_the_store(store: BlobStore, bad: str) -> None:
    with pytest.raises(ValueError):
        store.stat(bad)


def test_put_then_read_back_whole_and_by_range(store: BlobStore, tmp_path: Path) -> None:
    data = os.urandom(100_000)
    source, sha = write(tmp_path / "a.part", data)
    key = store.put(source, sha, len(data))
    assert key == blob_key(sha)
    assert store.exists(key)
    stat = store.stat(key)
    assert stat is not None and stat.key == key and stat.size == len(data) and stat.modified.tzinfo is not None
    assert read(store, key) == data
    assert hash_blob(store, key) == (sha, len(data))
    for start, end in [(0, 1), (10, 20), (99_995, None), (50_000, 100_000), (5, 5)]:
        assert read(store, key, start, end) == data[start:end], (start, end)
    assert keys(store) == [key]


def test_an_empty_file_is_a_blob_too(store: BlobStore, tmp_path: Path) -> None:
    source, sha = write(tmp_path / "empty.part", b"")
    key = store.put(source, sha, 0)
    assert store.stat(key).size == 0 and read(store, key) == b"" and read(store, key, 0, 0) == b""


def test_put_is_idempotent(store: BlobStore, tmp_path: Path) -> None:
    data = b"same bytes" * 1000
    first, sha = write(tmp_path / "a.part", data)
    second, _ = write(tmp_path / "b.part", data)
    assert store.put(first, sha, len(data)) == store.put(second, sha, len(data)) == blob_key(sha)
    assert keys(store) == [blob_key(sha)] and read(store, blob_key(sha)) == data


def test_large_files_go_up_in_parts_and_read_back_across_them(store: BlobStore, tmp_path: Path) -> None:
    data = os.urandom(2 * PART + 12_345)  # three parts on S3
    source, sha = write(tmp_path / "big.part", data)
    key = store.put(source, sha, len(data))
    assert store.stat(key).size == len(data)
    assert hash_blob(store, key) == (sha, len(data))
    assert read(store, key, PART - 10, PART + 10, chunk=64 * 1024) == data[PART - 10:PART + 10]
    if isinstance(store, S3BlobStore):
        assert store.incomplete_uploads() == []


@pytest.mark.parametrize("size", [50_000, 2 * PART + 1], ids=["whole", "multipart"])
def test_bytes_that_do_not_hash_to_the_name_are_refused(store: BlobStore, tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    source, _ = write(tmp_path / "a.part", data)
    wrong = hashlib.sha256(b"other bytes").hexdigest()
    if isinstance(store, LocalBlobStore):
        # A rename keeps the very file verify hashed: only a copy across filesystems re-hashes
        # (below); here the size is what can be wrong.
        with pytest.raises(ContentCorrupt):
            store.put(source, wrong, size + 1)
    else:
        with pytest.raises(ContentCorrupt, match="not stored|abandoned"):
            store.put(source, wrong, size)
        assert store.incomplete_uploads() == []  # a refused multipart upload is aborted
    assert not store.exists(blob_key(wrong)) and keys(store) == []


def test_a_copy_across_filesystems_is_hashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    store = LocalBlobStore(tmp_path / "blobs")
    real_replace = os.replace

    def cross_device(src: os.PathLike, dst: os.PathLike) -> None:
        if not Path(src).name.startswith("."):  # only the staging file renames within the store
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", cross_device)
    good, sha = write(tmp_path / "good.part", b"good bytes")
    assert read(store, store.put(good, sha, 10)) == b"good bytes" and not good.exists()
    bad, _ = write(tmp_path / "bad.part", b"evil bytes")
    wrong = hashlib.sha256(b"other byte").hexdigest()
    with pytest.raises(ContentCorrupt):
        store.put(bad, wrong, 10)
    assert bad.exists() and keys(store) == [blob_key(sha)]  # no staging file left behind


def test_a_wrong_sized_blob_is_replaced_by_a_verified_put(store: BlobStore, tmp_path: Path) -> None:
    data = b"complete" * 100
    sha = hashlib.sha256(data).hexdigest()
    damaged, _ = write(tmp_path / "damaged", data[:100])
    _raw_write(store, blob_key(sha), damaged)
    source, _ = write(tmp_path / "a.part", data)
    store.put(source, sha, len(data))
    assert read(store, blob_key(sha)) == data


def test_a_damaged_blob_of_the_right_size_is_replaced_by_a_verified_put(store: BlobStore, tmp_path: Path) -> None:
    data = b"complete" * 100
    sha = hashlib.sha256(data).hexdigest()
    damaged, _ = write(tmp_path / "damaged", b"X" + data[1:])  # one byte rotted, same size
    _raw_write(store, blob_key(sha), damaged)
    source, _ = write(tmp_path / "a.part", data)
    store.put(source, sha, len(data))
    assert read(store, blob_key(sha)) == data
    assert hash_blob(store, blob_key(sha)) == (sha, len(data))


def test_a_local_blob_is_read_only_and_its_directories_reach_the_disk(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    source, sha = write(tmp_path / "a.part", b"bytes to keep")
    key = store.put(source, sha, 13)
    path = store.root / key
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    # The renamed entry's directory, and each directory made for it in its parent.
    assert str(path.parent) in synced and str(store.root) in synced
    assert {str(path.parent.parent), str(path.parent.parent.parent)} <= set(synced)


def test_concurrent_puts_of_one_key_store_it_once(store: BlobStore, tmp_path: Path) -> None:
    data = os.urandom(PART + 777)
    sha = hashlib.sha256(data).hexdigest()
    sources = [write(tmp_path / f"{i}.part", data)[0] for i in range(4)]
    results: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(sources))

    def put(source: Path) -> None:
        start.wait()
        try:
            results.append(store.put(source, sha, len(data)))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=put, args=(s,)) for s in sources]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == [] and results == [blob_key(sha)] * 4
    assert keys(store) == [blob_key(sha)] and hash_blob(store, blob_key(sha)) == (sha, len(data))
    if isinstance(store, S3BlobStore):
        assert store.incomplete_uploads() == []


def test_what_is_not_there(store: BlobStore) -> None:
    key = blob_key("0" * 64)
    assert not store.exists(key) and store.stat(key) is None
    with pytest.raises(BlobNotFound):
        store.open(key)
    with pytest.raises(BlobNotFound):
        store.open(key, 0, 0)
    assert store.delete(key) is False and store.quarantine(key) is None
    assert keys(store) == []


def test_delete_and_quarantine(store: BlobStore, tmp_path: Path) -> None:
    kept, sha1 = write(tmp_path / "1.part", b"one")
    gone, sha2 = write(tmp_path / "2.part", b"two")
    k1, k2 = store.put(kept, sha1, 3), store.put(gone, sha2, 3)
    where = store.quarantine(k1)
    assert where is not None and sha1 in where
    assert keys(store) == [k2] and not store.exists(k1)
    assert store.delete(k2) is True and keys(store) == []
    assert store.location(k2).endswith(k2)


def test_the_local_store_shows_paths_and_the_s3_store_urls(store: BlobStore) -> None:
    key = blob_key("a" * 64)
    if isinstance(store, LocalBlobStore):
        assert store.local_path(key) == store.root / key and store.location(key) == str(store.root / key)
    else:
        assert store.local_path(key) is None
        assert store.location(key) == f"s3://{BUCKET}/{store.prefix}/{key}"


def test_an_interrupted_multipart_upload_leaves_nothing(s3_server: SeaweedFS, tmp_path: Path) -> None:
    class Failing(S3BlobStore):
        """Our own code failing after the first part went up (a full local disk, say)."""

        def _put_part(self, name: str, upload_id: str, number: int, data: bytes, where: str) -> dict:
            if number == 2:
                raise StorageError("the worker's disk failed reading part 2")
            return super()._put_part(name, upload_id, number, data, where)

    store = make_s3(s3_server, concurrency=1)
    failing = Failing(store.bucket, store.prefix, endpoint_url=s3_server.endpoint, part_size=PART, concurrency=1)
    data = os.urandom(3 * PART)
    source, sha = write(tmp_path / "big.part", data)
    with pytest.raises(StorageError, match="part 2"):
        failing.put(source, sha, len(data))
    assert not store.exists(blob_key(sha)) and store.incomplete_uploads() == []
    assert store.put(source, sha, len(data)) == blob_key(sha)  # the retry
    assert hash_blob(store, blob_key(sha)) == (sha, len(data))


def test_an_upload_the_store_refuses_is_a_storage_error(s3_server: SeaweedFS, tmp_path: Path) -> None:
    store = S3BlobStore("no-such-bucket-here", "x", endpoint_url=s3_server.endpoint)
    source, sha = write(tmp_path / "a.part", b"data")
    with pytest.raises(StorageError, match="no-such-bucket-here"):
        store.put(source, sha, 4)


def _raw_write(store: BlobStore, key: str, source: Path) -> None:
    """Put bytes under a key behind the store's back (as bit rot or a bug would)."""
    if isinstance(store, LocalBlobStore):
        path = store.root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(source.read_bytes())
    else:
        assert isinstance(store, S3BlobStore)
        store.client.put_object(Bucket=store.bucket, Key=f"{store.prefix}/{key}", Body=source.read_bytes())


def _leave_an_upload(store: S3BlobStore, data: bytes) -> str:
    """What a put killed after its first part leaves behind; the blob's key."""
    key = blob_key(hashlib.sha256(data).hexdigest())
    name = f"{store.prefix}/{key}"
    upload = store.client.create_multipart_upload(Bucket=store.bucket, Key=name)["UploadId"]
    store.client.upload_part(Bucket=store.bucket, Key=name, UploadId=upload, PartNumber=1, Body=data[:PART])
    return key


def test_an_abandoned_upload_is_listed_with_its_age_and_size_and_reclaimed_once(s3_server: SeaweedFS) -> None:
    store = make_s3(s3_server)
    key = _leave_an_upload(store, os.urandom(PART + 1))
    [upload] = store.incomplete_uploads()
    assert (upload.key, upload.parts, upload.size) == (key, 1, PART)
    now = datetime.now(UTC)
    assert timedelta(0) <= upload.age(now) < timedelta(minutes=5)
    assert abandoned_uploads(store.incomplete_uploads(), timedelta(hours=24), now) == []  # maybe still running: left alone
    later = now + timedelta(hours=25)
    assert abandoned_uploads(store.incomplete_uploads(), timedelta(hours=24), later) == [upload]
    assert reclaim_uploads(store, timedelta(hours=24), later) == [upload]
    assert store.incomplete_uploads() == [] and reclaim_uploads(store, timedelta(hours=24), later) == []
    store.close()


def test_a_local_store_has_no_uploads(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    assert store.incomplete_uploads() == [] and reclaim_uploads(store, timedelta(0)) == []


def test_the_lifecycle_rule_is_set_once_beside_the_buckets_other_rules(s3_server: SeaweedFS) -> None:
    store = make_s3(s3_server)
    other = {"ID": "someone-elses", "Status": "Enabled", "Filter": {"Prefix": "logs/"},
             "Expiration": {"Days": 30}}
    store.client.put_bucket_lifecycle_configuration(Bucket=store.bucket, LifecycleConfiguration={"Rules": [other]})
    assert "aborts uploads after 2 day(s)" in store.ensure_upload_lifecycle(timedelta(hours=30))
    assert "already" in store.ensure_upload_lifecycle(timedelta(hours=30))
    rules = {rule["ID"]: rule for rule in store.client.get_bucket_lifecycle_configuration(Bucket=store.bucket)["Rules"]}
    ours = rules[f"trawl-abort-incomplete-uploads-{store.prefix}"]
    assert ours["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 2}
    assert ours["Filter"] == {"Prefix": f"{store.prefix}/"} and "someone-elses" in rules
    store.client.delete_bucket_lifecycle(Bucket=store.bucket)
    store.close()


async def test_the_workers_clean_up_aborts_abandoned_uploads(s3_server: SeaweedFS) -> None:
    store = make_s3(s3_server)
    _leave_an_upload(store, os.urandom(PART + 1))
    assert await clean_uploads(store, timedelta(hours=1)) == 0  # too young to be abandoned
    assert await clean_uploads(store, timedelta(0)) == 1
    assert store.incomplete_uploads() == []
    store.close()


def test_a_store_that_stops_answering_is_a_storage_error_not_a_hang(s3_server: SeaweedFS, tmp_path: Path) -> None:
    """A frozen store (the kernel still accepts connections, nothing answers) fails each request
    after storage.s3_timeout, not after boto3's default minute times five attempts."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        store = S3BlobStore(BUCKET, "frozen", endpoint_url=f"http://127.0.0.1:{silent.getsockname()[1]}",
                            part_size=PART, timeout=0.5)
        with pytest.raises(StorageError, match="(?i)read timeout"):
            store.stat(blob_key(hashlib.sha256(b"x").hexdigest()))
        source, sha = write(tmp_path / "a.part", os.urandom(50_000))
        with pytest.raises(StorageError, match="(?i)timeout"):
            store.put(source, sha, 50_000)
        store.close()
