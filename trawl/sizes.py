"""Sizes with units, as people write them: ``10G``, ``500MiB``, ``1.5M``, ``64KB``, ``1048576``.

Like yt-dlp's ``--limit-rate 50K``, a bare letter is binary (``K`` = 1024, ``M`` = 1024²); the
IEC forms (``KiB``, ``MiB``, ...) are binary too, and the SI forms with a ``B`` (``kB``, ``MB``,
``GB``, ...) are decimal, as their standards say. ``B`` alone is bytes; case is ignored.
"""

from __future__ import annotations

import math
import re

_SIZE = re.compile(r"(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>[a-z]*)", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def parse_size(value: str | int | float) -> int:
    """The number of bytes ``value`` stands for.

    Args:
        value: a number of bytes, or text such as ``"10G"``, ``"500MiB"``, ``"64 KB"``.

    Raises:
        ValueError: not a size; the message quotes it and shows the accepted forms.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, (int, float)):
        return _whole_bytes(value, value)
    match = _SIZE.fullmatch(value.strip())
    unit = (match["unit"] if match else "").lower()
    if match is None or not _known(unit):
        raise ValueError(f"not a size: {value!r} (use bytes or e.g. 64K, 500MiB, 10G, 2GB)")
    letter = unit[:1] if unit not in ("", "b") else ""
    decimal = len(unit) == 2 and unit.endswith("b")  # kB, MB, GB: SI
    base = 1000 if decimal else 1024
    return _whole_bytes(float(match["number"]) * base ** _POWERS[letter], value)


def _whole_bytes(number: float, given: str | int | float) -> int:
    # TOML's inf and nan, and digits beyond a float's range, would otherwise fail in int() with
    # OverflowError or a message that does not name the setting's value.
    if isinstance(number, float) and not math.isfinite(number):
        raise ValueError(f"not a size: {given!r} (a size is a finite number of bytes)")
    if number < 0:
        raise ValueError(f"a size cannot be negative: {given!r}")
    return int(number)


def _known(unit: str) -> bool:
    if unit in ("", "b"):
        return True
    return unit[:1] in _POWERS and unit[1:] in ("", "b", "ib")
