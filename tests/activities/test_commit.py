"""The commit activity on real files and a real SQLite catalog (ffmpeg replaced by a script), with
blobs in a local directory or in a real S3 server (SeaweedFS on loopback)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from trawl.activities.commit import CommitActivities
from trawl.contracts import CommitFile, CommitInput, CommitResult, DownloadResult
from tests.s3server import SeaweedFS
from tests.trawl.storage.test_blobs import keys, make_s3, store  # noqa: F401 - store: the fixture of both backends
from trawl.download import file_sha256
from trawl.models import Asset, Resolved
from trawl.simulator import MediaFile
from trawl.simulator.media import SAMPLES
from trawl.storage.blobs import BlobStore, LocalBlobStore, blob_key, hash_blob
from trawl.errors import StorageError
from trawl.storage.catalog import Catalog
from trawl.storage.orphans import reclaim_announced
from trawl.workdirs import workdir_name

EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
FUTURE = datetime.now(UTC) + timedelta(days=2)


def _run(commit: CommitActivities, inp: CommitInput) -> CommitResult:
    return ActivityEnvironment().run(commit.commit, inp)


def _setup(tmp_path: Path, merge: bool, store: BlobStore | None = None) -> tuple[CommitActivities, CommitInput]:
    work = tmp_path / "work"
    wf_dir = work / workdir_name("item-bilibili:BV117411r7R1")
    wf_dir.mkdir(parents=True)
    files = []
    for name, kind, fmt in (("video", "video", "mp4"), ("audio", "audio", "m4a")):
        path = wf_dir / f"{name}.part"
        path.write_bytes(MediaFile(fmt, name, 5000).read(0, 5000))
        download = DownloadResult(name, str(path), 5000, file_sha256(path), f"https://cdn/{name}")
        files.append(CommitFile(Asset(name, kind, [download.url]), download, f"{kind}/mp4"))
    resolved = Resolved("bilibili:BV117411r7R1", "https://www.bilibili.com/video/BV117411r7R1", "bilibili",
                        [f.asset for f in files], title="t", metadata={"merge": "dash"} if merge else {})
    catalog = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    catalog.create_schema()
    commit = CommitActivities(catalog, store or LocalBlobStore(tmp_path / "blobs"), work, timedelta(seconds=1))
    return commit, CommitInput("item-bilibili:BV117411r7R1", "https://b23.tv/x", resolved, files)


def test_without_ffmpeg_both_streams_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    commit, inp = _setup(tmp_path, merge=True)
    result = _run(commit, inp)
    assert result.outcome == "committed"
    assert sorted(a.kind for a in result.assets) == ["audio", "video"]
    assert _run(commit, inp).outcome == "committed"  # a retry of the same workflow changes nothing
    assert len(commit.catalog.list()) == 1


def test_with_ffmpeg_the_merged_file_is_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               store: BlobStore) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ffmpeg"
    # Writes the video then the audio input to the output path (the last argument).
    fake.write_text('#!/bin/sh\ninputs=""\nwhile [ $# -gt 0 ]; do\n'
                    '  if [ "$1" = "-i" ]; then inputs="$inputs ${2#file:}"; shift; fi\n'
                    '  last="$1"; shift\ndone\ncat $inputs > "${last#file:}"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    commit, inp = _setup(tmp_path, merge=True, store=store)
    result = _run(commit, inp)
    assert [(a.name, a.kind, a.size) for a in result.assets] == [("video", "video", 10_000)]
    assert hash_blob(store, result.assets[0].key) == (result.assets[0].sha256, 10_000)
    assert not (tmp_path / "work" / workdir_name(inp.workflow_id)).exists()


def test_failing_ffmpeg_keeps_both_streams(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ffmpeg").write_text("#!/bin/sh\necho 'Invalid data found when processing input' >&2\nexit 1\n")
    (bin_dir / "ffmpeg").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    commit, inp = _setup(tmp_path, merge=True)
    assert sorted(a.kind for a in _run(commit, inp).assets) == ["audio", "video"]


def test_assets_are_named_by_key_and_no_path_travels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     store: BlobStore) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    commit, inp = _setup(tmp_path, merge=False, store=store)
    result = _run(commit, inp)
    assert result.outcome == "committed"
    expected = sorted((f.asset.name, blob_key(f.download.sha256)) for f in inp.files)
    assert [(a.name, a.key) for a in result.assets] == expected
    assert not any(str(tmp_path) in repr(value) for value in dataclasses.asdict(result).values())
    assert "path" not in dataclasses.asdict(result.assets[0])
    row = commit.catalog.get(inp.resolved.canonical_key)
    assert sorted((a.name, a.key) for a in row.assets) == expected
    for name, key in expected:
        assert hash_blob(store, key)[0] == key.rsplit("/", 1)[1], name
    assert not (tmp_path / "work" / workdir_name(inp.workflow_id)).exists()
    assert _run(commit, inp).assets == result.assets  # a retry answers the same, from the catalog


def test_a_retry_after_the_put_finds_the_blobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              store: BlobStore) -> None:
    """The put happened, then the worker died before the catalog row: the retry has no files
    left (a local put moves them; here they are removed for both stores) and finds the blobs."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    commit, inp = _setup(tmp_path, merge=False, store=store)
    for file in inp.files:
        store.put(Path(file.download.path), file.download.sha256, file.download.size)
        Path(file.download.path).unlink(missing_ok=True)
    assert _run(commit, inp).outcome == "committed"
    assert commit.catalog.count() == 1 and len(keys(store)) == 2


