"""Merging a DASH video stream and its audio stream into one file with ffmpeg, when installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from trawl.logs import get_logger
from trawl.sniff import SNIFF_BYTES, ffmpeg_input, sniff

log = get_logger("trawl.merge")

# DASH streams come as MP4 (ISO BMFF ``.m4s``) or WebM; anything else is not handed to ffmpeg.
DASH_DEMUXERS = {"mp4": "mp4", "m4a": "mp4", "mov": "mp4", "webm": "matroska"}


def merge_dash(video: Path, audio: Path, out: Path, timeout: float = 3600) -> bool:
    """``ffmpeg -c copy`` the two streams into ``out`` (no re-encoding).

    Each input is read as the container its first bytes say (MP4 or WebM), opening no other file
    or URL (:func:`trawl.sniff.ffmpeg_input`): a stream of another kind is not merged.

    Returns:
        True when ``out`` was written; False when ffmpeg is absent or fails, or a stream is not
        MP4 or WebM, in which case the caller keeps both streams.
    """
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        return False
    inputs: list[str] = []
    for stream in (video, audio):
        with open(stream, "rb") as src:
            found = sniff(src.read(SNIFF_BYTES))
        if found not in DASH_DEMUXERS:
            log.warning("merge skipped: a stream is not MP4 or WebM", stream=stream.name, sniffed=found)
            return False
        inputs += ffmpeg_input(stream, DASH_DEMUXERS[found])
    out.unlink(missing_ok=True)
    # -strict experimental: ffmpeg before 6.0 calls FLAC in MP4 (how a platform may serve Hi-Res audio)
    # experimental and refuses to write it otherwise; nothing else here is.
    cmd = [ffmpeg, "-y", "-nostdin", "-v", "error", *inputs,
           "-map", "0:v:0", "-map", "1:a:0", "-c", "copy", "-strict", "experimental", "-f", "mp4", f"file:{out}"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("merge failed", error=str(exc))
        return False
    if done.returncode != 0 or not out.is_file() or out.stat().st_size == 0:
        log.warning("merge failed", error=done.stderr[-500:], returncode=done.returncode)
        out.unlink(missing_ok=True)
        return False
    return True
