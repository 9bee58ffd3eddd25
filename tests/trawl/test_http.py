"""The outbound client: proxies, and the address guard's decision (no connection is opened to
any address but loopback)."""

from __future__ import annotations

import httpx
import pytest

from trawl.errors import BlockedAddress
from trawl.http import make_client
from trawl.netguard import check_host, is_blocked_ip
from trawl.platforms.base import ResolveContext
from trawl.platforms.generic import GenericResolver
from trawl.settings import NetSettings
from trawl.simulator import MediaFile, Simulator


def test_a_proxy_answers_for_real_host_names(sim: Simulator, monkeypatch: pytest.MonkeyPatch) -> None:
    """With net.proxy set, names are resolved by the proxy: here the simulator, answering for
    a host that does not exist, in absolute-form HTTP requests."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    sim.add_file("/v/clip.mp4", MediaFile("mp4", "proxied", 12_345))
    with make_client(NetSettings(proxy=sim.base_url, allow_private=True)) as client:
        item = GenericResolver().resolve("http://media.trawl-test.invalid/v/clip.mp4", ResolveContext(client, 1 << 20))
    assert item.canonical_url == "http://media.trawl-test.invalid/v/clip.mp4"
    assert item.assets[0].expected_size == 12_345
    assert sim.stats["/v/clip.mp4"].requests == 1


def test_the_proxy_itself_is_checked_by_the_guard() -> None:
    with pytest.raises(BlockedAddress, match="127.0.0.1"):
        make_client(NetSettings(proxy="http://127.0.0.1:3128", allow_private=False))


@pytest.mark.parametrize(
    ("address", "blocked"),
    [
        ("10.0.0.1", True), ("172.16.0.1", True), ("192.168.1.1", True), ("169.254.169.254", True),
        ("127.0.0.1", True), ("0.0.0.0", True), ("224.0.0.1", True), ("255.255.255.255", True),
        ("100.64.0.1", True), ("::1", True), ("fd00::1", True), ("fe80::1", True), ("::", True),
        ("ff02::1", True), ("::ffff:127.0.0.1", True), ("::ffff:10.0.0.1", True), ("2002:0a00:0001::", True),
        ("fd00:ec2::254", True), ("93.184.216.34", False), ("2606:2800:220:1:248:1893:25c8:1946", False),
        ("8.8.8.8", False),
    ],
)
def test_guard_decision_table(address: str, blocked: bool) -> None:
    assert is_blocked_ip(address) is blocked


def test_loopback_names_are_refused_unless_allowed() -> None:
    with pytest.raises(BlockedAddress, match="localhost"):
        check_host("localhost", 80, allow_private=False)  # resolves locally, connects nowhere
    check_host("localhost", 80, allow_private=True)


@pytest.mark.parametrize("spelling", ["2130706433", "0x7f000001", "0177.0.0.1", "127.1", "0x7f.1", "017700000001"])
def test_other_spellings_of_loopback_are_refused(spelling: str) -> None:
    """getaddrinfo reads these numeric forms itself (no DNS query, no connection)."""
    with pytest.raises(BlockedAddress, match="127.0.0.1"):
        check_host(spelling, 80, allow_private=False)


def test_allowed_networks_open_only_themselves() -> None:
    check_host("127.0.0.2", 80, allow_private=False, allowed_networks=("127.0.0.2/32",))
    with pytest.raises(BlockedAddress):
        check_host("127.0.0.1", 80, allow_private=False, allowed_networks=("127.0.0.2/32",))


PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY",
              "all_proxy")


@pytest.mark.parametrize("no_proxy", ["localhost", "127.0.0.1", "*"])
def test_hosts_exempted_by_no_proxy_are_still_guarded(monkeypatch: pytest.MonkeyPatch, no_proxy: str) -> None:
    """HTTP_PROXY names an allowed host; NO_PROXY sends the listed hosts around it, directly:
    those direct connections are checked exactly as without a proxy."""
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.2:9")
    monkeypatch.setenv("NO_PROXY", no_proxy)
    with Simulator(host="127.0.0.1") as inside:
        inside.add_page("/secret", "<html><title>internal admin</title></html>")
        net = NetSettings(allow_private=False, allowed_networks=["127.0.0.2/32"])
        host = "localhost" if no_proxy == "localhost" else "127.0.0.1"
        with make_client(net) as client, pytest.raises(BlockedAddress, match="127.0.0.1|::1"):
            client.get(inside.base_url.replace("127.0.0.1", host) + "/secret")
        assert inside.stats["/secret"].requests == 0


def test_every_transport_of_a_guarded_client_uses_the_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    from trawl.http import GuardedBackend

    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.2:9")
    monkeypatch.setenv("NO_PROXY", "example.invalid")
    with make_client(NetSettings(allow_private=False, allowed_networks=["127.0.0.2/32"])) as client:
        transports = [client._transport, *(t for t in client._mounts.values() if t is not None)]
        assert len(transports) >= 2  # the direct route and the proxied one
        assert all(isinstance(t._pool._network_backend, GuardedBackend) for t in transports)


def test_a_direct_connection_goes_to_the_checked_address(sim: Simulator) -> None:
    """The socket is opened to the address the guard checked, not to a second lookup."""
    from trawl.http import GuardedBackend

    port = httpx.URL(sim.base_url).port
    backend = GuardedBackend(("127.0.0.0/8",))
    assert backend.checked_addresses("127.0.0.1", port) == ["127.0.0.1"]
    stream = backend.connect_tcp("127.0.0.1", port, timeout=5)
    try:
        assert stream.get_extra_info("server_addr")[0] == "127.0.0.1"
    finally:
        stream.close()
    with pytest.raises(BlockedAddress):
        GuardedBackend(("127.0.0.2/32",)).connect_tcp("127.0.0.1", port, timeout=5)
