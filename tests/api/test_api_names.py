"""The API's asset download is offered under the name ``trawl export`` gives it (the template's
last part, ``.ext`` from the sniffed type), with RFC 6266 ``filename*`` for names beyond ASCII."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from urllib.parse import quote, unquote

import httpx
from temporalio.client import Client

from tests.conftest import make_settings
from tests.api.test_api import TOKEN, free_port, serving
from trawl.export import MANIFEST, Exporter
from trawl.settings import ApiSettings, ExportSettings
from trawl.storage.blobs import open_blob_store
from trawl.storage.catalog import Catalog, CommittedAsset

ITEMS = [  # key, title, mime, data, metadata
    ("bilibili:BV117411r7R1", "当我给拜年祭的快板加了电音配乐…", "video/mp4", b"\x00\x00\x00\x18ftypmp42" * 50, {}),
    ("web:abc", 'Sunrise "over" the bay', "video/x-flv", b"FLV\x01" * 60, {}),
    ("web:def", "../../etc/passwd", "image/jpeg", b"\xff\xd8\xff" * 70, {}),
    # No title column: the name's title comes from the metadata alone, as in `trawl export`.
    ("web:ghi", None, "video/mp4", b"\x00\x00\x00\x18ftypisom" * 40, {"title": "From the metadata"}),
]


def disposition(header: str) -> tuple[str, str | None]:
    """(filename, the decoded filename* or None), as RFC 6266 clients read them."""
    plain = re.search(r'filename="([^"]*)"', header)
    extended = re.search(r"filename\*=UTF-8''(\S+)", header)
    return (plain[1] if plain else "", unquote(extended[1]) if extended else None)


async def test_downloads_carry_the_export_name(temporal_client: Client, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, "127.0.0.1:1", api=ApiSettings(port=free_port(), token=TOKEN),
                             export=ExportSettings(template="{uploader}/{title} [{id}].{ext}"))
    store = open_blob_store(settings)
    catalog = Catalog(settings.catalog_url)
    catalog.create_schema()
    for key, title, mime, data, metadata in ITEMS:
        sha = hashlib.sha256(data).hexdigest()
        (tmp_path / "blob").write_bytes(data)
        blob = store.put(tmp_path / "blob", sha, len(data))
        url = f"https://x.test/{key.split(':', 1)[1]}.html"  # a web key's {id} is its URL's file name
        catalog.commit_item(canonical_key=key, platform=key.split(":")[0], canonical_url=url, source_url=url,
                            title=title, uploader="someone", duration=None, published_at=None, metadata=metadata,
                            workflow_id=None, assets=[CommittedAsset("video", "video", sha, len(data), mime, blob)])
    catalog.close()
    store.close()
    async with serving(settings, temporal_client):
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{settings.api.port}",
                                     headers={"Authorization": f"Bearer {TOKEN}"}) as api:
            chinese = await api.get("/api/v1/items/bilibili:BV117411r7R1/assets/video")
            plain = await api.get("/api/v1/items/web:abc/assets/video", headers={"Range": "bytes=0-3"})
            hostile = await api.get("/api/v1/items/web:def/assets/video")
            offered = {key: disposition((await api.get(f"/api/v1/items/{key}/assets/video"))
                                        .headers["content-disposition"]) for key, *_ in ITEMS}
    name = "当我给拜年祭的快板加了电音配乐… [BV117411r7R1].mp4"
    header = chinese.headers["content-disposition"]
    assert header == f"attachment; filename=\"[BV117411r7R1].mp4\"; filename*=UTF-8''{quote(name, safe='')}"
    assert disposition(header) == ("[BV117411r7R1].mp4", name)
    assert plain.status_code == 206
    assert disposition(plain.headers["content-disposition"])[1] == 'Sunrise "over" the bay [abc].flv'
    assert 'filename="Sunrise _over_ the bay [abc].flv"' in plain.headers["content-disposition"]
    filename = disposition(hostile.headers["content-disposition"])[1]
    assert filename == "⧸..⧸etc⧸passwd [def].jpg" and "/" not in filename
    assert offered["web:ghi"] == ("From the metadata [ghi].mp4", None)
    # Every name is the one `trawl export` gives the file with the same template.
    catalog = Catalog(settings.catalog_url)
    store = open_blob_store(settings)
    Exporter(tmp_path / "out", store, settings.export.template).export_items(catalog.committed())
    catalog.close()
    store.close()
    exported = {p.name for p in (tmp_path / "out").rglob("*") if p.is_file() and p.name != MANIFEST}
    assert {extended or plain for plain, extended in offered.values()} == exported
