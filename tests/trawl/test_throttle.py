"""``download.limit_rate``: the throttle's arithmetic on a fake clock, and a real download over
loopback held to the rate (sleeps counted on that clock, so no wall-clock threshold)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from trawl.download import Downloader, ResumeState, Stopped, file_sha256
from trawl.simulator import MediaFile, Simulator
from trawl.throttle import Throttle


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_the_average_is_held_to_the_rate_in_short_waits() -> None:
    clock = FakeClock()
    throttle = Throttle(100_000, clock=clock, sleep=clock.sleep, slice_s=0.2)
    ticks = []
    for _ in range(10):
        throttle.take(100_000, lambda: ticks.append(clock.now))
    # One second's worth passes at once (the bucket starts full), the other nine are waited for.
    assert sum(clock.slept) == pytest.approx(9.0)
    assert max(clock.slept) <= 0.2 + 1e-9 and len(ticks) == len(clock.slept)


def test_an_idle_pause_buys_at_most_one_seconds_burst() -> None:
    clock = FakeClock()
    throttle = Throttle(1000, clock=clock, sleep=clock.sleep)
    clock.now += 3600  # an hour idle
    throttle.take(3000)
    assert sum(clock.slept) == pytest.approx(2.0)


def test_a_throttled_download_stops_when_asked_while_it_waits(sim: Simulator, tmp_path: Path) -> None:
    media = MediaFile("mp4", "throttled", 600_000)
    sim.add_file("/slow.mp4", media)
    beats: list[ResumeState] = []
    stop = {"now": False}
    with httpx.Client() as client:
        downloader = Downloader(client, max_file_size=1 << 30, heartbeat=beats.append,
                                should_stop=lambda: stop["now"], segments=8, segment_min_size=1 << 20,
                                limit_rate=100_000)
        assert downloader.segments == 1  # a limited download keeps to one connection
        clock = FakeClock()
        downloader.throttle = Throttle(100_000, clock=clock, sleep=clock.sleep)
        out = downloader.download([sim.url("/slow.mp4")], tmp_path / "a.part")
        assert out.sha256 == media.sha256() == file_sha256(tmp_path / "a.part")
        # 600 kB at 100 kB/s with one second in the bucket: five seconds of waiting, heartbeats between.
        assert sum(clock.slept) == pytest.approx(5.0, abs=0.01)
        assert len(beats) >= len(clock.slept)

        def stop_soon(seconds: float) -> None:
            clock.sleep(seconds)
            stop["now"] = clock.now > 1.0

        big = MediaFile("mp4", "throttled-big", 4 << 20)  # several write batches
        sim.add_file("/big.mp4", big)
        downloader.throttle = Throttle(100_000, clock=clock, sleep=stop_soon)
        with pytest.raises(Stopped):
            downloader.download([sim.url("/big.mp4")], tmp_path / "b.part")
        assert 0 < beats[-1].offset < big.size  # stopped while waiting, its bytes recorded
