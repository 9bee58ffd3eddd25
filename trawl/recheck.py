"""Re-checks: does the platform still have an archived item? (``trawl recheck``, the API's
``POST /api/v1/items/{key}/recheck``, a watch's ``--recheck N``.)

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
from typing import TYPE_CHECKING, Any

from trawl.errors import TrawlError
from trawl.platforms.base import ResolveContext
from trawl.platforms.registry import Registry

if TYPE_CHECKING:
    from trawl.settings import Settings
    from trawl.storage.catalog import Catalog
    from trawl.storage.records import CatalogItem

# What a platform's answer means for an item it had: these classes say it no longer shows it.
GONE_CLASSES = ("not_found", "forbidden", "login_required", "paid_only")
# A watch's re-check rides in the definition of each listing it expands (the schedule's action
# carries it; the worker expanding the listing re-checks: trawl.activities.crawl). At most
# MAX_RECHECK items per run: paced at their platform's rate, within the expansion's time.
RECHECK_FIELD = "recheck"
MAX_RECHECK = 50


def split_recheck(definition: dict[str, Any] | None) -> tuple[dict[str, Any] | None, int]:
    """A listing's definition without its re-check, and how many items a run re-checks (0: none)."""
    if not definition or RECHECK_FIELD not in definition:
        return definition, 0
    count = definition[RECHECK_FIELD]
    rest = {key: value for key, value in definition.items() if key != RECHECK_FIELD}
    ok = isinstance(count, int) and not isinstance(count, bool) and 0 < count <= MAX_RECHECK
    return rest, count if ok else 0


def with_recheck(definition: dict[str, Any] | None, count: int) -> dict[str, Any] | None:
    """``definition`` carrying a watch's re-check of ``count`` items per run (none for 0)."""
    return {**definition, RECHECK_FIELD: count} if definition is not None and count else definition


def platform_pace(settings: Settings) -> Callable[[str], float]:
    """Seconds between two re-checks on a platform: its ``requests_per_second``, as its fetches keep to."""
    def pace(platform: str) -> float:
        rate = getattr(getattr(settings.platforms, platform, None), "requests_per_second", None)
        return 1 / rate if rate else 0.0

    return pace


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
