"""What a crawl command says while an item waits and when it ends (issue 43, point 5): the live
line names the retry an item waits for, SIGTERM ends the command as Ctrl-C does, and a crawl of
several items ends with a summary line."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.e2e.test_cli import TRAWL, run, trawl_env
from tests.polling import until, wait_until
from trawl.cli.output import StatusLine, outcomes_line, retry_line
from trawl.cli.progress import CrawlProgress
from trawl.platforms.registry import default_registry
from trawl.settings import Settings
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.starter.client import item_progress, start_item


def test_the_retry_line_says_what_an_item_waits_for() -> None:
    retry = {"activity": "fetch", "attempt": 7, "error_class": "network_error", "next_at": 132.2,
             "message": "network_error: connecting to http://127.0.0.1:9/x: connection refused"}
    assert retry_line(retry, 100.0, 10) == "retrying: network_error (connection refused), attempt 7/10, next in 32 s"
    assert retry_line(dict(retry, next_at=90.0), 100.0) == (
        "retrying: network_error (connection refused), attempt 7, next in 0 s")  # no limit known, overdue
    progress = CrawlProgress(None, 1, StatusLine(), {"fetch": 10})  # type: ignore[arg-type] - not sampled here
    progress.sample("item-1", {"bytes_done": 0, "bytes_total": None, "retry": dict(retry, next_at=time.time() + 30)})
    assert "0/1 items" in progress.render() and "attempt 7/10, next in " in progress.render()
    progress.sample("item-1", {"bytes_done": 10, "bytes_total": 100, "retry": None})  # it moves again
    assert "retrying" not in progress.render()


def test_the_summary_line_counts_outcomes_and_failure_classes() -> None:
    assert outcomes_line({"committed": 2, "failed": 1}, {"not_found": 1}) == "3 items: 2 committed, 1 failed (not_found)"
    assert outcomes_line({"failed": 3, "duplicate": 1}, {"not_found": 2, "forbidden": 1}) == (
        "4 items: 1 duplicate, 3 failed (2 not_found, forbidden)")


async def test_a_refused_origins_retry_is_read_with_its_attempt_and_next_time(
        temporal_client, settings: Settings, worker: None) -> None:  # noqa: ANN001 - the fixture's client
    with socket.socket() as closed:  # bound, never listening: every connection is refused
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/media/refused.mp4"
        started = await start_item(temporal_client, settings, default_registry(), url)

        async def retrying() -> dict | None:
            return (await item_progress(temporal_client, started.handle)).get("retry")

        retry = await until(retrying, "the item to wait for its next attempt", timeout=60)
        await started.handle.cancel()
    assert retry["error_class"] == "network_error" and retry["attempt"] >= 2
    assert "refused" in retry["message"].lower()
    assert retry["next_at"] > time.time() - 60


def test_sigterm_ends_a_crawl_as_ctrl_c_does_and_several_items_end_with_a_summary(
        tmp_path: Path, sim: Simulator, temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address)
    sim.add_file("/media/a.mp4", MediaFile("mp4", "end-a", 100_000))
    sim.add_file("/media/b.mp4", MediaFile("mp4", "end-b", 100_000))
    done = run(["crawl", sim.url("/media/a.mp4"), sim.url("/media/b.mp4"), sim.url("/media/gone.mp4")], env, tmp_path)
    assert done.returncode == 1, done.stderr
    assert "trawl crawl: 3 items: 2 committed, 1 failed (not_found)" in done.stderr.splitlines()

    sim.add_file("/media/slow.mp4", MediaFile("mp4", "end-slow", 3_000_000), FileBehaviour(throttle_bps=100_000))
    proc = subprocess.Popen([TRAWL, "crawl", sim.url("/media/slow.mp4")], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: sim.bytes_sent("/media/slow.mp4") > 100_000, "the slow download to start", timeout=90)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, (out, err)
    said = [line for line in err.splitlines() if "interrupted" in line]
    assert len(said) == 1 and ("goes on" in said[0] or "keep their progress" in said[0]), err
    assert "Traceback" not in err
