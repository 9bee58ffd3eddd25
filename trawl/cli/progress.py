"""Live measures of work being awaited: a crawl's items (``trawl crawl``) and a crawl workflow
(``trawl crawl-status``), sampled from the items' progress (the downloads' heartbeats)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError

from trawl.cli.output import Rate, StatusLine, crawl_progress_line, retry_line
from trawl.formatting import recording_words
from trawl.starter.client import item_progress
from trawl.starter.waiting import STAGE_OF
from trawl.contracts import ItemResult

SAMPLE_EVERY_S = 1.0
SAMPLED_ITEMS = 16  # items asked for their progress per round: a long crawl is sampled in turns
SAMPLE_TIMEOUT_S = 5.0


class CrawlProgress:
    """The live line of a crawl being awaited: items finished of all, bytes, speed and ETA.

    Speed comes from successive samples of the items' progress (the downloads' heartbeats), each
    item counted from where it was first seen, so an item resumed from an earlier run does not
    look like a burst. The ETA needs a size for every unfinished item: those not sized yet are
    taken at the mean of the sizes known.
    """

    def __init__(self, client: Client, total: int, line: StatusLine, attempts: dict[str, int] | None = None) -> None:
        self.client = client
        self.total = total
        self.line = line
        self.attempts = attempts or {}  # each stage's attempt limit (retry.<stage>.maximum_attempts)
        self.retrying: dict[str, dict[str, Any]] = {}  # workflow id -> its failed attempt waiting for the next
        self.done = 0
        self.finished_bytes = 0  # committed items' sizes
        self.moved = 0  # bytes downloaded by items that finished, since they were first seen
        self.seen: dict[str, list[Any]] = {}  # workflow id -> [bytes at first sight, bytes now, total or None]
        self.sizes: list[int] = []  # sizes of finished committed items
        self.rate = Rate(steady=True)
        self.speed: float | None = None
        self.turn = 0
        self.recordings: dict[str, dict[str, Any]] = {}  # workflow id -> a live recording's measures

    def finished(self, result: ItemResult) -> None:
        self.done += 1
        self.recordings.pop(result.workflow_id, None)
        size = sum(a.size for a in result.assets)
        entry = self.seen.pop(result.workflow_id, None)
        self.retrying.pop(result.workflow_id, None)
        if result.outcome == "committed":
            self.finished_bytes += size
            self.sizes.append(size)
            self.moved += max(size, entry[1]) - entry[0] if entry else size
        elif entry:
            self.moved += entry[1] - entry[0]

    def sample(self, workflow_id: str, progress: dict[str, Any]) -> None:
        done, total = progress["bytes_done"], progress["bytes_total"]
        entry = self.seen.setdefault(workflow_id, [done, done, total])
        entry[1], entry[2] = max(entry[1], done), total
        if progress.get("live"):
            self.recordings[workflow_id] = progress["live"]
        if progress.get("retry"):
            self.retrying[workflow_id] = progress["retry"]
        else:
            self.retrying.pop(workflow_id, None)

    def render(self) -> str:
        """The items, bytes, speed and ETA; then what a live recording holds and waits for (the
        first one, and how many more record)."""
        running = sum(entry[1] for entry in self.seen.values())
        if self.recordings:  # its bytes and speed are the recording's; it has no end to reckon an ETA by
            first = self.recordings[min(self.recordings)]
            more = f" (+{len(self.recordings) - 1} more recording)" if len(self.recordings) > 1 else ""
            return f"{self.done}/{self.total} items  {recording_words(first, self.speed)}{more}"
        text = crawl_progress_line(self.done, self.total, self.finished_bytes + running, self.speed, self.eta())
        if self.retrying:  # what an item that makes no progress waits for (the soonest retry)
            retry = min(self.retrying.values(), key=lambda r: r["next_at"])
            stage = STAGE_OF.get(retry["activity"], retry["activity"])
            more = f" (+{len(self.retrying) - 1} more)" if len(self.retrying) > 1 else ""
            text += f"  {retry_line(retry, time.time(), self.attempts.get(stage))}{more}"
        return text

    def eta(self) -> float | None:
        unfinished = self.total - self.done
        known = [entry for entry in self.seen.values() if entry[2]]
        sizes = self.sizes + [entry[2] for entry in known]
        if not unfinished or not sizes:
            return None
        remaining = sum(max(0, entry[2] - entry[1]) for entry in known)
        remaining += (unfinished - len(known)) * (sum(sizes) / len(sizes))
        return self.rate.eta(remaining, self.speed)

    def pick(self, waiting: dict[str, tuple[Any, str]]) -> list[tuple[str, Any]]:
        """The items to sample this round: those downloading first, then the rest in turns."""
        sized = [(wid, waiting[wid][0]) for wid, entry in self.seen.items() if entry[2] and wid in waiting]
        taken = {wid for wid, _ in sized}
        rest = [(wid, handle) for wid, (handle, _) in waiting.items() if wid not in taken]
        room = max(0, SAMPLED_ITEMS - len(sized))
        if rest and room:
            start = self.turn % len(rest)
            self.turn += room
            rest = list(itertools.islice(itertools.cycle(rest), start, start + min(room, len(rest))))
        else:
            rest = []
        return sized[:SAMPLED_ITEMS] + rest

    async def follow(self, waiting: dict[str, tuple[Any, str]]) -> None:
        """Sample the awaited items and redraw the line, every second, until cancelled."""

        async def one(workflow_id: str, handle: Any) -> None:
            with contextlib.suppress(Exception):  # an answer that does not come now comes next round
                self.sample(workflow_id, await asyncio.wait_for(item_progress(self.client, handle),
                                                                SAMPLE_TIMEOUT_S))

        while True:
            self.line.show(self.render())
            await asyncio.gather(*(one(wid, handle) for wid, handle in self.pick(waiting)))
            moving = self.moved + sum(entry[1] - entry[0] for entry in self.seen.values())
            self.speed = self.rate.update(time.monotonic(), moving)
            self.line.show(self.render())
            await asyncio.sleep(SAMPLE_EVERY_S)


class CrawlSpeed:
    """A running crawl's speed and ETA from successive samples of its finished bytes plus the
    bytes of its running items (found by their ``CrawlId`` search attribute)."""

    def __init__(self, client: Client, crawl_id: str, *, steady: bool = True) -> None:
        self.client = client
        self.crawl_id = crawl_id
        self.rate = Rate(steady=steady)  # a one-off look of a few seconds: not steady (see Rate)
        self.speed: float | None = None
        self.eta: float | None = None

    async def sample(self, stats: Any) -> None:
        query = f"CrawlId = '{self.crawl_id}' AND ExecutionStatus = 'Running'"
        running: list[dict[str, Any]] = []

        async def one(workflow_id: str) -> None:
            handle = self.client.get_workflow_handle(workflow_id)
            with contextlib.suppress(Exception):
                running.append(await asyncio.wait_for(item_progress(self.client, handle), SAMPLE_TIMEOUT_S))

        with contextlib.suppress(RPCError):
            ids = [e.id async for e in self.client.list_workflows(query, limit=SAMPLED_ITEMS)]
            await asyncio.gather(*(one(wid) for wid in ids))
        self.speed = self.rate.update(time.monotonic(), stats.bytes + sum(p["bytes_done"] for p in running))
        committed = stats.outcomes.get("committed", 0)
        sizes = [p["bytes_total"] for p in running if p["bytes_total"]]
        mean = (stats.bytes + sum(sizes)) / (committed + len(sizes)) if committed + len(sizes) else None
        if mean is None:
            self.eta = None
            return
        remaining = sum(max(0, p["bytes_total"] - p["bytes_done"]) for p in running if p["bytes_total"])
        remaining += (stats.queued + max(0, stats.running - len(sizes))) * mean
        self.eta = self.rate.eta(remaining)
