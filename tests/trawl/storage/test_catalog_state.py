"""The catalog's shared state (trawl.shared_state): values by key with an expiry, one holder of a
lease at a time, and a value made once by whoever holds it while the others wait."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from trawl.shared_state import MemoryState, made_once
from trawl.storage.catalog import Catalog
from trawl.storage.catalog_state import CatalogState


def test_values_expire_and_a_new_one_is_put_only_where_none_lives(catalog: Catalog) -> None:
    now = [100.0]
    state = CatalogState(catalog, clock=lambda: now[0])
    assert state.get("k") is None and state.put_new("k", "one", 10)
    assert not state.put_new("k", "two", 10) and state.get("k") == "one"
    state.put("k", "three", 10)
    state.put("other.k", "x", 10)
    assert state.items("k") == {"k": "three"} and state.items("other.") == {"other.k": "x"}
    now[0] += 11
    assert state.get("k") is None and state.items("") == {}
    assert state.put_new("k", "four", 10) and state.get("k") == "four"  # over an expired row
    state.delete("k")
    assert state.get("k") is None


def test_a_value_is_made_once_by_the_callers_of_every_process(catalog_url: str) -> None:
    catalogs = [Catalog(catalog_url) for _ in range(3)]
    catalogs[0].create_schema()
    states = [CatalogState(catalog) for catalog in catalogs]
    made: list[int] = []

    def make(state: CatalogState, who: int) -> str:
        made.append(who)
        state.put("session", f"from {who}", 60)
        return f"from {who}"

    def ask(who: int) -> str:
        state = states[who % 3]
        return made_once(state, "session.lease", lambda: state.get("session"), lambda: make(state, who))

    with ThreadPoolExecutor(6) as pool:
        answers = set(pool.map(ask, range(12)))
    assert len(made) == 1 and answers == {f"from {made[0]}"}
    for catalog in catalogs:
        catalog.close()


def test_a_waiting_caller_makes_its_own_when_the_holder_never_does() -> None:
    state = MemoryState()
    assert state.put_new("lease", "held", 60)  # a holder that died
    assert made_once(state, "lease", lambda: None, lambda: "mine", wait=0.2) == "mine"
