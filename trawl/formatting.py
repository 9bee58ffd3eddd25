"""Numbers as people read them, the same on the command line and the web page: sizes
(``1.5 MiB``), speeds (``1.5 MiB/s``), clocks (``1:02:05``) and ETAs.

The reverse, text people write into settings and flags, is :mod:`trawl.sizes` and
:mod:`trawl.durations`.
"""

from __future__ import annotations

import math
from typing import Any


def human_size(size: float) -> str:
    """``size`` bytes in binary units: ``512 B``, ``1.5 KiB``, ... up to GiB."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def format_speed(speed: float | None) -> str:
    """Bytes per second as ``1.5 MiB/s``; "" when unknown."""
    return f"{human_size(speed)}/s" if speed is not None else ""


def clock(seconds: float) -> str:
    """``m:ss``, or ``h:mm:ss`` from an hour (seconds rounded up)."""
    hours, rest = divmod(math.ceil(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def eta_seconds(remaining: float | None, speed: float | None) -> float | None:
    """Seconds until ``remaining`` is done at ``speed`` (both in the same unit); None when unknown."""
    if remaining is None or not speed or speed <= 0:
        return None
    return max(0.0, remaining) / speed


def format_eta(seconds: float | None) -> str:
    """``ETA 0:07``; "" when unknown."""
    if seconds is None or seconds < 0:
        return ""
    return f"ETA {clock(seconds)}"


__all__ = ["clock", "eta_seconds", "format_eta", "format_speed", "human_size"]


def recording_words(live: dict[str, Any], speed: float | None = None) -> str:
    """A live recording as people read it (``live``: trawl.download.live.recording_view), with
    ``speed`` when known: ``recording 12:34 of media, 45.6 MiB, 12.0 KiB/s, part 3, 2 missing;
    waits for 1209 (window 1200-1208)`` (the part from the second on)."""
    words = [f"recording {clock(float(live.get('seconds') or 0))} of media", human_size(int(live.get("bytes") or 0))]
    if speed is not None:
        words.append(format_speed(speed))
    if (live.get("part") or 0) > 1:
        words.append(f"part {live['part']}")
    if live.get("missing"):
        words.append(f"{live['missing']} missing")
    line = ", ".join(words)
    window = live.get("window")
    if live.get("next") is not None and window:
        line += f"; waits for {live['next']} (window {window[0]}-{window[1]})"
    return line
