"""``trawl crawl`` and ``trawl fsck [--repair]`` as a user runs them, with blobs in a real S3 server
(SeaweedFS on loopback): subprocesses, a real Temporal server, the simulator."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_cli import run, site, trawl_env  # noqa: F401 - site is a fixture
from tests.s3server import BUCKET, SeaweedFS, s3_url
from trawl.simulator import Simulator
from trawl.storage.blobs import hash_blob
from trawl.storage.s3 import QUARANTINE, S3BlobStore


def test_fsck_finds_a_rotten_object_and_repairs_it(site: Simulator, tmp_path: Path, temporal_address: str,  # noqa: F811
                                                   s3_server: SeaweedFS) -> None:
    store_url = s3_url()
    prefix = store_url.removeprefix(f"s3://{BUCKET}/")
    env = trawl_env(tmp_path, temporal_address, TRAWL_STORAGE__URL=store_url,
                    TRAWL_STORAGE__S3_ENDPOINT_URL=s3_server.endpoint)
    url = site.url("/media/a.mp4")
    crawled = run(["crawl", "--json", url], env, tmp_path)
    assert crawled.returncode == 0, crawled.stderr
    key = json.loads(crawled.stdout)["assets"][0]["key"]
    assert run(["fsck"], env, tmp_path).returncode == 0
    assert not (tmp_path / "data" / "blobs").exists()  # nothing of it on this machine's disk

    store = S3BlobStore(BUCKET, prefix, endpoint_url=s3_server.endpoint)
    with store.open(key) as reader:
        data = bytearray(reader.read())
    data[1000] ^= 0xFF  # one flipped byte, size unchanged
    store.client.put_object(Bucket=BUCKET, Key=f"{prefix}/{key}", Body=bytes(data))

    found = run(["fsck", "--json"], env, tmp_path)
    assert found.returncode == 1, found.stderr
    problems = json.loads(found.stdout)["problems"]
    assert [(p["kind"], p["key"], p["path"]) for p in problems] == [("corrupt_blob", key, store.location(key))]
    assert problems[0]["source_url"] == url

    repaired = run(["fsck", "--repair", "--json"], env, tmp_path)
    assert repaired.returncode == 0, repaired.stderr
    assert [r["outcome"] for r in json.loads(repaired.stdout)["repair"]["recrawled"]] == ["committed"]
    with store.open(QUARANTINE + key) as reader:
        assert reader.read() == bytes(data)  # the damaged bytes are kept aside
    assert run(["fsck"], env, tmp_path).returncode == 0
    assert hash_blob(store, key)[0] == key.rsplit("/", 1)[1]
    store.close()
