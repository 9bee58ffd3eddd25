"""The embedded dev server's dynamic config: its search attributes are cached, not read from its
database at every look (trawl.starter.embedded.DEV_SERVER_DYNAMIC_CONFIG).

A real dev server started with trawl's own command line (``dev_server_command``) and a metrics
port; a workflow upserts trawl's search attributes in several workflow tasks, at once after the
server's start, and the server's own counter of cluster-metadata reads tells how often its history
service went to the database for them. The same with the CLI's default (the cache off) shows the
check bites.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio import workflow

with workflow.unsafe.imports_passed_through():  # the sandbox imports this module for its workflow
    import subprocess
    import time
    import urllib.request

    import pytest
    from temporalio.client import Client
    from temporalio.worker import Worker

    from tests.ports import free_port
    from trawl.contracts import PLATFORM, STAGE
    from trawl.settings import Settings, TemporalSettings
    from trawl.starter.embedded import dev_server_command

WORKFLOWS = 4
STEPS = 3  # workflow tasks a run upserts in


@workflow.defn(name="test-upserting")
class Upserting:
    @workflow.run
    async def run(self) -> int:
        for step in range(STEPS):
            workflow.upsert_search_attributes([PLATFORM.value_set("generic"), STAGE.value_set(f"step-{step}")])
            await workflow.sleep(timedelta(milliseconds=10))  # a workflow task each
        return STEPS


def metadata_reads(metrics_port: int) -> float:
    """The history service's reads of the cluster metadata so far, once settled: the server
    publishes its counters about once a second, so two readings more than a second apart agree."""
    last = None
    for _ in range(20):
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as answer:
            body = answer.read().decode()
        now = sum(float(line.rpartition(" ")[2]) for line in body.splitlines()
                  if line.startswith("persistence_requests{") and 'operation="GetCurrentClusterMetadata"' in line
                  and 'service_name="history"' in line)
        if now == last:
            return now
        last = now
        time.sleep(1.5)
    raise AssertionError(f"the server's count of metadata reads did not settle: {last}")


async def upserts_and_reads(tmp_path: Path, extra: list[str]) -> tuple[float, float]:
    """(the reads before the workflows, those during them)."""
    port, metrics_port = free_port(), free_port()
    settings = Settings(data_dir=tmp_path / "data",
                        temporal=TemporalSettings(address=f"127.0.0.1:{port}", ui_port=free_port()))
    settings.data_dir.mkdir(parents=True)
    server = subprocess.Popen([*dev_server_command(settings), "--metrics-port", str(metrics_port), *extra],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = None
        for _ in range(600):
            assert server.poll() is None, f"the dev server exited with {server.returncode}"
            try:
                client = await Client.connect(f"127.0.0.1:{port}")
                break
            except RuntimeError:
                await asyncio.sleep(0.1)
        assert client is not None, "the dev server did not answer within a minute"
        before = metadata_reads(metrics_port)
        queue = f"upserting-{uuid.uuid4().hex[:6]}"
        async with Worker(client, task_queue=queue, workflows=[Upserting]):
            results = await asyncio.wait_for(asyncio.gather(*(
                client.execute_workflow(Upserting.run, id=f"{queue}-{i}", task_queue=queue,
                                        execution_timeout=timedelta(seconds=60))
                for i in range(WORKFLOWS))), timeout=120)
        assert results == [STEPS] * WORKFLOWS
        return before, metadata_reads(metrics_port) - before
    finally:
        server.terminate()
        server.wait(timeout=60)


@pytest.mark.parametrize("cache", [True, False], ids=["trawl's", "the CLI's default"])
async def test_the_embedded_server_reads_its_search_attributes_from_its_cache(tmp_path: Path, cache: bool) -> None:
    extra = [] if cache else ["--dynamic-config-value", "system.forceSearchAttributesCacheRefreshOnRead=true"]
    before, during = await upserts_and_reads(tmp_path, extra)
    if cache:
        # The cache's first load counted (the counter is there), and at most a minute's refresh after it.
        assert before + during >= 1 and during <= 1, (before, during)
    else:
        assert during >= WORKFLOWS * STEPS, (before, during)  # every upserting workflow task read it
