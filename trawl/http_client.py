"""The one outbound HTTP client of a process, built from the network settings.

The address guard sits below httpx, in the network backend that opens every TCP connection of
the client: the host is resolved there, every address it resolves to is checked, and the socket
is opened to a checked address. So whatever route httpx picks for a request (direct, through
``net.proxy`` or one of ``net.proxies``, through ``HTTP(S)_PROXY``, or direct again because
``NO_PROXY`` lists the host),
the connection actually made is to an allowed address, and a name cannot resolve differently
between the check and the connect (DNS rebinding).

On a proxied route that connection is to the proxy, which then reaches the target for us; so
each request a proxy would carry is checked first, on its URL's host
(:func:`trawl.netguard.check_proxied_target`), every hop of a redirect included. What the proxy
resolves a name to is beyond trawl's sight: rebinding at the proxy is the proxy's to refuse.
"""

from __future__ import annotations

import functools
import os
import socket
import ssl
from collections.abc import Iterable
from typing import TYPE_CHECKING

import httpcore
import httpx

from trawl.errors import BlockedAddress, TooLarge
from trawl.netguard import check_address, check_host, check_proxied_target

if TYPE_CHECKING:  # the settings are handed in: loading them would load every platform
    from trawl.settings import NetSettings
    from trawl.shared_state import SharedState

# Idle connections kept open for reuse; the rest of the pool closes once its request is done.
MAX_KEEPALIVE_CONNECTIONS = 16


def proxy_url(net: NetSettings) -> str | None:
    """The proxy in use: the setting, else the environment's (as httpx would pick it)."""
    if net.proxy:
        return net.proxy
    return os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy") or \
        os.environ.get("HTTP_PROXY") or os.environ.get("http_proxy") or None


class GuardedBackend(httpcore.NetworkBackend):
    """Opens TCP connections only to addresses the guard allows, whoever the peer is."""

    def __init__(self, allowed_networks: tuple[str, ...]) -> None:
        self._inner = httpcore.SyncBackend()
        self._allowed = allowed_networks

    def checked_addresses(self, host: str, port: int) -> list[str]:
        """Every address ``host`` resolves to, each allowed by the guard, in resolver order.

        Raises:
            BlockedAddress: any of them is refused (a name that also points inward is refused
                whole, so a resolver's answer order cannot decide it).
            httpcore.ConnectError: the name does not resolve (as httpcore reports it itself).
        """
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        for address in addresses:
            check_address(host, address, allow_private=False, allowed_networks=self._allowed)
        return addresses

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None) -> httpcore.NetworkStream:
        addresses = self.checked_addresses(host, port)
        last_error: Exception | None = None
        for address in addresses:
            try:
                return self._inner.connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                               socket_options=socket_options)
            except httpcore.ConnectError as exc:
                last_error = exc
        assert last_error is not None  # getaddrinfo never answers an empty list without raising
        raise last_error

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None) -> httpcore.NetworkStream:
        return self._inner.connect_unix_socket(path, timeout=timeout, socket_options=socket_options)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class ProxiedTargetGuard(httpx.BaseTransport):
    """A proxy's transport that first refuses targets the guard would refuse on a direct route."""

    def __init__(self, inner: httpx.BaseTransport, allowed_networks: tuple[str, ...]) -> None:
        self.inner = inner
        self._allowed = allowed_networks

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        check_proxied_target(url.host, url.port or (443 if url.scheme == "https" else 80),
                             allowed_networks=self._allowed)
        return self.inner.handle_request(request)

    def __enter__(self) -> ProxiedTargetGuard:
        self.inner.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.inner.__exit__(*exc)

    def close(self) -> None:
        self.inner.close()


def guard_proxied_targets(client: httpx.Client, allowed_networks: tuple[str, ...]) -> None:
    """Check the target of every request ``client`` would hand to a proxy before it is handed over.

    httpx keeps a proxy's transport in ``_mounts`` (a ``None`` there sends the matching hosts
    direct, to the already guarded default transport); the client was built without mounts of
    its own, so every transport there is a proxy's.
    """
    for pattern, transport in client._mounts.items():
        if transport is not None:
            client._mounts[pattern] = ProxiedTargetGuard(transport, allowed_networks)


def guard_connections(client: httpx.Client, backend: httpcore.NetworkBackend) -> None:
    """Route every connection of ``client``, on every transport httpx may pick, through ``backend``.

    httpx has no public hook for the network backend; the pools it builds keep it in
    ``_network_backend``. Fails closed: a transport of another shape (an httpx upgrade) stops
    the client from being built rather than leaving a route unguarded.
    """
    transports = [client._transport, *(t for t in client._mounts.values() if t is not None)]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        if not isinstance(transport, httpx.HTTPTransport) or not hasattr(pool, "_network_backend"):
            raise RuntimeError(f"cannot guard connections of {type(transport).__name__}: check the httpx version")
        pool._network_backend = backend


def proxy_list(net: NetSettings) -> list[str]:
    """The proxies ``net.proxies`` rotates over (``net.proxy`` first when both are set); empty when
    ``net.proxies`` is, and the single proxy (or none) is used as before."""
    if not net.proxies:
        return []
    return list(dict.fromkeys([*([net.proxy] if net.proxy else []), *(p.strip() for p in net.proxies)]))


