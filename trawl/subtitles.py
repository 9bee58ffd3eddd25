"""Subtitle tracks as stored (a JSON body of ``{from, to, content}`` cues under ``body``, the form
a platform serves) written as SRT or WebVTT for players and media servers. Bounded: a stored track
that is not that form, or holds more than :data:`MAX_CUES` cues, is a :class:`SubtitleError`."""

from __future__ import annotations

import json
import math
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


def convert(body: bytes, fmt: str) -> bytes:
    """A stored track as ``fmt``: ``srt``, ``vtt`` or ``json`` (as stored)."""
    if fmt == "json":
        cues(body)  # checked all the same
        return body
    track = cues(body)
    return to_srt(track) if fmt == "srt" else to_vtt(track)
