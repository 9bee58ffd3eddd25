"""The one outbound HTTP client of a process, built from the network settings."""

from __future__ import annotations

import os

import httpx

from trawl.errors import BlockedAddress
from trawl.netguard import check_address, check_host
from trawl.settings import NetSettings


def proxy_url(net: NetSettings) -> str | None:
    """The proxy in use: the setting, else the environment's (as httpx would pick it)."""
    if net.proxy:
        return net.proxy
    return os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy") or \
        os.environ.get("HTTP_PROXY") or os.environ.get("http_proxy") or None


def make_client(net: NetSettings) -> httpx.Client:
    """A synchronous client with timeouts, redirects bounded and every hop checked by the guard.

    With a proxy the proxy resolves names, so the guard checks the proxy's own address instead
    of each target's.
    """
    allow_private = net.allow_private
    allowed = tuple(net.allowed_networks)
    proxy = proxy_url(net)
    if proxy:
        parts = httpx.URL(proxy)
        check_host(parts.host, parts.port or 80, allow_private=allow_private, allowed_networks=allowed)

    def guard(request: httpx.Request) -> None:
        if proxy:
            return
        check_host(request.url.host, request.url.port or (443 if request.url.scheme == "https" else 80),
                   allow_private=allow_private, allowed_networks=allowed)

    def connected(response: httpx.Response) -> None:
        # The name may resolve differently at connect time than when the guard looked it up
        # (DNS rebinding): check the address actually connected to before reading the body.
        if proxy or allow_private:
            return
        stream = response.extensions.get("network_stream")
        peer = stream.get_extra_info("server_addr") if stream is not None else None
        if peer:
            try:
                check_address(response.request.url.host, str(peer[0]), allow_private=False,
                              allowed_networks=allowed)
            except BlockedAddress:
                response.close()
                raise

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
        event_hooks={"request": [guard], "response": [connected]},
        limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
        proxy=net.proxy or None,
        verify=net.ca_bundle or True,
    )
