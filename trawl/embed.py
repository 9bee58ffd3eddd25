"""Subtitles, chapters and metadata embedded into a copy of a media file with ffmpeg, as yt-dlp's
``--embed-subs``, ``--embed-chapters`` and ``--embed-metadata`` do (the streams copied, nothing
re-encoded). The input is never written: the copy is a new file (trawl.export puts it where the
exported file was; the stored blob stays as it is).

Containers: MP4 (subtitles as ``mov_text``) and WebM (WebVTT) take all three; M4A and MP3 audio
metadata and chapters; anything else (FLV, MPEG-TS) none.
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
              "mp3": ("mp3", "mp3", None)}
# ISO 639-2 codes for the languages platforms name most (MP4 keeps three letters only).
ISO639_2 = {"zh": "chi", "en": "eng", "ja": "jpn", "ko": "kor", "es": "spa", "fr": "fre", "de": "ger", "ru": "rus",
            "pt": "por", "it": "ita", "ar": "ara", "th": "tha", "vi": "vie", "id": "ind"}


@dataclass
class Embedding:
    """What to put into the copy."""

    subtitles: list[tuple[str, list[Cue]]] = field(default_factory=list)  # (language, cues)
    chapters: list[dict[str, Any]] = field(default_factory=list)  # yt-dlp's {start_time, end_time, title}
    metadata: dict[str, str] = field(default_factory=dict)  # title, artist, date, description, comment, purl

    @property
    def empty(self) -> bool:
        return not (self.subtitles or self.chapters or self.metadata)


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


def embed(media: Path, out: Path, embedding: Embedding, timeout: float = 3600) -> str:
    """Write ``media`` with ``embedding`` to ``out``; "" when done, else why not (ffmpeg missing, a
    container it cannot embed into, ffmpeg's error)."""
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        return "ffmpeg is not installed"
    with open(media, "rb") as src:
        kind = sniff(src.read(SNIFF_BYTES))
    if kind not in CONTAINERS:
        return f"a {kind} file takes no embedded extras here (MP4, WebM, M4A and MP3 do)"
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
        meta = Path(tmp) / "metadata.txt"
        meta.write_text(_ffmetadata(embedding), encoding="utf-8")
        meta_index = len(subtitles) + 1
        inputs += ["-protocol_whitelist", "file", "-f", "ffmetadata", "-i", f"file:{meta}"]
        options = ["-map_metadata", str(meta_index) if embedding.metadata else "0",
                   "-map_chapters", str(meta_index) if embedding.chapters else "0", "-c", "copy"]
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
