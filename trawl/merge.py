"""Merging a DASH video stream and its audio stream into one file with ffmpeg, when installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from trawl.logs import get_logger

log = get_logger("trawl.merge")


def merge_dash(video: Path, audio: Path, out: Path, timeout: float = 3600) -> bool:
    """``ffmpeg -c copy`` the two streams into ``out`` (no re-encoding).

    Returns:
        True when ``out`` was written; False when ffmpeg is absent or fails, in which case the
        caller keeps both streams.
    """
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        return False
    out.unlink(missing_ok=True)
    cmd = [ffmpeg, "-y", "-v", "error", "-i", str(video), "-i", str(audio),
           "-map", "0:v:0", "-map", "1:a:0", "-c", "copy", "-f", "mp4", str(out)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("merge failed", error=str(exc))
        return False
    if done.returncode != 0 or not out.is_file() or out.stat().st_size == 0:
        log.warning("merge failed", error=done.stderr[-500:], returncode=done.returncode)
        out.unlink(missing_ok=True)
        return False
    return True
