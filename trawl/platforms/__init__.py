"""Resolvers: one module per platform, the generic resolver last in the registry."""

from trawl.platforms.base import ResolveContext, Resolver
from trawl.platforms.registry import Registry, default_registry

__all__ = ["Registry", "ResolveContext", "Resolver", "default_registry"]
