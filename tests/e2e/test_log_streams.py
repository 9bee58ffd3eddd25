"""What trawl processes write to their log streams (issue 12, items 8 and 10), as a user runs them:
real subprocesses, their output piped to files or to a reader that goes away."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.e2e.test_cli import trawl_env as cli_env
from tests.polling import wait_until
from tests.ports import free_port
from trawl.simulator import MediaFile, Simulator
from trawl.simulator import faults
from trawl.simulator.demo import og_page

TRAWL = str(Path(sys.executable).parent / "trawl")
TEMPORAL = str(Path(sys.executable).parent / "temporal")
DEADLINE = 120.0


def trawl_env(tmp_path: Path, temporal_address: str, **extra: str) -> dict[str, str]:
    return cli_env(tmp_path, temporal_address, TRAWL_RETRY__FETCH__INITIAL_INTERVAL="100ms",
                   TRAWL_RETRY__FETCH__MAXIMUM_INTERVAL="2s", **extra)


def json_lines(text: str) -> list[dict]:
    """Every non-empty line as a JSON object: fails on the first line that is not one."""
    events = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                events.append(json.loads(line))
            except ValueError:
                raise AssertionError(f"line {number} is not JSON: {line[:300]!r}") from None
    return events


# -- item 8: a one-shot crawl's log holds every line of the work its in-process worker did -----------
def test_a_one_shot_crawl_logs_every_attempt_and_item_before_it_exits(sim: Simulator, tmp_path: Path,
                                                                      temporal_address: str) -> None:
    urls = []
    for i in range(4):
        sim.add_file(f"/cdn/{i}.mp4", MediaFile("mp4", f"logs-{i}-{uuid.uuid4().hex}", 60_000 + i))
        sim.add_page(f"/watch/{i}", og_page(f"Clip {i}", f"/cdn/{i}.mp4"))
        urls.append(sim.url(f"/watch/{i}"))
    sim.faults.add(r"/watch/0$", faults.status(500))
    sim.faults.add(r"/watch/1$", faults.status(503))
    sim.faults.add(r"/watch/2$", faults.rate_limited(1))
    env = trawl_env(tmp_path, temporal_address)
    out_path, err_path = tmp_path / "crawl.out", tmp_path / "crawl.log"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:  # piped to files, as `2>crawl.log` does
        done = subprocess.run([TRAWL, "crawl", "--json", *urls], env=env, cwd=tmp_path, stdout=out, stderr=err,
                              timeout=DEADLINE)
    assert done.returncode == 0, err_path.read_text()[-3000:]
    results = json_lines(out_path.read_text())
    assert sorted(r["outcome"] for r in results) == ["committed"] * 4
    ids = {r["id"] for r in results}

    # Stderr, piped to a file, is a person's still: plain lines, no JSON; the record is in the data
    # directory's log file (issue 43, point 4).
    assert not [line for line in err_path.read_text().splitlines() if line.startswith("{")], err_path.read_text()
    record_path = tmp_path / "data" / "trawl.log"
    events = json_lines(record_path.read_text())
    summaries = [e for e in events if e["event"] == "item"]
    assert sorted(e["task_id"] for e in summaries) == sorted(ids), summaries  # one summary per item
    assert all(e["outcome"] == "committed" for e in summaries)
    activity = [e for e in events if e["event"] == "activity"]
    retries = [e for e in activity if e["outcome"] == "retry"]
    assert {e["error_class"] for e in retries} == {"http_5xx", "rate_limited"}
    assert all(e["stage"] == "fetch" for e in retries)
    fetch_ok = {e["task_id"]: e for e in activity if e["stage"] == "fetch" and e["outcome"] == "ok"}
    assert set(fetch_ok) == ids  # the successes that answer the retries are in the log too
    for retry in retries:
        assert fetch_ok[retry["task_id"]]["ts"] > retry["ts"]
    assert {e["task_id"] for e in activity if e["stage"] == "commit" and e["outcome"] == "ok"} == ids

    triage = subprocess.run([TRAWL, "logs", "triage", str(record_path), "--json"], env=env, capture_output=True,
                            text=True, timeout=DEADLINE)
    assert triage.returncode == 0, triage.stderr
    groups = json.loads(triage.stdout)["groups"]
    assert {g["error_class"] for g in groups} == {"http_5xx", "rate_limited"}
    assert not [g for g in groups if g["still_failing"]], groups


# -- item 10: the Rust core's own lines are JSON on the log stream, never on a command's output ------
CORE_TARGET = ("temporalio_client", "temporalio_sdk_core", "temporalio_common", "sdk_core")


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def read_until(fd: int, needle: bytes, deadline: float = DEADLINE) -> bytes:
    """Read a pipe until ``needle`` has come by (bounded by ``deadline``); what was read."""
    seen = b""
    end = time.monotonic() + deadline
    while needle not in seen:
        left = end - time.monotonic()
        assert left > 0, f"timed out waiting for {needle!r}; read {seen[-2000:]!r}"
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 65536)
            assert chunk, f"the pipe closed before {needle!r}; read {seen[-2000:]!r}"
            seen += chunk
    return seen


def mentions_core(text: str) -> bool:
    return any(target in text for target in CORE_TARGET)


def start_private_server(log: Path) -> tuple[subprocess.Popen[bytes], int]:
    """A dev server of this test's own, answering on its port. Other test processes pick free ports
    too: one taken between choosing and binding makes the server exit, and then ports are chosen again."""
    for _ in range(5):
        port = free_port()
        with open(log, "ab") as out:
            server = subprocess.Popen(
                [TEMPORAL, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port),
                 "--http-port", str(free_port()), "--log-level", "error",
                 *[arg for name in ("Platform", "CanonicalKey", "Stage", "Outcome", "CrawlId")
                   for arg in ("--search-attribute", f"{name}=Keyword")]],
                stdout=out, stderr=subprocess.STDOUT)
        wait_until(lambda: server.poll() is not None or answers(port), "the private Temporal server")
        if server.poll() is None:
            return server, port
    raise AssertionError(f"the private Temporal server exited at start five times: {log.read_text()[-2000:]}")


@pytest.mark.slow
def test_core_lines_are_json_on_the_log_stream_and_never_on_stdout_output(sim: Simulator, tmp_path: Path) -> None:
    server, port = start_private_server(tmp_path / "temporal.log")
    processes: list[subprocess.Popen[bytes]] = [server]
    paths = {name: tmp_path / name for name in ("worker.out", "worker.err", "crawl.out", "crawl.err")}
    files = {name: open(path, "wb") for name, path in paths.items()}
    try:
        address = f"127.0.0.1:{port}"
        # The worker as deployed: metrics on (its client gets a runtime of its own) and JSON on stdout.
        worker_env = trawl_env(tmp_path / "w", address, TRAWL_WORKER__METRICS_PORT=str(free_port()))
        worker = subprocess.Popen([TRAWL, "worker"], env=worker_env, cwd=tmp_path, stdout=files["worker.out"],
                                  stderr=files["worker.err"])
        processes.append(worker)
        wait_until(lambda: "worker started" in paths["worker.out"].read_text(), "the worker to start")
        # A one-shot crawl with an item in flight: results on stdout, its log on stderr.
        sim.add_page("/slow", og_page("Slow", "/cdn/slow.mp4"))
        sim.faults.add(r"/slow$", faults.stall(90))
        crawl = subprocess.Popen([TRAWL, "crawl", "--json", sim.url("/slow")], env=trawl_env(tmp_path / "c", address),
                                 cwd=tmp_path, stdout=files["crawl.out"], stderr=files["crawl.err"])
        processes.append(crawl)
        wait_until(lambda: "/slow" in sim.stats, "the crawl's fetch to reach the site")

        server.kill()  # the server goes away under both: the core complains about every call it retries
        server.wait(timeout=30)
        # The core complains about the calls it retries; how soon differs by process (its
        # pollers back off), so wait for the first complaints, then a little for the rest.
        wait_until(lambda: mentions_core(paths["worker.out"].read_text() + paths["worker.err"].read_text())
                   or mentions_core(paths["crawl.out"].read_text() + paths["crawl.err"].read_text()),
                   "the core's complaints")
        time.sleep(5)
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
        for file in files.values():
            file.close()

    worker_events = json_lines(paths["worker.out"].read_text())  # the worker's JSON stream parses line by line
    assert any(e["event"] == "worker started" for e in worker_events)
    crawl_out = paths["crawl.out"].read_text()
    assert not mentions_core(crawl_out) and "\x1b[" not in crawl_out, crawl_out[:2000]  # results only
    # The crawl's stderr is a person's: plain lines, no terminal codes; its JSON record, in its data
    # directory's log file, parses line by line too.
    crawl_err = paths["crawl.err"].read_text()
    assert "\x1b[" not in crawl_err and not [line for line in crawl_err.splitlines() if line.startswith("{")]
    crawl_log = json_lines((tmp_path / "c" / "data" / "trawl.log").read_text())
    core = [e for e in worker_events + crawl_log if mentions_core(e["event"])]
    # The complaints that came arrived as JSON records, on the log streams only.
    assert core and all(e["level"] in ("warning", "error") and "\x1b[" not in e["event"] for e in core), core[:3]


# -- item 10: output piped into a reader that goes away ends quietly --------------------------------
def test_log_json_puts_the_json_lines_on_stderr(sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    sim.add_file("/cdn/json.mp4", MediaFile("mp4", f"logs-json-{uuid.uuid4().hex}", 50_000))
    env = trawl_env(tmp_path, temporal_address)
    done = subprocess.run([TRAWL, "--log-json", "crawl", sim.url("/cdn/json.mp4")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=DEADLINE)
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stderr)
    assert any(e["event"] == "item" and e["outcome"] == "committed" for e in events)
    assert not (tmp_path / "data" / "trawl.log").exists()


def test_triage_piped_into_head_ends_without_a_traceback(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    with open(log, "w") as f:  # a report far larger than a pipe's buffer
        for i in range(4000):
            f.write(json.dumps({"ts": "2026-11-30T10:00:00Z", "event": "activity", "outcome": "retry",
                                "platform": f"p{i}", "stage": "fetch", "error_class": "http_5xx",
                                "task_id": f"url-{i:040d}", "canonical_url": f"http://127.0.0.1/{i}"}) + "\n")
    with open(tmp_path / "triage.err", "wb") as err:
        triage = subprocess.Popen([TRAWL, "logs", "triage", str(log)], stdout=subprocess.PIPE, stderr=err)
        assert triage.stdout is not None
        assert triage.stdout.readline().startswith(b"PLATFORM")  # `| head -1`: read a line, then go away
        triage.stdout.close()
        code = triage.wait(timeout=DEADLINE)
    stderr = (tmp_path / "triage.err").read_text()
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr and "Exception ignored" not in stderr, stderr
    assert code == 128 + signal.SIGPIPE  # what a shell shows for any tool whose reader left early


def test_a_worker_whose_log_reader_goes_away_stops_cleanly_without_tracebacks(tmp_path: Path,
                                                                              temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address, TRAWL_WORKER__METRICS_PORT="0")
    with open(tmp_path / "worker.err", "wb") as err:
        worker = subprocess.Popen([TRAWL, "worker"], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=err)
        try:
            assert worker.stdout is not None
            read_until(worker.stdout.fileno(), b"worker started")  # `trawl worker | grep -m1 started`
            worker.stdout.close()
            worker.send_signal(signal.SIGTERM)  # shutting down logs more lines into the closed pipe
            code = worker.wait(timeout=DEADLINE)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait(timeout=30)
    stderr = (tmp_path / "worker.err").read_text()
    assert "Traceback" not in stderr and "Logging error" not in stderr and "BrokenPipe" not in stderr, stderr
    assert code == 0