def check_proxy(proxy: str, net: NetSettings) -> None:
    """Refuse a proxy whose own address the guard would refuse (a name is resolved for it).

    Raises:
        BlockedAddress: naming the proxy (never its password) and what to do.
    """
    if net.allow_private:
        return
    parts = httpx.URL(proxy)
    try:
        check_host(parts.host, parts.port or 80, allow_private=False, allowed_networks=tuple(net.allowed_networks))
    except BlockedAddress as err:
        raise BlockedAddress(f"the proxy {parts.host}:{parts.port or 80} is refused by the address guard "
                             f"({err.message.split(': ', 1)[-1]}); add its address to net.allowed_networks "
                             "or unset the proxy") from None


@functools.cache
def tls_context(ca_bundle: str) -> ssl.SSLContext:
    """The TLS context of this process's clients with ``ca_bundle`` (a file or a directory of CA
    certificates; "" for httpx's default, certifi's unless SSL_CERT_FILE or SSL_CERT_DIR says
    otherwise). Made once: a context reads its whole CA file, 28 ms of CPU here with OpenSSL 3, which
    every client made for a listing's expansion, an API request or a notification paid again; a
    context is safe to share between clients and threads."""
    if not ca_bundle:
        return httpx.create_ssl_context()
    if os.path.isdir(ca_bundle):
        return ssl.create_default_context(capath=ca_bundle)
    return ssl.create_default_context(cafile=ca_bundle)


def make_client(net: NetSettings, shared: SharedState | None = None) -> httpx.Client:
    """A synchronous client with timeouts, redirects bounded and every connection checked by the guard.

    Its pool holds ``net.max_connections`` connections (0, a NetSettings made outside
    :class:`~trawl.settings.Settings`: the default worker's figure); a request that finds none free
    within ``net.connect_timeout`` fails with httpx's PoolTimeout. With ``net.proxies`` each proxy
    has a pool of that size (:mod:`trawl.proxy_rotation`), and their rests are shared through
    ``shared`` (a worker's catalog: every process rests a proxy one of them rested).

    Raises:
        BlockedAddress: a configured proxy's own address is refused (said before anything runs).
    """
    allowed = tuple(net.allowed_networks)
    rotated = proxy_list(net)
    for proxy in rotated or [p for p in [proxy_url(net)] if p]:
        check_proxy(proxy, net)
    timeout = httpx.Timeout(
        connect=net.connect_timeout.total_seconds(),
        read=net.read_timeout.total_seconds(),
        write=net.read_timeout.total_seconds(),
        pool=net.connect_timeout.total_seconds(),
    )
    limits = httpx.Limits(max_connections=net.pool_size, max_keepalive_connections=MAX_KEEPALIVE_CONNECTIONS)
    common = dict(timeout=timeout, follow_redirects=True, max_redirects=net.max_redirects,
                  headers={"User-Agent": net.user_agent})
    if rotated:
        return httpx.Client(**common, transport=_rotating(rotated, net, limits, shared))  # type: ignore[arg-type]
    client = httpx.Client(**common, limits=limits, proxy=net.proxy or None,  # type: ignore[arg-type]
                          verify=tls_context(net.ca_bundle))
    if not net.allow_private:
        guard_connections(client, GuardedBackend(allowed))
        guard_proxied_targets(client, allowed)
    return client


def _rotating(proxies: list[str], net: NetSettings, limits: httpx.Limits,
              shared: SharedState | None) -> httpx.BaseTransport:
    """``net.proxies``' transport: one guarded transport per proxy under :class:`RotatingProxies`."""
    from trawl.proxies import ProxyPool
    from trawl.proxy_rotation import RotatingProxies

    allowed = tuple(net.allowed_networks)
    transports: dict[str, httpx.BaseTransport] = {}
    for proxy in proxies:
        transport = httpx.HTTPTransport(proxy=proxy, limits=limits, verify=tls_context(net.ca_bundle))
        if not net.allow_private:
            pool = getattr(transport, "_pool", None)
            if not hasattr(pool, "_network_backend"):  # fails closed, as guard_connections does
                raise RuntimeError("cannot guard a proxy's connections: check the httpx version")
            pool._network_backend = GuardedBackend(allowed)  # type: ignore[union-attr]
            transports[proxy] = ProxiedTargetGuard(transport, allowed)
        else:
            transports[proxy] = transport
    pool = ProxyPool(proxies, rest_s=net.proxy_rest.total_seconds(), failures_to_rest=net.proxy_failures,
                     shared=shared)
    return RotatingProxies(pool, transports)


def read_limited(resp: httpx.Response, limit: int, url: str) -> bytes:
    """A small answer's body (a page, a playlist, a key) held whole, at most ``limit`` bytes:
    :class:`TooLarge` when it announces or sends more; an error answer is cut at the limit."""
    declared = resp.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit and resp.status_code < 400:
        raise TooLarge(f"page {url} announces {declared} bytes, over the {limit}-byte page limit")
    buf = bytearray()
    for chunk in resp.iter_bytes():
        buf += chunk
        if len(buf) > limit:
            if resp.status_code >= 400:
                break
            raise TooLarge(f"page {url} is larger than the {limit}-byte page limit")
    return bytes(buf)
