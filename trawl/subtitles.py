"""Subtitle tracks as stored (a JSON body of ``{from, to, content}`` cues under ``body``, the form
a platform serves) written as SRT or WebVTT for players and media servers. Bounded: a stored track
that is not that form, or holds more than :data:`MAX_CUES` cues, is a :class:`SubtitleError`.

A platform that serves SRT or WebVTT instead (captions files) reads it with
:func:`parse_timed_text` and stores the cues in that form (:func:`to_json`), bounded the same way."""

from __future__ import annotations

import html
import json
import math
import re
from dataclasses import dataclass

MAX_CUES = 100_000
MAX_BYTES = 64 * 1024 * 1024


class SubtitleError(ValueError):
    """A stored track that is not a JSON body of ``{from, to, content}`` cues, or past the bounds."""


@dataclass(frozen=True)
class Cue:
    start: float  # seconds
    end: float
    text: str


def cues(body: bytes) -> list[Cue]:
    """The cues of a stored track, in the order stored."""
    if len(body) > MAX_BYTES:
        raise SubtitleError(f"subtitle track of {len(body)} bytes, over the {MAX_BYTES} bytes allowed")
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        raise SubtitleError("subtitle track is not JSON") from None
    found = doc.get("body") if isinstance(doc, dict) else None
    if not isinstance(found, list) or len(found) > MAX_CUES:
        raise SubtitleError(f"subtitle track has no body[] of at most {MAX_CUES} cues")
    result = []
    for cue in found:
        if not isinstance(cue, dict) or not isinstance(cue.get("content"), str):
            raise SubtitleError("subtitle cue is not {from, to, content}")
        start, end = _seconds(cue.get("from")), _seconds(cue.get("to"))
        result.append(Cue(start, max(start, end), cue["content"]))
    return result


def _seconds(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise SubtitleError(f"subtitle cue time {value!r} is not a number of seconds")
    return float(value)


def _stamp(seconds: float, separator: str) -> str:
    millis = round(seconds * 1000)
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{millis:03d}"


def _lines(text: str) -> str:
    """A cue's text on lines that cannot end the cue early (a blank line would)."""
    return "\n".join(line for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n") if line.strip()) or " "


def to_srt(track: list[Cue]) -> bytes:
    blocks = [f"{n}\n{_stamp(c.start, ',')} --> {_stamp(c.end, ',')}\n{_lines(c.text)}\n" for n, c in enumerate(track, 1)]
    return "\n".join(blocks).encode()


def to_vtt(track: list[Cue]) -> bytes:
    """WebVTT; the text is escaped (``&``, ``<``, ``>``), as its cue text is markup."""
    def escaped(text: str) -> str:
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    blocks = [f"{_stamp(c.start, '.')} --> {_stamp(c.end, '.')}\n{escaped(_lines(c.text))}\n" for c in track]
    return ("WEBVTT\n\n" + "\n".join(blocks)).encode()


_TIMING = re.compile(r"^\s*(?P<start>(?:\d{1,3}:)?\d{1,2}:\d{2}[,.]\d{1,3})\s*-->\s*"
                     r"(?P<end>(?:\d{1,3}:)?\d{1,2}:\d{2}[,.]\d{1,3})(?:\s.*)?$")


def _clock(text: str) -> float:
    parts = text.replace(",", ".").split(":")
    seconds = float(parts[-1])
    minutes = int(parts[-2])
    hours = int(parts[-3]) if len(parts) > 2 else 0
    return hours * 3600 + minutes * 60 + seconds


def parse_timed_text(body: bytes) -> list[Cue]:
    """The cues of an SRT or WebVTT file, in order; their text as written (WebVTT's ``&amp;``,
    ``&lt;`` read as the characters they stand for).

    Raises:
        SubtitleError: past the bounds, or no cue timing anywhere in a file that is not empty.
    """
    if len(body) > MAX_BYTES:
        raise SubtitleError(f"subtitle file of {len(body)} bytes, over the {MAX_BYTES} bytes allowed")
    text = body.decode("utf-8-sig", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    webvtt = text.lstrip().startswith("WEBVTT")
    found: list[Cue] = []
    for block in re.split(r"\n[ \t]*\n", text):
        lines = block.split("\n")
        timing = next((i for i, line in enumerate(lines[:3]) if "-->" in line), None)
        if timing is None:
            continue  # the WEBVTT header, a NOTE, STYLE or REGION block, a stray line
        match = _TIMING.match(lines[timing])
        if match is None:
            raise SubtitleError(f"subtitle timing {lines[timing][:80]!r} is not HH:MM:SS,mmm --> HH:MM:SS,mmm")
        if len(found) >= MAX_CUES:
            raise SubtitleError(f"subtitle file holds over {MAX_CUES} cues")
        start, end = _clock(match["start"]), _clock(match["end"])
        cue_text = "\n".join(lines[timing + 1:]).strip("\n")
        found.append(Cue(start, max(start, end), html.unescape(cue_text) if webvtt else cue_text))
    if not found and text.strip() and not webvtt:
        raise SubtitleError("subtitle file is neither SRT nor WebVTT (no cue timing)")
    return found


def to_json(track: list[Cue]) -> bytes:
    """Cues in the stored form, ``{"body": [{"from", "to", "content"}...]}``."""
    cues_ = [{"from": round(c.start, 3), "to": round(c.end, 3), "content": c.text} for c in track]
    return json.dumps({"body": cues_}, ensure_ascii=False).encode()


def convert(body: bytes, fmt: str) -> bytes:
    """A stored track as ``fmt``: ``srt``, ``vtt`` or ``json`` (as stored)."""
    if fmt == "json":
        cues(body)  # checked all the same
        return body
    track = cues(body)
    return to_srt(track) if fmt == "srt" else to_vtt(track)
