"""The attached command's reading of its crawl (CrawlFollower) when a worker fails a query: it
says so once and asks again, as the crawl goes on, instead of ending with a traceback."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio.client import WorkflowQueryFailedError

from trawl.cli.common import OutageNotice
from trawl.cli.crawl import CrawlFollower
from trawl.contracts import CrawlEnded, CrawlResults, CrawlStats, ItemResult

DEADLOCK = "[TMPRL1101] Potential deadlock detected: workflow didn't yield within 2 second(s)."


def stats(finished: int, finished_at: str | None) -> dict[str, Any]:
    return dict(queued=0, running=0, finished=finished, outcomes={"committed": finished}, bytes=0, refused=0,
                started_at="2026-12-05T00:00:00+00:00", finished_at=finished_at, paused=False, cancelled=False,
                runs=1)


class Crawl:
    """A crawl's handle (and the client that gives its result handle): its first query fails as a
    loaded worker's deadlock detector fails it, the next answers; it ends once that is read."""

    id = "crawl-test"

    def __init__(self) -> None:
        self.queries = 0
        self.read = asyncio.Event()

    async def query(self, *_: object, **__: object) -> CrawlResults:
        self.queries += 1
        if self.queries == 1:
            raise WorkflowQueryFailedError(DEADLOCK)
        self.read.set()
        done = ItemResult("item-1", "http://127.0.0.1:9/a.mp4", "committed", canonical_key="k")
        return CrawlResults([done], 0, 1, 0, CrawlStats(**stats(1, "2026-12-05T00:00:01+00:00")))

    def get_workflow_handle(self, *_: object, **__: object) -> Crawl:
        return self

    async def result(self) -> CrawlEnded:
        await self.read.wait()
        return CrawlEnded(**stats(1, "2026-12-05T00:00:01+00:00"))


async def test_a_failed_query_is_asked_again_and_said_once(capsys: pytest.CaptureFixture[str]) -> None:
    crawl = Crawl()
    following = CrawlFollower(crawl, crawl, None, OutageNotice("127.0.0.1:9"), None)  # type: ignore[arg-type]
    pages = await asyncio.wait_for(_all(following), 30)
    assert [r.url for page in pages for r in page.results] == ["http://127.0.0.1:9/a.mp4"]
    assert crawl.queries == 2 and following.since == 1
    err = capsys.readouterr().err
    assert err.count("failed to answer crawl crawl-test") == 1 and "asking again" in err


async def _all(following: CrawlFollower) -> list[CrawlResults]:
    return [page async for page in following.pages()]
