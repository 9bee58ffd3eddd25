"""Re-checks: does the platform still have an archived item? (``trawl recheck``, the API's
``POST /api/v1/items/{key}/recheck``.)

Each item's page is resolved again, as a crawl's fetch resolves it, through the same address guard
and with the platform's resolver; nothing is downloaded. What the platform answers decides:

- it resolves: the item is there (a mark of ``gone upstream`` from an earlier check is lifted);
- ``not_found``, ``forbidden`` or ``login_required``: it is gone upstream (deleted, made private,
  region-locked, behind a login now), for the reason the platform's own error table gives (the
  message its resolver raised), recorded with the time; the archived copy is never touched;
- anything else (a network error, a rate limit, a 5xx, a page that no longer parses): trawl could
  not tell, and records nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from trawl.errors import TrawlError
from trawl.platforms.base import ResolveContext
from trawl.platforms.registry import Registry

if TYPE_CHECKING:
    from trawl.storage.catalog import Catalog
    from trawl.storage.records import CatalogItem

# What a platform's answer means for an item it had: these classes say it no longer shows it.
GONE_CLASSES = ("not_found", "forbidden", "login_required", "paid_only")


@dataclass
class Checked:
    canonical_key: str
    outcome: str  # "there", "gone" or "unknown" (the platform could not be asked)
    reason: str | None = None  # gone: the platform's reason; unknown: why it could not tell

    def line(self) -> str:
        return f"{self.outcome:8} {self.canonical_key}" + (f"  {self.reason}" if self.reason else "")


def check(registry: Registry, ctx: ResolveContext, item: CatalogItem) -> Checked:
    """Ask the platform about one item (its canonical URL, with its platform's resolver)."""
    try:
        registry.resolver_for(item.canonical_url).resolve(item.canonical_url, ctx)
    except TrawlError as err:
        reason = f"{err.error_class}: {err}"[:500]
        return Checked(item.canonical_key, "gone" if err.error_class in GONE_CLASSES else "unknown", reason)
    return Checked(item.canonical_key, "there")


def recheck(catalog: Catalog, registry: Registry, ctx: ResolveContext, items: Iterable[CatalogItem],
            pace: Callable[[str], float] = lambda platform: 0.0,
            sleep: Callable[[float], None] = time.sleep) -> Iterator[Checked]:
    """Check each item and record what was found (``Catalog.record_check``), one after the other,
    waiting ``pace(platform)`` seconds between two requests to the same platform."""
    last: dict[str, float] = {}
    for item in items:
        wait = last.get(item.platform, -1e9) + pace(item.platform) - time.monotonic()
        if wait > 0:
            sleep(wait)
        last[item.platform] = time.monotonic()
        found = check(registry, ctx, item)
        if found.outcome != "unknown":
            catalog.record_check(item.canonical_key, found.reason if found.outcome == "gone" else None,
                                 datetime.now(UTC))
        yield found
