"""Named sources from the settings, expanded to the URLs they stand for.

Listings that page (a platform's uploader or user, a paged feed) stop at the first page whose
items are all known, when the caller says what is known (``known``): a source followed by a watch
costs one listing page per run once it has been crawled. ``full_listing = true`` on a source reads
all its ``max_pages`` pages whatever is known.

A source travels as its definition (:func:`source_definition`, the settings' table as JSON): a
watch's schedule carries it, so the worker that expands a run needs no source of that name in its
own settings. A ``url_file`` is read by that worker, on its host.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from trawl.errors import UnsupportedUrl
from trawl.listing_filters import ListingFilters, Walk
from trawl.platforms.base import ResolveContext
from trawl.platforms.registry import ListingRoute, Registry, listing_platform
from trawl.settings import Settings, SourceSettings

# URLs of one listing page -> True when the catalog holds every one of them.
Known = Callable[[list[str]], bool]


class SourceError(Exception):
    """A source is unknown or cannot be expanded; the message says which and why."""


def find_source(settings: Settings, name: str) -> SourceSettings:
    for source in settings.sources:
        if source.name == name:
            return source
    known = ", ".join(s.name for s in settings.sources) or "none configured"
    raise SourceError(f"no source named {name!r} in the settings (known: {known})")


# A source's filters (trawl.listing_filters), carried in its definition only when set: a
# definition without them reads as before on workers that do not know them.
FILTER_FIELDS = ListingFilters.FIELDS


def source_definition(source: SourceSettings, filters: ListingFilters | None = None) -> dict[str, Any]:
    """A source as a crawl's input carries it: every field of its ``[[sources]]`` table, as JSON,
    its filters overridden by ``filters`` (a crawl's ``--dateafter``, ...) where those are set."""
    definition = source.model_dump(mode="json")
    definition.update(filters.as_dict() if filters else {})
    return {k: v for k, v in definition.items() if k not in FILTER_FIELDS or v}


def with_filters(definition: dict[str, Any] | None, filters: ListingFilters | None) -> dict[str, Any] | None:
    """A listing's or a source's definition with a crawl's filters (where they are set)."""
    if definition is None or not filters:
        return definition
    return {**definition, **filters.as_dict()}


def source_from_definition(definition: dict[str, Any]) -> SourceSettings:
    """The source a crawl's input carries (see :func:`source_definition`).

    Raises:
        SourceError: the definition is not a source of this trawl version (a field it does not
            know, a kind it does not have, a missing argument).
    """
    try:
        return SourceSettings.model_validate(definition)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise SourceError(f"source {definition.get('name')!r}: its definition is not one this worker reads "
                          f"({where + ': ' if where else ''}{first['msg']})") from None


def read_url_file(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SourceError(f"cannot read URL file {path}: {exc.strerror}") from None
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def expand(source: SourceSettings, settings: Settings, registry: Registry, ctx: ResolveContext,
           known: Known | None = None) -> list[str]:
    """The URLs of a source, in the order the platform lists them.

    A platform's listing runs with that platform's resolver in ``registry`` (its settings); a
    platform the registry has no resolver of is disabled.

    Args:
        settings: the process's settings (kept for callers; the registry carries the platforms').
        known: says whether a listing page holds only known items; paging stops after the first
            such page (unless the source sets ``full_listing``).

    The source's filters (``dateafter``, ``match_filter``, ...) are applied while its listing
    pages, on what each entry's listing says; a listing that pages through them stops as soon as
    nothing after can pass (:class:`trawl.listing_filters.Walk`).
    """
    walk = walk_of(source, known)
    return walk.select(_listed(source, registry, ctx, walk))


def walk_of(source: SourceSettings, known: Known | None = None, today: date | None = None) -> Walk:
    """How a source's listing is walked: its filters, and ``known`` unless it sets ``full_listing``."""
    return Walk(known=None if source.full_listing else known, filters=ListingFilters.of(source), today=today)


def _listed(source: SourceSettings, registry: Registry, ctx: ResolveContext, walk: Walk) -> list[str]:
    if source.kind == "url_file":
        return read_url_file(Path(source.path))
    if source.kind == "feed":
        from trawl.feeds import feed_urls

        return feed_urls(ctx, source.url, source.max_pages, walk)
    platform = listing_platform(source.kind)
    if platform is not None:
        resolver = registry.resolver_of(platform.name)
        if resolver is None:
            raise SourceError(f"source {source.name!r}: the {platform.name} platform is disabled")
        return platform.listings[source.kind](resolver, ctx, source.id, source.max_pages, walk)
    raise UnsupportedUrl(f"source {source.name!r}: unknown kind {source.kind!r}")


def listing_source(route: ListingRoute) -> SourceSettings:
    """The source a listing URL stands for (``trawl.platforms.registry.Registry.listing_for``)."""
    return source_from_definition(route.definition())


def describe(source: SourceSettings) -> str:
    """A source in a few words, for listings: ``feed http://...``, ``url_file urls.txt``."""
    what = {"url_file": source.path, "feed": source.url}.get(source.kind, source.id)
    return f"{source.kind} {what}"
