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
