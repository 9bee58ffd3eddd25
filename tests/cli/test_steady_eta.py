"""The speed and ETA of a download whose bytes arrive in steps (heartbeat details a few seconds
apart, as under --limit-rate) are steady: the ETA counts down, never up (issue 43, point 10).
Pure logic over sampled numbers, as `trawl crawl`'s live line samples them each second."""

from __future__ import annotations

from trawl.cli.output import Rate

RATE = 400_000  # bytes per second
STEP_S = 5  # the heartbeat details move every 5 s
TOTAL = 8_000_000


def stepped(seconds: int) -> list[tuple[float, int]]:
    """(time, bytes seen) each second: the bytes move only at each step."""
    return [(float(t), min(TOTAL, RATE * (t - t % STEP_S))) for t in range(seconds + 1)]


def test_the_eta_counts_down_between_steps_and_the_speed_holds() -> None:
    rate = Rate(steady=True)
    etas, speeds = [], []
    for now, done in stepped(TOTAL // RATE):
        rate.update(now, done)
        if rate.speed:
            etas.append(rate.eta(TOTAL - done))
            speeds.append(rate.speed)
    assert all(later <= earlier for earlier, later in zip(etas, etas[1:])), etas
    assert speeds and all(speed == RATE for speed in speeds), speeds
    assert etas[0] == (TOTAL - RATE * STEP_S) / RATE  # at the first step: what is left at that speed


def test_steps_that_stop_coming_are_a_stall_and_the_speed_falls() -> None:
    rate = Rate(steady=True)
    for now, done in stepped(10):
        rate.update(now, done)
    assert rate.speed == RATE
    for now in range(11, 40):
        rate.update(float(now), RATE * 10)  # nothing moves any more
    assert rate.speed == 0 and rate.eta(TOTAL - RATE * 10) is None


def test_without_steady_the_average_over_the_window_stands() -> None:
    """What a one-off look uses (and what the live line did): the ETA rose between steps."""
    rate = Rate()
    etas = []
    for now, done in stepped(12):
        rate.update(now, done)
        etas.append(rate.eta(TOTAL - done))
    assert etas[6] > etas[5]


def test_a_steady_stream_reads_as_before() -> None:
    rate = Rate(steady=True)
    for now in range(20):
        rate.update(float(now), 1000 * now)
    assert rate.speed == 1000 and rate.eta(5000) == 5.0
