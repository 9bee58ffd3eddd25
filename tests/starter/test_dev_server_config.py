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
    """The history service's reads of the cluster metadata (where search attributes live) so far."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as answer:
        body = answer.read().decode()
    return sum(float(line.rpartition(" ")[2]) for line in body.splitlines()
               if line.startswith("persistence_requests{") and 'operation="GetCurrentClusterMetadata"' in line
               and 'service_name="history"' in line)


async def upserts_and_reads(tmp_path: Path, extra: list[str]) -> float:
    port, metrics_port = free_port(), free_port()
    settings = Settings(data_dir=tmp_path / "data",
                        temporal=TemporalSettings(address=f"127.0.0.1:{port}", ui_port=free_port()))
    settings.data_dir.mkdir(parents=True)
    server = subprocess.Popen([*dev_server_command(settings), "--metrics-port", str(metrics_port), *extra],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = None
        for _ in range(600):
            try:
                client = await Client.connect(f"127.0.0.1:{port}")
                break
            except RuntimeError:
                await asyncio.sleep(0.1)
        assert client is not None, "the dev server did not answer within a minute"
        queue = f"upserting-{uuid.uuid4().hex[:6]}"
        async with Worker(client, task_queue=queue, workflows=[Upserting]):
            # At once after the start: the attributes the server was started with are there.
            results = await asyncio.wait_for(asyncio.gather(*(
                client.execute_workflow(Upserting.run, id=f"{queue}-{i}", task_queue=queue,
                                        execution_timeout=timedelta(seconds=60))
                for i in range(WORKFLOWS))), timeout=120)
        assert results == [STEPS] * WORKFLOWS
        return metadata_reads(metrics_port)
    finally:
        server.terminate()
        server.wait(timeout=60)


@pytest.mark.parametrize("cache", [True, False], ids=["trawl's", "the CLI's default"])
async def test_the_embedded_server_reads_its_search_attributes_from_its_cache(tmp_path: Path, cache: bool) -> None:
    extra = [] if cache else ["--dynamic-config-value", "system.forceSearchAttributesCacheRefreshOnRead=true"]
    reads = await upserts_and_reads(tmp_path, extra)
    if cache:
        assert reads <= 3, reads  # the cache's first load (and a refresh a minute later at most)
    else:
        assert reads >= WORKFLOWS * STEPS, reads  # every upserting workflow task went to the database
