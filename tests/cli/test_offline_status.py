"""`trawl status URL` with no server to ask reads the catalog and the partial files (issue 43,
point 7): an interrupted crawl's item is out of reach until its server runs again, its bytes on
disk are not. Real ``trawl`` subprocesses, a real catalog and work directory."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.e2e.test_cli import run, trawl_env
from tests.e2e.test_cli_mistakes import one_line_error
from tests.ports import closed_address
from trawl.platforms.registry import build_registry
from trawl.storage.catalog import Catalog, CommittedAsset
from trawl.storage.blobs import open_blob_store
from trawl.settings import Settings
from trawl.workdirs import mark_owner, workdir_name

URL = "https://videos.example.org/clips/harbour.mp4"


def no_server_env(tmp_path: Path) -> dict[str, str]:
    return trawl_env(tmp_path, TRAWL_TEMPORAL__ADDRESS=closed_address())


def test_an_interrupted_items_partial_files_are_shown_without_a_server(tmp_path: Path) -> None:
    env = no_server_env(tmp_path)
    workflow_id = build_registry().route(URL).workflow_id
    directory = tmp_path / "data" / "work" / workdir_name(workflow_id)
    mark_owner(directory, workflow_id)
    (directory / "video.part").write_bytes(b"\0" * 300_000)
    shown = run(["status", URL], env, tmp_path, timeout=60)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"{workflow_id}: no server to ask"), shown.stdout
    assert any(line.startswith("partial   video.part 293.0 KiB; last written ") and str(directory) in line
               for line in lines), shown.stdout
    as_json = json.loads(run(["status", "--json", URL], env, tmp_path, timeout=60).stdout)
    assert as_json["status"] is None and as_json["catalog"] is None
    assert [(p["name"], p["size"]) for p in as_json["partial_files"]] == [("video.part", 300_000)]


def test_a_committed_item_is_read_from_the_catalog_without_a_server(tmp_path: Path) -> None:
    env = no_server_env(tmp_path)
    settings = Settings(data_dir=tmp_path / "data", **({"catalog": {"url": env["TRAWL_CATALOG__URL"]}}
                                                       if "TRAWL_CATALOG__URL" in env else {}))
    data = b"committed clip"
    sha = hashlib.sha256(data).hexdigest()
    source = tmp_path / "clip"
    source.write_bytes(data)
    store = open_blob_store(settings)
    catalog = Catalog(settings.catalog_url)
    try:
        catalog.create_schema()
        asset = CommittedAsset("video", "video", sha, len(data), "video/mp4", store.put(source, sha, len(data)))
        catalog.commit_item(canonical_key="generic:harbour", platform="generic", canonical_url=URL, source_url=URL,
                            title="Harbour at dawn", uploader=None, duration=None, published_at=None, metadata={},
                            workflow_id=None, assets=[asset])
        catalog.remember_urls([URL], "generic:harbour")
    finally:
        catalog.close()
        store.close()
    shown = run(["status", URL], env, tmp_path, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert any(line.startswith("catalog   committed  generic    Harbour at dawn") and "generic:harbour" in line
               for line in shown.stdout.splitlines()), shown.stdout
    as_json = json.loads(run(["status", "--json", URL], env, tmp_path, timeout=60).stdout)
    assert as_json["catalog"]["canonical_key"] == "generic:harbour" and as_json["partial_files"] == []


def test_what_nothing_knows_is_still_refused(tmp_path: Path) -> None:
    line = one_line_error(run(["status", URL], no_server_env(tmp_path), tmp_path, timeout=60))
    assert "starts none" in line and "neither the catalog nor the partial files" in line, line