def test_blobs_are_announced_before_their_put_and_released_after_the_row(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch,
                                                                           store: BlobStore) -> None:
    """What tells an orphan from a blob a running commit is about to record (trawl.storage.orphans):
    every put finds its blob announced, and a commit that recorded its row leaves no intent."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    commit, inp = _setup(tmp_path, merge=False, store=store)
    announced_at_put: list[bool] = []
    real_put = store.put

    def put(source: Path, sha256: str, size: int) -> str:
        announced_at_put.append(blob_key(sha256) in commit.catalog.intended_since([blob_key(sha256)], EPOCH))
        return real_put(source, sha256, size)

    monkeypatch.setattr(store, "put", put)
    assert _run(commit, inp).outcome == "committed"
    assert announced_at_put == [True, True]
    assert commit.catalog.stale_intent_keys(FUTURE) == []


def test_an_attempt_that_dies_before_its_row_leaves_its_blobs_to_the_clean_up(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: BlobStore) -> None:
    """The put happened and the attempt ended before the row (here the catalog write fails; a
    killed worker stops at the same point): its blobs stay announced, so once that is old, and
    no retry recorded them, the clean-up removes them."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    commit, inp = _setup(tmp_path, merge=False, store=store)

    def unreachable(**_: object) -> bool:
        raise StorageError("catalog write failed: the worker died here")

    monkeypatch.setattr(commit.catalog, "commit_item", unreachable)
    with pytest.raises(ApplicationError, match="the worker died here"):
        _run(commit, inp)
    stored = sorted(blob_key(f.download.sha256) for f in inp.files)
    assert sorted(keys(store)) == stored == commit.catalog.stale_intent_keys(FUTURE)
    assert reclaim_announced(commit.catalog, store, timedelta(hours=24)) == []  # its run may go on
    assert sorted(b.key for b in reclaim_announced(commit.catalog, store, timedelta(hours=24), now=FUTURE)) == stored
    assert keys(store) == []


def test_a_file_and_its_blob_both_gone_is_an_error_not_a_row(tmp_path: Path, store: BlobStore) -> None:
    commit, inp = _setup(tmp_path, merge=False, store=store)
    Path(inp.files[0].download.path).unlink()
    with pytest.raises(ApplicationError, match="vanished"):
        _run(commit, inp)
    assert commit.catalog.count() == 0


