"""The outbound client: proxies, and the address guard's decision (no connection is opened to
any address but loopback)."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

from trawl.errors import BlockedAddress
from trawl.http_client import make_client
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
    from trawl.http_client import GuardedBackend, ProxiedTargetGuard

    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.2:9")
    monkeypatch.setenv("NO_PROXY", "example.invalid")
    with make_client(NetSettings(allow_private=False, allowed_networks=["127.0.0.2/32"])) as client:
        proxied = [t for t in client._mounts.values() if t is not None]
        assert proxied and all(isinstance(t, ProxiedTargetGuard) for t in proxied)  # targets checked too
        transports = [client._transport, *(t.inner for t in proxied)]
        assert len(transports) >= 2  # the direct route and the proxied one
        assert all(isinstance(t._pool._network_backend, GuardedBackend) for t in transports)


def test_a_direct_connection_goes_to_the_checked_address(sim: Simulator) -> None:
    """The socket is opened to the address the guard checked, not to a second lookup."""
    from trawl.http_client import GuardedBackend

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


# -- targets handed to a proxy -------------------------------------------------------------------
class RecordingProxy:
    """A loopback "proxy" that writes down the request line of whatever it is asked (absolute-form
    GET or CONNECT) and answers 502: it never forwards, so no test reaches past loopback."""

    def __init__(self, answer: bytes = b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n") -> None:
        import socketserver
        import threading

        self.asked: list[str] = []
        asked = self.asked

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                asked.append(self.rfile.readline().decode("latin-1").strip())
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                self.wfile.write(answer + b"Connection: close\r\n\r\n")

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _proxied_client(proxy: RecordingProxy, how: str, monkeypatch: pytest.MonkeyPatch) -> httpx.Client:
    """A guarded client whose proxy (allowed by net.allowed_networks) is set as ``how`` says."""
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    net = NetSettings(allow_private=False, allowed_networks=["127.0.0.1/32"])
    if how == "setting":
        net = net.model_copy(update={"proxy": proxy.url})
    else:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    return make_client(net)


@pytest.mark.parametrize("how", ["setting", "environment"])
@pytest.mark.parametrize(
    "url",
    ["http://169.254.169.254/latest/meta-data/", "https://169.254.169.254/latest", "http://10.0.0.1/x",
     "http://[fd00:ec2::254]/latest", "http://192.168.1.1:8080/admin", "http://0x7f000002/x", "http://127.2/x"],
)
def test_a_proxy_is_never_asked_for_a_blocked_target(monkeypatch: pytest.MonkeyPatch, how: str, url: str) -> None:
    """The proxy's own address is allowed, the target's is not: refused before the proxy hears of it
    (a numeric spelling of 127.0.0.2 is read as the resolver reads it)."""
    with RecordingProxy() as proxy, _proxied_client(proxy, how, monkeypatch) as client:
        with pytest.raises(BlockedAddress, match="not a public address"):
            client.get(url)
        assert proxy.asked == []


def test_a_proxy_is_never_asked_for_a_name_that_resolves_inward(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name is resolved locally to decide: one answer inside is enough to refuse it, as on the
    direct route (the answers are injected; nothing is looked up)."""
    real = socket.getaddrinfo
    answers = {"inward.trawl-test.invalid": ["93.184.216.34", "10.1.2.3"]}

    def resolver(host, port, *args, **kwargs):  # noqa: ANN001, ANN202 - getaddrinfo's signature
        if host in answers:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in answers[host]]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    with RecordingProxy() as proxy, _proxied_client(proxy, "setting", monkeypatch) as client:
        with pytest.raises(BlockedAddress, match="10.1.2.3"):
            client.get("http://inward.trawl-test.invalid/latest")
        assert proxy.asked == []


def test_a_redirect_through_the_proxy_is_checked_at_every_hop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The proxy relays a page's redirect to the metadata address: the second hop is refused
    before the proxy is asked for it."""
    answer = b"HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/latest\r\nContent-Length: 0\r\n"
    with RecordingProxy(answer) as proxy, _proxied_client(proxy, "setting", monkeypatch) as client:
        with pytest.raises(BlockedAddress, match="169.254.169.254"):
            client.get("http://93.184.216.34/moved")
        assert proxy.asked == ["GET http://93.184.216.34/moved HTTP/1.1"]


def test_allowed_targets_still_go_to_the_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A public address, an address net.allowed_networks opens, and a name the local resolver does
    not know (the proxy may: that is what it is for) are all handed to the proxy."""
    real = socket.getaddrinfo

    def resolver(host, port, *args, **kwargs):  # noqa: ANN001, ANN202 - getaddrinfo's signature
        if str(host).endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    with RecordingProxy() as proxy, _proxied_client(proxy, "setting", monkeypatch) as client:
        assert client.get("http://93.184.216.34/x").status_code == 502
        assert client.get("http://127.0.0.1:9/allowed").status_code == 502
        assert client.get("http://media.trawl-test.invalid/v").status_code == 502
        with pytest.raises(httpx.ProxyError):
            client.get("https://93.184.216.34/tls")
    assert proxy.asked == ["GET http://93.184.216.34/x HTTP/1.1", "GET http://127.0.0.1:9/allowed HTTP/1.1",
                           "GET http://media.trawl-test.invalid/v HTTP/1.1", "CONNECT 93.184.216.34:443 HTTP/1.1"]


