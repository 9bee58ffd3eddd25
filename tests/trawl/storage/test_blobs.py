import hashlib
from pathlib import Path

import pytest

from trawl.storage.blobs import LocalBlobStore


def test_put_moves_file_to_its_hash_and_dedups(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    data = b"same bytes"
    sha = hashlib.sha256(data).hexdigest()
    first, second = tmp_path / "a.part", tmp_path / "b.part"
    first.write_bytes(data)
    second.write_bytes(data)
    assert store.put(first, sha) == f"sha256/{sha[:2]}/{sha[2:4]}/{sha}"
    assert store.put(second, sha) == store.relative(sha)
    assert not first.exists() and not second.exists()
    assert store.path(sha).read_bytes() == data
    assert [p for p in (tmp_path / "blobs").rglob("*") if p.is_file()] == [store.path(sha)]


@pytest.mark.parametrize("bad", ["../../etc/passwd", "A" * 64, "abc", ""])
def test_names_must_be_sha256_hex(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError):
        LocalBlobStore(tmp_path).path(bad)
