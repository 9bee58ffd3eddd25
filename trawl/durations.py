"""Human durations ("500ms", "2s", "5m", "1h30m") as used in trawl.toml."""

from __future__ import annotations

import re
from datetime import timedelta

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: str | int | float | timedelta) -> timedelta:
    """Parse a duration such as ``"2s"``, ``"1m30s"`` or a number of seconds.

    Raises:
        ValueError: the text is not a duration; the message quotes it.
    """
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"duration must not be negative: {value!r}")
        return _seconds(value, value)
    text = value.strip().lower().replace(" ", "")
    if not text:
        raise ValueError("empty duration")
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return _seconds(float(text), value)
    pos = 0
    total = 0.0
    for match in _PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if pos != len(text):
        raise ValueError(f"not a duration: {value!r} (use e.g. 500ms, 2s, 5m, 1h)")
    return _seconds(total, value)


def _seconds(seconds: float, given: object) -> timedelta:
    """A timedelta of ``seconds``; one past timedelta's range (about 2.7 million years) or not a
    number at all is a mistake in the text, said as one."""
    try:
        return timedelta(seconds=seconds)
    except (OverflowError, ValueError):
        raise ValueError(f"duration too large: {given!r}") from None


def parse_since(value: str) -> timedelta:
    """Parse a ``--since`` argument; same grammar as :func:`parse_duration`."""
    return parse_duration(value)
