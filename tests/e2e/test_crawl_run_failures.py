"""`trawl crawls` and `trawl crawl-status` say why a crawl failed: its source could not be expanded
(issue 24, 2). The Web UI shows the failed run with the same message."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError

from trawl.starter.client import start_crawl
from tests.e2e.test_crawl_cli import cli, env_for
from tests.polling import until
from trawl.platforms.registry import default_registry
from trawl.settings import Settings
from trawl.worker.main import running_worker

REASON = "source mylist: no source named 'mylist' in the settings"


async def test_crawls_and_crawl_status_say_why_a_crawl_failed(temporal_client: Client, settings: Settings,
                                                              tmp_path: Path) -> None:
    env = env_for(settings, tmp_path)
    async with running_worker(temporal_client, settings):  # its settings have no sources
        handle, _ = await start_crawl(temporal_client, settings, default_registry(), [], source="mylist")
        with pytest.raises(WorkflowFailureError):
            await asyncio.wait_for(handle.result(), 60)
    # Read from the failure itself: no worker needs to answer.
    status = await cli(["crawl-status", handle.id], env, tmp_path)
    assert status.returncode == 1 and status.stdout.startswith(f"{handle.id}: failed\n"), status
    assert REASON in status.stdout, status.stdout
    as_json = json.loads((await cli(["crawl-status", handle.id, "--json"], env, tmp_path)).stdout)
    assert as_json["status"] == "FAILED" and as_json["stats"]["error"].startswith(REASON), as_json
    def rows_of(listed) -> list[str]:  # noqa: ANN001
        return [line for line in listed.stdout.splitlines() if line.startswith(handle.id)]

    # Listed from Temporal's visibility store, which may lag a moment.
    listed = await until(lambda: cli(["crawls", "--limit", "1000"], env, tmp_path),
                         lambda listed: f"`crawls` to list the crawl as failed: {listed.stdout}", 30, every=0.5,
                         holds=lambda listed: (rows := rows_of(listed)) and " failed " in rows[0])
    rows = rows_of(listed)
    assert len(rows) == 1 and REASON in rows[0], rows
