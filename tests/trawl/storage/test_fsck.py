"""fsck on both backends: blobs hashed by streaming them from the store, checked against their
names and the catalog; the repair quarantines what is damaged and forgets its items."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.trawl.storage.test_blobs import _raw_write, keys, make_s3, read, write
from trawl.storage.blobs import BlobStore, LocalBlobStore, blob_key
from trawl.storage.catalog import Catalog, CommittedAsset
from trawl.storage.fsck import check, quarantine
from trawl.storage.s3 import QUARANTINE, S3BlobStore


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BlobStore]:
    if request.param == "local":
        yield LocalBlobStore(tmp_path / "blobs", quarantine_dir=tmp_path / "quarantine")
        return
    s3 = make_s3(request.getfixturevalue("s3_server"))
    yield s3
    s3.close()


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    catalog = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    catalog.create_schema()
    yield catalog
    catalog.close()


def commit(catalog: Catalog, store: BlobStore, tmp_path: Path, name: str, data: bytes) -> str:
    source, sha = write(tmp_path / f"{name}.part", data)
    key = store.put(source, sha, len(data))
    catalog.commit_item(canonical_key=f"web:{name}", platform="generic", canonical_url=f"https://e.com/{name}",
                        source_url=f"https://e.com/{name}?src", title=name, uploader=None, duration=None,
                        published_at=None, metadata={}, workflow_id=f"wf-{name}",
                        assets=[CommittedAsset("video", "video", sha, len(data), "video/mp4", key)])
    return key


def test_a_sound_store_is_clean(store: BlobStore, catalog: Catalog, tmp_path: Path) -> None:
    keys_ = [commit(catalog, store, tmp_path, f"item{i}", os.urandom(1000 + i)) for i in range(3)]
    orphan, sha = write(tmp_path / "orphan", b"no row uses me")
    store.put(orphan, sha, 14)
    report = check(catalog, store)
    assert report.problems == [] and report.items == 3 and report.blobs == 4
    assert report.orphans == [blob_key(sha)] and set(keys_) < set(keys(store))
    assert report.orphan_bytes == 14  # listed with its bytes; too young to be judged (a commit may be recording it)


def test_an_old_orphan_is_a_problem_that_the_repair_removes(store: BlobStore, catalog: Catalog,
                                                             tmp_path: Path) -> None:
    """An attempt that stored a blob and died before its row: once the blob is older than
    storage.abandon_uploads_after (and no commit announced it since), fsck reports it with its
    size and age and --repair removes it; a blob a row names never is. (Before: "harmless".)"""
    kept = commit(catalog, store, tmp_path, "kept", b"k" * 3000)
    source, sha = write(tmp_path / "hd.part", b"h" * 7000)
    catalog.intend_blobs([blob_key(sha)], "item-fb", "run-1")
    orphan = store.put(source, sha, 7000)
    later = datetime.now(UTC) + timedelta(hours=25)
    report = check(catalog, store, now=later)
    assert (report.orphans, report.orphan_bytes) == ([orphan], 7000)
    [problem] = report.problems
    assert (problem.kind, problem.key, problem.canonical_key) == ("orphan_blob", orphan, None)
    assert "7000 bytes" in problem.detail and "25.0 h ago" in problem.detail
    assert quarantine(report, catalog, store, timedelta(0)) == []  # nothing to crawl again
    assert [b.key for b in report.reclaimed] == [orphan] and keys(store) == [kept]
    after = check(catalog, store, now=later)
    assert after.problems == [] and after.orphans == [] and after.items == 1


def test_an_orphan_a_commit_announced_lately_is_not_a_problem(store: BlobStore, catalog: Catalog,
                                                              tmp_path: Path) -> None:
    """An old blob that a running commit met (the same bytes again) and announced: it is about to
    be recorded, so neither fsck nor its repair touches it."""
    source, sha = write(tmp_path / "again.part", b"a" * 500)
    orphan = store.put(source, sha, 500)
    report = check(catalog, store, timedelta(0), now=datetime.now(UTC) + timedelta(seconds=5))
    assert [p.kind for p in report.problems] == ["orphan_blob"]
    catalog.intend_blobs([orphan], "item-again", "run-2")
    quarantine(report, catalog, store, timedelta(minutes=5))
    assert report.reclaimed == [] and keys(store) == [orphan]


def test_damage_is_found_and_repaired(store: BlobStore, catalog: Catalog, tmp_path: Path) -> None:
    good = commit(catalog, store, tmp_path, "good", b"g" * 5000)
    flipped = commit(catalog, store, tmp_path, "flipped", b"f" * 5000)
    lost = commit(catalog, store, tmp_path, "lost", b"l" * 5000)
    _raw_write(store, flipped, write(tmp_path / "rot", b"f" * 4999 + b"X")[0])  # one byte changed
    store.delete(lost)
    stray = f"sha256/ab/cd/.{'ab' * 32}.123.tmp"
    _raw_write(store, stray, write(tmp_path / "stray", b"half a copy")[0])

    report = check(catalog, store)
    found = sorted((p.kind, p.key, p.canonical_key) for p in report.problems)
    assert found == sorted([("corrupt_blob", flipped, "web:flipped"), ("missing_blob", lost, "web:lost"),
                            ("stray_file", stray, None)])
    assert report.damaged_items == {"web:flipped": "https://e.com/flipped?src", "web:lost": "https://e.com/lost?src"}

    urls = quarantine(report, catalog, store)
    assert sorted(urls) == ["https://e.com/flipped?src", "https://e.com/lost?src"]
    assert keys(store) == [good] and catalog.get("web:flipped") is None and catalog.get("web:good") is not None
    after = check(catalog, store)
    assert after.problems == [] and after.items == 1
    # The damaged bytes are kept aside, not deleted.
    if isinstance(store, LocalBlobStore):
        assert (tmp_path / "quarantine" / flipped.rsplit("/", 1)[1]).read_bytes() == b"f" * 4999 + b"X"
    else:
        assert isinstance(store, S3BlobStore)
        assert read(store, QUARANTINE + flipped) == b"f" * 4999 + b"X"


def test_a_size_the_catalog_got_wrong_is_reported(store: BlobStore, catalog: Catalog, tmp_path: Path) -> None:
    data = b"x" * 300
    source, sha = write(tmp_path / "a.part", data)
    key = store.put(source, sha, len(data))
    catalog.commit_item(canonical_key="web:sized", platform="generic", canonical_url="u", source_url="u",
                        title=None, uploader=None, duration=None, published_at=None, metadata={}, workflow_id="w",
                        assets=[CommittedAsset("video", "video", sha, 301, None, key)])
    assert [(p.kind, p.key) for p in check(catalog, store).problems] == [("size_mismatch", key)]


def test_objects_beside_the_blobs_are_not_the_stores(store: BlobStore, catalog: Catalog, tmp_path: Path) -> None:
    """A bucket (or directory) shared with other data: fsck lists only ``sha256/``, so its repair
    never moves what another program keeps there."""
    commit(catalog, store, tmp_path, "item", b"bytes")
    _raw_write(store, "backups/notes.txt", write(tmp_path / "notes", b"not a blob")[0])
    report = check(catalog, store)
    assert report.problems == [] and report.blobs == 1
    quarantine(report, catalog, store)
    assert store.stat("backups/notes.txt") is not None


def test_a_blob_shared_with_an_exported_file_is_reported_and_its_edit_named(catalog: Catalog, tmp_path: Path) -> None:
    """A hard-linked export is the blob itself: fsck lists such blobs, and when one's bytes changed it
    says that an edit of the exported file is the likely cause."""
    store = LocalBlobStore(tmp_path / "blobs")
    key = commit(catalog, store, tmp_path, "linked", b"v" * 5000)
    alone = commit(catalog, store, tmp_path, "alone", b"a" * 5000)
    blob = store.local_path(key)
    assert blob is not None
    exported = tmp_path / "export" / "linked.mp4"
    exported.parent.mkdir()
    os.link(blob, exported)  # what trawl export --link hardlink makes

    report = check(catalog, store)
    assert report.problems == [] and report.shared == [key]  # reported, yet nothing is wrong with it
    assert alone not in report.shared

    os.chmod(exported, 0o644)  # a person makes "their" file writable and edits it in place
    with open(exported, "r+b") as handle:
        handle.write(b"EDITED")
    report = check(catalog, store)
    [problem] = report.problems
    assert (problem.kind, problem.key, problem.canonical_key) == ("corrupt_blob", key, "web:linked")
    assert "1 other hard link" in problem.detail and "exported file edited in place" in problem.detail
