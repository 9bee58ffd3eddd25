"""Named files: the name sanitiser (property tests), templates, and exports of hostile titles from a
real catalog and a real blob store (a local directory, or SeaweedFS's S3 on loopback)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from tests.polling import wait_until
from tests.s3server import SeaweedFS, s3_url
from trawl.errors import ContentCorrupt
from trawl.export import (
    DEFAULT_TEMPLATE,
    MAX_COMPONENT_BYTES,
    MANIFEST,
    Exporter,
    Template,
    TemplateError,
    download_name,
    field_values,
    ext_for,
    safe_component,
    upload_date,
)
from trawl.settings import Settings, StorageSettings
from trawl.storage.blobs import BlobStore, LocalBlobStore, open_blob_store
from trawl.storage.catalog import Catalog, CommittedAsset

RESERVED = {"con", "prn", "aux", "nul", *(f"com{n}" for n in range(1, 10)), *(f"lpt{n}" for n in range(1, 10))}
WINDOWS_FORBIDDEN = set('<>:"|?*\\')

# Text that tends to break names: separators, dots, controls, invisible characters, wide scripts.
hostile_text = st.text(
    alphabet=st.one_of(st.sampled_from(list("/\\.. \x00\t\n\x7f\x85\u202e\ufeff\u200d:?*<>|\"CONconé当😀")),
                       st.characters(codec="utf-8")),
    max_size=400)


def assert_safe(name: str, *, windows: bool = False, max_bytes: int = MAX_COMPONENT_BYTES) -> None:
    assert name and name not in (".", "..")
    assert "/" not in name and "\x00" not in name
    assert len(name.encode("utf-8")) <= max_bytes
    assert not any(unicodedata.category(c) in ("Cc", "Cs") for c in name)
    assert "\u202e" not in name
    assert not name.startswith((".", " ")) and not name.endswith((".", " "))
    assert name.split(".", 1)[0].rstrip(" ").casefold() not in RESERVED
    if windows:
        assert not WINDOWS_FORBIDDEN & set(name)


@given(hostile_text, st.booleans(), st.integers(min_value=8, max_value=300))
@hsettings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_any_text_becomes_a_safe_stable_component(text: str, windows: bool, max_bytes: int) -> None:
    name = safe_component(text, windows=windows, max_bytes=max_bytes)
    assert_safe(name, windows=windows, max_bytes=max_bytes)
    assert safe_component(name, windows=windows, max_bytes=max_bytes) == name  # idempotent
    assert safe_component(text, windows=windows, max_bytes=max_bytes) == name  # deterministic


@given(st.dictionaries(st.sampled_from(["title", "uploader", "platform", "id", "upload_date"]), hostile_text),
       st.booleans())
@hsettings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_rendered_paths_stay_inside_and_keep_id_and_extension(values: dict[str, str], windows: bool) -> None:
    values = {"platform": "bilibili", "id": "BV1xx411c7mD", **values, "ext": "mp4"}
    values["id"] = values["id"] or "BV1xx411c7mD"
    parts = Template.parse(DEFAULT_TEMPLATE).render(values, windows=windows)
    assert len(parts) == 3
    for part in parts:
        assert_safe(part, windows=windows)
    assert parts[-1].endswith(".mp4")
    ident = safe_component(values["id"], windows=windows, empty="NA")
    if len(ident.encode()) <= 64:  # a title of any length is shortened first: the id survives
        assert f"[{ident}]" in parts[-1]


def test_hostile_titles_become_these_names() -> None:
    template = Template.parse("{title} [{id}].{ext}")
    render = lambda title, **kw: template.render({"title": title, "id": "x1", "ext": "mp4"}, **kw)[-1]  # noqa: E731
    assert render("../../etc/passwd") == "⧸..⧸etc⧸passwd [x1].mp4"
    assert render("a/b\\c") == "a⧸b⧹c [x1].mp4"
    assert render("nul\x00byte\x07bell\nnewline") == "nul byte bell newline [x1].mp4"
    assert render("...") == "NA [x1].mp4"
    assert render("trailing dots...") == "trailing dots [x1].mp4"
    assert render("CON") == "CON_ [x1].mp4"
    assert render("What? Yes: <this>", windows=True) == "What？ Yes： ＜this＞ [x1].mp4"
    assert render("evil\u202egpj.exe") == "evilgpj.exe [x1].mp4"
    long = render("当" * 100)  # 300 bytes of UTF-8
    assert len(long.encode()) <= 255 and long.endswith(" [x1].mp4") and long.startswith("当" * 80)
    assert safe_component("CON") == "CON_" and safe_component("com1.txt") == "com1_.txt"
    assert safe_component("..") == "_" and safe_component("") == "_"


def test_templates_are_checked() -> None:
    for bad, says in [("{nope}.{ext}", "unknown field {nope}"), ("/abs/{title}", "absolute"),
                      ("../{title}", "'..'"), ("static.mp4", "same name"), ("{title!r}", "conversions"),
                      ("{title.__class__}", "unknown field"), ("{title[0]}", "unknown field"),
                      ("{title", "brace"), ("{title:zz}", "{title:zz}")]:
        with pytest.raises(TemplateError, match=".*" + __import__("re").escape(says)):
            Template.parse(bad)
    parts = Template.parse("{upload_date}/{title:.5} - {part}.{ext}").render(
        {"upload_date": "20240102", "title": "abcdefgh", "part": "", "ext": "flv"})
    assert parts == ["20240102", "abcde - NA.flv"]


def test_fields_from_the_catalog() -> None:
    assert upload_date("2020-01-23T10:00:00Z") == "20200123"
    assert upload_date("Tue Nov 24 10:00:00 +0800 2020") == "20201124"
    assert upload_date("nonsense") is None and upload_date(None) is None
    assert [ext_for(m) for m in ("video/mp4", "audio/mp4", "video/mp2t", "image/jpeg", "video/x-flv", None)] == [
        "mp4", "m4a", "ts", "jpg", "flv", "bin"]


# -- exports from a real catalog and store ----------------------------------------------------------
HOSTILE = [
    ("web:1", "../../escape", "up/loader"),
    ("web:2", "/etc/passwd", None),
    ("web:3", "nul\x00inside\x01\x1f\x7f", "ctl\x1b[31m"),
    ("web:4", "é" * 150, "当" * 100),  # 300 bytes each
    ("web:5", "CON", "aux"),
    ("web:6", "trailing dots...", "  .hidden"),
    ("web:7", "Same title", "same"),
    ("web:8", "Same title", "same"),
    ("web:9", "same TITLE", "same"),
]


def _blob(store: BlobStore, tmp: Path, data: bytes) -> tuple[str, str, int]:
    sha = hashlib.sha256(data).hexdigest()
    source = tmp / f"{sha}.part"
    source.write_bytes(data)
    return store.put(source, sha, len(data)), sha, len(data)


def fill(settings: Settings, tmp: Path) -> dict[str, bytes]:
    """The hostile items (one video each), and one with two images and a thumbnail."""
    store = open_blob_store(settings)
    catalog = Catalog(settings.catalog_url)
    catalog.create_schema()
    contents: dict[str, bytes] = {}
    for key, title, uploader in HOSTILE:
        data = f"video of {key}".encode() * 100
        blob_key_, sha, size = _blob(store, tmp, data)
        contents[key] = data
        # A web key's {id} is its URL's file name: the key's own number here.
        catalog.commit_item(canonical_key=key, platform="generic", canonical_url=f"https://x.test/{key[4:]}",
                            source_url=f"https://x.test/{key[4:]}", title=title, uploader=uploader, duration=None,
                            published_at="2024-05-06T00:00:00Z", metadata={"tags": ["t"], "view_count": 7},
                            workflow_id=None, assets=[CommittedAsset("video", "video", sha, size, "video/mp4", blob_key_)])
    assets = []
    for name, kind, data in (("image-1", "image", b"\xff\xd8\xffone"), ("image-2", "image", b"\xff\xd8\xfftwo"),
                             ("thumbnail", "thumbnail", b"\xff\xd8\xffcover")):
        blob_key_, sha, size = _blob(store, tmp, data)
        assets.append(CommittedAsset(name, kind, sha, size, "image/jpeg", blob_key_))
        contents[f"weibo:5000/{name}"] = data
    catalog.commit_item(canonical_key="weibo:5000", platform="weibo", canonical_url="https://weibo.com/1/5000",
                        source_url="https://weibo.com/1/5000", title="two pictures", uploader="someone",
                        duration=None, published_at=None, metadata={"uploader_id": "1"}, workflow_id=None,
                        assets=assets)
    catalog.close()
    store.close()
    return contents


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {p.relative_to(root).as_posix(): (p.lstat().st_size, p.lstat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if not p.is_dir()}


@pytest.fixture(params=["local", "s3"])
def store_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    storage = StorageSettings()
    if request.param == "s3":
        server: SeaweedFS = request.getfixturevalue("s3_server")
        storage = StorageSettings(url=s3_url(), s3_endpoint_url=server.endpoint)
    yield Settings(data_dir=tmp_path / "data", storage=storage,
                   catalog={"url": f"sqlite:///{tmp_path / 'catalog.db'}"})


def export(settings: Settings, root: Path, template: str = "{uploader}/{title}.{ext}", **kw: object) -> object:
    catalog = Catalog(settings.catalog_url)
    store = open_blob_store(settings)
    try:
        with Exporter(root, store, template, **kw) as exporter:  # type: ignore[arg-type]
            return exporter.export_items(catalog.committed())
    finally:
        store.close()
        catalog.close()


@pytest.mark.parametrize("link", ["hardlink", "copy", "symlink"])
def test_hostile_titles_export_to_safe_unique_stable_names(store_settings: Settings, tmp_path: Path,
                                                          link: str) -> None:
    contents = fill(store_settings, tmp_path)
    root = tmp_path / "out"
    first = export(store_settings, root, link=link, write_info_json=True)
    files = {p.relative_to(root).as_posix() for p in root.rglob("*")
             if not p.is_dir() and not p.name.startswith(".trawl-export")}  # the manifest and the lock
    media = sorted(f for f in files if not f.endswith(".info.json"))
    assert len(media) == len(HOSTILE) + 3 and len(set(media)) == len(media)
    for rel in files:
        for part in rel.split("/"):
            assert_safe(part)
        assert (root / rel).resolve(strict=False).is_relative_to(root.resolve()) or link == "symlink"
        assert os.path.realpath(root / rel).startswith(str(root.resolve())) or link == "symlink"
    assert not (tmp_path / "escape.mp4").exists() and not any(tmp_path.glob("*/escape*"))
    # Collisions are told apart in commit order; items of one name and their own assets alike.
    assert "same/Same title.mp4" in media and "same/Same title (2).mp4" in media
    assert "same/same TITLE.mp4" in media  # another name on a case-sensitive filesystem
    assert {"someone/two pictures - image-1.jpg", "someone/two pictures - image-2.jpg",
            "someone/two pictures - thumbnail.jpg"} <= set(media)
    assert (root / "same/Same title.mp4").read_bytes() == contents["web:7"]
    assert (root / "same/Same title (2).mp4").read_bytes() == contents["web:8"]
    assert (root / "aux_/CON_.mp4").read_bytes() == contents["web:5"]
    assert (root / "someone/two pictures - image-2.jpg").read_bytes() == contents["weibo:5000/image-2"]
    remote = store_settings.storage.url.startswith("s3://")
    if link == "hardlink" and not remote:
        assert first.copied_instead == 0 and (root / "same/Same title.mp4").stat().st_nlink == 2
    if link != "copy" and remote:
        assert first.copied_instead == len(media) and (root / "same/Same title.mp4").stat().st_nlink == 1
    if link == "symlink" and not remote:
        assert (root / "same/Same title.mp4").is_symlink()
    info = json.loads((root / "same/Same title (2).info.json").read_text())
    assert info["canonical_key"] == "web:8" and info["id"] == "8" and info["view_count"] == 7
    assert info["upload_date"] == "20240506" and info["webpage_url"] == "https://x.test/8"
    assert info["assets"] == [{"name": "video", "kind": "video", "mime": "video/mp4", "ext": "mp4",
                               "size": len(contents["web:8"]),
                               "sha256": hashlib.sha256(contents["web:8"]).hexdigest(),
                               "filename": "same/Same title (2).mp4"}]

    assert_beside_their_media(root)  # the picture item's beside its first image, too

    before = snapshot(root)
    again = export(store_settings, root, link=link, write_info_json=True)
    assert again.written == [] and again.kept == len(media) + 10  # ten items' info JSON kept too
    assert snapshot(root) == before  # nothing rewritten, not even the manifest

    fresh = tmp_path / "fresh"
    export(store_settings, fresh, link=link, write_info_json=True)
    assert set(snapshot(fresh)) == set(before)  # the same names from scratch


def test_default_template_keeps_id_and_extension(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", catalog={"url": f"sqlite:///{tmp_path / 'catalog.db'}"})
    fill(settings, tmp_path)
    root = tmp_path / "out"
    export(settings, root, DEFAULT_TEMPLATE)
    names = {p.relative_to(root).as_posix() for p in root.rglob("*.mp4")}
    assert "generic/same/Same title [7].mp4" in names and "generic/same/Same title [8].mp4" in names
    long = next(n for n in names if n.endswith("[4].mp4"))
    assert all(len(part.encode()) <= 255 for part in long.split("/"))
    assert long.split("/")[-1].startswith("é" * 100)


def test_windows_names_fold_case_and_replace_forbidden_characters(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", catalog={"url": f"sqlite:///{tmp_path / 'catalog.db'}"})
    fill(settings, tmp_path)
    root = tmp_path / "out"
    export(settings, root, windows_names=True)
    names = {p.relative_to(root).as_posix() for p in root.rglob("*.mp4")}
    assert {"same/Same title.mp4", "same/Same title (2).mp4", "same/same TITLE (3).mp4"} <= names
    before = snapshot(root)
    assert export(settings, root, windows_names=True).written == []
    assert snapshot(root) == before


def test_a_file_that_is_not_ours_is_never_overwritten(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", catalog={"url": f"sqlite:///{tmp_path / 'catalog.db'}"})
    contents = fill(settings, tmp_path)
    root = tmp_path / "out"
    (root / "same").mkdir(parents=True)
    (root / "same" / "Same title.mp4").write_bytes(b"the user's own file")
    export(settings, root, link="copy")
    assert (root / "same" / "Same title.mp4").read_bytes() == b"the user's own file"
    assert (root / "same" / "Same title (2).mp4").read_bytes() == contents["web:7"]
    assert (root / "same" / "Same title (3).mp4").read_bytes() == contents["web:8"]


def test_a_copy_of_a_rotten_blob_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", catalog={"url": f"sqlite:///{tmp_path / 'catalog.db'}"})
    fill(settings, tmp_path)
    catalog = Catalog(settings.catalog_url)
    item = next(i for i in catalog.committed() if i.canonical_key == "web:7")
    store = LocalBlobStore(settings.blobs_dir)
    path = store.local_path(item.assets[0].key)
    assert path is not None
    path.write_bytes(b"X" * item.assets[0].size)  # same size, other bytes
    root = tmp_path / "out"
    with pytest.raises(ContentCorrupt, match="trawl fsck"):
        Exporter(root, store, "{title}.{ext}", link="copy").export_item(item)
    assert [p.name for p in root.rglob("*") if p.is_file()] == []
    catalog.close()


def test_the_download_name_is_the_templates_last_part(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", catalog={"url": f"sqlite:///{tmp_path / 'catalog.db'}"})
    fill(settings, tmp_path)
    catalog = Catalog(settings.catalog_url)
    items = {i.canonical_key: i for i in catalog.committed()}
    assert download_name(items["web:2"], items["web:2"].assets[0]) == "⧸etc⧸passwd [2].mp4"
    weibo = items["weibo:5000"]
    assert download_name(weibo, weibo.assets[2]) == "two pictures [5000].jpg"
    catalog.close()


# -- what the export never touches: paths through symbolic links, sidecars it did not write, staging
# files of an export still running ----------------------------------------------------------------
def _local(tmp_path: Path) -> Settings:
    settings = Settings(data_dir=tmp_path / "data", catalog={"url": f"sqlite:///{tmp_path / 'catalog.db'}"})
    fill(settings, tmp_path)
    return settings


def _all_files(directory: Path) -> list[str]:
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if not p.is_dir())


@pytest.mark.parametrize("link", ["hardlink", "copy", "symlink"])
def test_a_symlinked_directory_inside_the_export_is_refused_file_by_file(tmp_path: Path, link: str) -> None:
    settings = _local(tmp_path)
    root, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    elsewhere.mkdir()
    root.mkdir()
    (root / "generic").symlink_to(elsewhere)  # the nine generic items would land here
    (root / "weibo").write_bytes(b"a file where a directory would go")
    stats = export(settings, root, "{platform}/{uploader}/{title}.{ext}", link=link, write_info_json=True)
    assert _all_files(elsewhere) == []  # nothing written through the link
    assert stats.written == [] and len(stats.refused) == len(HOSTILE) + 3
    assert all(line.startswith(("generic/", "weibo/")) for line in stats.refused)
    assert "generic/same/Same title.mp4: generic is a symbolic link" in "\n".join(stats.refused)
    assert "weibo/someone/two pictures - image-1.jpg: weibo is not a directory" in "\n".join(stats.refused)
    assert (root / "weibo").read_bytes() == b"a file where a directory would go"

    # A link deeper down is refused too; the other items are exported all the same.
    (root / "generic").unlink()
    (root / "weibo").unlink()
    (root / "generic" / "same").parent.mkdir()
    (root / "generic" / "same").symlink_to(elsewhere)
    stats = export(settings, root, "{platform}/{uploader}/{title}.{ext}", link=link, write_info_json=True)
    assert _all_files(elsewhere) == []
    assert sorted(line.split(":", 1)[0] for line in stats.refused) == [
        "generic/same/Same title.mp4", "generic/same/Same title.mp4", "generic/same/same TITLE.mp4"]
    assert "weibo/someone/two pictures - image-2.jpg" in stats.written
    assert "generic/aux_/CON_.mp4" in stats.written


def assert_beside_their_media(root: Path) -> None:
    """Each sidecar is named as the media file its JSON names: ``X.info.json`` beside ``X.mp4``."""
    for sidecar in root.rglob("*.info.json"):
        try:
            names = [a["filename"] for a in json.loads(sidecar.read_text())["assets"]]
        except (ValueError, KeyError):
            continue  # a person's own file of that name
        stem = sidecar.relative_to(root).as_posix().removesuffix(".info.json")
        assert any((root / name).exists() and _same_stem(name.rsplit(".", 1)[0], stem) for name in names), \
            (sidecar, names)


def _same_stem(media: str, sidecar: str) -> bool:
    """Equal, or the sidecar's cut where ``.info.json`` would make the name too long."""
    too_long = len(_last_part(media).encode()) + len(".info.json") > MAX_COMPONENT_BYTES
    return media == sidecar or (too_long and media.startswith(sidecar.rstrip(". ")))


