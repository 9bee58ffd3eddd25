"""The platforms: one module (or package) each, exporting one :class:`Platform` that holds all
trawl knows about it; the registry lists them once, generic last."""

from trawl.platforms.base import ResolveContext, Resolver
from trawl.platforms.platform import Platform, PlatformSettings
from trawl.platforms.registry import PLATFORMS, Registry, build_registry, default_registry

__all__ = ["PLATFORMS", "Platform", "PlatformSettings", "Registry", "ResolveContext", "Resolver", "build_registry",
           "default_registry"]
