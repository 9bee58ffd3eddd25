"""The simulator's fault injection over real sockets."""

import time

import httpx
import pytest

from trawl.simulator import MediaFile, Simulator
from trawl.simulator import faults


@pytest.fixture
def client():
    with httpx.Client() as c:
        yield c


def test_status_sequence_then_recovery(sim: Simulator, client: httpx.Client) -> None:
    sim.add_file("/a.mp4", MediaFile("mp4", "a", 1000))
    sim.faults.add(r"/a\.mp4", faults.status(500, 3))
    assert [client.get(sim.url("/a.mp4")).status_code for _ in range(4)] == [500, 500, 500, 200]


def test_rate_limit_reset_html_and_stall(sim: Simulator, client: httpx.Client) -> None:
    sim.add_file("/a.mp4", MediaFile("mp4", "a", 1000))
    sim.faults.add(r"/a\.mp4", faults.rate_limited(3) + faults.reset() + faults.html_error() + faults.stall(0.3))
    limited = client.get(sim.url("/a.mp4"))
    assert (limited.status_code, limited.headers["retry-after"]) == (429, "3")
    with pytest.raises(httpx.TransportError):
        client.get(sim.url("/a.mp4"))
    html = client.get(sim.url("/a.mp4"))
    assert html.status_code == 200 and html.content.startswith(b"<!DOCTYPE html>")
    started = time.monotonic()
    assert client.get(sim.url("/a.mp4")).status_code == 200
    assert time.monotonic() - started >= 0.3


def test_outage_window(sim: Simulator, client: httpx.Client) -> None:
    sim.add_file("/a.mp4", MediaFile("mp4", "a", 1000))
    sim.faults.outage(r"/.*", 0.5, status_code=502)
    assert client.get(sim.url("/a.mp4")).status_code == 502
    time.sleep(0.6)
    assert client.get(sim.url("/a.mp4")).status_code == 200


def test_failure_rate_is_a_share_of_requests(sim: Simulator, client: httpx.Client) -> None:
    sim.add_file("/a.mp4", MediaFile("mp4", "a", 100))
    sim.faults.rule(r"/a\.mp4").failure_rate = 0.2
    codes = [client.get(sim.url("/a.mp4")).status_code for _ in range(50)]
    assert codes.count(500) == 10
