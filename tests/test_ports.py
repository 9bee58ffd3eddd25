"""The tests' free ports: two calls of one process never hand out overlapping ports."""

from __future__ import annotations

import pytest

from tests import ports


def test_a_run_overlapping_a_port_handed_out_before_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    tries = iter([15000, 14998, 16000])  # the second run would cover 15000, free though it still is
    monkeypatch.setattr(ports.random, "randrange", lambda start, stop: next(tries))
    monkeypatch.setattr(ports, "_all_free", lambda first, count: True)
    monkeypatch.setattr(ports, "_given", {}, raising=False)
    assert ports.free_port() == 15000
    assert ports.free_ports(4) == 16000
    assert list(ports._given) == [15000, 16000, 16001, 16002, 16003]  # kept, oldest first


def test_the_suites_processes_choose_from_shares_of_their_own() -> None:
    shares = [ports.share(f"gw{n}", 6) for n in range(6)]
    assert all(len(one) >= 1000 for one in shares)
    assert all(a.stop <= b.start for a, b in zip(shares, shares[1:]))  # apart, in order
    assert shares[0].start == ports.PORTS.start and shares[-1].stop <= ports.FIXED.start
    assert ports.share("", 1) == ports.PORTS == ports.share("gw0", 1)


def test_a_port_comes_from_this_processs_share(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "6")
    monkeypatch.setattr(ports, "_given", {}, raising=False)
    own = ports.share()
    assert all(ports.free_port() in own for _ in range(20))
