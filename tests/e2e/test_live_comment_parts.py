"""A Bilibili live room recorded in parts, end to end (the simulated room and its comment server,
a real dev server and worker): each part committed with its own danmaku, the comments received
while its media was live, timed from the part's start; every comment sent to the recording is
in exactly one part."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.e2e.live_fixtures import NEEDS_FFMPEG, PER_SECOND, bilibili_site, delivered_ids, live_settings
from tests.polling import until as wait_until
from trawl.platforms.bilibili.danmaku import parse_danmaku_xml
from trawl.platforms.bilibili.room_site import ROOM_LONG, ROOM_SHORT
from trawl.platforms.bilibili.rooms import broadcast_key
from trawl.platforms.bilibili.site import BilibiliSite
from trawl.platforms.registry import build_registry
from trawl.settings import Settings
from trawl.simulator import Simulator
from trawl.simulator.live_site import LiveStream
from trawl.starter.client import item_result, start_item
from trawl.storage.catalog import Catalog

pytestmark = NEEDS_FFMPEG


@pytest.fixture
def bili(sim: Simulator) -> BilibiliSite:
    return bilibili_site(sim, PER_SECOND)


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str, bili: BilibiliSite) -> Settings:
    return live_settings(tmp_path, temporal_address, bili, download={"live_part_duration": "5s"})


async def test_each_part_is_committed_with_the_comments_of_its_media(
        temporal_client: Client, settings: Settings, bili: BilibiliSite, worker: None) -> None:
    stream = bili.rooms.start_broadcast(ROOM_LONG, LiveStream(length=14.0, window=9))
    started = await start_item(temporal_client, settings, build_registry(settings.platforms),
                               bili.rooms.url(ROOM_SHORT))
    chat = bili.rooms.chats[ROOM_LONG]
    await wait_until(lambda: len(chat.delivered) >= 4, "comments delivered", timeout=30)
    result = await asyncio.wait_for(item_result(started.handle, ""), 90)
    assert result.outcome == "committed", result
    assert stream.started is not None
    item = Catalog(settings.catalog_url).get(broadcast_key(ROOM_LONG, int(stream.started)))
    assert item is not None
    assets = {a.name: a for a in item.assets}
    parts = item.metadata["live"]["parts"]
    assert len(parts) >= 3 and all(p["asset"] for p in parts), parts
    seen: list[str] = []
    for part in parts:
        suffix = "" if part["part"] == 1 else f"-part{part['part']:03d}"
        assert {f"video{suffix}", f"live-danmaku{suffix}", f"live-messages{suffix}"} <= set(assets), sorted(assets)
        _, comments = parse_danmaku_xml((settings.blobs_dir / assets[f"live-danmaku{suffix}"].key).read_bytes())
        for comment in comments:  # comment n was sent n / PER_SECOND s into the broadcast
            n = int(comment.id[-8:], 16)
            assert 0 <= comment.seconds <= part["seconds"] + 0.5, (part, comment)
            assert abs(part["start_seconds"] + comment.seconds - n / PER_SECOND) < 4, (part, n, comment)
        seen += [c.id for c in comments]
    assert len(seen) == len(set(seen)), "a comment in two parts"
    assert set(seen) == delivered_ids(bili)
    said = item.metadata["live_comments"]
    assert said["comments"] == len(seen) and [p["part"] for p in said["parts"]] == [p["part"] for p in parts]
    assert chat.start is not None and chat.end is not None
    print(f"{len(parts)} parts, comments by part: {[p['comments'] for p in said['parts']]}: {len(seen)} stored of "
          f"{chat.sent_by(chat.end)} sent; {said['connections']} connections")


@pytest.mark.slow
async def test_a_broadcast_recorded_again_keeps_the_first_recordings_parts(
        temporal_client: Client, settings: Settings, bili: BilibiliSite, worker: None) -> None:
    """The broadcast's workflow cancelled after its first part was committed, then the room crawled
    again while the broadcast goes on: the same workflow id records again, and its parts follow
    the first recording's (no asset replaced or dropped, no part number twice), going on after the
    last media sequence the first committed (what the window lost between is a gap)."""
    stream = bili.rooms.start_broadcast(ROOM_LONG, LiveStream(length=24.0, window=9))
    assert stream.started is not None
    key = broadcast_key(ROOM_LONG, int(stream.started))
    registry = build_registry(settings.platforms)
    first = await start_item(temporal_client, settings, registry, bili.rooms.url(ROOM_SHORT))
    catalog = Catalog(settings.catalog_url)
    await wait_until(lambda: (item := catalog.get(key)) is not None and "video" in {a.name for a in item.assets},
                     "the first part committed", timeout=60)
    broadcast = temporal_client.get_workflow_handle(f"item-{key}")
    await broadcast.cancel()
    assert (await asyncio.wait_for(item_result(broadcast, ""), 60)).outcome == "cancelled"
    assert (await asyncio.wait_for(item_result(first.handle, ""), 60)).outcome == "cancelled"
    held = catalog.get(key)
    assert held is not None
    before = {a.name: a.sha256 for a in held.assets}
    again = await start_item(temporal_client, settings, registry, bili.rooms.url(ROOM_SHORT))
    result = await asyncio.wait_for(item_result(again.handle, ""), 120)
    assert result.outcome == "committed", result
    item = catalog.get(key)
    assert item is not None
    after = {a.name: a.sha256 for a in item.assets}
    assert all(after[name] == sha for name, sha in before.items()), "an asset of the first recording replaced"
    parts = item.metadata["live"]["parts"]
    numbers = [p["part"] for p in parts]
    assert numbers == list(range(1, len(parts) + 1)), parts
    recordings = [p["recording_started_at"] for p in parts]
    assert len(set(recordings)) == 2 and recordings == sorted(recordings), parts
    videos = [p["asset"] for p in parts if p["asset"]]
    assert len(set(videos)) == len(videos) and set(videos) <= set(after), (videos, sorted(after))
    second = [p for p in parts if p["recording_started_at"] == recordings[-1]]
    assert second[0]["recording_part"] == 1 and second[0]["part"] > 1
    # The second recording goes on after the last sequence the first committed: none stored twice.
    first_last = max(p["last_sequence"] for p in parts if p["recording_started_at"] == recordings[0])
    assert second[0]["first_sequence"] > first_last, parts
    gaps = item.metadata["live"]["gaps"]
    assert all(g["reason"] == "between recordings" for g in gaps) and len(gaps) <= 1, gaps
    assert set(item.metadata["live"]["recordings"]) == set(recordings)
    print(f"parts {numbers}: {[(p['recording_part'], p['first_sequence'], p['segments']) for p in parts]} of "
          f"recordings {sorted(set(recordings))}; assets {sorted(after)}")