def test_bytes_changed_since_verify_are_not_committed(tmp_path: Path, s3_server: SeaweedFS) -> None:
    store = make_s3(s3_server)
    commit, inp = _setup(tmp_path, merge=False, store=store)
    part = Path(inp.files[0].download.path)
    data = bytearray(part.read_bytes())
    data[100] ^= 0xFF  # same size, other bytes: the sha256 verify computed no longer holds
    part.write_bytes(bytes(data))
    with pytest.raises(ApplicationError) as raised:
        _run(commit, inp)
    assert raised.value.type == "content_corrupt"
    assert commit.catalog.count() == 0 and not store.exists(blob_key(inp.files[0].download.sha256))


def test_a_file_whose_size_changed_since_verify_is_not_committed(tmp_path: Path, store: BlobStore) -> None:
    commit, inp = _setup(tmp_path, merge=False, store=store)
    with open(inp.files[0].download.path, "ab") as part:
        part.write(b"more")
    with pytest.raises(ApplicationError) as raised:
        _run(commit, inp)
    assert raised.value.type == "content_corrupt" and commit.catalog.count() == 0


def test_a_file_the_platform_calls_a_preview_is_never_committed(tmp_path: Path) -> None:
    commit, inp = _setup(tmp_path, merge=False)
    inp.resolved.assets[0].preview = "supporter-only video: a preview only"
    with pytest.raises(ApplicationError) as caught:
        _run(commit, inp)
    assert caught.value.type == "preview_only" and caught.value.non_retryable
    assert commit.catalog.list() == [] and not list((tmp_path / "blobs").rglob("*"))


def _part(work: Path, index: int, first: int, segments: int, ended: str | None = None,
          recording: str = "2026-12-05T10:00:00+00:00") -> CommitFile:
    """Part ``index`` of a recording as its download returns it (a file unless it holds nothing)."""
    name = "video" if index == 1 else f"video-part{index:03d}"
    record = {"part": index, "first_sequence": first, "last_sequence": first + segments - 1, "segments": segments,
              "seconds": float(segments), "start_seconds": float(first), "started_at": f"2026-12-05T10:00:{first:02d}+00:00",
              "gaps": [], "ended": ended, "ended_at": "2026-12-05T10:01:00+00:00" if ended else "",
              "playlist": "http://live/index.m3u8", "recording_started_at": recording,
              "recording_first_sequence": 0, "total_segments": first + segments, "total_seconds": float(first + segments),
              "missing_segments": 0}
    if not segments:
        return CommitFile(Asset(name, "video", ["http://live/index.m3u8"]), DownloadResult(
            "video", "", 0, "", "http://live/index.m3u8", live=record), "")
    path = work / f"video-part{index:03d}.mp4.part"
    path.write_bytes(MediaFile("mp4", f"part-{index}-{recording}", 3000).read(0, 3000))
    download = DownloadResult("video", str(path), 3000, file_sha256(path), "http://live/index.m3u8", live=record)
    return CommitFile(Asset(name, "video", [download.url]), download, "video/mp4")


