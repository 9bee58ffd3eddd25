"""A platform outage end to end: retries in the JSON logs, triage that names it, metrics that count it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.ports import free_port
from trawl.starter.client import item_result, start_item
from tests.conftest import make_settings
from trawl.logs import LOG_FIELDS
from trawl.platforms.registry import default_registry
from trawl.simulator import MediaFile, Simulator
from trawl.simulator import faults
from trawl.simulator.demo import og_page
from trawl.worker.main import running_worker
from trawl.contracts import STAGES

TRAWL = str(Path(sys.executable).parent / "trawl")


@pytest.mark.slow
async def test_outage_is_retried_logged_triaged_and_counted(temporal_client: Client, tmp_path: Path,
                                                            temporal_address: str, sim: Simulator) -> None:
    settings = make_settings(tmp_path, temporal_address, retry={
        "download": {"initial_interval": "1s", "backoff_coefficient": 1.5, "maximum_interval": "4s"}})
    metrics_port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
    env.update(TRAWL_DATA_DIR=str(settings.data_dir), TRAWL_NET__ALLOW_PRIVATE="true",
               TRAWL_TEMPORAL__ADDRESS=temporal_address, TRAWL_TEMPORAL__EMBEDDED="false",
               TRAWL_TEMPORAL__TASK_QUEUE_PREFIX=settings.temporal.task_queue_prefix,
        TRAWL_CATALOG__URL=settings.catalog.url,
               TRAWL_WORKER__METRICS_PORT=str(metrics_port), TRAWL_WORKER__IDENTITY="outage-worker")
    log_path = tmp_path / "worker.log"
    urls = []
    for i in range(5):
        sim.add_file(f"/cdn/{i}.mp4", MediaFile("mp4", f"outage-{i}", 200_000 + i))
        sim.add_page(f"/watch/{i}", og_page(f"Clip {i}\nwith a newline \x1b[31m", f"/cdn/{i}.mp4"))
        urls.append(sim.url(f"/watch/{i}"))
    with open(log_path, "wb") as log:
        worker = subprocess.Popen([TRAWL, "worker"], env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
        try:
            sim.faults.outage(r"/cdn/.*", 20, status_code=500)
            outage_started = time.time()
            handles = [(await start_item(temporal_client, settings, default_registry(), u)).handle for u in urls]
            results = await asyncio.wait_for(asyncio.gather(*(item_result(h, "") for h in handles)), 180)
            assert time.time() - outage_started >= 20
            assert [r.outcome for r in results] == ["committed"] * 5
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as resp:
                metrics = resp.read().decode()
        finally:
            worker.terminate()
            worker.wait(timeout=30)

    lines = log_path.read_text().splitlines()
    events = [json.loads(line) for line in lines]  # every line the worker wrote is one JSON object
    for event in events:
        assert set(LOG_FIELDS) <= set(event), event
        assert event["worker"] == "outage-worker"
    activity = [e for e in events if e["event"] == "activity"]
    assert activity and all(e["stage"] in (*STAGES, "claim", "discard") for e in activity)
    retries = [e for e in activity if e["outcome"] == "retry"]
    assert retries and all(e["error_class"] == "http_5xx" and e["stage"] == "download" for e in retries)
    assert all(e["platform"] == "generic" and e["canonical_url"] and e["task_id"] for e in retries)
    first_retry = min(e["ts"] for e in retries)
    oks = [e for e in activity if e["outcome"] == "ok" and e["stage"] == "download"]
    assert len(oks) == 5 and all(e["ts"] > first_retry and e["bytes"] > 0 for e in oks)
    summaries = [e for e in events if e["event"] == "item"]
    assert sorted(e["outcome"] for e in summaries) == ["committed"] * 5

    triage = subprocess.run([TRAWL, "logs", "triage", str(log_path), "--json"], capture_output=True, text=True,
                            env=env, check=True)
    groups = json.loads(triage.stdout)["groups"]
    assert [(g["platform"], g["stage"], g["error_class"]) for g in groups] == [("generic", "download", "http_5xx")]
    group = groups[0]
    assert group["count"] == len(retries) and group["still_failing"] is False
    assert group["first_seen"] == first_retry and group["last_seen"] == max(e["ts"] for e in retries)
    table = subprocess.run([TRAWL, "logs", "triage", str(log_path)], capture_output=True, text=True, env=env,
                           check=True).stdout
    assert "generic" in table and "http_5xx" in table and "no, ok at" in table

    assert 'trawl_items_total{' in metrics
    items = [line for line in metrics.splitlines() if line.startswith("trawl_items_total{")]
    assert any('outcome="committed"' in line and line.endswith(" 5") for line in items), items
    failures = [line for line in metrics.splitlines() if line.startswith("trawl_activity_failures_total{")]
    assert any('error_class="http_5xx"' in line for line in failures), failures
    assert any(line.startswith("trawl_bytes_downloaded_total{") for line in metrics.splitlines())
    assert "# TYPE trawl_download_duration_seconds histogram" in metrics  # the name docs/logs.md gives
    assert any(line.startswith("trawl_download_duration_seconds_count{") for line in metrics.splitlines())
    assert "temporal_" in metrics  # the SDK's own runtime metrics on the same endpoint


async def test_retry_after_is_honoured(temporal_client: Client, tmp_path: Path, temporal_address: str,
                                       sim: Simulator) -> None:
    settings = make_settings(tmp_path, temporal_address, retry={
        stage: {"initial_interval": "100ms", "maximum_interval": "10s"} for stage in ("fetch", "download")})
    sim.add_file("/limited.mp4", MediaFile("mp4", "limited", 50_000))
    sim.faults.add(r"/limited\.mp4", faults.rate_limited(3))
    async with running_worker(temporal_client, settings):
        started = await start_item(temporal_client, settings, default_registry(), sim.url("/limited.mp4"))
        result = await asyncio.wait_for(item_result(started.handle, ""), 60)
    assert result.outcome == "committed"
    times = sim.stats["/limited.mp4"].times  # the fetch's probe (429), its retry, the download
    assert len(times) == 3
    assert times[1] - times[0] >= 3.0, f"retried after {times[1] - times[0]:.2f} s"


async def test_retry_after_is_capped_by_the_policy(temporal_client: Client, tmp_path: Path,
                                                   temporal_address: str, sim: Simulator) -> None:
    settings = make_settings(tmp_path, temporal_address, retry={
        stage: {"initial_interval": "100ms", "maximum_interval": "1s"} for stage in ("fetch", "download")})
    sim.add_file("/limited.mp4", MediaFile("mp4", "capped", 50_000))
    sim.faults.add(r"/limited\.mp4", faults.rate_limited(3600))
    async with running_worker(temporal_client, settings):
        started = await start_item(temporal_client, settings, default_registry(), sim.url("/limited.mp4"))
        result = await asyncio.wait_for(item_result(started.handle, ""), 60)
    assert result.outcome == "committed"
    times = sim.stats["/limited.mp4"].times
    assert 0.9 <= times[1] - times[0] < 10  # Retry-After: 3600 waited the policy's 1 s maximum
