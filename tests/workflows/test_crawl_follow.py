"""A crawl followed by a command (an attached ``trawl crawl``): its results are numbered and read
page by page through the ``results`` query, and it holds back, rather than drop a result, while
its command is RESULTS_BACKLOG behind, before it continues as new too."""

from __future__ import annotations

import asyncio

from temporalio.client import Client, WorkflowHandle, WorkflowQueryFailedError

from tests.polling import until
from tests.workflows.test_crawl import files, settings  # noqa: F401 - fixtures
from tests.workflows.test_frontier import known_to_the_catalog
from trawl.cli.common import OutageNotice
from trawl.cli.crawl import CrawlFollower, KnownItems
from trawl.contracts import (
    RESULTS, RESULTS_BACKLOG, RESULTS_PAGE, RESULTS_READ, RESULTS_TAIL, CrawlResults, CrawlStats, ResultsRead)
from trawl.platforms.registry import default_registry
from trawl.settings import Settings
from trawl.simulator import Simulator
from trawl.starter.client import begin_crawl
from trawl.storage.catalog import Catalog

KNOWN = 2_600


async def query(handle: WorkflowHandle, name: str, *args: object, result_type: type) -> object:
    """A query, asked again (as the following command does) when a loaded worker fails it on its
    2 s deadlock detector; a query that keeps failing fails the test."""
    for attempt in range(5):
        try:
            return await handle.query(name, *args, result_type=result_type)
        except WorkflowQueryFailedError as err:
            if "deadlock" not in str(err).lower() or attempt == 4:
                raise
            await asyncio.sleep(1.0)
    raise AssertionError("unreachable")


async def results(handle: WorkflowHandle, since: int) -> CrawlResults:
    return await query(handle, RESULTS, since, result_type=CrawlResults)


async def held_back(handle: WorkflowHandle) -> CrawlResults:
    """The crawl's results page once it holds back for its reader (and its count stays put)."""
    async def page() -> CrawlResults | None:
        got = await results(handle, 0)
        return got if got.wants_read else None

    first = await until(page, "the crawl to hold back", timeout=60)
    await asyncio.sleep(1.0)
    again = await results(handle, 0)
    assert again.wants_read and again.stats.finished == first.stats.finished  # nothing more while held back
    return again


async def test_a_followed_crawl_holds_back_for_its_reader_and_drops_nothing(
        temporal_client: Client, settings: Settings, sim: Simulator, worker: None) -> None:  # noqa: F811
    new = files(sim, 3, size=2_000, tag="follow")
    known = [f"http://127.0.0.1:9/follow-known/{i}" for i in range(KNOWN)]  # never fetched: known offline
    catalog = Catalog(settings.catalog_url)
    catalog.create_schema()
    known_to_the_catalog(catalog, known)
    handle, filled = await begin_crawl(temporal_client, settings, default_registry(), [*known, *new, "notaurl"],
                                       concurrency=2, follow=True)
    assert [r.url for r in filled.refusals] == ["notaurl"]

    page = await held_back(handle)
    assert RESULTS_BACKLOG <= page.stats.finished < KNOWN  # it read a page past the backlog, then stopped
    assert (page.first, page.next, page.missed) == (0, RESULTS_PAGE, 0)
    assert [r.url for r in page.results] == known[:RESULTS_PAGE]  # in the order the crawl met them
    assert {r.outcome for r in page.results} == {"duplicate"}

    await handle.signal(RESULTS_READ, ResultsRead(page.stats.finished))  # read so far: it goes on
    again = await held_back(handle)
    assert again.stats.finished >= page.stats.finished + RESULTS_BACKLOG

    await handle.signal(RESULTS_READ, ResultsRead(again.stats.finished, leaving=True))  # lets go: no more holding
    stats = await asyncio.wait_for(handle.result(), 120)
    assert stats.outcomes == {"duplicate": KNOWN, "committed": 3} and stats.refused == 1

    # Every result is there, numbered once, each URL once.
    seen: list[str] = []
    since = 0
    while True:
        got = await results(handle, since)
        assert got.first == since and got.missed == 0
        seen += [r.url for r in got.results]
        if not got.results:
            break
        since = got.next
    assert since == KNOWN + 3 and sorted(seen) == sorted([*known, *new])
    committed = [r for r in (await results(handle, KNOWN)).results if r.outcome == "committed"]
    assert len(committed) == 3 and all(r.canonical_key and r.assets for r in committed)
    stats_now = await query(handle, "stats", result_type=CrawlStats)
    assert stats_now.finished == KNOWN + 3


async def test_a_followed_crawl_waits_for_its_reader_before_it_continues_as_new(
        temporal_client: Client, settings: Settings, sim: Simulator, worker: None) -> None:  # noqa: F811
    urls = files(sim, 8, size=2_000, tag="follow-can")
    handle, _ = await begin_crawl(temporal_client, settings, default_registry(), urls, concurrency=2,
                                  history_limit=40, follow=True)
    seen: list[str] = []
    since, asked = 0, 0
    ending = asyncio.ensure_future(handle.result())
    while True:
        got = await results(handle, since)
        assert got.first == since and got.missed == 0, got  # nothing lost at a continue-as-new
        seen += [r.url for r in got.results]
        since = got.next
        if got.wants_read:
            asked += 1
            await handle.signal(RESULTS_READ, ResultsRead(since))
        if ending.done() and not got.results:
            break
        await asyncio.sleep(0.1)
    stats = ending.result()
    assert stats.runs > 1 and asked >= 1  # it continued as new, and waited for the reader first
    assert sorted(seen) == sorted(urls) and stats.outcomes == {"committed": 8}



class QueriesAfterEnd:
    """A crawl's handle that counts the queries its follower makes once it knows the crawl ended."""

    def __init__(self, handle: WorkflowHandle) -> None:
        self.handle = handle
        self.follower: CrawlFollower | None = None
        self.after_end = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.handle, name)

    async def query(self, *args: object, **kwargs: object) -> object:
        if self.follower is not None and self.follower.ended is not None:
            self.after_end += 1
        return await self.handle.query(*args, **kwargs)


async def test_a_followed_crawl_returns_its_last_results_so_its_end_needs_no_query(
        temporal_client: Client, settings: Settings, sim: Simulator, worker: None) -> None:  # noqa: F811
    """The command's last page comes with the crawl's end, not from one more query, which a
    worker answers only after its other work (or by replaying the closed crawl)."""
    urls = files(sim, 4, size=2_000, tag="follow-tail")
    handle, _ = await begin_crawl(temporal_client, settings, default_registry(), urls, concurrency=2, follow=True)
    counting = QueriesAfterEnd(handle)
    known = KnownItems(settings, default_registry())
    following = CrawlFollower(temporal_client, counting, known, OutageNotice(settings.temporal.address), None)
    counting.follower = following
    try:
        pages = [page async for page in following.pages()]
    finally:
        known.close()
    got = [r for page in pages for r in page.results]
    assert sorted(r.url for r in got) == sorted(urls) and {r.outcome for r in got} == {"committed"}
    assert len(urls) < RESULTS_TAIL and following.ended is not None and following.ended.last_results_from >= 0
    assert following.since == 4 and following.stats is not None and following.stats.finished == 4
    assert counting.after_end == 0
