"""crawl-status names a finished crawl's failed URLs and exits 1 for them (issue 43, point 6)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from temporalio.client import Client

from tests.e2e.test_cli import run, trawl_env
from tests.polling import wait_until
from trawl.contracts import CRAWL_WORKFLOW, workflow_queue
from trawl.simulator import MediaFile, Simulator


def own_crawl(temporal_address: str, prefix: str) -> str:
    """The id of the crawl this test's command ran (the dev server is shared with other tests,
    whose crawls `trawl crawls` lists too), once the server's list shows it."""
    async def listed() -> list[str]:
        client = await Client.connect(temporal_address)
        query = f"WorkflowType = '{CRAWL_WORKFLOW}' AND TaskQueue = '{workflow_queue(prefix)}'"
        return [execution.id async for execution in client.list_workflows(query)]

    return wait_until(lambda: (asyncio.run(listed()) or [""])[0], "the crawl in the server's list", timeout=30)


def test_crawl_status_names_failed_urls(tmp_path: Path, sim: Simulator,
                                                           temporal_address: str) -> None:
    sim.add_file("/media/ok.mp4", MediaFile("mp4", "status-ok", 50_000))
    env = trawl_env(tmp_path, temporal_address)
    crawled = run(["crawl", sim.url("/media/ok.mp4"), sim.url("/media/missing.mp4")], env, tmp_path)
    assert crawled.returncode == 1, crawled.stderr
    crawl_id = own_crawl(temporal_address, env["TRAWL_TEMPORAL__TASK_QUEUE_PREFIX"])
    status = run(["crawl-status", crawl_id], env, tmp_path)
    assert status.returncode == 1, status.stderr  # items failed: as `trawl crawl`
    failed = [line for line in status.stdout.splitlines() if line.startswith("failed    ")]
    assert len(failed) == 1 and "not_found" in failed[0] and sim.url("/media/missing.mp4") in failed[0], status.stdout
    as_json = run(["crawl-status", "--json", crawl_id], env, tmp_path)
    assert as_json.returncode == 1, as_json.stderr
    [item] = json.loads(as_json.stdout)["failed_items"]
    assert item["url"] == sim.url("/media/missing.mp4") and item["error_class"] == "not_found" and "404" in item["error"]
