"""Extras in an export (issue 41, point 7): sidecars named as yt-dlp names them, and subtitles,
chapters and metadata embedded into a copy of the media with ffmpeg, the stored blob untouched."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from trawl.export import Exporter
from trawl.export_extras import ExtrasChoice
from trawl.simulator.media import MediaFile
from trawl.storage.blobs import LocalBlobStore
from trawl.storage.records import CatalogItem, CommittedAsset

TRACK = {"body": [{"from": 0.0, "to": 1.0, "content": "你好"}, {"from": 1.0, "to": 2.0, "content": "再见"}]}
CHAPTERS = [{"start_time": 0.0, "end_time": 1.5, "title": "开场"}, {"start_time": 1.5, "end_time": 3.0, "title": "正片"}]


def _put(store: LocalBlobStore, tmp: Path, name: str, kind: str, data: bytes, mime: str,
         language: str | None = None) -> CommittedAsset:
    sha = hashlib.sha256(data).hexdigest()
    part = tmp / f"{name}.part"
    part.write_bytes(data)
    return CommittedAsset(name, kind, sha, len(data), mime, store.put(part, sha, len(data)), None, language)


@pytest.fixture
def item(tmp_path: Path) -> tuple[CatalogItem, LocalBlobStore]:
    store = LocalBlobStore(tmp_path / "blobs")
    video = MediaFile("mp4", "embed", 300_000, playable=True)
    assets = [_put(store, tmp_path, "video", "video", video.read(0, video.size), "video/mp4"),
              _put(store, tmp_path, "subtitles.zh-CN", "subtitles", json.dumps(TRACK).encode(), "application/json",
                   "zh-CN"),
              _put(store, tmp_path, "subtitles.ai-zh", "subtitles", json.dumps(TRACK).encode() + b" ", "application/json",
                   "ai-zh"),
              _put(store, tmp_path, "chapters", "chapters", json.dumps(CHAPTERS).encode(), "application/json"),
              _put(store, tmp_path, "danmaku", "danmaku", b'<?xml version="1.0"?><i></i>', "application/xml")]
    return CatalogItem("bilibili:BV1x", "bilibili", "https://www.bilibili.com/video/BV1x", "u", "A title", "Up",
                       3.0, "2026-12-01T00:00:00Z", "committed", None, "", assets,
                       {"description": "what it is", "upload_date": "20261201"}), store


def test_sidecars_are_named_as_yt_dlp_names_them(item: tuple[CatalogItem, LocalBlobStore], tmp_path: Path) -> None:
    found, store = item
    choice = ExtrasChoice(write_subs=True, write_auto_subs=True, sub_langs=("all",))
    with Exporter(tmp_path / "out", store, "{id}.{ext}", write_info_json=True, extras=choice) as exporter:
        stats = exporter.export_item(found)
    assert sorted(stats.written) == ["BV1x.ai-zh.srt", "BV1x.danmaku.xml", "BV1x.info.json", "BV1x.mp4",
                                     "BV1x.zh-CN.srt"]
    assert json.loads((tmp_path / "out/BV1x.info.json").read_text())["chapters"] == CHAPTERS


@pytest.mark.skipif(shutil.which("ffprobe") is None, reason="ffmpeg is not installed")
def test_embedding_writes_a_copy_and_leaves_the_blob_as_it_was(item: tuple[CatalogItem, LocalBlobStore],
                                                               tmp_path: Path) -> None:
    found, store = item
    video = found.assets[0]
    blob = store.local_path(video.key)
    assert blob is not None
    choice = ExtrasChoice(embed_subs=True, embed_chapters=True, embed_metadata=True)
    with Exporter(tmp_path / "out", store, "{id}.{ext}", link="hardlink", extras=choice) as exporter:
        stats = exporter.export_item(found)
    assert stats.written == ["BV1x.mp4"] and stats.notes == [] and stats.refused == []
    out = tmp_path / "out/BV1x.mp4"
    assert hashlib.sha256(blob.read_bytes()).hexdigest() == video.sha256  # the blob is as it was
    assert out.stat().st_ino != blob.stat().st_ino and blob.stat().st_nlink == 1
    probe = json.loads(subprocess.run(["ffprobe", "-v", "error", "-show_streams", "-show_chapters", "-show_format",
                                       "-of", "json", str(out)], capture_output=True, text=True, check=True).stdout)
    subs = [s for s in probe["streams"] if s["codec_type"] == "subtitle"]
    assert [(s["codec_name"], s["tags"]["language"]) for s in subs] == [("mov_text", "chi")]  # the uploader's only
    assert [c["tags"]["title"] for c in probe["chapters"]] == ["开场", "正片"]
    assert probe["format"]["tags"]["title"] == "A title" and probe["format"]["tags"]["artist"] == "Up"
    # Again: the copy is known, nothing is written or embedded again.
    before = out.stat().st_mtime_ns
    with Exporter(tmp_path / "out", store, "{id}.{ext}", link="hardlink", extras=choice) as exporter:
        again = exporter.export_item(found)
    assert again.written == [] and again.kept == 1 and out.stat().st_mtime_ns == before


def test_a_file_that_takes_no_subtitles_is_left_as_it_is_with_a_note(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    flv = MediaFile("flv", "flv", 50_000)
    assets = [_put(store, tmp_path, "video", "video", flv.read(0, flv.size), "video/x-flv"),
              _put(store, tmp_path, "chapters", "chapters", json.dumps(CHAPTERS).encode(), "application/json")]
    found = CatalogItem("bilibili:BV1y", "bilibili", "https://x", "u", "t", None, None, None, "committed", None, "",
                        assets, {})
    with Exporter(tmp_path / "out", store, "{id}.{ext}", extras=ExtrasChoice(embed_chapters=True)) as exporter:
        stats = exporter.export_item(found)
    assert stats.written == ["BV1y.flv"] and stats.refused == []
    assert len(stats.notes) == 1 and "not embedded" in stats.notes[0] and "flv" in stats.notes[0]


def test_danmaku_format_ass_writes_a_rendering_beside_the_stored_xml(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    video = MediaFile("mp4", "ass", 50_000, playable=True)
    xml = ('<?xml version="1.0" encoding="UTF-8"?><i><chatid>1</chatid>'
           '<d p="1.5,1,25,16777215,1700000000,0,abc,1,0">{\\an5}弹幕</d></i>').encode()
    assets = [_put(store, tmp_path, "video", "video", video.read(0, video.size), "video/mp4"),
              _put(store, tmp_path, "danmaku", "danmaku", xml, "application/xml")]
    found = CatalogItem("bilibili:BV1a", "bilibili", "https://www.bilibili.com/video/BV1a", "u", "T", "Up", 3.0,
                        "2026-12-01T00:00:00Z", "committed", None, "", assets, {"width": 1280, "height": 720})
    choice = ExtrasChoice(write_subs=True, sub_langs=("danmaku",), danmaku_formats=("xml", "ass"))
    with Exporter(tmp_path / "out", store, "{id}.{ext}", extras=choice) as exporter:
        stats = exporter.export_item(found)
    assert sorted(stats.written) == ["BV1a.danmaku.ass", "BV1a.danmaku.xml", "BV1a.mp4"]
    assert (tmp_path / "out/BV1a.danmaku.xml").read_bytes() == xml  # as stored
    ass = (tmp_path / "out/BV1a.danmaku.ass").read_text(encoding="utf-8-sig")
    assert "PlayResX: 1280\nPlayResY: 720\n" in ass
    assert ass.splitlines()[-1] == "Dialogue: 2,0:00:01.50,0:00:09.50,Danmaku,,0,0,0,,{\\move(1280,0,-165,0)}\\{\\\u200ban5\\}弹幕"
    with Exporter(tmp_path / "only", store, "{id}.{ext}",
                  extras=ExtrasChoice(write_subs=True, danmaku_formats=("ass",))) as exporter:
        assert sorted(exporter.export_item(found).written) == ["BV1a.danmaku.ass", "BV1a.mp4"]


def _image(tmp_path: Path, ext: str) -> bytes:
    """A real 32x18 picture made by ffmpeg (JPEG, PNG or WebP)."""
    out = tmp_path / f"cover.{ext}"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=red:s=32x18", "-frames:v", "1",
                    str(out)], check=True, capture_output=True)
    return out.read_bytes()


def _streams(path: Path) -> list[dict]:
    return json.loads(subprocess.run(["ffprobe", "-v", "error", "-show_streams", "-of", "json", str(path)],
                                     capture_output=True, text=True, check=True).stdout)["streams"]


@pytest.mark.skipif(shutil.which("ffprobe") is None, reason="ffmpeg is not installed")
@pytest.mark.parametrize("image", ["jpg", "webp"])
def test_embed_thumbnail_makes_it_the_copys_cover_picture(tmp_path: Path, image: str) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    video = MediaFile("mp4", "cover", 300_000, playable=True)
    picture = _image(tmp_path, image)
    assets = [_put(store, tmp_path, "video", "video", video.read(0, video.size), "video/mp4"),
              _put(store, tmp_path, "thumbnail", "thumbnail", picture,
                   {"jpg": "image/jpeg", "webp": "image/webp"}[image])]
    found = CatalogItem("bilibili:BV1t", "bilibili", "https://x", "u", "T", None, None, None, "committed", None, "",
                        assets, {})
    with Exporter(tmp_path / "out", store, "{id}.{ext}", link="hardlink",
                  extras=ExtrasChoice(embed_thumbnail=True)) as exporter:
        stats = exporter.export_item(found)
    assert stats.notes == [] and stats.refused == [] and "BV1t.mp4" in stats.written
    cover = [s for s in _streams(tmp_path / "out/BV1t.mp4") if s["disposition"].get("attached_pic")]
    assert [(s["codec_name"], s["width"]) for s in cover] == [("mjpeg" if image == "jpg" else "png", 32)]
    blob = store.local_path(assets[0].key)
    assert blob is not None and hashlib.sha256(blob.read_bytes()).hexdigest() == assets[0].sha256  # untouched
    assert (tmp_path / "out/BV1t.jpg" if image == "jpg" else tmp_path / "out/BV1t.webp").read_bytes() == picture


@pytest.mark.skipif(shutil.which("ffprobe") is None, reason="ffmpeg is not installed")
def test_embed_thumbnail_into_mkv_is_an_attachment_and_webm_takes_none(tmp_path: Path) -> None:
    from trawl.embed import Embedding, embed

    mkv, webm = tmp_path / "a.mkv", tmp_path / "a.webm"
    for out, codec in ((mkv, "mpeg4"), (webm, "libvpx")):
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=s=64x36:d=1", "-c:v", codec,
                        str(out)], check=True, capture_output=True)
    picture = _image(tmp_path, "png")
    assert embed(mkv, tmp_path / "b.mkv", Embedding(thumbnail=picture)) == ""
    # ffprobe shows a Matroska image attachment as the file's attached picture, with its name
    [attachment] = [s for s in _streams(tmp_path / "b.mkv") if s.get("tags", {}).get("filename")]
    assert attachment["tags"]["filename"] == "cover.png" and attachment["tags"]["mimetype"] == "image/png"
    assert embed(webm, tmp_path / "b.webm", Embedding(thumbnail=picture)) == \
        "thumbnail: a webm file takes no thumbnail (MP4, M4A, MP3 and MKV do)"  # nothing else to embed
    both = Embedding(thumbnail=picture, metadata={"title": "T"})
    assert embed(webm, tmp_path / "c.webm", both) == "" and both.left_out == [
        "thumbnail: a webm file takes no thumbnail (MP4, M4A, MP3 and MKV do)"]
