"""``download.limit_rate``: the throttle's arithmetic on a fake clock, and a real download over
loopback held to the rate (sleeps counted on that clock, so no wall-clock threshold)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from trawl.download.http import HttpDownloader
from trawl.download.state import ResumeState, Stopped, file_sha256
from trawl.download.throttle import Throttle
from trawl.simulator import MediaFile, Simulator


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
    # A tenth of a second's worth passes at once (the bucket starts full), the rest is waited for.
    assert sum(clock.slept) == pytest.approx(9.9)
    assert max(clock.slept) <= 0.2 + 1e-9 and len(ticks) == len(clock.slept)


def test_an_idle_pause_buys_at_most_a_tenth_of_a_second() -> None:
    clock = FakeClock()
    throttle = Throttle(1000, clock=clock, sleep=clock.sleep)
    clock.now += 3600  # an hour idle
    throttle.take(1000)  # a second's worth: no burst of it passes unpaced
    assert sum(clock.slept) == pytest.approx(0.9)


def release_times(throttle: Throttle, clock: FakeClock, total: int) -> list[tuple[float, int]]:
    """(time, bytes let through so far) after each take of the throttle's own batch size."""
    released, schedule = 0, []
    while released < total:
        throttle.take(throttle.batch_bytes)
        released += throttle.batch_bytes
        schedule.append((clock.now, released))
    return schedule


@pytest.mark.parametrize("rate", [1000, 100_000, 10 << 20])
def test_batches_of_the_advised_size_pass_at_an_even_pace(rate: int) -> None:
    clock = FakeClock()
    throttle = Throttle(rate, clock=clock, sleep=clock.sleep)
    assert 1 <= throttle.batch_bytes <= rate / 10  # a tenth of a second's worth at most
    schedule = release_times(throttle, clock, 20 * rate)  # twenty seconds' worth
    gaps = [b[0] - a[0] for a, b in zip(schedule, schedule[1:])]
    assert max(gaps) <= throttle.batch_bytes / rate + 1e-9  # never a long silence ...
    for when, released in schedule:  # ... nor more than a tenth of a second ahead of the rate
        assert released <= rate * (when + 0.1) + 1
    assert schedule[-1][0] == pytest.approx(20 - 0.1, abs=throttle.batch_bytes / rate)


def test_a_throttled_download_stops_when_asked_while_it_waits(sim: Simulator, tmp_path: Path) -> None:
    media = MediaFile("mp4", "throttled", 600_000)
    sim.add_file("/slow.mp4", media)
    beats: list[ResumeState] = []
    stop = {"now": False}
    with httpx.Client() as client:
        downloader = HttpDownloader(client, max_file_size=1 << 30, heartbeat=beats.append,
                                should_stop=lambda: stop["now"], segments=8, segment_min_size=1 << 20,
                                limit_rate=100_000)
        assert downloader.segments == 1  # a limited download keeps to one connection
        clock = FakeClock()
        downloader.throttle = Throttle(100_000, clock=clock, sleep=clock.sleep)
        out = downloader.download([sim.url("/slow.mp4")], tmp_path / "a.part")
        assert out.sha256 == media.sha256() == file_sha256(tmp_path / "a.part")
        # 600 kB at 100 kB/s with a tenth of a second in the bucket: 5.9 s of waiting, heartbeats between.
        assert sum(clock.slept) == pytest.approx(5.9, abs=0.01)
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


def test_a_throttled_download_reports_bytes_at_an_even_pace(sim: Simulator, tmp_path: Path) -> None:
    media = MediaFile("mp4", "paced", 1_000_000)
    sim.add_file("/paced.mp4", media)
    clock = FakeClock()
    beats: list[tuple[float, int]] = []
    with httpx.Client() as client:
        downloader = HttpDownloader(client, max_file_size=1 << 30, heartbeat=lambda s: beats.append((clock.now, s.offset)),
                                should_stop=lambda: False, limit_rate=100_000)
        downloader.throttle = throttle = Throttle(100_000, clock=clock, sleep=clock.sleep)
        out = downloader.download([sim.url("/paced.mp4")], tmp_path / "p.part")
    assert out.sha256 == media.sha256()
    # Every heartbeat (what status, crawl and crawl-status measure speed from) is within one
    # batch of the rate: no megabyte at once followed by ten silent seconds.
    assert len(beats) > 10
    for when, offset in beats:
        assert offset <= 100_000 * (when + 0.1) + throttle.batch_bytes, (when, offset)
