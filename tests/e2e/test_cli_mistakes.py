"""A person's mistakes get one line naming the cause and what to do, never a traceback (issue 13).

Exit status 2 for usage and configuration errors. Each test runs the real ``trawl`` command.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.test_cli import TRAWL, run, trawl_env
from tests.ports import closed_address
from tests.tcpproxy import TcpProxy
from tests.worker.test_supervisor import free_ports, metrics_up, started_pids, wait
from trawl.settings import ConfigError, load_settings
from trawl.simulator import MediaFile, Simulator


def one_line_error(done: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    everything = done.stdout + done.stderr
    assert "Traceback" not in everything and "Fatal Python error" not in everything, everything
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


# -- 9: a second worker on one host -----------------------------------------------------------
def test_a_second_worker_on_a_host_takes_the_next_metrics_port(tmp_path: Path, temporal_address: str) -> None:
    port = free_ports(2)
    env = trawl_env(tmp_path, temporal_address, TRAWL_WORKER__METRICS_PORT=str(port))
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    workers: list[subprocess.Popen[bytes]] = []
    try:
        with open(logs[0], "wb") as out:
            workers.append(subprocess.Popen([TRAWL, "worker"], env=env, cwd=tmp_path, stdout=out,
                                            stderr=subprocess.STDOUT))
        wait(lambda: metrics_up(port))
        with open(logs[1], "wb") as out:
            workers.append(subprocess.Popen([TRAWL, "worker"], env=env, cwd=tmp_path, stdout=out,
                                            stderr=subprocess.STDOUT))
        wait(lambda: metrics_up(port + 1) or workers[1].poll() is not None)
        assert workers[1].poll() is None, logs[1].read_text()
        second = logs[1].read_text()
        assert "Traceback" not in second
        assert f"metrics port {port} is in use" in second and f":{port + 1}/metrics" in second, second
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            assert worker.wait(timeout=60) == 0


# -- 10: no server and embedded off ----------------------------------------------------------
def test_worker_without_a_server_says_so(tmp_path: Path) -> None:
    env = trawl_env(tmp_path, closed_address(), TRAWL_WORKER__METRICS_PORT="0")
    line = one_line_error(run(["worker"], env, tmp_path, timeout=60))
    assert "no Temporal server answers at 127.0.0.1:" in line and "trawl server" in line, line


def test_supervised_workers_wait_for_the_server_instead_of_restarting(tmp_path: Path,
                                                                      temporal_address: str) -> None:
    server = TcpProxy(int(temporal_address.rsplit(":", 1)[1]))  # a port that refuses until up() again
    server.down()
    port = free_ports(2)
    env = trawl_env(tmp_path, f"127.0.0.1:{server.port}", TRAWL_WORKER__METRICS_PORT=str(port))
    log = tmp_path / "supervisor.log"
    with open(log, "wb") as out:
        supervisor = subprocess.Popen([TRAWL, "worker", "--processes", "2"], env=env, cwd=tmp_path, stdout=out,
                                      stderr=subprocess.STDOUT)
    try:
        wait(lambda: log.read_text().count("Temporal server unreachable") >= 2)
        children = started_pids(log)
        time.sleep(3)  # long enough for the old children to die and be restarted
        text = log.read_text()
        assert started_pids(log) == children and len(children) == 2, text
        assert "Traceback" not in text and "Fatal Python error" not in text and "died" not in text, text
        assert text.count("Temporal server unreachable") == 2, text  # said once per child, then quiet
        assert "worker started" not in text
        server.up()
        wait(lambda: log.read_text().count("worker started") == 2)  # they connected and run
        assert metrics_up(port) and metrics_up(port + 1)
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(timeout=60) == 0
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
        server.down()


# -- 11, 12: settings -------------------------------------------------------------------------
def test_a_toml_syntax_error_names_file_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "trawl.toml").write_text("[net]\nallow_private = yes\n")
    env = trawl_env(tmp_path)
    env.pop("TRAWL_NET__ALLOW_PRIVATE")
    line = one_line_error(run(["items"], env, tmp_path))
    assert "trawl.toml" in line and "line 2" in line and "column 17" in line, line


def test_a_nonsense_temporal_address_is_a_configuration_error(tmp_path: Path) -> None:
    env = trawl_env(tmp_path, TRAWL_TEMPORAL__ADDRESS="nonsense", TRAWL_TEMPORAL__EMBEDDED="false")
    line = one_line_error(run(["crawl", "http://example.com/a.mp4"], env, tmp_path))
    assert "temporal.address" in line and "HOST:PORT" in line and "'nonsense'" in line, line


@pytest.mark.parametrize("address", ["127.0.0.1:7233", "temporal:7233", "[::1]:7233", "my-host.example.com:443"])
def test_addresses_that_are_host_and_port(address: str) -> None:
    assert load_settings(temporal={"address": address}).temporal.address == address


@pytest.mark.parametrize("address", ["nonsense", "host:", ":7233", "host:0", "host:70000", "http://host:7233",
                                     "host:7233/x", "two words:1"])
def test_addresses_that_are_not(address: str) -> None:
    with pytest.raises(ConfigError, match="temporal.address: .*HOST:PORT"):
        load_settings(temporal={"address": address})


# -- 13: a URL file that is not there -----------------------------------------------------------
def test_crawl_of_a_missing_url_file(tmp_path: Path) -> None:
    env = trawl_env(tmp_path, closed_address())
    line = one_line_error(run(["crawl", "--file", "/nonexistent"], env, tmp_path))
    assert "/nonexistent" in line and "No such file or directory" in line, line


# -- 14: the API on a public address without a token -------------------------------------------
@pytest.mark.parametrize("command", ["api", "up"])
def test_api_refuses_a_public_address_before_announcing_it(tmp_path: Path, temporal_address: str,
                                                           command: str) -> None:
    env = trawl_env(tmp_path, temporal_address, TRAWL_WORKER__METRICS_PORT="0")
    line = one_line_error(run([command, "--host", "0.0.0.0"], env, tmp_path, timeout=60))
    assert "refusing to listen on 0.0.0.0 without api.token" in line and "TRAWL_API__TOKEN" in line, line


# -- Also: cancelling what has finished --------------------------------------------------------
def test_cancel_of_a_finished_item_says_it_had_finished(sim: Simulator, tmp_path: Path,
                                                        temporal_address: str) -> None:
    sim.add_file("/done.mp4", MediaFile("mp4", "done", 20_000))
    url = sim.url("/done.mp4")
    env = trawl_env(tmp_path, temporal_address)
    assert run(["crawl", url], env, tmp_path).returncode == 0
    line = one_line_error(run(["cancel", url], env, tmp_path), code=1)
    assert "had already finished (committed)" in line and "nothing to cancel" in line, line
