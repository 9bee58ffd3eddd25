"""Heartbeats of bodies without progress points: one thread of the process times them all."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from temporalio.testing import ActivityEnvironment

from trawl.activities import liveness
from trawl.activities.liveness import heartbeating


@pytest.fixture(autouse=True)
def beater(monkeypatch: pytest.MonkeyPatch) -> Iterator[liveness._Beater]:
    """A beater of the test's own: no earlier test's beats still queued for its senders."""
    own = liveness._Beater()
    monkeypatch.setattr(liveness, "_beater", own)
    yield own
    if own._senders is not None:
        own._senders.shutdown(wait=True, cancel_futures=True)


@pytest.fixture
def quick_beats(monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setattr(liveness, "BEAT_EVERY_S", 0.05)
    return 0.05


_counting = threading.Lock()


def _body(seconds: float, beats: list[float], send_takes: float = 0.0, ended: list[float] | None = None,
          sending: list[int] | None = None):
    """A body that runs ``seconds``; its beats' times go to ``beats``, each taking ``send_takes``
    (a worker's busy event loop: the SDK waits for it to take a beat); how long its wrapper took
    to return after the body goes to ``ended``; ``sending`` counts the beats on their way at once
    ([now, most])."""
    env = ActivityEnvironment()

    def beat(*_: object) -> None:
        beats.append(time.monotonic())
        if sending is not None:
            with _counting:
                sending[0] += 1
                sending[1] = max(sending)
        time.sleep(send_takes)
        if sending is not None:
            with _counting:
                sending[0] -= 1

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
    assert len(timing) == 1  # one for all six, not a thread a body


def test_a_slow_loop_slows_the_beats_not_the_bodies(quick_beats: float) -> None:
    """Each beat waits 20 ms for the worker's loop: the bodies' beats are sent beside each other,
    and no body waits for another's beat to start or to end."""
    runs = [[] for _ in range(20)]
    ended: list[float] = []
    sending = [0, 0]
    bodies = [threading.Thread(target=_body(1.0, beats, send_takes=0.02, ended=ended, sending=sending))
              for beats in runs]
    for body in bodies:
        body.start()
    for body in bodies:
        body.join()
    assert len(ended) == 20 and max(ended) < 0.5  # each returned as its body ended (sent under a lock: seconds)
    assert all(len(beats) >= 3 for beats in runs), sorted(len(b) for b in runs)[:5]
    assert sending[1] >= 2  # beats on their way beside each other


def test_a_quick_body_gets_no_beat_and_no_thread_of_its_own(beater: liveness._Beater) -> None:
    beats: list[float] = []
    threads = threading.active_count()
    for _ in range(50):
        _body(0, beats)()
    assert beats == []  # none within the first second
    assert threading.active_count() == threads + 1  # the timing thread, started by the first
    assert beater._senders is None  # nothing was due: no sender was ever made


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
