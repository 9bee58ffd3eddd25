"""`trawl cancel` removes an item's partial files as the docs say (issue 43, point 7), also when no
worker runs to end the item: nothing can be writing them then. Real ``trawl`` subprocesses
against the session's Temporal dev server, with no worker on the test's queues."""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client, WorkflowExecutionStatus

from tests.e2e.test_crawl_cli import cli, env_for
from trawl.platforms.registry import default_registry
from trawl.settings import Settings
from trawl.starter.client import start_item
from trawl.workdirs import mark_owner, workdir_name


async def test_cancel_with_no_worker_removes_the_items_partial_files(temporal_client: Client, settings: Settings,
                                                                     tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/interrupted/clip.mp4"  # never fetched: no worker runs
    started = await start_item(temporal_client, settings, default_registry(), url)
    env = env_for(settings, tmp_path)
    directory = Path(env["TRAWL_DATA_DIR"]) / "work" / workdir_name(started.handle.id)
    mark_owner(directory, started.handle.id)
    (directory / "video.part").write_bytes(b"\0" * 1_000_000)
    try:
        cancelled = await cli(["cancel", url], env, tmp_path)
        assert cancelled.returncode == 0, cancelled.stderr
        assert not directory.exists(), list(directory.iterdir())
        assert cancelled.stdout.strip() == (f"cancel: {started.handle.id} (no worker runs: it ends when one next "
                                            "does; removed 976.6 KiB of partial files here)"), cancelled.stdout
        # The cancel waits in Temporal for a worker: the item is still running, cancel requested.
        assert (await started.handle.describe()).status == WorkflowExecutionStatus.RUNNING
    finally:
        await started.handle.terminate()
