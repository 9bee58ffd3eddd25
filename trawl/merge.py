"""Merging a DASH video stream and its audio stream, or joining a video's segments, into one file
with ffmpeg, when installed."""

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
    """``ffmpeg -c copy`` the two streams into ``out`` (no re-encoding; the moov first, so a
    browser starts playing at once).

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
           "-map", "0:v:0", "-map", "1:a:0", "-c", "copy", "-strict", "experimental",
           "-movflags", "+faststart", "-f", "mp4", f"file:{out}"]
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


# Segments joined end to end: FLV (as old platforms cut long videos) or MP4, all of one container.
JOIN_FORMATS = {"flv": "flv", "mp4": "mov,mp4,m4a,3gp,3g2,mj2"}


def join_segments(segments: list[Path], out: Path, timeout: float = 3600) -> bool:
    """Join the segments of one video, in order, into one MP4 at ``out`` with ffmpeg's concat
    demuxer (``-c copy``: no re-encoding; the moov first, so a browser starts playing at once).

    The list ffmpeg reads names only these files, as ``file:`` URLs; ffmpeg may open nothing but
    files (``-protocol_whitelist``), and read them as nothing but the list and the segments'
    container (``-format_whitelist``), so a segment that is in fact a playlist opens nothing.
    ``-xerror`` turns a segment ffmpeg cannot read into a failure instead of a shorter file.

    Returns:
        True when ``out`` was written; False when ffmpeg is absent or fails, or the segments are
        not all FLV or all MP4, in which case the caller keeps the segments apart.
    """
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None or len(segments) < 2 or any("\n" in str(s) or "\r" in str(s) for s in segments):
        return False
    found = []
    for segment in segments:
        with open(segment, "rb") as src:
            found.append(sniff(src.read(SNIFF_BYTES)))
    container = found[0]
    if container not in JOIN_FORMATS or set(found) != {container}:
        log.warning("join skipped: the segments are not all FLV or all MP4", sniffed=found)
        return False
    listing = out.with_name(out.name + ".ffconcat")
    listing.write_text("ffconcat version 1.0\n" + "".join(f"file {_quoted(f'file:{s}')}\n" for s in segments))
    out.unlink(missing_ok=True)
    cmd = [ffmpeg, "-y", "-nostdin", "-v", "error", "-xerror", "-protocol_whitelist", "file",
           "-format_whitelist", f"concat,{JOIN_FORMATS[container]}", "-f", "concat", "-safe", "0",
           "-i", f"file:{listing}", "-c", "copy", "-movflags", "+faststart", "-f", "mp4", f"file:{out}"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("join failed", error=str(exc))
        return False
    finally:
        listing.unlink(missing_ok=True)
    if done.returncode != 0 or not out.is_file() or out.stat().st_size == 0:
        log.warning("join failed", error=done.stderr[-500:], returncode=done.returncode)
        out.unlink(missing_ok=True)
        return False
    return True


def _quoted(text: str) -> str:
    """``text`` as one quoted token of an ffconcat list (a quote is closed, escaped, reopened)."""
    return "'" + text.replace("'", "'\\''") + "'"
