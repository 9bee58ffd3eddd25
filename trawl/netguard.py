"""Which network addresses trawl may talk to.

A crawler follows URLs that strangers hand it; by default it refuses loopback, private,
link-local, multicast, reserved and unspecified addresses so a page cannot point it at the
machine it runs on or the network behind it. ``net.allow_private`` lifts that (the simulator
runs on loopback, so the demo and tests set it).

Behind a proxy trawl never connects to the target itself, so :func:`check_proxied_target`
decides on the URL's host before the request is handed over: an address literal is judged as
it stands, a name by what the local resolver answers. A name the local resolver does not know
is handed over (a proxy that resolves for a network without its own DNS is the usual reason
to have one); where the proxy's resolver answers differently from the local one, the proxy's
answer is for the proxy to police.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import Any

from trawl.errors import BlockedAddress, NetworkError

METADATA_ADDRESSES = frozenset({ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")})


def is_blocked_ip(address: str | ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """True when ``address`` is not a public unicast address."""
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address):
        mapped = ip.ipv4_mapped or ip.sixtofour
        if mapped is not None:
            return is_blocked_ip(mapped)
        if ip.teredo is not None:
            return True
    return (
        ip in METADATA_ADDRESSES
        or ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or not ip.is_global
    )


def is_allowed(address: str, allowed_networks: tuple[str, ...] = ()) -> bool:
    """Whether trawl may connect to ``address`` given the allow-list."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if any(ip in ipaddress.ip_network(net, strict=False) for net in allowed_networks):
        return True
    return not is_blocked_ip(ip)


def check_address(host: str, address: str, *, allow_private: bool, allowed_networks: tuple[str, ...] = ()) -> None:
    """Refuse a connection already made (the address a name resolved to when connecting)."""
    if not allow_private and not is_allowed(address, allowed_networks):
        raise BlockedAddress(f"refusing {host} -> {address}: not a public address (set net.allow_private or "
                             "net.allowed_networks to allow); for a server of your own on this machine or network: "
                             "TRAWL_NET__ALLOW_PRIVATE=true")


def check_host(host: str, port: int, *, allow_private: bool, allowed_networks: tuple[str, ...] = ()) -> None:
    """Resolve ``host`` and refuse it when any address it resolves to is blocked.

    Raises:
        BlockedAddress: naming the host and the refused address.
        NetworkError: the name does not resolve.
    """
    if allow_private:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise NetworkError(f"cannot resolve {host!r}: {exc.strerror}") from None
    for info in infos:
        check_address(host, info[4][0], allow_private=False, allowed_networks=allowed_networks)


def normal_host(host: str) -> str:
    """``host`` as a resolver reads it: lower-case, without the one trailing dot of a fully
    qualified name (``169.254.169.254.`` is the metadata address, ``LOCALHOST.`` is localhost)."""
    host = host.lower()
    return host[:-1] if host.endswith(".") else host


def check_proxied_target(host: str, port: int, *, allowed_networks: tuple[str, ...] = (),
                         resolve: Callable[..., list[Any]] | None = None) -> None:
    """Refuse a target before a request for it is handed to a proxy.

    The same rule as a direct connection: an address literal outside the allowed ones, or a name
    any of whose local answers is, is refused (a name that also points inward is refused whole,
    so a resolver's answer order cannot decide it). A name that does not resolve locally passes:
    only the proxy can resolve it. ``resolve`` defaults to :func:`socket.getaddrinfo`, looked up at
    each call (tests inject theirs).

    The host is judged as :func:`normal_host` writes it: a trailing dot or capitals would
    otherwise pass an address literal, or a name the local resolver knows only without them, on
    to a proxy that reads it as the same address.

    Raises:
        BlockedAddress: naming the host and the refused address.
    """
    label = f"{host} (for the proxy)"
    host = normal_host(host)
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    else:
        check_address(label, host, allow_private=False, allowed_networks=allowed_networks)
        return
    try:
        infos = (resolve or socket.getaddrinfo)(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return
    for info in infos:
        check_address(label, str(info[4][0]), allow_private=False, allowed_networks=allowed_networks)
