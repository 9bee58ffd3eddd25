"""The catalog (the test suite's real PostgreSQL) down while items commit: they wait on
storage_error, retrying at most 5 s apart, and commit once it answers again."""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from temporalio.client import Client

from tests.conftest import make_settings, new_postgres_database
from tests.polling import until
from tests.tcpproxy import TcpProxy
from trawl.settings import CatalogSettings, Settings
from trawl.simulator import MediaFile, Simulator
from trawl.starter.client import item_result, start_item
from trawl.platforms.registry import default_registry
from trawl.storage.catalog import Catalog
from trawl.worker.main import running_worker

pytestmark = pytest.mark.skipif(not os.environ.get("TRAWL_TEST_POSTGRES_URL"),
                                reason="needs the test PostgreSQL (TRAWL_TEST_POSTGRES_URL, set by .ci/run)")


@pytest.mark.timeout(180)
async def test_items_wait_out_a_catalog_outage_retrying_within_seconds_and_commit_once_it_is_back(
        temporal_client: Client, temporal_address: str, sim: Simulator, tmp_path: Path) -> None:
    direct = new_postgres_database()
    parts = urlsplit(direct)
    with TcpProxy(parts.port or 5432) as catalog_link:
        through = parts._replace(netloc=f"{parts.username}@127.0.0.1:{catalog_link.port}").geturl()
        # The default retry policies (the test settings' are quick): their backoff must not decide.
        worker_settings = make_settings(tmp_path, temporal_address, catalog_url=through, retry=Settings().retry)
        starter = worker_settings.model_copy(update={"catalog": CatalogSettings(url=direct)})
        Catalog(direct).create_schema()
        names = ("a", "b")
        for name in names:
            sim.add_file(f"/v/pg-{name}.mp4", MediaFile("mp4", f"pg-{name}", 40_000))
        async with running_worker(temporal_client, worker_settings):
            catalog_link.down()
            handles = [(await start_item(temporal_client, starter, default_registry(), sim.url(f"/v/pg-{n}.mp4"))).handle
                       for n in names]
            async def pending_activities() -> list:
                return [a for h in handles for a in (await h.describe()).raw_description.pending_activities]

            # Until both items failed three times: past the policy's 1-2, 2-4 and 4-8 s.
            pending = await until(pending_activities, "both items' fourth attempt", 90, every=0.5,
                                  holds=lambda pending: len(pending) == 2 and all(a.attempt >= 4 for a in pending))
            assert {a.last_failure.application_failure_info.type for a in pending} == {"storage_error"}, pending
            # 5 s at most (and the server's microseconds), where the policy alone would now wait 8 s.
            assert all(a.current_retry_interval.ToTimedelta() < timedelta(seconds=6) for a in pending), pending
            catalog_link.up()
            results = await asyncio.wait_for(asyncio.gather(*(item_result(h, "") for h in handles)), 60)
    assert [r.outcome for r in results] == ["committed", "committed"], results
    assert Catalog(direct).count() == 2
