"""HTTP Range and Content-Range parsing (RFC 9110 section 14)."""

from __future__ import annotations

import re
from dataclasses import dataclass

# At most 19 digits (up to 9.2e18 bytes): longer numbers are nonsense, and int() refuses
# thousands of digits anyway.
_CONTENT_RANGE = re.compile(r"^\s*bytes\s+(?:([0-9]{1,19})-([0-9]{1,19})|\*)/([0-9]{1,19}|\*)\s*$", re.IGNORECASE)
_RANGE = re.compile(r"^\s*bytes\s*=\s*([0-9]{0,19})\s*-\s*([0-9]{0,19})\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class ContentRange:
    start: int | None  # None for "bytes */total" (an unsatisfied range)
    end: int | None
    total: int | None  # None when the server does not know ("/*")


def parse_content_range(value: str | None) -> ContentRange | None:
    """Parse ``bytes 0-99/1000``, ``bytes 0-99/*`` or ``bytes */1000``; None when malformed."""
    if not value:
        return None
    match = _CONTENT_RANGE.match(value)
    if not match:
        return None
    start_s, end_s, total_s = match.groups()
    total = None if total_s == "*" else int(total_s)
    if start_s is None:
        return ContentRange(None, None, total) if total is not None else None
    start, end = int(start_s), int(end_s)
    if end < start or (total is not None and end >= total):
        return None
    return ContentRange(start, end, total)


def parse_range(value: str | None, size: int) -> tuple[int, int] | None | str:
    """Resolve a single-range ``Range`` header against a resource of ``size`` bytes.

    Returns ``(start, end)`` inclusive, ``None`` when the header is absent or malformed (serve
    the whole body, as RFC 9110 allows), or ``"unsatisfiable"`` for a 416.
    """
    if not value:
        return None
    match = _RANGE.match(value)
    if not match:
        return None
    first, last = match.groups()
    if not first and not last:
        return None
    if not first:  # suffix range: the last N bytes
        length = int(last)
        if length == 0:
            return "unsatisfiable"
        return (max(0, size - length), size - 1) if size else "unsatisfiable"
    start = int(first)
    if start >= size:
        return "unsatisfiable"
    end = min(int(last), size - 1) if last else size - 1
    if end < start:
        return None
    return start, end
