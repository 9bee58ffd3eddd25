"""The one outbound HTTP client of a process, built from the network settings."""

from __future__ import annotations

import httpx

from trawl.netguard import check_host
from trawl.settings import NetSettings


def make_client(net: NetSettings) -> httpx.Client:
    """A synchronous client with timeouts, redirects bounded and every hop checked by the guard."""
    allow_private = net.allow_private

    def guard(request: httpx.Request) -> None:
        check_host(request.url.host, request.url.port or (443 if request.url.scheme == "https" else 80),
                   allow_private=allow_private)

    timeout = httpx.Timeout(
        connect=net.connect_timeout.total_seconds(),
        read=net.read_timeout.total_seconds(),
        write=net.read_timeout.total_seconds(),
        pool=net.connect_timeout.total_seconds(),
    )
    return httpx.Client(
        timeout=timeout,
        follow_redirects=True,
        max_redirects=net.max_redirects,
        headers={"User-Agent": net.user_agent},
        event_hooks={"request": [guard]},
        limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
    )
