"""Bilibili live rooms end to end: the simulated room over loopback (room_init, getRoomPlayInfo,
a signed sliding playlist), a real dev server and worker, ffmpeg's remux."""

from __future__ import annotations

import asyncio
import time

from temporalio.client import Client, WorkflowExecutionStatus

from tests.e2e.live_fixtures import (  # noqa: F401 - bili, settings: fixtures
    NEEDS_FFMPEG,
    PLAY_INFO,
    ROOM_INIT,
    bili,
    requests,
    settings,
)
from tests.polling import until as wait_until
from trawl.platforms.bilibili.room_site import OFFLINE_ROOM, ROOM_LONG, ROOM_SHORT
from trawl.platforms.bilibili.rooms import broadcast_key
from trawl.platforms.bilibili.site import BilibiliSite
from trawl.platforms.registry import build_registry
from trawl.settings import Settings
from trawl.simulator import Simulator
from trawl.simulator.live_site import LiveStream
from trawl.starter.client import item_result, start_crawl, start_item
from trawl.starter.waiting import running_items
from trawl.storage.catalog import Catalog

pytestmark = NEEDS_FFMPEG


async def test_two_crawls_of_a_broadcast_record_it_once_through_an_expired_playlist_url(
        temporal_client: Client, settings: Settings, bili: BilibiliSite, sim: Simulator, worker: None) -> None:
    """The room by its short id, then by its long id, crawled while on air: one recording, by the
    broadcast's own workflow (its id names the room and the broadcast's start), which the second
    crawl joins; its signed playlist URL expires mid-broadcast (403), the room is resolved again and
    the recording goes on from the next media sequence; a crawl after the broadcast is told it is off air."""
    stream = bili.rooms.start_broadcast(ROOM_LONG, LiveStream(length=12.0, window=6))
    assert stream.started is not None
    registry = build_registry(settings.platforms)
    room_url = bili.rooms.url(ROOM_SHORT)
    first, _ = await start_crawl(temporal_client, settings, registry, [room_url])
    await wait_until(lambda: sum(bili.rooms.segment_requests(ROOM_LONG, 12)) >= 3, "three segments recorded",
                     timeout=30)
    second, _ = await start_crawl(temporal_client, settings, registry, [bili.rooms.url(ROOM_LONG, "h5/")])
    key = broadcast_key(ROOM_LONG, int(stream.started))
    recording = await temporal_client.get_workflow_handle(f"item-{key}").describe()
    assert recording.status == WorkflowExecutionStatus.RUNNING
    # crawl-status, the API and the web page read the crawl's running items: one records, live.
    items = await wait_until(lambda: running_items(temporal_client, first.id), "the recording among the items",
                             holds=lambda items: bool(items.recordings), timeout=30)
    (live,) = items.recordings
    assert live.workflow_id == f"item-{key}" and live.segments >= 1 and live.window is not None
    assert "recording 0:0" in items.line() and "waits for" in items.line(), items.line()
    expired_at = time.time()
    bili.rooms.expire_urls()
    first_stats = await asyncio.wait_for(first.result(), 60)
    second_stats = await asyncio.wait_for(second.result(), 60)
    assert first_stats.outcomes == {"committed": 1} and second_stats.outcomes == {"committed": 1}, (
        first_stats, second_stats)
    assert bili.rooms.segment_requests(ROOM_LONG, 12) == [1] * 12  # every media sequence, once
    assert requests(sim, PLAY_INFO) >= 2  # resolved again after the 403
    item = Catalog(settings.catalog_url).get(key)
    assert item is not None and item.status == "committed" and item.metadata["live_status"] == "was_live"
    live = item.metadata["live"]
    print(f"recorded {live['segments']} of 12 sequences ({live['seconds']} s), {live['missing_segments']} missing; "
          f"getRoomPlayInfo asked {requests(sim, PLAY_INFO)} times, the URLs expired "
          f"{expired_at - stream.started:.1f} s into the broadcast")
    assert (live["segments"], live["missing_segments"], live["ended"]) == (12, 0, "endlist"), live
    assert item.metadata["room_id"] == ROOM_LONG and item.metadata["short_id"] == ROOM_SHORT
    (asset,) = [a for a in item.assets if a.kind == "video"]  # beside it, the room's comments
    assert asset.mime == "video/mp4"

    # Over: the room is off air, so a later crawl has nothing to record (the broadcast stays one item).
    late = await start_item(temporal_client, settings, registry, room_url)
    result = await asyncio.wait_for(item_result(late.handle, room_url), 60)
    assert (result.outcome, result.error_class) == ("failed", "not_found")


async def test_a_playlist_url_that_answers_404_is_resolved_again_and_the_recording_goes_on(
        temporal_client: Client, settings: Settings, bili: BilibiliSite, sim: Simulator, worker: None) -> None:
    """A CDN node that drops the stream (its signed playlist URL answers 404) is not the end of the
    broadcast: getRoomPlayInfo is asked again and the recording goes on from the next sequence."""
    stream = bili.rooms.start_broadcast(ROOM_LONG, LiveStream(length=10.0, window=6))
    assert stream.started is not None
    registry = build_registry(settings.platforms)
    started = await start_item(temporal_client, settings, registry, bili.rooms.url(ROOM_SHORT))
    await wait_until(lambda: sum(bili.rooms.segment_requests(ROOM_LONG, 10)) >= 3, "three segments recorded",
                     timeout=30)
    asked = requests(sim, PLAY_INFO)
    bili.rooms.expire_urls(status=404)
    result = await asyncio.wait_for(item_result(started.handle, ""), 60)
    assert result.outcome == "committed", result
    assert bili.rooms.segment_requests(ROOM_LONG, 10) == [1] * 10 and requests(sim, PLAY_INFO) > asked
    item = Catalog(settings.catalog_url).get(broadcast_key(ROOM_LONG, int(stream.started)))
    assert item is not None
    assert (item.metadata["live"]["segments"], item.metadata["live"]["ended"]) == (10, "endlist")


async def test_an_offline_room_fails_not_found_once_with_a_message(
        temporal_client: Client, settings: Settings, bili: BilibiliSite, sim: Simulator, worker: None) -> None:
    registry = build_registry(settings.platforms)
    url = bili.rooms.url(OFFLINE_ROOM, "h5/")
    started = await start_item(temporal_client, settings, registry, url)
    assert started.workflow_id == f"item-bilibili:live-{OFFLINE_ROOM}"
    result = await asyncio.wait_for(item_result(started.handle, url), 60)
    assert (result.outcome, result.error_class) == ("failed", "not_found")
    assert f"live room {OFFLINE_ROOM} is off air: nothing to record now" in (result.error or "")
    assert requests(sim, ROOM_INIT) == 1 and requests(sim, PLAY_INFO) == 0  # not retried
