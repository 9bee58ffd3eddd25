"""A Temporal server outage while a command waits: the wait rides it out; nothing is misreported."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.test_chaos import TRAWL, start_server
from tests.e2e.test_cli import run, trawl_env
from tests.worker.test_supervisor import restartable_ports
from tests.polling import wait_until
from trawl.simulator import FileBehaviour, MediaFile, Simulator

SIZE = 4_000_000


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_crawl_waits_through_a_server_restart(sim: Simulator, tmp_path: Path) -> None:
    media = MediaFile("mp4", "outage", SIZE)
    sim.add_file("/slow.mp4", media, FileBehaviour(throttle_bps=400_000))
    port = restartable_ports(2)
    db = tmp_path / "temporal.db"
    server = start_server(db, port, tmp_path / "temporal.log")
    env = trawl_env(tmp_path, f"127.0.0.1:{port}")
    crawl = None
    try:
        crawl = subprocess.Popen([TRAWL, "crawl", "--json", sim.url("/slow.mp4")], env=env, cwd=tmp_path,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: sim.bytes_sent("/slow.mp4") > 400_000)
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        down = run(["crawl-status", "crawl-000000000000"], env, tmp_path, timeout=60)
        assert down.returncode != 0 and "no crawl" not in down.stderr, down.stderr
        assert "unreachable" in down.stderr or "no Temporal server answers" in down.stderr, down.stderr
        time.sleep(6)  # the outage: longer than one reconnect attempt, shorter than the download
        server = start_server(db, port, tmp_path / "temporal.log")
        out, err = crawl.communicate(timeout=180)
    finally:
        if crawl is not None and crawl.poll() is None:
            crawl.kill()
            crawl.communicate()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    assert crawl.returncode == 0, err[-3000:]
    lines = [line for line in out.splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # --json: nothing but JSON on stdout
    assert [(r["outcome"], r["error"]) for r in records] == [("committed", None)]
    assert records[0]["assets"][0]["sha256"] == media.sha256()
