"""A crawl that joins running items says which --limit-rate applies to them (issue 43, point 7):
their first run's, since a running item's options do not change. Real ``trawl`` subprocesses
against the session's Temporal dev server, with no worker on the test's queues (the items stay
running as started). The server is asked only by a crawl that sets a rate or one of an archive where
a crawl did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from temporalio.client import Client, Interceptor, ListWorkflowsInput, OutboundInterceptor

from tests.e2e.test_crawl_cli import cli, env_for
from trawl.cli.choices import RATED_NOTE, tell_kept_rates
from trawl.platforms.registry import default_registry
from trawl.settings import Settings
from trawl.starter.client import CrawlChoices, crawl_handle, start_item

URL = "http://127.0.0.1:9/interrupted/slow.mp4"  # never fetched: no worker runs


async def test_a_rerun_without_limit_rate_says_the_first_runs_rate_applies(
        temporal_client: Client, settings: Settings, tmp_path: Path) -> None:
    started = await start_item(temporal_client, settings, default_registry(), URL,
                               choices=CrawlChoices(limit_rate=500 * 1024))
    env = env_for(settings, tmp_path)
    (tmp_path / "data" / "run").mkdir(parents=True)
    (tmp_path / "data" / "run" / RATED_NOTE).touch()  # as the command that started it with a rate left it
    crawl_ids = []
    try:
        again = await cli(["crawl", "--detach", URL], env, tmp_path)
        assert again.returncode == 0, again.stderr
        crawl_ids.append(again.stdout.strip())
        said = [line for line in again.stderr.splitlines() if "--limit-rate" in line]
        assert said == [f"trawl: 1 item already running ({started.handle.id}) keeps the --limit-rate of its first "
                        "run, 500.0 KiB/s, not this run's none (the workers' download.limit_rate): a running item's "
                        "options do not change; `trawl cancel` it and crawl again for this run's"], again.stderr
        same = await cli(["crawl", "--detach", "--limit-rate", "500K", URL], env, tmp_path)
        assert same.returncode == 0, same.stderr
        crawl_ids.append(same.stdout.strip())
        assert "--limit-rate" not in same.stderr, same.stderr  # the same rate: nothing to say
    finally:
        await started.handle.terminate()
        for crawl_id in crawl_ids:
            await crawl_handle(temporal_client, crawl_id).terminate()


class _CountedLists(Interceptor):
    """Counts the visibility queries a client makes (the queries themselves go to the real server)."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        counted = self

        class Counting(OutboundInterceptor):
            def list_workflows(self, input: ListWorkflowsInput) -> Any:
                counted.queries.append(input.query or "")
                return super().list_workflows(input)

        return Counting(next)


async def test_a_crawl_without_a_rate_asks_the_server_only_once_one_of_its_archive_did(
        temporal_client: Client, settings: Settings, tmp_path: Path) -> None:
    registry = default_registry()
    started = await start_item(temporal_client, settings, registry, URL, choices=CrawlChoices(limit_rate=500 * 1024))
    counted = _CountedLists()
    client = Client(temporal_client.service_client, namespace=temporal_client.namespace, interceptors=[counted])
    try:
        await tell_kept_rates(client, registry, [URL], CrawlChoices(), tmp_path)
        assert counted.queries == []  # no crawl of this archive asked for a rate: nothing to look for
        assert not (tmp_path / "run" / RATED_NOTE).exists()
        await tell_kept_rates(client, registry, [URL], CrawlChoices(limit_rate=1024 * 1024), tmp_path)
        assert len(counted.queries) == 1 and (tmp_path / "run" / RATED_NOTE).exists()
        await tell_kept_rates(client, registry, [URL], CrawlChoices(), tmp_path)  # from now on every crawl of it looks
        assert len(counted.queries) == 2
    finally:
        await started.handle.terminate()
