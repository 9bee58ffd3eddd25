"""Heartbeats of bodies without progress points: one thread of the process beats them all."""

from __future__ import annotations

import threading
import time

import pytest
from temporalio.testing import ActivityEnvironment

from trawl.activities import liveness
from trawl.activities.liveness import heartbeating


@pytest.fixture
def quick_beats(monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setattr(liveness, "BEAT_EVERY_S", 0.05)
    return 0.05


def _body(seconds: float, beats: list[float]):
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *_: beats.append(time.monotonic())

    @heartbeating
    def body() -> str:
        time.sleep(seconds)
        return "done"

    return lambda: env.run(body)


def test_a_body_is_beaten_while_it_runs_and_never_after(quick_beats: float) -> None:
    beats: list[float] = []
    assert _body(0.5, beats)() == "done"
    ended = time.monotonic()
    assert 5 <= len(beats) <= 11  # every 0.05 s over 0.5 s
    time.sleep(4 * quick_beats)
    assert all(beat <= ended for beat in beats)  # none after the body returned


def test_bodies_at_once_each_get_their_beats_from_one_thread(quick_beats: float) -> None:
    runs = [[] for _ in range(6)]
    before = {t.ident for t in threading.enumerate()}
    bodies = [threading.Thread(target=_body(0.4, beats)) for beats in runs]
    for body in bodies:
        body.start()
    time.sleep(0.2)
    beating = [t for t in threading.enumerate() if t.name == "heartbeat" and t.ident not in before]
    for body in bodies:
        body.join()
    assert all(len(beats) >= 4 for beats in runs), [len(b) for b in runs]
    assert len(beating) <= 1  # not a thread a body (one may still run from an earlier test)
    assert len([t for t in threading.enumerate() if t.name == "heartbeat"]) == 1


def test_a_quick_body_gets_no_beat_and_no_thread_of_its_own(quick_beats: float) -> None:
    beats: list[float] = []
    threads = threading.active_count()
    for _ in range(50):
        _body(0, beats)()
    assert beats == []
    assert threading.active_count() <= threads + 1  # the one beating thread, if it was not running yet


def test_a_failing_beat_ends_only_that_body_s_beats(quick_beats: float) -> None:
    good: list[float] = []
    env = ActivityEnvironment()

    def refuse(*_: object) -> None:
        raise RuntimeError("heartbeat refused")

    env.on_heartbeat = refuse

    @heartbeating
    def failing() -> None:
        time.sleep(0.3)

    other = threading.Thread(target=_body(0.3, good))
    other.start()
    env.run(failing)
    other.join()
    assert len(good) >= 3
