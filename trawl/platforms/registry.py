"""The platforms, listed once (generic last), and the registry of their resolvers: the first
resolver that claims a URL resolves it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trawl.extras import ExtraSet
from trawl.errors import LoginRequired, UnsupportedUrl, use_platform_rules
from trawl.platforms import bilibili, facebook, generic, weibo
from trawl.platforms.base import Resolver
from trawl.platforms.generic import GenericResolver
from trawl.platforms.platform import ListingForm, Platform, PlatformsSettingsBase, platforms_model
from trawl.urls import MAX_URL_LENGTH, canonicalize, url_sha1, validate_url

# Every platform trawl knows, in the order their resolvers are tried; generic claims any URL,
# so it comes last. Adding a platform is adding its module and its line here.
PLATFORMS: tuple[Platform, ...] = (
    bilibili.PLATFORM,
    weibo.PLATFORM,
    facebook.PLATFORM,
    generic.PLATFORM,
)
# An answer of unknown origin (a media URL's) is read with every platform's rules.
use_platform_rules(p.errors for p in PLATFORMS if p.errors is not None)


@dataclass(frozen=True)
class Route:
    """Where a URL goes before anything is fetched."""

    resolver: Resolver
    workflow_id: str  # item-<canonical key> when known offline, else url-<sha1>

    @property
    def platform(self) -> str:
        return self.resolver.platform


# Pages a listing given as a URL reads at most: all of a listing, as a pasted profile URL means
# (100 pages is the most a named source may set; paging still stops at the first page the
# catalog holds entirely, so a re-crawl reads one page).
LISTING_URL_MAX_PAGES = 100


@dataclass(frozen=True)
class ListingRoute:
    """A listing URL, recognised offline: expanded as a source of ``kind`` listing ``id``."""

    url: str
    platform: str
    kind: str
    id: str

    def definition(self, max_pages: int = LISTING_URL_MAX_PAGES, full_listing: bool = False) -> dict[str, Any]:
        """The source a crawl carries for it (:func:`trawl.sources.source_definition`'s shape)."""
        argument = {"url": self.url} if self.kind == "feed" else {"id": self.id}
        return {"name": self.url, "kind": self.kind, **argument, "max_pages": max_pages, "full_listing": full_listing}

    @property
    def workflow_id(self) -> str:
        """Names the listing among a crawl's URLs (no workflow runs under it)."""
        if not self.url.lower().startswith(("http://", "https://")):  # a pseudo-URL form (bilisearch:...)
            return f"listing-{url_sha1(self.url)}"
        return f"listing-{url_sha1(canonicalize(self.url))}"


class Registry:
    def __init__(self, resolvers: list[Resolver], listing_forms: Sequence[tuple[str, ListingForm]] = (),
                 extras: ExtraSet | None = None) -> None:
        if not resolvers or not isinstance(resolvers[-1], GenericResolver):
            raise ValueError("the generic resolver must come last")
        self.resolvers = resolvers
        self.listing_forms = list(listing_forms)  # (platform, form), tried in order
        self.extras = extras or ExtraSet()  # the enabled platforms' extras (trawl.extras)

    def listing_for(self, url: str) -> ListingRoute | None:
        """The listing ``url`` names, recognised offline; None for any other URL.

        Raises:
            LoginRequired: a listing form only a logged-in account can list.
            UnsupportedUrl: not a URL trawl can fetch.
        """
        text = url.strip() if isinstance(url, str) else url
        for platform, form in self.listing_forms:
            match = form.pattern.match(text) if form.pseudo and isinstance(text, str) and len(text) <= MAX_URL_LENGTH else None
            if match is not None:
                return ListingRoute(text, platform, form.kind, form.listing_id(match))
        url = validate_url(url)
        for platform, form in self.listing_forms:
            match = None if form.pseudo else form.pattern.match(url)
            if match is None:
                continue
            if form.login_required:
                raise LoginRequired(f"{url}: {form.login_required}")
            return ListingRoute(url, platform, form.kind, form.listing_id(match))
        return None

    @property
    def platforms(self) -> list[str]:
        return list(dict.fromkeys(r.platform for r in self.resolvers))

    def resolver_for(self, url: str) -> Resolver:
        url = validate_url(url)
        for resolver in self.resolvers:
            if resolver.claims(url):
                return resolver
        raise UnsupportedUrl(f"no resolver claims {url}")

    def route(self, url: str) -> Route:
        """Pick the resolver and the idempotent workflow id for ``url`` without network access."""
        resolver = self.resolver_for(url)
        key = resolver.offline_key(url)
        workflow_id = f"item-{key}" if key else f"url-{url_sha1(canonicalize(url))}"
        return Route(resolver, workflow_id)

    def resolver_of(self, platform: str) -> Resolver | None:
        """The first resolver of ``platform``, or None when the platform is disabled."""
        return next((r for r in self.resolvers if r.platform == platform), None)


def build_registry(platforms: PlatformsSettingsBase | None = None,
                   known: Sequence[Platform] = PLATFORMS) -> Registry:
    """The resolvers of the enabled platforms, generic (always on) last.

    Args:
        platforms: the ``[platforms]`` settings; None: every platform's defaults.
        known: the platforms to build from, generic last (tests give their own).
    """
    known = tuple(known)
    config = platforms if platforms is not None else platforms_model(known)()
    *named, catch_all = known
    resolvers: list[Resolver] = []
    forms: list[tuple[str, ListingForm]] = []
    extras = ExtraSet()
    for platform in known:
        section = config[platform.name]
        if platform is catch_all or section.enabled:
            wanted = platform.extras if section.extras is None else section.extras
            extras.by_platform[platform.name] = {name: make(section) for name, make in platform.extras.items()
                                                 if name in wanted}
            if platform is not catch_all:
                resolvers.extend(platform.resolvers(section))
            forms.extend((platform.name, form) for form in (platform.listing_forms(section)
                                                            if platform.listing_forms else []))
    return Registry([*resolvers, *catch_all.resolvers(config[catch_all.name])], forms, extras)


def default_registry() -> Registry:
    """The registry with every platform at its real address (tests use it for generic URLs)."""
    return build_registry()


def listing_platform(kind: str, known: Sequence[Platform] = PLATFORMS) -> Platform | None:
    """The platform that lists sources of ``kind`` (``[[sources]] kind = ...``), if one does."""
    return next((p for p in known if kind in p.listings), None)


def listing_kinds(known: Sequence[Platform] = PLATFORMS) -> list[str]:
    """Every source kind a platform lists, in the registry's order."""
    return [kind for p in known for kind in p.listings]