def _last_part(rel: str) -> str:
    return rel.rpartition("/")[2]


def test_a_sidecar_keeps_its_media_files_name_and_never_replaces_a_file_it_did_not_write(tmp_path: Path) -> None:
    settings = _local(tmp_path)
    store = open_blob_store(settings)
    catalog = Catalog(settings.catalog_url)
    for key, mime in (("web:mp4", "video/mp4"), ("web:webm", "video/webm")):  # one name but the extension
        data = f"clip {key}".encode()
        blob, sha, size = _blob(store, tmp_path, data)
        # A web key's {id} is its URL's file name: the key's own number here.
        catalog.commit_item(canonical_key=key, platform="generic", canonical_url=f"https://x.test/{key[4:]}",
                            source_url=f"https://x.test/{key[4:]}", title="Clip", uploader="u", duration=None,
                            published_at=None, metadata={}, workflow_id=None,
                            assets=[CommittedAsset("video", "video", sha, size, mime, blob)])
    catalog.close()
    store.close()
    root = tmp_path / "out"
    (root / "u").mkdir(parents=True)
    (root / "u" / "Clip.info.json").write_text("the user's own notes")
    (root / "same").mkdir()
    (root / "same" / "Same title (2).info.json").write_text("{}")

    export(settings, root, write_info_json=True)
    assert (root / "u" / "Clip.info.json").read_text() == "the user's own notes"
    assert (root / "same" / "Same title (2).info.json").read_text() == "{}"
    # A taken sidecar name moves the pair on: "Clip (2).mp4" and "Clip (2).info.json", never
    # "Clip.mp4" beside "Clip (2).info.json".
    assert _all_files(root / "u") == ["Clip (2).info.json", "Clip (2).mp4", "Clip (3).info.json", "Clip (3).webm",
                                      "Clip.info.json"]
    mine = json.loads((root / "u" / "Clip (2).info.json").read_text())
    theirs = json.loads((root / "u" / "Clip (3).info.json").read_text())
    assert (mine["canonical_key"], theirs["canonical_key"]) == ("web:mp4", "web:webm")
    assert mine["assets"][0]["filename"] == "u/Clip (2).mp4" and theirs["assets"][0]["filename"] == "u/Clip (3).webm"
    assert json.loads((root / "same" / "Same title (3).info.json").read_text())["canonical_key"] == "web:8"
    assert (root / "same" / "Same title (3).mp4").exists() and not (root / "same" / "Same title (2).mp4").exists()
    assert_beside_their_media(root)

    before = snapshot(root)
    again = export(settings, root, write_info_json=True)
    assert again.written == [] and snapshot(root) == before  # each sidecar is its item's, every time

    # A sidecar trawl wrote is brought up to date in place when its item changes...
    catalog = Catalog(settings.catalog_url)
    item = next(i for i in catalog.committed() if i.canonical_key == "web:webm")
    catalog.close()
    store = open_blob_store(settings)
    with Exporter(root, store, "{uploader}/{title}.{ext}", write_info_json=True) as exporter:
        done = exporter.export_item(dataclasses.replace(item, metadata={"view_count": 9}))
    assert done.written == ["u/Clip (3).info.json"]
    assert json.loads((root / "u" / "Clip (3).info.json").read_text())["view_count"] == 9
    # ... but once a person has edited it, it is theirs: the item and its sidecar go to a free name.
    (root / "u" / "Clip (3).info.json").write_text('{"mine": true}')
    with Exporter(root, store, "{uploader}/{title}.{ext}", write_info_json=True) as exporter:
        done = exporter.export_item(item)
    store.close()
    assert done.written == ["u/Clip (4).webm", "u/Clip (4).info.json"]
    assert (root / "u" / "Clip (3).info.json").read_text() == '{"mine": true}'
    assert json.loads((root / "u" / "Clip (4).info.json").read_text())["assets"][0]["filename"] == "u/Clip (4).webm"