def test_a_recording_is_committed_part_by_part(tmp_path: Path, catalog: Catalog) -> None:
    """CommitInput.append: each part joins the item (made with the first), listed in order in
    metadata.live.parts; a part committed twice changes nothing; the work directory goes with the end."""
    workflow_id = "url-live"
    work = tmp_path / "work" / workdir_name(workflow_id)
    work.mkdir(parents=True)
    (work / "video.part.json").write_text("{}")  # the recording's state, beside which parts are made
    commit = CommitActivities(catalog, LocalBlobStore(tmp_path / "blobs"), tmp_path / "work", timedelta(seconds=1))
    resolved = Resolved("web:live-1", "http://live/index.m3u8", "generic", [], title="index.m3u8 (live)")

    def append(*files: CommitFile) -> CommitResult:
        return _run(commit, CommitInput(workflow_id, "http://live/index.m3u8", resolved, list(files), append=True))

    first = append(_part(work, 1, 0, 3))
    item = catalog.get("web:live-1")
    assert item is not None and [a.name for a in item.assets] == ["video"] and item.metadata["live_status"] == "is_live"
    assert [a.name for a in first.assets] == ["video"] and work.exists()
    second = _part(work, 2, 3, 3)
    append(second)
    assert [a.name for a in append(second).assets] == ["video", "video-part002"]  # again: nothing new
    last = append(_part(work, 3, 6, 0, ended="endlist"))
    item = catalog.get("web:live-1")
    assert item is not None and [a.name for a in last.assets] == ["video", "video-part002"]
    live = item.metadata["live"]
    assert [(p["part"], p["asset"], p["start_seconds"]) for p in live["parts"]] == [
        (1, "video", 0.0), (2, "video-part002", 3.0), (3, None, 6.0)]
    assert (live["segments"], live["seconds"], live["ended"], item.metadata["live_status"]) == (6, 6.0, "endlist",
                                                                                                "was_live")
    assert item.duration == 6.0 and sum(a.size for a in item.assets) == 6000 and not work.exists()


def test_a_broadcast_recorded_again_adds_its_parts_after_the_first_recordings(tmp_path: Path,
                                                                             catalog: Catalog) -> None:
    """The broadcast's workflow run again (its first run failed after two parts): the second
    recording's parts 1 and 2 are the item's parts 3 and 4, never the first's assets replaced or
    dropped; a part committed again finds its own number; the counts add up both recordings."""
    workflow_id = "item-web:live-2"
    work = tmp_path / "work" / workdir_name(workflow_id)
    work.mkdir(parents=True)
    commit = CommitActivities(catalog, LocalBlobStore(tmp_path / "blobs"), tmp_path / "work", timedelta(seconds=1))
    resolved = Resolved("web:live-2", "http://live/index.m3u8", "generic", [], title="index.m3u8 (live)")

    def append(*files: CommitFile) -> CommitResult:
        return _run(commit, CommitInput(workflow_id, "http://live/index.m3u8", resolved, list(files), append=True))

    append(_part(work, 1, 0, 3))
    append(_part(work, 2, 3, 2))
    again = "2026-12-05T10:05:00+00:00"
    first_again = _part(work, 1, 0, 4, recording=again)
    assert [a.name for a in append(first_again).assets] == ["video", "video-part002", "video-part003"]
    assert [a.name for a in append(first_again).assets] == ["video", "video-part002", "video-part003"]
    last = append(_part(work, 2, 4, 1, ended="endlist", recording=again))
    assert [a.name for a in last.assets] == ["video", "video-part002", "video-part003", "video-part004"]
    assert len({a.sha256 for a in last.assets}) == 4  # four files, none replaced
    item = catalog.get("web:live-2")
    assert item is not None
    live = item.metadata["live"]
    assert [(p["part"], p["asset"], p["recording_part"], p["recording_started_at"][11:16]) for p in live["parts"]] == [
        (1, "video", 1, "10:00"), (2, "video-part002", 2, "10:00"), (3, "video-part003", 1, "10:05"),
        (4, "video-part004", 2, "10:05")]
    assert (live["segments"], live["seconds"], live["ended"]) == (10, 10.0, "endlist")
    assert sorted(live["recordings"]) == ["2026-12-05T10:00:00+00:00", again]


