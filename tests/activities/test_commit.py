"""The commit activity on real files and a real SQLite catalog (ffmpeg replaced by a script)."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

from activities.commit import CommitActivities
from activities.errors import workdir_name
from activities.models import CommitFile, CommitInput, DownloadResult
from trawl.download import file_sha256
from trawl.models import Asset, Resolved
from trawl.simulator import MediaFile
from trawl.storage.blobs import LocalBlobStore
from trawl.storage.catalog import Catalog


def _setup(tmp_path: Path, merge: bool) -> tuple[CommitActivities, CommitInput]:
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
    commit = CommitActivities(catalog, LocalBlobStore(tmp_path / "blobs"), work, timedelta(seconds=1))
    return commit, CommitInput("item-bilibili:BV117411r7R1", "https://b23.tv/x", resolved, files)


def test_without_ffmpeg_both_streams_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    commit, inp = _setup(tmp_path, merge=True)
    result = commit.commit(inp)
    assert result.outcome == "committed"
    assert sorted(a.kind for a in result.assets) == ["audio", "video"]
    assert commit.commit(inp).outcome == "committed"  # a retry of the same workflow changes nothing
    assert len(commit.catalog.list()) == 1


def test_with_ffmpeg_the_merged_file_is_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ffmpeg"
    # Writes the video then the audio input to the output path (the last argument).
    fake.write_text('#!/bin/sh\nfor last; do :; done\ncat "$5" "$7" > "$last"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    commit, inp = _setup(tmp_path, merge=True)
    result = commit.commit(inp)
    assert [(a.name, a.kind, a.size) for a in result.assets] == [("video", "video", 10_000)]
    assert file_sha256(Path(result.assets[0].path)) == result.assets[0].sha256
    assert not (tmp_path / "work" / workdir_name(inp.workflow_id)).exists()


def test_failing_ffmpeg_keeps_both_streams(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ffmpeg").write_text("#!/bin/sh\necho 'Invalid data found when processing input' >&2\nexit 1\n")
    (bin_dir / "ffmpeg").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    commit, inp = _setup(tmp_path, merge=True)
    assert sorted(a.kind for a in commit.commit(inp).assets) == ["audio", "video"]
