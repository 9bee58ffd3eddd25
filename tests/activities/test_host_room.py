"""A first fetch claims its own worker's host while that host has room (trawl.activities.host)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import trawl.activities.host as host
from trawl.activities.host import PROMISE_S, HostRoom, claims_a_host
from trawl.models import LIVE_PROTOCOL, Asset, Resolved


def test_a_host_is_claimed_while_its_work_and_its_claims_leave_a_slot() -> None:
    room = HostRoom("trawl-host-a", 2)
    assert [room.claim("one"), room.claim("two"), room.claim("three")] == ["trawl-host-a", "trawl-host-a", ""]
    room.began("one")  # the first claimed item's activity came: it runs, its claim is spent
    assert room.claim("three") == ""
    room.ended()
    assert room.claim("three") == "trawl-host-a"


def test_work_that_no_fetch_claimed_fills_the_slots_and_spends_no_claim() -> None:
    room = HostRoom("trawl-host-a", 3)
    assert room.claim("claimed") == "trawl-host-a"
    room.began("other")
    room.began("other")  # an item that claimed the host through the shared queue: two downloads
    assert room.promised.keys() == {"claimed"} and room.claim("next") == ""
    room.ended()
    assert room.claim("next") == "trawl-host-a"


def test_a_stopping_worker_claims_nothing() -> None:
    room = HostRoom("trawl-host-a", 2)
    room.close()
    assert room.claim("one") == ""


def test_a_claim_whose_item_never_comes_frees_its_slot_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(host, "time", SimpleNamespace(monotonic=lambda: now[0]))
    room = HostRoom("trawl-host-a", 1)
    assert room.claim("gone") == "trawl-host-a"
    now[0] += PROMISE_S  # its item went elsewhere (a duplicate, a run cancelled)
    assert room.claim("next") == ""
    now[0] += 0.001
    assert room.claim("next") == "trawl-host-a"


def _item(*sizes: int | None, protocol: str = "http") -> Resolved:
    return Resolved("web:x", "http://127.0.0.1:9/x", "generic",
                    [Asset(f"a{n}", "video", ["http://127.0.0.1:9/x.mp4"], expected_size=size, protocol=protocol)
                     for n, size in enumerate(sizes)])


@pytest.mark.parametrize(("item", "over", "claims"), [
    (_item(2_000_000), 1_000_000, True),
    (_item(600_000, 600_000), 1_000_000, True),  # past the size in all
    (_item(None), 1_000_000, True),  # of unknown size: not small
    (_item(1_000_000), 1_000_000, False),  # small: one activity on the shared queue
    (_item(2_000_000), -1, False),  # not asked (runs started before, and later fetches)
    (_item(None, protocol=LIVE_PROTOCOL), 0, False),  # a recording may go to its broadcast's run
])
def test_which_items_a_fetch_claims_a_host_for(item: Resolved, over: int, claims: bool) -> None:
    assert claims_a_host(item, over) is claims