@pytest.mark.parametrize(
    ("host", "answers", "allowed", "refused"),
    [
        ("169.254.169.254", None, (), True),
        ("10.0.0.1", None, (), True),
        ("10.0.0.1", None, ("10.0.0.0/8",), False),
        ("fd00:ec2::254", None, (), True),
        ("93.184.216.34", None, (), False),
        ("inward.example", ["10.0.0.1"], (), True),
        ("mixed.example", ["93.184.216.34", "169.254.169.254"], (), True),
        ("public.example", ["93.184.216.34"], (), False),
        ("unknown.example", [], (), False),  # the local resolver does not know it: the proxy decides
    ],
)
def test_proxied_target_decision(host: str, answers: list[str] | None, allowed: tuple[str, ...],
                                 refused: bool) -> None:
    from trawl.netguard import check_proxied_target

    def resolver(name, port, *args, **kwargs):  # noqa: ANN001, ANN202 - getaddrinfo's signature
        assert answers is not None, f"an address literal {name} was looked up"
        if not answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in answers]

    if refused:
        with pytest.raises(BlockedAddress):
            check_proxied_target(host, 80, allowed_networks=allowed, resolve=resolver)
    else:
        check_proxied_target(host, 80, allowed_networks=allowed, resolve=resolver)


@pytest.mark.parametrize("host", ["169.254.169.254.", "10.0.0.1.", "127.0.0.1.", "localhost.", "LOCALHOST",
                                  "LocalHost.", "FD00:EC2::254"])
def test_a_trailing_dot_or_capitals_do_not_pass_a_target_to_the_proxy(host: str) -> None:
    """Issue 38, item 13: ``169.254.169.254.`` is no address literal and ``localhost.`` no name the
    resolver knows as written, so both went to the proxy, which reads them as the metadata address
    and loopback. The host is judged as a resolver reads it (a resolver that knows ``localhost``
    only as written stands in; nothing is looked up)."""
    from trawl.netguard import check_proxied_target, normal_host

    def resolver(name, port, *args, **kwargs):  # noqa: ANN001, ANN202 - getaddrinfo's signature
        if name == "localhost":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    with pytest.raises(BlockedAddress, match="not a public address"):
        check_proxied_target(host, 80, resolve=resolver)
    assert normal_host("Media.Example.COM.") == "media.example.com" and normal_host("a..") == "a."


# -- the connection pool -----------------------------------------------------------------------
def test_a_full_pool_is_classified_as_such_naming_the_setting(sim: Simulator) -> None:
    """One connection, held by a request the server stalls: the next request waits for the pool
    (net.connect_timeout), and the failure says the pool was full and which setting sizes it."""
    import threading

    from trawl.errors import classify_exception
    from trawl.simulator import faults

    sim.add_page("/slow", "<html>slow</html>")
    sim.add_page("/next", "<html>next</html>")
    stalled = sim.faults.add(r"/slow", faults.stall(1.5))
    net = NetSettings(allow_private=True, max_connections=1, connect_timeout="200ms")
    with make_client(net) as client:
        holder = threading.Thread(target=client.get, args=(sim.base_url + "/slow",))
        holder.start()
        try:
            deadline = time.monotonic() + 5
            while stalled.steps and time.monotonic() < deadline:  # the server took the request and stalls
                time.sleep(0.01)
            with pytest.raises(httpx.PoolTimeout) as caught:
                client.get(sim.base_url + "/next")
        finally:
            holder.join()
    error = classify_exception(caught.value)
    assert error.retryable
    assert "net.max_connections" in error.message and "pool" in error.message
    assert sim.stats["/next"].requests == 0


def test_the_clients_of_a_process_share_one_tls_context_per_ca_bundle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a CA bundle costs about 0.1 s of CPU: once a process and bundle, not once a client
    (a listing's expansion, an API request and a notification each make one)."""
    import ssl

    import certifi

    from trawl.http_client import tls_context

    bundle = NetSettings(ca_bundle=certifi.where())  # its validation reads the file once, before the count
    made: list[dict[str, object]] = []
    create = ssl.create_default_context

    def counted(*args: object, **kwargs: object) -> ssl.SSLContext:
        made.append(kwargs)
        return create(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl, "create_default_context", counted)
    tls_context.cache_clear()
    try:
        clients = [make_client(NetSettings()) for _ in range(3)] + [make_client(bundle) for _ in range(2)]
        for client in clients:
            client.close()
        assert len(made) == 2, made  # the default's, and the bundle's
        assert made[1].get("cafile") == certifi.where()
        context = tls_context(certifi.where())
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    finally:
        tls_context.cache_clear()


def test_the_settings_check_of_a_ca_bundle_reads_it_for_the_clients_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process with net.ca_bundle reads the bundle once: its settings' check (that it holds a
    readable certificate) makes the context its clients then use."""
    import ssl

    import certifi

    from trawl.http_client import tls_context

    read: list[object] = []
    create = ssl.create_default_context

    def counted(*args: object, **kwargs: object) -> ssl.SSLContext:
        read.append(kwargs.get("cafile"))
        return create(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl, "create_default_context", counted)
    tls_context.cache_clear()
    try:
        bundle = NetSettings(ca_bundle=certifi.where())
        for client in [make_client(bundle) for _ in range(2)]:
            client.close()
        assert read == [certifi.where()]
    finally:
        tls_context.cache_clear()
