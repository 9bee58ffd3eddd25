"""Live progress on a terminal (issue 13, items 7 and 8): `trawl crawl`, `trawl status` and
`trawl crawl-status` show items, bytes, speed and ETA on a TTY, and nothing extra when piped;
Ctrl-C on `trawl crawl` says what becomes of the items."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import select
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from temporalio.client import Client

from trawl.cli import crawl_progress_line, progress_bar, stats_line
from trawl.cli.output import Rate
from trawl.formatting import format_eta, format_speed
from trawl.starter.client import start_item
from tests.e2e.test_cli import TRAWL, run, trawl_env
from tests.e2e.test_steering import cli_env
from trawl.platforms.registry import default_registry
from trawl.settings import Settings
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.worker.main import running_worker
from trawl.workflows.crawl import CrawlStats

SPEED = re.compile(r"\d+(\.\d)? (B|KiB|MiB|GiB)/s")
ETA = re.compile(r"ETA \d+:\d\d")


# -- rendering ------------------------------------------------------------------------------------
def test_rate_from_successive_samples() -> None:
    rate = Rate()
    assert rate.update(10.0, 0) is None  # one sample says nothing about speed
    assert rate.update(11.0, 1_000_000) == 1_000_000
    assert rate.update(12.0, 3_000_000) == 1_500_000  # over the whole window so far
    assert rate.update(12.0, 3_000_000) == 1_500_000  # no time passed: the last estimate stands


def test_rate_over_a_sliding_window_reads_steps_as_their_average() -> None:
    # A tenth of a MiB a second arriving as 1 MiB every ten seconds (a bursty limiter), sampled each second: the
    # speed shown is the average, never 1 MiB/s after a step nor 0 B/s between steps.
    rate = Rate()
    speeds = [rate.update(float(t), (t // 10 + 1) * 1024 * 1024) for t in range(60)]
    assert all(s == pytest.approx(1024 * 1024 / 10) for s in speeds[int(Rate.WINDOW_S):]), speeds
    # Heartbeats landing a second apart, sampled every second, do not make it jump either.
    rate = Rate()
    speeds = [rate.update(t * 1.0, 100_000 * (t - t % 2)) for t in range(40)]
    assert all(s == pytest.approx(100_000, rel=0.11) for s in speeds[int(Rate.WINDOW_S):]), speeds
    assert rate.update(40.0, 5) is None  # went backwards (started over): nothing known yet


def test_speed_and_eta_formats() -> None:
    assert format_speed(1536) == "1.5 KiB/s" and format_speed(3 * 1024 * 1024) == "3.0 MiB/s"
    assert format_eta(7) == "ETA 0:07" and format_eta(3725) == "ETA 1:02:05"
    assert format_eta(None) == "" and format_eta(-1) == ""


def test_progress_bar_with_speed_and_eta() -> None:
    progress = {"bytes_done": 1024 * 1024, "bytes_total": 4 * 1024 * 1024, "stage": "download", "attempt": 1,
                "last_error": None, "paused": False}
    bar = progress_bar(progress, speed=1024 * 1024, eta=3)
    assert "1.0 MiB/s" in bar and "ETA 0:03" in bar and " 25%" in bar
    assert "/s" not in progress_bar(progress)  # no speed known yet: nothing claimed


def test_crawl_progress_line() -> None:
    line = crawl_progress_line(done=2, total=5, bytes_done=12 * 1024 * 1024, speed=2 * 1024 * 1024, eta=40)
    assert line.startswith("2/5 items") and "12.0 MiB" in line and "2.0 MiB/s" in line and "ETA 0:40" in line
    assert "ETA" not in crawl_progress_line(done=0, total=1, bytes_done=0, speed=None, eta=None)


def test_stats_line_with_speed_and_eta() -> None:
    stats = CrawlStats(queued=3, running=2, finished=1, outcomes={"committed": 1}, bytes=1024, refused=0,
                       started_at="", finished_at=None, paused=False, cancelled=False, runs=1)
    line = stats_line(stats, speed=2048, eta=65)
    assert line.startswith("running") and "2.0 KiB/s" in line and "ETA 1:05" in line
    assert "/s" not in stats_line(stats)


# -- a pseudo-terminal ---------------------------------------------------------------------------
def on_a_terminal(args: list[str], env: dict[str, str], cwd: Path, until: Callable[[str], bool] | None = None,
                  timeout: float = 90) -> tuple[str, int]:
    """Run ``trawl`` with stdout and stderr on a pseudo-terminal, to its end or until ``until(output)``
    (then Ctrl-C); its output and exit status."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([TRAWL, *args], env=env, cwd=cwd, stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            out += chunk
            if until is not None and until(out.decode(errors="replace")):
                proc.send_signal(signal.SIGINT)
                until = None
        else:
            raise AssertionError(f"timed out; output so far: {out.decode(errors='replace')!r}")
        return out.decode(errors="replace"), proc.wait(timeout=60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()


def live_lines(output: str) -> list[str]:
    """What was drawn on the status line: the pieces between carriage returns, without erase codes."""
    return [piece for piece in re.split(r"[\r\n]", output.replace("\x1b[K", "")) if piece.strip()]


def shows_speed_and_eta(output: str) -> bool:
    return any(SPEED.search(line) and ETA.search(line) for line in live_lines(output))


# -- 7: trawl crawl ---------------------------------------------------------------------------------
def test_crawl_on_a_terminal_shows_live_progress(sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    sim.add_file("/big.mp4", MediaFile("mp4", "live", 5_000_000), FileBehaviour(throttle_bps=1_000_000))
    url = sim.url("/big.mp4")
    env = trawl_env(tmp_path, temporal_address)
    output, code = on_a_terminal(["crawl", url], env, tmp_path)
    assert code == 0, output
    before = output[:output.index("committed")]
    drawn = [line for line in live_lines(before) if "0/1 items" in line]
    assert any(SPEED.search(line) and ETA.search(line) for line in drawn), output
    result = next(line for line in live_lines(output) if line.startswith("committed"))
    assert url in result and "ETA" not in result  # the item's own line is clean


def test_crawl_piped_prints_only_the_results(sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    sim.add_file("/quiet.mp4", MediaFile("mp4", "quiet", 2_000_000), FileBehaviour(throttle_bps=1_000_000))
    url = sim.url("/quiet.mp4")
    done = run(["crawl", url], trawl_env(tmp_path, temporal_address), tmp_path)
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()] == ["committed"]
    assert "\r" not in done.stdout + done.stderr and "items" not in done.stderr and "ETA" not in done.stderr


def test_ctrl_c_says_what_becomes_of_the_crawl(sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    sim.add_file("/long.mp4", MediaFile("mp4", "interrupted", 12_000_000), FileBehaviour(throttle_bps=1_000_000))
    url = sim.url("/long.mp4")
    env = trawl_env(tmp_path, temporal_address)
    proc = subprocess.Popen([TRAWL, "crawl", url], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while sim.bytes_sent("/long.mp4") < 500_000:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err
    workflow_id = default_registry().route(url).workflow_id
    crawl_id = re.search(r"interrupted; crawl (crawl-[0-9a-f]+) and its 1 running item keep their progress", err)
    assert crawl_id and workflow_id in err, err
    assert "`trawl up`" in err and f"`trawl crawl-status {crawl_id[1]}`" in err, err
    assert f"`trawl cancel {crawl_id[1]}`" in err, err
    shown = run(["status", url, "--json"], env, tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["status"] == "RUNNING"  # still there, to be finished later
    crawls = run(["crawls"], env, tmp_path)
    assert crawls.returncode == 0 and re.search(rf"{crawl_id[1]}\s.*running", crawls.stdout), crawls.stdout
    assert run(["cancel", crawl_id[1]], env, tmp_path).returncode == 0


# -- 8: trawl status and trawl crawl-status -----------------------------------------------------------
async def test_status_shows_speed_and_eta(temporal_client: Client, settings: Settings, sim: Simulator,
                                          tmp_path: Path) -> None:
    # Under download.segment_min_size (32 MiB): one connection, so 30 s at 1 MB/s.
    sim.add_file("/s.mp4", MediaFile("mp4", "speedy", 30_000_000), FileBehaviour(throttle_bps=1_000_000))
    url = sim.url("/s.mp4")
    env = cli_env(settings, tmp_path)
    async with running_worker(temporal_client, settings):
        await start_item(temporal_client, settings, default_registry(), url)
        while sim.bytes_sent("/s.mp4") < 500_000:
            await asyncio.sleep(0.1)
        once = await asyncio.to_thread(run, ["status", url, "--once"], env, tmp_path)
        assert once.returncode == 0, once.stderr
        assert SPEED.search(once.stdout) and ETA.search(once.stdout), once.stdout
        output, code = await asyncio.to_thread(on_a_terminal, ["status", url], env, tmp_path, shows_speed_and_eta)
        assert code == 130, output  # followed live until Ctrl-C
        assert (await asyncio.to_thread(run, ["cancel", url], env, tmp_path)).returncode == 0
    assert any(SPEED.search(line) and ETA.search(line) and "download" in line for line in live_lines(output)), output


async def test_crawl_status_shows_speed_and_eta(temporal_client: Client, settings: Settings, sim: Simulator,
                                                tmp_path: Path) -> None:
    for i in range(2):
        sim.add_file(f"/c{i}.mp4", MediaFile("mp4", f"crawl-speed-{i}", 30_000_000),
                     FileBehaviour(throttle_bps=1_000_000))
    env = cli_env(settings, tmp_path)
    async with running_worker(temporal_client, settings):
        started = await asyncio.to_thread(run, ["crawl", "--detach", sim.url("/c0.mp4"), sim.url("/c1.mp4")],
                                          env, tmp_path)
        crawl_id = started.stdout.strip()
        output, code = await asyncio.to_thread(on_a_terminal, ["crawl-status", crawl_id], env, tmp_path,
                                               shows_speed_and_eta)
        assert code == 130, output  # followed live until Ctrl-C
        assert (await asyncio.to_thread(run, ["cancel", crawl_id], env, tmp_path)).returncode == 0
    assert shows_speed_and_eta(output) and "running" in output, output


def test_crawl_progress_counts_from_first_sight_and_estimates_the_rest() -> None:
    from trawl.cli.progress import CrawlProgress
    from trawl.cli.output import StatusLine
    from trawl.workflows.media_item import ItemResult

    progress = CrawlProgress(client=None, total=3, line=StatusLine())  # type: ignore[arg-type]
    progress.sample("a", {"bytes_done": 4_000_000, "bytes_total": 10_000_000})  # resumed: 4 MB from before
    progress.sample("b", {"bytes_done": 0, "bytes_total": None})
    progress.sample("a", {"bytes_done": 6_000_000, "bytes_total": 10_000_000})
    assert progress.moved + sum(e[1] - e[0] for e in progress.seen.values()) == 2_000_000
    progress.speed = 1_000_000.0
    # a: 4 MB left; b and c unsized: at the mean of the sizes known (10 MB) each
    assert progress.eta() == 24.0
    progress.finished(ItemResult("a", "http://x/a", "committed"))
    assert progress.done == 1 and "1/3 items" in progress.render()
    assert progress.moved == 2_000_000  # what it downloaded while watched, never less
    waiting = {"b": ("hb", "http://x/b"), "c": ("hc", "http://x/c")}
    assert {wid for wid, _ in progress.pick(waiting)} == {"b", "c"}


def test_a_live_bar_fits_an_80_column_terminal() -> None:
    from trawl.cli.output import fitted_progress_bar

    progress = {"bytes_done": 900 * 1024 * 1024, "bytes_total": 1000 * 1024 * 1024, "stage": "download",
                "attempt": 1, "last_error": None, "paused": False}
    bar = fitted_progress_bar(progress, 79, speed=1023.9 * 1024 * 1024, eta=3599)
    assert len(bar) <= 79 and "1023.9 MiB/s" in bar and "ETA 59:59" in bar, bar
    assert fitted_progress_bar(progress, 200).startswith("[" + "#" * 27 + "...]")  # 30 wide at most


def test_log_lines_on_the_terminal_go_above_the_live_line() -> None:
    import io

    from trawl.cli.output import AroundStatusLine, StatusLine

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    line = StatusLine(Terminal())
    line.show("3/9 items")
    AroundStatusLine(line.stream).write("a warning\n")
    assert line.stream.getvalue() == "\r\x1b[K3/9 items" + "\r\x1b[K" + "a warning\n" + "3/9 items"
    line.close()
    assert StatusLine.shown is None
    assert not StatusLine(io.StringIO()).enabled  # a pipe or a file: nothing drawn
