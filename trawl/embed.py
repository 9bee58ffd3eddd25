"""Subtitles, chapters, metadata and the thumbnail embedded into a copy of a media file with ffmpeg,
as yt-dlp's ``--embed-subs``, ``--embed-chapters``, ``--embed-metadata`` and ``--embed-thumbnail``
do (the streams copied, nothing re-encoded but a WebP or GIF thumbnail, made a PNG first). The input
is never written: the copy is a new file (trawl.export puts it where the exported file was; the
stored blob stays as it is).

Containers: MP4 (subtitles as ``mov_text``) and WebM (WebVTT) take subtitles, chapters and metadata;
M4A and MP3 audio metadata and chapters; MKV (a Matroska file that is not WebM) all three, subtitles
as SRT; anything else (FLV, MPEG-TS) none. The thumbnail goes into MP4, M4A and MP3 as the cover
picture (an ``attached_pic`` stream, as yt-dlp puts it) and into MKV as an attachment
(``cover.jpg``/``cover.png``, as yt-dlp names it); WebM takes none (its muxer allows no pictures): it is
left out, said in :attr:`Embedding.left_out`, and the rest embedded.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trawl.sniff import SNIFF_BYTES, ffmpeg_input, sniff
from trawl.subtitles import Cue, to_srt, to_vtt

# sniffed kind -> (demuxer, muxer, subtitle codec or None)
CONTAINERS = {"mp4": ("mp4", "mp4", "mov_text"), "m4a": ("mp4", "ipod", None), "webm": ("matroska", "webm", "webvtt"),
              "mkv": ("matroska", "matroska", "srt"), "mp3": ("mp3", "mp3", None)}
COVER_AS_STREAM = ("mp4", "m4a", "mp3")  # the thumbnail as an attached_pic stream
COVER_AS_ATTACHMENT = ("mkv",)
# A thumbnail's sniffed kind -> ffmpeg's demuxer for it; JPEG and PNG go in as they are.
IMAGE_DEMUXERS = {"jpeg": "jpeg_pipe", "png": "png_pipe", "webp": "webp_pipe", "gif": "gif"}
MAX_THUMBNAIL_BYTES = 16 * 1024 * 1024
# ISO 639-2 codes for the languages platforms name most (MP4 keeps three letters only).
ISO639_2 = {"zh": "chi", "en": "eng", "ja": "jpn", "ko": "kor", "es": "spa", "fr": "fre", "de": "ger", "ru": "rus",
            "pt": "por", "it": "ita", "ar": "ara", "th": "tha", "vi": "vie", "id": "ind"}


@dataclass
class Embedding:
    """What to put into the copy."""

    subtitles: list[tuple[str, list[Cue]]] = field(default_factory=list)  # (language, cues)
    chapters: list[dict[str, Any]] = field(default_factory=list)  # yt-dlp's {start_time, end_time, title}
    metadata: dict[str, str] = field(default_factory=dict)  # title, artist, date, description, comment, purl
    thumbnail: bytes = b""  # the image as stored (JPEG, PNG, WebP, GIF)
    left_out: list[str] = field(default_factory=list)  # what :func:`embed` could not put in, and why

    @property
    def empty(self) -> bool:
        return not (self.subtitles or self.chapters or self.metadata or self.thumbnail)


def language_code(language: str) -> str:
    """``zh-CN``, ``ai-zh`` -> ``chi``; ``und`` when unknown."""
    base = language.removeprefix("ai-").split("-", 1)[0].lower()
    return ISO639_2.get(base, base if len(base) == 3 and base.isalpha() else "und")


def _ffmetadata(embedding: Embedding) -> str:
    def escaped(text: str) -> str:
        return "".join("\\" + c if c in "=;#\\\n" else c for c in text)

    lines = [";FFMETADATA1", *(f"{k}={escaped(v)}" for k, v in embedding.metadata.items())]
    for chapter in embedding.chapters:
        start, end = chapter.get("start_time"), chapter.get("end_time")
        if not isinstance(start, (int, float)) or not isinstance(end, (int, float)) or end < start:
            continue
        lines += ["[CHAPTER]", "TIMEBASE=1/1000", f"START={round(start * 1000)}", f"END={round(end * 1000)}",
                  f"title={escaped(str(chapter.get('title') or ''))}"]
    return "\n".join(lines) + "\n"


def _cover(ffmpeg: str, image: bytes, tmp: Path, timeout: float) -> tuple[Path | None, str]:
    """The thumbnail as a JPEG or PNG file in ``tmp`` (a WebP or GIF made a PNG), or why not."""
    if len(image) > MAX_THUMBNAIL_BYTES:
        return None, f"thumbnail of {len(image)} bytes, over the {MAX_THUMBNAIL_BYTES} embedded"
    kind = sniff(image[:SNIFF_BYTES])
    if kind not in IMAGE_DEMUXERS:
        return None, f"the thumbnail is {kind}, not an image ffmpeg reads here (JPEG, PNG, WebP, GIF)"
    stored = tmp / f"thumbnail.{'jpg' if kind == 'jpeg' else kind}"
    stored.write_bytes(image)
    if kind in ("jpeg", "png"):
        return stored, ""
    cover = tmp / "cover.png"
    cmd = [ffmpeg, "-y", "-nostdin", "-v", "error", *ffmpeg_input(stored, IMAGE_DEMUXERS[kind]), "-frames:v", "1",
           "-c:v", "png", "-f", "image2", f"file:{cover}"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"ffmpeg could not make the {kind} thumbnail a PNG: {exc}"
    if done.returncode != 0 or not cover.is_file():
        return None, f"ffmpeg could not make the {kind} thumbnail a PNG: {done.stderr.strip()[-200:]}"
    return cover, ""


def _video_streams(media: Path, demuxer: str, timeout: float) -> int | None:
    """How many video streams ``media`` has (the cover is the next one), by ffprobe; None: unknown."""
    ffprobe = shutil.which("ffprobe")
    if ffprobe is None:
        return None
    cmd = [ffprobe, "-v", "error", *ffmpeg_input(media, demuxer), "-select_streams", "v",
           "-show_entries", "stream=index", "-of", "csv=p=0"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return len([line for line in done.stdout.splitlines() if line.strip()])


def embed(media: Path, out: Path, embedding: Embedding, timeout: float = 3600) -> str:
    """Write ``media`` with ``embedding`` to ``out``; "" when done, else why not (ffmpeg missing, a
    container it cannot embed into, ffmpeg's error)."""
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        return "ffmpeg is not installed"
    with open(media, "rb") as src:
        head = src.read(SNIFF_BYTES)
    kind = sniff(head)
    if kind == "webm" and b"matroska" in head[:64]:  # the EBML header's DocType: Matroska, not WebM
        kind = "mkv"
    if kind not in CONTAINERS:
        return f"a {kind} file takes no embedded extras here (MP4, WebM, MKV, M4A and MP3 do)"
    demuxer, muxer, sub_codec = CONTAINERS[kind]
    subtitles = embedding.subtitles if sub_codec else []
    with tempfile.TemporaryDirectory(prefix="trawl-embed-") as tmp:
        inputs = ffmpeg_input(media, demuxer)
        maps = ["-map", "0"]
        for index, (language, cues) in enumerate(subtitles, 1):
            track = Path(tmp) / f"{index}.{'vtt' if sub_codec == 'webvtt' else 'srt'}"
            track.write_bytes(to_vtt(cues) if sub_codec == "webvtt" else to_srt(cues))
            inputs += ["-protocol_whitelist", "file", "-f", "webvtt" if sub_codec == "webvtt" else "srt",
                       "-i", f"file:{track}"]
            maps += ["-map", str(index)]
        cover_options: list[str] = []
        if embedding.thumbnail:
            cover, why = _cover(ffmpeg, embedding.thumbnail, Path(tmp), timeout)
            if cover is not None and kind not in COVER_AS_STREAM + COVER_AS_ATTACHMENT:
                why = f"a {kind} file takes no thumbnail (MP4, M4A, MP3 and MKV do)"
            if cover is not None and not why:
                if kind in COVER_AS_ATTACHMENT:
                    mime = "image/png" if cover.suffix == ".png" else "image/jpeg"
                    cover_options = ["-attach", f"file:{cover}", "-metadata:s:t", f"mimetype={mime}",
                                     "-metadata:s:t", f"filename=cover{cover.suffix}"]
                else:
                    pictures = _video_streams(media, demuxer, timeout)
                    if pictures is None:
                        why = "ffprobe could not count the file's video streams"
                    else:
                        index = len(subtitles) + 1
                        image = "png_pipe" if cover.suffix == ".png" else "jpeg_pipe"
                        inputs += ["-protocol_whitelist", "file", "-f", image, "-i", f"file:{cover}"]
                        maps += ["-map", str(index)]
                        cover_options = [f"-disposition:v:{pictures}", "attached_pic"]
                        if kind == "mp3":
                            cover_options += ["-id3v2_version", "3", f"-metadata:s:v:{pictures}", "title=Album cover",
                                              f"-metadata:s:v:{pictures}", "comment=Cover (front)"]
            if why and not (subtitles or embedding.chapters or embedding.metadata):
                return f"thumbnail: {why}"  # nothing else to embed
            if why:
                embedding.left_out.append(f"thumbnail: {why}")
        meta = Path(tmp) / "metadata.txt"
        meta.write_text(_ffmetadata(embedding), encoding="utf-8")
        meta_index = len(subtitles) + 1 + (1 if cover_options and kind in COVER_AS_STREAM else 0)
        inputs += ["-protocol_whitelist", "file", "-f", "ffmetadata", "-i", f"file:{meta}"]
        options = ["-map_metadata", str(meta_index) if embedding.metadata else "0",
                   "-map_chapters", str(meta_index) if embedding.chapters else "0", "-c", "copy", *cover_options]
        if subtitles:
            options += ["-c:s", sub_codec or "copy"]
            for index, (language, _) in enumerate(subtitles):
                options += [f"-metadata:s:s:{index}", f"language={language_code(language)}",
                            f"-metadata:s:s:{index}", f"title={language}"]
        cmd = [ffmpeg, "-y", "-nostdin", "-v", "error", *inputs, *maps, *options, "-f", muxer, f"file:{out}"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"ffmpeg failed: {exc}"
    if done.returncode != 0 or not out.is_file() or out.stat().st_size == 0:
        out.unlink(missing_ok=True)
        return f"ffmpeg failed: {done.stderr.strip()[-300:]}"
    return ""