def test_each_part_commits_its_own_comment_files(tmp_path: Path, catalog: Catalog) -> None:
    """The sidecar's manifest of each part (trawl.download.live_comments.part_manifest_path): the
    part's danmaku and messages join the item named for the part, as its video; the item's
    live_comments sums the parts."""
    workflow_id = "item-bilibili:live-7"
    work = tmp_path / "work" / workdir_name(workflow_id)
    work.mkdir(parents=True)
    commit = CommitActivities(catalog, LocalBlobStore(tmp_path / "blobs"), tmp_path / "work", timedelta(seconds=1))
    resolved = Resolved("bilibili:live-7", "https://live/7", "bilibili", [], title="live room 7")

    def manifest(index: int, comments: int) -> None:
        listed = []
        for name, kind, mime, ext in (("live-danmaku", "danmaku", "application/xml", "xml"),
                                      ("live-messages", "messages", "application/x-ndjson", "jsonl")):
            suffix = "" if index == 1 else f"-part{index:03d}"
            path = work / f"video.{name}{suffix}.{ext}"
            path.write_bytes(f"{name} of part {index}".encode())
            listed.append({"name": name + suffix, "kind": kind, "mime": mime, "path": path.name,
                           "size": path.stat().st_size, "sha256": file_sha256(path), "count": comments})
        summary = {"room_id": 7, "connections": index, "messages": comments + 1, "comments": comments, "offline": []}
        (work / f"video.comments-part{index:03d}.json").write_text(json.dumps({"files": listed, "summary": summary}))

    def append(*files: CommitFile) -> CommitResult:
        return _run(commit, CommitInput(workflow_id, "https://live/7", resolved, list(files), append=True))

    manifest(1, 5)
    append(_part(work, 1, 0, 3))
    manifest(2, 2)
    last = append(_part(work, 2, 3, 2, ended="endlist"))
    assert [a.name for a in last.assets] == ["live-danmaku", "live-danmaku-part002", "live-messages",
                                             "live-messages-part002", "video", "video-part002"]
    item = catalog.get("bilibili:live-7")
    assert item is not None
    said = item.metadata["live_comments"]
    assert (said["comments"], said["messages"], said["connections"]) == (7, 9, 2)
    assert [(p["part"], p["danmaku"], p["comments"]) for p in said["parts"]] == [
        (1, "live-danmaku", 5), (2, "live-danmaku-part002", 2)]


def _segments(tmp_path: Path) -> tuple[CommitActivities, CommitInput]:
    """Part 2 of the simulator's two-part video: two real FLV segments the platform asks to join."""
    work = tmp_path / "work"
    wf_dir = work / workdir_name("item-bilibili:BV1GJ411x7h7_p2")
    wf_dir.mkdir(parents=True)
    files = []
    for n in (1, 2):
        path = wf_dir / f"video-{n}.part"
        path.write_bytes((SAMPLES / f"bilibili-p2-{n}.flv").read_bytes())
        download = DownloadResult(f"video-{n}", str(path), path.stat().st_size, file_sha256(path), f"https://cdn/{n}")
        files.append(CommitFile(Asset(f"video-{n}", "video", [download.url], duration=90.0), download, "video/x-flv"))
    resolved = Resolved("bilibili:BV1GJ411x7h7_p2", "https://www.bilibili.com/video/BV1GJ411x7h7?p=2", "bilibili",
                        [f.asset for f in files], title="t", metadata={"merge": "join"})
    catalog = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    catalog.create_schema()
    commit = CommitActivities(catalog, LocalBlobStore(tmp_path / "blobs"), work, timedelta(seconds=1))
    return commit, CommitInput("item-bilibili:BV1GJ411x7h7_p2", "https://b23.tv/y", resolved, files)


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg is not installed (.ci/run installs it)")
def test_with_ffmpeg_the_segments_are_stored_joined(tmp_path: Path) -> None:
    commit, inp = _segments(tmp_path)
    result = _run(commit, inp)
    [video] = result.assets
    assert (result.outcome, video.name, video.kind, video.mime) == ("committed", "video", "video", "video/mp4")
    stored = commit.blobs.local_path(video.key)
    assert stored is not None and stored.read_bytes()[4:8] == b"ftyp"  # one MP4 of both segments' media
    assert video.size < sum(f.download.size for f in inp.files)  # less the FLV's per-frame headers


def test_without_ffmpeg_the_segments_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    commit, inp = _segments(tmp_path)
    result = _run(commit, inp)
    assert [(a.name, a.mime) for a in result.assets] == [("video-1", "video/x-flv"), ("video-2", "video/x-flv")]
