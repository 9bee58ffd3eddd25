"""The explicit list of resolvers; the first that claims a URL resolves it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trawl.errors import UnsupportedUrl
from trawl.platforms import bilibili, facebook, weibo
from trawl.platforms.base import Resolver
from trawl.platforms.generic import GenericResolver
from trawl.settings import PlatformsSettings
from trawl.urls import canonicalize, url_sha1, validate_url


@dataclass(frozen=True)
class Route:
    """Where a URL goes before anything is fetched."""

    resolver: Resolver
    workflow_id: str  # item-<canonical key> when known offline, else url-<sha1>

    @property
    def platform(self) -> str:
        return self.resolver.platform


class Registry:
    def __init__(self, resolvers: list[Resolver]) -> None:
        if not resolvers or not isinstance(resolvers[-1], GenericResolver):
            raise ValueError("the generic resolver must come last")
        self.resolvers = resolvers

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


def build_registry(platforms: PlatformsSettings | None = None) -> Registry:
    """The resolvers of the enabled platforms, generic last."""
    platforms = platforms or PlatformsSettings()
    resolvers: list[Resolver] = []
    for name, factory in PLATFORM_RESOLVERS.items():
        config = getattr(platforms, name)
        if config.enabled:
            resolvers.extend(factory(config))
    return Registry([*resolvers, GenericResolver(platforms.generic)])


def default_registry() -> Registry:
    """The registry with every platform at its real address (tests use it for generic URLs)."""
    return build_registry()


# Platform name -> resolvers built from that platform's settings, in the order they are tried.
PLATFORM_RESOLVERS: dict[str, Callable[[Any], list[Resolver]]] = {
    "bilibili": bilibili.resolvers,
    "weibo": weibo.resolvers,
    "facebook": facebook.resolvers,
}
