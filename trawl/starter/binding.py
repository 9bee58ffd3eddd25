"""Where the API may listen."""

from __future__ import annotations

import ipaddress

from trawl.settings import Settings


class ApiConfigError(Exception):
    """The API cannot start with these settings."""


def require_safe_binding(settings: Settings) -> None:
    """Refuse to listen beyond loopback without a token."""
    host = settings.api.host
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback and not settings.api.token:
        raise ApiConfigError(f"refusing to listen on {host} without api.token (set TRAWL_API__TOKEN)")
