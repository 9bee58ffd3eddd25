"""A worker's requests through ``net.proxies``: each activity's requests take its platform's turn
(the interceptor sets the route), and an item crawls through a dead proxy's neighbour."""

from __future__ import annotations

from pathlib import Path

import structlog
from temporalio.client import Client

from tests.conftest import make_settings
from tests.trawl.test_http_client import PROXY_VARS, RecordingProxy
from trawl.platforms.registry import default_registry
from trawl.settings import NetSettings
from trawl.simulator import MediaFile, Simulator
from trawl.starter.client import item_result, start_item
from trawl.worker.main import running_worker


async def test_an_item_crawls_through_the_live_proxy_and_the_dead_one_rests_for_its_platform(
        temporal_client: Client, tmp_path: Path, temporal_address: str, monkeypatch) -> None:  # noqa: ANN001
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    with Simulator() as proxy, RecordingProxy() as dead:
        dead.__exit__()  # its port refuses connections
        proxy.add_file("/v/clip.mp4", MediaFile("mp4", "through-a-proxy", 200_000))
        settings = make_settings(tmp_path, temporal_address)
        settings = settings.model_copy(update={"net": NetSettings(allow_private=True,
                                                                  proxies=[dead.url, proxy.base_url])})
        url = "http://media.trawl-test.invalid/v/clip.mp4"  # only the proxy answers for it
        with structlog.testing.capture_logs() as logs:
            async with running_worker(temporal_client, settings):
                started = await start_item(temporal_client, settings, default_registry(), url)
                result = await item_result(started.handle, url)
    assert result.outcome == "committed", result
    assert proxy.stats["/v/clip.mp4"].requests >= 2  # the fetch's look and the download
    rested = [line for line in logs if line.get("event") == "proxy rested"]
    assert len(rested) == 1 and rested[0]["proxy"] == dead.url and rested[0]["platform"] == "generic", rested
