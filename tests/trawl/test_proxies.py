"""Several proxies (``net.proxies``): the rotation and rest as pure logic, then real loopback proxies
(simulators answering absolute-form requests for any host, and proxies that refuse)."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.trawl.test_http_client import PROXY_VARS, RecordingProxy
from trawl.errors import BlockedAddress
from trawl.http_client import make_client, proxy_list
from trawl.proxies import ROUTE, ProxyPool, check_proxy_url
from trawl.settings import ConfigError, NetSettings, load_settings
from trawl.shared_state import MemoryState
from trawl.simulator import MediaFile, Response, Simulator
from trawl.storage.catalog import Catalog
from trawl.storage.catalog_state import CatalogState

A, B, C = "http://a.test:1", "http://b.test:2", "http://c.test:3"


def test_each_platform_walks_the_list_on_its_own() -> None:
    pool = ProxyPool([A, B, C])
    assert [pool.pick("bilibili", 0) for _ in range(4)] == [A, B, C, A]
    assert [pool.pick("weibo", 0) for _ in range(2)] == [A, B]  # not where bilibili's walk is
    assert pool.pick("bilibili", 0) == B


def test_a_proxy_that_cannot_be_reached_rests_and_comes_back() -> None:
    pool = ProxyPool([A, B, C], rest_s=60)
    pool.unreachable(B, now=100, why="refused")
    assert [pool.pick("x", 110) for _ in range(4)] == [A, C, A, C]
    assert pool.resting(110) == [B] and pool.health[B].last_failure == "refused"
    assert [pool.pick("x", 160) for _ in range(3)] == [A, B, C]  # its rest is over
    assert pool.resting(160) == []


def test_only_a_run_of_its_own_server_errors_rests_a_proxy() -> None:
    pool = ProxyPool([A, B], rest_s=30, failures_to_rest=3)
    pool.server_error(A, 0, "502")
    pool.server_error(A, 0, "502")
    pool.answered(A)  # a good answer between: the run starts over
    pool.server_error(A, 0, "502")
    pool.server_error(A, 0, "502")
    assert pool.resting(1) == []
    pool.server_error(A, 0, "502")
    assert pool.resting(1) == [A] and pool.health[A].rests == 1


def test_when_every_proxy_rests_the_one_back_soonest_is_tried() -> None:
    pool = ProxyPool([A, B, C], rest_s=60)
    pool.unreachable(A, 10, "x")
    pool.unreachable(B, 0, "x")
    pool.unreachable(C, 20, "x")
    assert pool.pick("x", 30) == B
    assert pool.pick("x", 30, exclude=frozenset({B})) == A  # B was tried for this request already
    assert pool.pick("x", 30, exclude=frozenset({A, B, C})) in (A, B, C)


@pytest.mark.parametrize("entry, says", [
    ("socks5://h:1080", "give http://HOST:PORT"), ("127.0.0.1:3128", "give http://HOST:PORT"),
    ("http://h:99999", "the port is not a number"), ("http://h:port", "the port is not a number"),
    ("http://:8080", "no host"), ("http://h:1/x?y", "without a path"), ("http://user:pw@h:x", r"'http://\*\*\*@h'"),
])
def test_an_entry_that_does_not_parse_is_refused(entry: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        check_proxy_url(entry)


def test_the_list_is_checked_at_start_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAWL_NET__PROXIES", '["http://93.184.215.14:3128", "http://u:secret@10.0.0.8:3128"]')
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert str(err.value) == (
        "invalid configuration: net.proxies: Value error, the proxy http://***@10.0.0.8:3128 is a private address, "
        "refused by the address guard; add it to net.allowed_networks (or set net.allow_private) "
        "(got ['http://93.184.215.14:3128', 'http://***@10.0.0.8:3128'])")
    monkeypatch.setenv("TRAWL_NET__PROXIES", '["http://u:secret@proxy.test:x"]')
    with pytest.raises(ConfigError, match=r"the port is not a number") as err:
        load_settings()
    assert "secret" not in str(err.value)
    assert NetSettings(proxies=["http://10.0.0.8:3128"], allowed_networks=["10.0.0.0/24"]).proxies
    assert NetSettings(proxies=["http://10.0.0.8:3128"], allow_private=True).proxies
    # A name is resolved when the client is made: localhost is refused as the single proxy is.
    with pytest.raises(BlockedAddress, match="the proxy localhost:3128 is refused by the address guard"):
        make_client(NetSettings(proxies=["http://93.184.215.14:3128", "http://localhost:3128"]))
    assert proxy_list(NetSettings(proxy=A, proxies=[B, A])) == [A, B]
    assert proxy_list(NetSettings(proxy=A)) == []  # one proxy: as before


@pytest.fixture
def no_env_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)


def test_requests_rotate_over_live_proxies_and_go_on_past_a_dead_one(no_env_proxies: None) -> None:
    """Two simulators stand for proxies (they answer absolute-form requests for any host); the
    third address refuses connections. No request fails: the one sent to the dead proxy is sent
    again through the next, and the dead one rests."""
    with Simulator() as first, Simulator() as second, RecordingProxy() as dead:
        dead.__exit__()  # its port now refuses
        for sim in (first, second):
            sim.add_file("/v/clip.mp4", MediaFile("mp4", "proxied", 1000))
        net = NetSettings(proxies=[first.base_url, dead.url, second.base_url], allowed_networks=["127.0.0.1/32"])
        with make_client(net) as client:
            pool = client._transport.pool  # type: ignore[attr-defined]
            token = ROUTE.set("bilibili")
            try:
                statuses = [client.get("http://media.trawl-test.invalid/v/clip.mp4").status_code for _ in range(4)]
            finally:
                ROUTE.reset(token)
            weibo = client.get("http://media.trawl-test.invalid/v/clip.mp4")  # its own walk: from the first
        assert statuses == [200] * 4 and weibo.status_code == 200
        assert (first.stats["/v/clip.mp4"].requests, second.stats["/v/clip.mp4"].requests) == (3, 2)
        assert pool.resting(time.monotonic()) == [dead.url] and pool.health[dead.url].rests == 1


def test_a_proxy_that_wants_credentials_rests_and_its_request_goes_through_another(no_env_proxies: None) -> None:
    with Simulator() as good, RecordingProxy(b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                                             b"Proxy-Authenticate: Basic realm=\"p\"\r\nContent-Length: 0\r\n") as auth:
        good.add_file("/x.jpg", MediaFile("jpeg", "x", 500))
        net = NetSettings(proxies=[auth.url, good.base_url], allowed_networks=["127.0.0.1/32"])
        with make_client(net) as client:
            answer = client.get("http://cdn.trawl-test.invalid/x.jpg")
            pool = client._transport.pool  # type: ignore[attr-defined]
            assert answer.status_code == 200 and len(auth.asked) == 1
            assert pool.health[auth.url].rests == 1 and "407" in pool.health[auth.url].last_failure
            client.get("http://cdn.trawl-test.invalid/x.jpg")
        assert len(auth.asked) == 1  # resting: not asked again


def test_a_run_of_refused_connects_rests_a_proxy_but_an_origins_5xx_does_not(no_env_proxies: None) -> None:
    """https goes through CONNECT: proxies answering it 502 rest after two in a row (the request
    was tried through each). A 503 an origin sends through a proxy is the origin's: it rests
    nothing."""
    with RecordingProxy() as one, RecordingProxy() as two:
        net = NetSettings(proxies=[one.url, two.url], allowed_networks=["127.0.0.1/32"], proxy_failures=2)
        with make_client(net) as client:
            pool = client._transport.pool  # type: ignore[attr-defined]
            for rests in (0, 1):
                with pytest.raises(httpx.ProxyError, match="502"):
                    client.get("https://video.trawl-test.invalid/v.mp4")
                assert [pool.health[url].rests for url in (one.url, two.url)] == [rests, rests]
        assert [line.split()[0] for line in one.asked + two.asked] == ["CONNECT"] * 4
        assert "CONNECT answered 502" in pool.health[one.url].last_failure
    with Simulator() as origin:
        origin.add_exact("/busy", lambda req: Response(503, {"Content-Type": "text/plain"}, b"busy"))
        net = NetSettings(proxies=[origin.base_url], allowed_networks=["127.0.0.1/32"], proxy_failures=1)
        with make_client(net) as client:
            assert [client.get("http://api.trawl-test.invalid/busy").status_code for _ in range(3)] == [503] * 3
            assert client._transport.pool.health[origin.base_url].rests == 0  # type: ignore[attr-defined]


def test_a_request_with_a_body_is_not_sent_again_through_another_proxy(no_env_proxies: None) -> None:
    """A POST's body may have gone out before the failure: the failure goes on to the caller (the
    activity's retry sends it again) and the proxy rests all the same."""
    with Simulator() as live, RecordingProxy() as dead:
        dead.__exit__()
        net = NetSettings(proxies=[dead.url, live.base_url], allowed_networks=["127.0.0.1/32"])
        with make_client(net) as client:
            with pytest.raises(httpx.ConnectError):
                client.post("http://api.trawl-test.invalid/x", content=b"form")
            assert client._transport.pool.resting(time.monotonic()) == [dead.url]  # type: ignore[attr-defined]
        assert live.stats == {} or all(stat.requests == 0 for stat in live.stats.values())


