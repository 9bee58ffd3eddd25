"""crawl-status when the server goes away after the command reached it: one line, exit 1, and with
--json still one object on stdout (its status unknown), never a traceback or "no crawl".

The server is this test's own dev server, killed at the moment the command has its session and
asks for the crawl: the command's real client meets a refused connection, deterministically (the
chaos test meets this branch only when its timing happens to).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError

from tests.conftest import make_settings
from tests.e2e.test_chaos import start_server
from tests.ports import free_ports
from trawl.cli import crawl_status
from trawl.cli.exits import EXIT_FAILED_ITEMS
from trawl.cli.output import CommandError


async def _serving(address: str, timeout: float = 60) -> None:
    """Wait until the dev server at ``address`` answers for its namespace (its port opens first)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            client = await Client.connect(address)
            await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace="default"))
            return
        except (RuntimeError, RPCError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
async def test_a_server_gone_after_the_connect_is_one_line_and_a_json_object(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], as_json: bool) -> None:
    port = free_ports(2)  # the server's gRPC port and its HTTP port next to it
    server = start_server(tmp_path / "temporal.db", port, tmp_path / "temporal.log")
    try:
        await _serving(f"127.0.0.1:{port}")
        settings = make_settings(tmp_path, f"127.0.0.1:{port}", catalog_url=f"sqlite:///{tmp_path / 'catalog.db'}")
        real_crawl_state = crawl_status.crawl_state
        asked: list[str] = []

        async def server_killed_first(handle: Any, client: Any) -> Any:
            asked.append(handle.id)
            server.send_signal(signal.SIGKILL)
            server.wait(timeout=30)
            return await real_crawl_state(handle, client)

        monkeypatch.setattr(crawl_status, "crawl_state", server_killed_first)
        args = argparse.Namespace(id="crawl-0123456789ab", json=as_json)
        with pytest.raises(CommandError) as raised:
            await crawl_status.cmd_crawl_status(args, settings)
    finally:
        if server.poll() is None:
            server.kill()
        server.wait(timeout=30)
    assert asked == ["crawl-0123456789ab"]  # the session was had: the server went away after it
    error = raised.value
    assert error.code == EXIT_FAILED_ITEMS, error
    assert str(error).startswith(f"the Temporal server at 127.0.0.1:{port} is unreachable ("), error
    assert str(error).endswith("); try again when it is back") and "\n" not in str(error), error
    out = capsys.readouterr().out
    if not as_json:
        assert out == ""
        return
    [line] = out.splitlines()
    shown = json.loads(line)
    assert shown["id"] == "crawl-0123456789ab" and shown["status"] is None and shown["stats"] is None, shown
    assert shown["failed_items"] == [] and shown["unreachable"], shown
