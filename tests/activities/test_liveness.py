"""Heartbeats of bodies without progress points: one thread of the process times them all."""

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


def _body(seconds: float, beats: list[float], send_takes: float = 0.0, ended: list[float] | None = None):
    """A body that runs ``seconds``; its beats' times go to ``beats``, each taking ``send_takes``
    (a worker's busy event loop: the SDK waits for it to take a beat); the moment its wrapper
    returned goes to ``ended``."""
    env = ActivityEnvironment()

    def beat(*_: object) -> None:
        beats.append(time.monotonic())
        time.sleep(send_takes)

    env.on_heartbeat = beat

    @heartbeating
    def body() -> float:
        time.sleep(seconds)
        return time.monotonic()

    def run() -> None:
        returned = env.run(body)
        if ended is not None:
            ended.append(time.monotonic() - returned)

    return run


def test_a_body_is_beaten_while_it_runs(quick_beats: float) -> None:
    beats: list[float] = []
    started = time.monotonic()
    _body(0.5, beats)()
    elapsed = time.monotonic() - started
    assert 5 <= len(beats) <= elapsed / quick_beats + 1  # every 0.05 s while it ran


def test_bodies_at_once_each_get_their_beats_from_one_thread(quick_beats: float) -> None:
    runs = [[] for _ in range(6)]
    before = {t.ident for t in threading.enumerate()}
    bodies = [threading.Thread(target=_body(0.4, beats)) for beats in runs]
    for body in bodies:
        body.start()
    time.sleep(0.2)
    timing = [t for t in threading.enumerate() if t.name == "heartbeat" and t.ident not in before]
    for body in bodies:
        body.join()
    assert all(len(beats) >= 4 for beats in runs), [len(b) for b in runs]
    assert len(timing) <= 1  # not a thread a body (one may still run from an earlier test)
    assert len([t for t in threading.enumerate() if t.name == "heartbeat"]) == 1


def test_a_slow_loop_slows_the_beats_not_the_bodies(quick_beats: float) -> None:
    """Each beat waits 20 ms for the worker's loop: 50 bodies' beats are sent beside each other,
    and no body waits for another's beat to start or to end."""
    runs = [[] for _ in range(50)]
    ended: list[float] = []
    bodies = [threading.Thread(target=_body(1.0, beats, send_takes=0.02, ended=ended)) for beats in runs]
    for body in bodies:
        body.start()
    for body in bodies:
        body.join()
    assert len(ended) == 50 and max(ended) < 0.5  # each returned as its body ended (once: seconds)
    assert all(len(beats) >= 2 for beats in runs), sorted(len(b) for b in runs)[:5]


def test_a_quick_body_gets_no_beat_and_no_thread_of_its_own() -> None:
    beats: list[float] = []
    threads = threading.active_count()
    for _ in range(50):
        _body(0, beats)()
    assert beats == []  # none within the first second
    assert threading.active_count() <= threads + 1  # the timing thread, if it was not running yet


def test_a_failing_beat_ends_only_that_body_s_beats(quick_beats: float) -> None:
    good: list[float] = []
    refused: list[float] = []
    env = ActivityEnvironment()

    def refuse(*_: object) -> None:
        refused.append(time.monotonic())
        raise RuntimeError("heartbeat refused")

    env.on_heartbeat = refuse

    @heartbeating
    def failing() -> None:
        time.sleep(0.3)

    other = threading.Thread(target=_body(0.3, good))
    other.start()
    env.run(failing)
    other.join()
    assert len(refused) == 1  # not beaten again after its beat failed
    assert len(good) >= 3