def test_a_proxy_rested_by_one_worker_is_rested_for_every_worker_sharing_the_state() -> None:
    shared, wall = MemoryState(), [1000.0]
    first = ProxyPool([A, B], rest_s=60, shared=shared, wall=lambda: wall[0])
    second = ProxyPool([A, B], rest_s=60, shared=shared, wall=lambda: wall[0])  # another process: its own clock
    first.unreachable(A, now=5, why="refused")
    assert [second.pick("x", 500) for _ in range(3)] == [B, B, B]
    assert second.resting(500) == [A] and second.health[A].resting_until == 560  # until the same time
    wall[0] += 61
    later = ProxyPool([A, B], rest_s=60, shared=shared, wall=lambda: wall[0])
    assert [later.pick("x", 0) for _ in range(2)] == [A, B]  # the rest is over for everyone


def test_proxy_rests_shared_through_the_catalog(catalog_url: str) -> None:
    catalogs = [Catalog(catalog_url), Catalog(catalog_url)]
    catalogs[0].create_schema()
    first, second = (ProxyPool([A, B], rest_s=60, shared=CatalogState(catalog)) for catalog in catalogs)
    first.unreachable(B, now=0, why="CONNECT refused: http://user:secret@b.test:2")
    assert [second.pick("x", 0) for _ in range(2)] == [A, A] and second.resting(0) == [B]
    assert "secret" not in str(CatalogState(catalogs[1]).items(""))  # the proxy's password is not stored
    for catalog in catalogs:
        catalog.close()
