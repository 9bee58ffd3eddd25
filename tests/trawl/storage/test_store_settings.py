"""``storage.url`` picks the blob store: a directory (the default ``data/blobs``) or an S3 bucket."""

from __future__ import annotations

from pathlib import Path

import pytest

from trawl.settings import ConfigError, Settings, StorageSettings, load_settings
from trawl.storage.blobs import LocalBlobStore, open_blob_store
from trawl.storage.s3 import S3BlobStore


def test_empty_is_the_data_dir_and_a_path_is_that_directory(tmp_path: Path) -> None:
    default = open_blob_store(Settings(data_dir=tmp_path / "data"))
    assert isinstance(default, LocalBlobStore) and default.root == tmp_path / "data" / "blobs"
    assert default.quarantine_dir == tmp_path / "data" / "quarantine"
    elsewhere = open_blob_store(Settings(data_dir=tmp_path / "data", storage=StorageSettings(url=str(tmp_path / "b"))))
    assert isinstance(elsewhere, LocalBlobStore) and elsewhere.root == tmp_path / "b"


def test_an_s3_url_is_a_bucket_and_prefix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TRAWL_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("TRAWL_STORAGE__URL", "s3://media-bucket/trawl/blobs/")
    monkeypatch.setenv("TRAWL_STORAGE__S3_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("TRAWL_STORAGE__S3_REGION", "eu-west-3")
    monkeypatch.setenv("TRAWL_STORAGE__S3_PART_SIZE", str(16 * 1024 * 1024))
    store = open_blob_store(load_settings())
    assert isinstance(store, S3BlobStore)
    assert (store.bucket, store.prefix, store.part_size) == ("media-bucket", "trawl/blobs", 16 * 1024 * 1024)
    assert store.client.meta.region_name == "eu-west-3" and store.client.meta.endpoint_url == "http://127.0.0.1:9"
    assert store.location("sha256/ab/cd/x") == "s3://media-bucket/trawl/blobs/sha256/ab/cd/x"
    store.close()


@pytest.mark.parametrize(("name", "value", "message"), [
    ("TRAWL_STORAGE__URL", "s3://Bad_Bucket/x", "valid bucket name"),
    ("TRAWL_STORAGE__URL", "gs://bucket/x", "s3://BUCKET"),
    ("TRAWL_STORAGE__S3_PART_SIZE", "1024", "storage.s3_part_size"),
])
def test_a_bad_storage_setting_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, value: str,
                                        message: str) -> None:
    monkeypatch.setenv("TRAWL_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=message):
        load_settings()
