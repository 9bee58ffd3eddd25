"""verify_file on real files; ffprobe is replaced by a script only where the test says so."""

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from trawl.errors import ContentCorrupt
from trawl.simulator import MediaFile, Simulator
from trawl.simulator.hls_site import id3_playlist_segment
from trawl.verify import verify_file


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def video(tmp_path: Path) -> tuple[Path, str, bytes]:
    data = MediaFile("mp4", "v", 10_000).read(0, 10_000)
    path = tmp_path / "video.part"
    return path, write(path, data), data


def test_good_file_passes(video) -> None:
    path, sha, data = video
    checked = verify_file(path, kind="video", sha256=sha, size=len(data), expected_size=len(data),
                          expected_md5=hashlib.md5(data).hexdigest())
    assert (checked.sniffed, checked.mime) == ("mp4", "video/mp4")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (dict(size=9_999), "download reported"),
        (dict(expected_size=12_000), "expected 12000"),
        (dict(sha256="0" * 64), "sha256 on disk"),
        (dict(expected_md5="0" * 32), "md5"),
        (dict(kind="image"), "expected a image"),
    ],
)
def test_each_mismatch_is_content_corrupt(video, change: dict, message: str) -> None:
    path, sha, data = video
    args = dict(kind="video", sha256=sha, size=len(data)) | change
    with pytest.raises(ContentCorrupt, match=message):
        verify_file(path, **args)


def test_html_saved_as_video_is_caught(tmp_path: Path) -> None:
    path = tmp_path / "video.part"
    sha = write(path, b"<!DOCTYPE html><html><body>Sign in</body></html>")
    with pytest.raises(ContentCorrupt, match="content is html"):
        verify_file(path, kind="video", sha256=sha, size=path.stat().st_size)


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(ContentCorrupt, match="missing"):
        verify_file(tmp_path / "nope", kind="video", sha256="0" * 64, size=1)
    empty = tmp_path / "empty"
    sha = write(empty, b"")
    with pytest.raises(ContentCorrupt, match="empty"):
        verify_file(empty, kind="video", sha256=sha, size=0)


def test_duration_checked_when_ffprobe_is_installed(video, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, sha, data = video
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ffprobe"
    fake.write_text("#!/bin/sh\necho 120.4\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    verify_file(path, kind="video", sha256=sha, size=len(data), expected_duration=121)
    with pytest.raises(ContentCorrupt, match="lasts 120.4 s, the platform says 300.0 s"):
        verify_file(path, kind="video", sha256=sha, size=len(data), expected_duration=300)
    fake.write_text("#!/bin/sh\necho 'Invalid data found' >&2\nexit 1\n")
    verify_file(path, kind="video", sha256=sha, size=len(data), expected_duration=300)  # unreadable: skipped


def test_audio_in_a_generic_iso_container_is_recorded_as_audio(tmp_path: Path) -> None:
    # A DASH audio segment (.m4s) carries a generic ISO brand, not M4A: only the kind says audio.
    data = MediaFile("mp4", "dash-audio", 10_000).read(0, 10_000)
    path = tmp_path / "audio.part"
    checked = verify_file(path, kind="audio", sha256=write(path, data), size=len(data))
    assert (checked.sniffed, checked.mime) == ("mp4", "audio/mp4")


def test_without_rehash_the_streamed_sha256_is_trusted_but_every_other_check_runs(video, tmp_path: Path) -> None:
    path, sha, data = video
    checked = verify_file(path, kind="video", sha256="0" * 64, size=len(data), rehash=False)
    assert checked.sniffed == "mp4"  # the sha256 is not re-read from disk without rehash
    for change, message in [(dict(size=9_999), "download reported"), (dict(expected_md5="0" * 32), "md5"),
                            (dict(kind="image"), "expected a image")]:
        args = dict(kind="video", sha256=sha, size=len(data), rehash=False) | change
        with pytest.raises(ContentCorrupt, match=message):
            verify_file(path, **args)
    assert verify_file(path, kind="video", sha256=sha, size=len(data), rehash=False,
                       expected_md5=hashlib.md5(data).hexdigest()).mime == "video/mp4"


@pytest.mark.skipif(shutil.which("ffprobe") is None or shutil.which("ffmpeg") is None,
                    reason="ffmpeg/ffprobe are not installed (.ci/run installs them)")
def test_ffprobe_reads_nothing_but_the_file(tmp_path: Path, sim: Simulator) -> None:
    """An audio file that is an ID3 tag and a playlist text: ffprobe reads it as what it was
    sniffed to be (MP3), never as a playlist naming a local file or a URL."""
    from tests.trawl.test_hls_download import secret_file

    secret = secret_file(tmp_path / "host")  # lasts 2 s
    sim.add_page("/elsewhere.ts", "not media")
    path = tmp_path / "audio.part"
    sha = write(path, id3_playlist_segment([str(secret), sim.url("/elsewhere.ts")]))
    verify_file(path, kind="audio", sha256=sha, size=path.stat().st_size, expected_duration=60)  # not "lasts 2.0 s"
    assert sim.stats["/elsewhere.ts"].requests == 0


@pytest.mark.skipif(shutil.which("ffprobe") is None or shutil.which("ffmpeg") is None,
                    reason="ffmpeg/ffprobe are not installed (.ci/run installs them)")
@pytest.mark.parametrize("container", ["ts", "mp4"])
def test_ffprobe_told_the_format_still_reads_real_files(tmp_path: Path, container: str) -> None:
    import subprocess

    from tests.trawl.test_hls_download import secret_file

    made = secret_file(tmp_path / "made")  # lasts 2 s
    path = tmp_path / f"video.{container}"
    subprocess.run(["ffmpeg", "-v", "error", "-i", str(made), "-c", "copy", str(path)], check=True, timeout=60)
    sha = write(path, path.read_bytes())
    verify_file(path, kind="video", sha256=sha, size=path.stat().st_size, expected_duration=2)
    with pytest.raises(ContentCorrupt, match="lasts 2.0 s"):
        verify_file(path, kind="video", sha256=sha, size=path.stat().st_size, expected_duration=60)
