"""The workers' build id names trawl's code (its version and a hash of its files) instead of the
SDK's default, which hashes every loaded module at each start (about 0.2 s)."""

from __future__ import annotations

from pathlib import Path

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

import trawl
from tests.conftest import make_settings
from tests.polling import until
from trawl.contracts import workflow_queue
from trawl.worker.main import code_build_id, running_worker


async def test_the_workers_poll_with_trawls_build_id(temporal_client: Client, tmp_path: Path,
                                                     temporal_address: str) -> None:
    build = code_build_id()
    assert build.startswith(f"trawl-{trawl.__version__}-") and len(build.rsplit("-", 1)[1]) == 12
    settings = make_settings(tmp_path, temporal_address)
    request = DescribeTaskQueueRequest(
        namespace="default", task_queue=TaskQueue(name=workflow_queue(settings.temporal.task_queue_prefix)),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)
    async with running_worker(temporal_client, settings):
        async def pollers() -> list:
            return list((await temporal_client.workflow_service.describe_task_queue(request)).pollers)

        found = await until(pollers, "the workers to poll", 10)  # they show once they have polled
    assert {p.worker_version_capabilities.build_id for p in found} == {build}