_STALLED_EXPORT = '''
import sys, time
from pathlib import Path
from trawl.export import Exporter
from trawl.storage.blobs import LocalBlobStore
from trawl.storage.catalog import Catalog

class Stalling(LocalBlobStore):
    """A real store whose reads stall after the first block, as over a slow disk or network."""
    def open(self, key, start=0, end=None):
        reader = super().open(key, start, end)
        read, calls = reader.read, []
        def slow(size=-1):
            calls.append(size)
            if len(calls) > 1:
                time.sleep(3600)
            return read(size)
        reader.read = slow
        return reader

item = Catalog(sys.argv[1]).get("web:slow")
Exporter(Path(sys.argv[2]), Stalling(Path(sys.argv[3])), "{title}.{ext}", link="copy").export_item(item)
'''


def test_staging_files_of_a_killed_export_are_swept_and_a_running_ones_kept(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", catalog={"url": f"sqlite:///{tmp_path / 'catalog.db'}"})
    fill(settings, tmp_path)
    store = open_blob_store(settings)
    data = os.urandom(3 << 20)
    blob, sha, size = _blob(store, tmp_path, data)
    catalog = Catalog(settings.catalog_url)
    catalog.commit_item(canonical_key="web:slow", platform="generic", canonical_url="https://x.test/slow",
                        source_url="https://x.test/slow", title="slow", uploader=None, duration=None,
                        published_at=None, metadata={}, workflow_id=None,
                        assets=[CommittedAsset("video", "video", sha, size, "video/mp4", blob)])
    catalog.close()
    root, outside = tmp_path / "out", tmp_path / "outside"
    (root / "deep").mkdir(parents=True)
    outside.mkdir()
    left = root / "deep" / ".old.mp4.0123456789ab.trawl-tmp"  # a killed export's, from before
    mine = [root / "notes.trawl-tmp", root / "deep" / ".notes.trawl-tmp", outside / ".a.mp4.0123456789ab.trawl-tmp"]
    for path in mine:
        path.write_bytes(b"not trawl's")
    (root / "linked").symlink_to(outside)

    running = subprocess.Popen(
        [sys.executable, "-c", _STALLED_EXPORT, settings.catalog_url, str(root), str(settings.blobs_dir)])
    try:
        def staged() -> list[Path]:
            found = [p for p in root.glob(".slow.mp4.*.trawl-tmp") if p.stat().st_size > 0]
            assert found or running.poll() is None, "the export exited before it started its copy"
            return found

        staging = wait_until(staged, "the export to start its copy", 30, every=0.05)
        left.write_bytes(b"x" * 1000)
        with Exporter(root, store, "{title}.{ext}") as other:
            assert other.swept == []  # another export is running: its staging file and all others stay
        assert staging[0].exists() and left.exists()
    finally:
        running.kill()
        running.wait()
    with Exporter(root, store, "{title}.{ext}") as after:
        assert sorted(after.swept) == sorted([staging[0].relative_to(root).as_posix(), "deep/" + left.name])
    assert not staging[0].exists() and not left.exists()
    assert all(path.read_bytes() == b"not trawl's" for path in mine)


# -- a page or file no platform claims gets a readable name (issue 43, point 10) ---------------------
@pytest.mark.parametrize(("url", "uploader", "name"), [
    ("https://videos.example.org/clips/harbour%20dawn.mp4", None, "videos.example.org/harbour dawn [harbour dawn].mp4"),
    ("https://videos.example.org/watch/gull", "Gull TV", "Gull TV/harbour dawn [gull].mp4"),
    ("https://videos.example.org/", None, "videos.example.org/harbour dawn [videos.example.org].mp4"),
])
def test_a_web_item_is_named_by_its_host_and_file_name(url: str, uploader: str | None, name: str) -> None:
    from trawl.storage.records import CatalogItem
    from trawl.urls import web_key

    item = CatalogItem(canonical_key=web_key(url), platform="generic", canonical_url=url, source_url=url,
                       title="harbour dawn", uploader=uploader, duration=None, published_at=None, status="committed",
                       workflow_id=None, created_at="2026-12-05T16:00:00Z",
                       assets=[CommittedAsset("video", "video", "0" * 64, 1, "video/mp4", "k")])
    values = field_values(item, item.assets[0])
    assert "/".join(Template.parse("{uploader}/{title} [{id}].{ext}").render(values)) == name
    assert values["key"] == web_key(url)  # {key} is still the whole key
