"""merge_dash and join_segments with the real ffmpeg: DASH video and audio into one MP4, a video's
segments into one MP4, reading nothing but the files given."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.trawl.test_hls_download import secret_file
from trawl.merge import join_segments, merge_dash
from trawl.simulator.media import SAMPLES
from trawl.simulator.hls_site import id3_playlist_segment

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None,
                                reason="ffmpeg/ffprobe are not installed (.ci/run installs them)")


def dash_streams(work: Path, audio_codec: str = "aac") -> tuple[Path, Path]:
    """A video-only and an audio-only MP4, as a DASH answer gives them (Hi-Res audio: FLAC in MP4)."""
    work.mkdir(parents=True, exist_ok=True)
    video, audio = work / "video.m4s", work / "audio.m4s"
    subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=32x32:rate=5", "-t", "2",
                    "-c:v", "mpeg4", "-f", "mp4", str(video)], check=True, capture_output=True, timeout=60)
    subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=8000", "-t", "2",
                    "-c:a", audio_codec, "-strict", "experimental", "-f", "mp4", str(audio)],
                   check=True, capture_output=True, timeout=60)
    return video, audio


def streams_of(path: Path) -> list[str]:
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_type", "-of",
                            "default=nw=1:nk=1", str(path)], capture_output=True, text=True, check=True)
    return probe.stdout.split()


@pytest.mark.parametrize("audio_codec", ["aac", "flac"])
def test_dash_video_and_audio_are_merged(tmp_path: Path, audio_codec: str) -> None:
    video, audio = dash_streams(tmp_path / "dash", audio_codec)
    out = tmp_path / "merged.mp4.part"
    assert merge_dash(video, audio, out)
    assert sorted(streams_of(out)) == ["audio", "video"]


@pytest.mark.parametrize("hostile", ["audio", "video"])
def test_a_stream_that_is_a_playlist_text_never_pulls_in_a_local_file(tmp_path: Path, hostile: str) -> None:
    """A DASH asset whose body is an ID3 tag and a playlist naming a file of the worker's: the
    merge refuses it (the caller keeps both streams) rather than let ffmpeg open that file."""
    secret = secret_file(tmp_path / "host")  # MPEG-2 video and MP2 audio
    video, audio = dash_streams(tmp_path / "dash")
    (video if hostile == "video" else audio).write_bytes(id3_playlist_segment([str(secret)]))
    out = tmp_path / "merged.mp4.part"
    assert merge_dash(video, audio, out) is False
    assert not out.exists()


def probed(path: Path) -> tuple[list[str], float]:
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_type:format=duration", "-of",
                            "default=nw=1:nk=1", str(path)], capture_output=True, text=True, check=True)
    *kinds, duration = probe.stdout.split()
    return sorted(kinds), float(duration)


def segments(work: Path, *names: str) -> list[Path]:
    """Copies of the simulator's FLV clips named as a download leaves its segments."""
    work.mkdir(parents=True, exist_ok=True)
    paths = []
    for n, name in enumerate(names, 1):
        paths.append(work / f"video-{n}.part")
        shutil.copyfile(SAMPLES / name, paths[-1])
    return paths


def test_segments_are_joined_in_order_into_one_mp4_that_starts_with_its_index(tmp_path: Path) -> None:
    parts = segments(tmp_path / "it's work", "bilibili-p2-1.flv", "bilibili-p2-2.flv")  # a quote in the path
    out = tmp_path / "joined.mp4.part"
    assert join_segments(parts, out)
    assert probed(out) == (["audio", "video"], pytest.approx(180, abs=1))  # 90 s and 90 s
    head = out.read_bytes()[:4096]
    assert head[4:8] == b"ftyp" and 0 <= head.find(b"moov") < 200  # the index first: a browser plays at once
    assert not list(out.parent.glob("*.ffconcat"))  # the list trawl wrote is gone


def test_segments_of_mixed_or_unjoinable_formats_are_kept_apart(tmp_path: Path) -> None:
    """A segment that is an ID3 tag and a playlist naming a file of the worker's is never handed
    to ffmpeg: the join refuses (the caller keeps the segments as they are)."""
    secret = secret_file(tmp_path / "host")
    parts = segments(tmp_path / "work", "bilibili-p2-1.flv", "bilibili-p2-2.flv")
    parts[1].write_bytes(id3_playlist_segment([str(secret)]))
    out = tmp_path / "joined.mp4.part"
    assert join_segments(parts, out) is False and not out.exists()
    mixed = segments(tmp_path / "mixed", "bilibili-p1.flv", "facebook-reel-sd.mp4")
    assert join_segments(mixed, out) is False and not out.exists()
