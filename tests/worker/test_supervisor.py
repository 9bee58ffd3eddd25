"""`trawl worker --processes N`: N real processes, each its own identity and metrics port; a
killed one is restarted; SIGTERM stops them all."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.workflowservice.v1 import GetSystemInfoRequest

from trawl.settings import Settings

from tests.e2e.test_cli import trawl_env
from tests.ports import free_ports, restartable_ports  # noqa: F401 - restartable_ports: its importers'
from tests.polling import wait_until as wait
from tests.tcpproxy import TcpProxy

TRAWL = str(Path(sys.executable).parent / "trawl")


def metrics_up(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as resp:
            return resp.status == 200
    except OSError:
        return False


def started_pids(log: Path) -> list[int]:
    pids = []
    for line in log.read_text().splitlines():
        if line.startswith("{"):
            event = json.loads(line)
            if event["event"] == "worker process started":
                pids.append(event["pid"])
    return pids


def test_processes_are_supervised(tmp_path: Path, temporal_address: str) -> None:
    port = free_ports(2)
    env = trawl_env(tmp_path, temporal_address, TRAWL_WORKER__METRICS_PORT=str(port))
    log = tmp_path / "supervisor.log"
    with open(log, "wb") as out:
        supervisor = subprocess.Popen([TRAWL, "worker", "--processes", "2"], env=env, cwd=tmp_path, stdout=out,
                                      stderr=subprocess.STDOUT)
    try:
        wait(lambda: metrics_up(port) and metrics_up(port + 1))  # two processes, one port each
        first = started_pids(log)
        assert len(first) == 2
        os.kill(first[0], signal.SIGKILL)
        wait(lambda: len(started_pids(log)) == 3)
        replacement = started_pids(log)[2]
        wait(lambda: metrics_up(port))
        assert replacement not in first
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(timeout=60) == 0
        for pid in (first[1], replacement):
            assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    finally:
        if supervisor.poll() is None:
            supervisor.kill()


def test_workers_do_not_outlive_a_killed_supervisor(tmp_path: Path, temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address, TRAWL_WORKER__METRICS_PORT="0")
    log = tmp_path / "supervisor.log"
    with open(log, "wb") as out:
        supervisor = subprocess.Popen([TRAWL, "worker", "--processes", "2"], env=env, cwd=tmp_path, stdout=out,
                                      stderr=subprocess.STDOUT)
    wait(lambda: len(started_pids(log)) == 2)
    children = started_pids(log)
    supervisor.kill()
    supervisor.wait()
    wait(lambda: not any(Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text()
                         for pid in children), timeout=30)


async def test_a_server_that_stops_as_a_worker_connects_is_waited_for_not_taken_for_bad_settings(
        settings: Settings, temporal_address: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A supervised worker connected to a server that a restart stopped before the worker's first
    call: that call's connection error is a server that is down, waited for again, and not an
    exit for settings that cannot work (its supervisor stopped every worker for one, and the
    frontier-faults test's crawl, whose server restarts, waited for ever)."""
    from trawl.cli import serve

    proxy = TcpProxy(int(temporal_address.rsplit(":", 1)[1]))
    settings = settings.model_copy(update={"temporal": settings.temporal.model_copy(
        update={"address": f"127.0.0.1:{proxy.port}"})})
    real = serve.ensure_search_attributes
    calls: list[str] = []
    back = threading.Timer(1.5, proxy.up)

    async def server_stops_first(client: Any, namespace: str) -> None:
        calls.append(namespace)
        if len(calls) == 1:  # the restart: connections dropped and refused, then served again
            proxy.down()
            back.start()
        await real(client, namespace)

    monkeypatch.setattr(serve, "ensure_search_attributes", server_stops_first)
    try:
        client = await asyncio.wait_for(serve.ready_server(settings, asyncio.Event(), first_delay=0.2), 60)
        assert client is not None
        assert len(calls) == 2  # the first failed for want of a server, the second found it again
        await client.workflow_service.get_system_info(GetSystemInfoRequest())
    finally:
        back.cancel()
        proxy.down()
