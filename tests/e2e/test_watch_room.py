"""A watch of a Bilibili live room, end to end: a Temporal Schedule on a real dev server polls the
simulated room every watch.live_poll_interval; off air its runs start no item, a broadcast is
recorded from within seconds of its start to its end, once, and the next broadcast is another item."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.e2e.live_fixtures import (  # noqa: F401 - bili: a fixture
    NEEDS_FFMPEG,
    PLAY_INFO,
    ROOM_INIT,
    bili,
    live_settings,
    requests,
)
from tests.polling import until
from trawl.platforms.bilibili.room_site import ROOM_LONG, ROOM_SHORT, ROOM_SHORT_LINK
from trawl.platforms.bilibili.site import SHORT_LINK
from trawl.platforms.bilibili.rooms import broadcast_key
from trawl.platforms.bilibili.site import BilibiliSite
from trawl.platforms.registry import build_registry
from trawl.settings import Settings
from trawl.simulator import Simulator
from trawl.simulator.live_site import LiveStream
from trawl.starter.watches import WatchInvalid, add_watch, get_watch, remove_watch
from trawl.storage.catalog import Catalog

pytestmark = NEEDS_FFMPEG
POLL_S = 2


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str, bili: BilibiliSite) -> Settings:
    return live_settings(tmp_path, temporal_address, bili, watch={"live_poll_interval": f"{POLL_S}s"})


def first_segment_at(sim: Simulator, room: int) -> float | None:
    times = [t for path, stats in list(sim.stats.items()) if path.startswith(f"/live-bvc/{room}/seg-")
             for t in stats.times]
    return min(times) if times else None


def room_items(settings: Settings) -> list[str]:
    return sorted(item.canonical_key for item in Catalog(settings.catalog_url).list(platform="bilibili")
                  if item.canonical_key.startswith(f"bilibili:live-{ROOM_LONG}-"))


async def test_a_watched_room_records_each_broadcast_once_from_its_start(
        temporal_client: Client, settings: Settings, bili: BilibiliSite, sim: Simulator, worker: None) -> None:
    registry = build_registry(settings.platforms)
    url = bili.rooms.url(ROOM_SHORT)
    watch, refused = await add_watch(temporal_client, settings, registry, "room76", urls=[url])
    try:
        assert refused == [] and watch.source == url and watch.every == f"{POLL_S}s"
        assert watch.source_description == f"bilibili_live {ROOM_SHORT}"
        # Off air: runs ask the room, start no item.
        await until(lambda: requests(sim, ROOM_INIT) >= 3, "three polls of the room off air", timeout=60)
        assert requests(sim, PLAY_INFO) == 0 and room_items(settings) == []

        for number, length in enumerate((10.0, 6.0), 1):
            stream = bili.rooms.start_broadcast(ROOM_LONG, LiveStream(length=length, window=6))
            assert stream.started is not None
            key = broadcast_key(ROOM_LONG, int(stream.started))
            began = await until(lambda: first_segment_at(sim, ROOM_LONG), "the recording's first segment", timeout=60)
            item = await until(lambda: Catalog(settings.catalog_url).get(key), f"broadcast {number} committed",
                               timeout=90, holds=lambda item: item is not None and item.status == "committed")
            live = item.metadata["live"]
            print(f"broadcast {number}: recording began {began - stream.started:.1f} s after it went live "
                  f"(polled every {POLL_S} s); {live['segments']} of {int(length)} segments")
            # Begun while the playlist's window (6 s) still named the broadcast's first segment: the
            # whole broadcast is recorded.
            assert (live["first_sequence"], live["ended"], live["missing_segments"]) == (0, "endlist", 0), live
            # The room is off air again: later runs start nothing, the broadcast stays one item.
            polls = requests(sim, ROOM_INIT)
            await until(lambda: requests(sim, ROOM_INIT) >= polls + 2, "two polls after the broadcast", timeout=60)
            assert room_items(settings).count(key) == 1 and len(room_items(settings)) == number
            counts = bili.rooms.segment_requests(ROOM_LONG, int(length))
            assert max(counts) == 1, counts  # nothing recorded twice
            sim.stats.clear()
            await asyncio.sleep(1.1)  # the next broadcast starts in another second: another live_time
        watched = await get_watch(temporal_client, settings, "room76")
        assert watched.skipped_overlap >= 1  # runs due while a broadcast recorded were skipped
    finally:
        await remove_watch(temporal_client, settings, "room76")


async def test_a_room_is_watched_alone_and_other_urls_need_an_interval(
        temporal_client: Client, settings: Settings, bili: BilibiliSite) -> None:
    registry = build_registry(settings.platforms)
    with pytest.raises(WatchInvalid, match="watched on its own"):
        await add_watch(temporal_client, settings, registry, "mixed",
                        urls=[bili.rooms.url(ROOM_SHORT), bili.url("BV117411r7R1")])
    with pytest.raises(WatchInvalid, match="how often to crawl"):
        await add_watch(temporal_client, settings, registry, "video", urls=[bili.url("BV117411r7R1")])
    with pytest.raises(WatchInvalid, match="shorter than watch.min_interval"):
        await add_watch(temporal_client, settings.model_copy(update={"watch": settings.watch.model_copy(
            update={"min_interval": settings.watch.min_interval * 60})}), registry, "fast",
            urls=[bili.rooms.url(ROOM_SHORT)], every="5s")


async def test_a_short_link_to_a_room_is_followed_once_and_watches_the_room(
        temporal_client: Client, settings: Settings, bili: BilibiliSite, sim: Simulator) -> None:
    """A b23.tv link is a room only once followed: the watch's add follows it (one request, through
    the client and its address guard) and watches the room it leads to; a link to a video stays a
    URL to crawl (it needs an interval), and one that cannot be followed says so."""
    registry = build_registry(settings.platforms)
    link = sim.url(f"/b23/{ROOM_SHORT_LINK}")
    watch, refused = await add_watch(temporal_client, settings, registry, "room-link", urls=[link])
    try:
        assert refused == [] and watch.every == f"{POLL_S}s"
        assert watch.source_description == f"bilibili_live {ROOM_SHORT}", watch
        assert requests(sim, f"/b23/{ROOM_SHORT_LINK}") == 1
    finally:
        await remove_watch(temporal_client, settings, "room-link")
    with pytest.raises(WatchInvalid, match="how often to crawl"):
        await add_watch(temporal_client, settings, registry, "video-link", urls=[sim.url(f"/b23/{SHORT_LINK}")])
    guarded = settings.model_copy(update={"net": settings.net.model_copy(update={"allow_private": False})})
    with pytest.raises(WatchInvalid, match="could not follow it.*blocked_address"):
        await add_watch(temporal_client, guarded, registry, "refused-link", urls=[link])
    assert requests(sim, f"/b23/{ROOM_SHORT_LINK}") == 1  # the guard refused it before any connection
