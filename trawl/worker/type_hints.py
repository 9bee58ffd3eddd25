"""Type hints read once per class when Temporal's converter decodes a payload.

The SDK's ``value_to_type`` calls ``typing.get_type_hints`` on every dataclass it decodes, for
every value: with string annotations (``from __future__ import annotations``, as trawl's
contracts have) that evaluates each field's annotation again each time. A tiny item's payloads
(its input, options, fetch and commit results, in the worker and in the workflow sandbox) made
about 40 such calls, ~0.1-0.6 ms each: a large part of the worker's CPU for the item.

:func:`install` puts a bounded cache in front of the converter module's ``get_type_hints`` (the
name the converter calls; ``typing`` itself is untouched). A class's hints do not change once it
is defined, and the converter only reads the dict it gets. Pinned by tests/trawl/test_pinned_internals.py;
if the converter stops naming ``get_type_hints`` as a module global, :func:`install` does nothing.
"""

from __future__ import annotations

import functools
import typing
from typing import Any

CACHED_CLASSES = 4096  # workflow modules re-imported per run define new classes: bounded


def install() -> bool:
    """Cache the converter's type hints; True when installed (or already), False when the
    converter is not the shape this expects (then nothing changes)."""
    from temporalio.converter import _payload_converter as converter

    current = getattr(converter, "get_type_hints", None)
    if getattr(current, "trawl_cached", False):
        return True
    if current is not typing.get_type_hints:
        return False
    converter.get_type_hints = cached_type_hints  # type: ignore[attr-defined]
    return True


@functools.lru_cache(maxsize=CACHED_CLASSES)
def _hints(obj: Any) -> dict[str, Any]:
    return typing.get_type_hints(obj)


def cached_type_hints(obj: Any, globalns: Any = None, localns: Any = None, include_extras: bool = False
                      ) -> dict[str, Any]:
    """``typing.get_type_hints``, from the cache when asked as the converter asks (the object alone)."""
    if globalns is not None or localns is not None or include_extras:
        return typing.get_type_hints(obj, globalns, localns, include_extras)
    try:
        return _hints(obj)
    except TypeError:  # not hashable: as typing does it
        return typing.get_type_hints(obj)


cached_type_hints.trawl_cached = True  # type: ignore[attr-defined]
