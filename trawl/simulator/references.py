"""The real platform responses the simulator serves (vendored in ``reference/``)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

REFERENCE_DIR = Path(__file__).resolve().parent / "reference"


@cache
def reference_bytes(name: str) -> bytes:
    return (REFERENCE_DIR / name).read_bytes()


def reference_json(name: str) -> Any:
    """A fresh copy of a reference JSON document (callers may change it)."""
    return json.loads(reference_bytes(name))
