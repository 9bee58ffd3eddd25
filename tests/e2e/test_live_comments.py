"""A Bilibili live room's comments recorded beside its video, end to end: the simulated room's
comment server (a WebSocket on loopback), a real dev server and workers; a dropped stream and a
killed worker lose only what the server sent while nobody was connected, and store nothing twice."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.e2e.live_fixtures import (  # noqa: F401 - settings: the fixture, with this module's bili
    NEEDS_FFMPEG,
    PER_SECOND,
    bilibili_site,
    delivered_ids,
    kill_the_recorder,
    settings,
    two_workers,
)
from tests.polling import until as wait_until
from trawl.export import Exporter
from trawl.export_extras import ExtrasChoice
from trawl.platforms.bilibili.danmaku import parse_danmaku_xml
from trawl.platforms.bilibili.danmaku_site import comment_id
from trawl.platforms.bilibili.room_site import ROOM_LONG, ROOM_SHORT
from trawl.platforms.bilibili.rooms import broadcast_key
from trawl.platforms.bilibili.site import BilibiliSite
from trawl.platforms.registry import build_registry
from trawl.settings import Settings
from trawl.simulator import Simulator
from trawl.simulator.live_site import LiveStream
from trawl.starter.client import item_result, start_item
from trawl.storage.blobs import open_blob_store
from trawl.storage.catalog import Catalog

pytestmark = NEEDS_FFMPEG


@pytest.fixture
def bili(sim: Simulator) -> BilibiliSite:
    return bilibili_site(sim, PER_SECOND)


def stored_comments(settings: Settings, key: str) -> tuple[dict, list, list[dict], float]:
    """The committed item's comment summary, its XML danmaku, its message lines, and the video's seconds."""
    item = Catalog(settings.catalog_url).get(key)
    assert item is not None and item.status == "committed"
    assets = {a.name: a for a in item.assets}
    assert {a.kind for a in item.assets} == {"video", "danmaku", "messages"} and set(assets) == {
        "video", "live-danmaku", "live-messages"}, assets
    assert (assets["live-danmaku"].mime, assets["live-messages"].mime) == ("application/xml", "application/x-ndjson")
    _, comments = parse_danmaku_xml((settings.blobs_dir / assets["live-danmaku"].key).read_bytes())
    lines = [json.loads(line) for line in (settings.blobs_dir / assets["live-messages"].key).read_bytes().splitlines()]
    return item.metadata["live_comments"], comments, lines, item.metadata["live"]["seconds"]


def check_once_each(comments: list, lines: list[dict], bili: BilibiliSite) -> tuple[int, int]:
    """Every comment the server sent is stored once; returns (stored, sent by the audience)."""
    ids = [c.id for c in comments]
    assert len(ids) == len(set(ids)), "a comment stored twice"
    assert set(ids) == delivered_ids(bili)
    assert sorted(ids) == ids  # in time order (ids count up)
    danmu = [line for line in lines if line["message"].get("cmd") == "DANMU_MSG"]
    assert len(danmu) == len(ids)
    chat = bili.rooms.chats[ROOM_LONG]
    assert chat.start is not None and chat.end is not None
    return len(ids), chat.sent_by(chat.end)


async def test_a_room_records_with_its_comments_and_a_dropped_stream_reconnects(
        temporal_client: Client, settings: Settings, bili: BilibiliSite, sim: Simulator, worker: None) -> None:
    stream = bili.rooms.start_broadcast(ROOM_LONG, LiveStream(length=14.0, window=9))
    assert stream.started is not None
    registry = build_registry(settings.platforms)
    started = await start_item(temporal_client, settings, registry, bili.rooms.url(ROOM_SHORT))
    chat = bili.rooms.chats[ROOM_LONG]
    await wait_until(lambda: len(chat.delivered) >= 8, "comments delivered", timeout=30)
    server = bili.rooms.comment_server()
    assert server.drop() == 1
    result = await asyncio.wait_for(item_result(started.handle, ""), 90)
    assert result.outcome == "committed", result
    summary, comments, lines, seconds = stored_comments(settings, broadcast_key(ROOM_LONG, int(stream.started)))
    stored, sent = check_once_each(comments, lines, bili)
    assert server.connections == 2 and summary["connections"] == 2, summary
    assert summary["comments"] == stored and summary["messages"] == len(lines)
    # The drop: how long no connection was open is on record, at least as long as the comments
    # missed after the first connection took to send.
    first = min(bili.rooms.chats[ROOM_LONG].delivered)
    missed = len(set(range(first, sent)) - set(bili.rooms.chats[ROOM_LONG].delivered))
    (offline,) = summary["offline"]
    assert offline["seconds"] >= missed / PER_SECOND - 0.5 and 0 <= offline["at_seconds"] <= seconds, summary
    # Timed against the media: comment n was sent n / PER_SECOND s into the broadcast; the recording
    # began with the playlist's window, so it shows within a few seconds of that, never past the end.
    for comment in comments:
        n = int(comment.id[-8:], 16)
        assert 0 <= comment.seconds <= seconds + 1 and abs(comment.seconds - n / PER_SECOND) < 4, (n, comment)
    assert lines[-1]["message"]["cmd"] == "PREPARING"
    # Exported beside the video under the same name, each with its own extension.
    item = Catalog(settings.catalog_url).get(broadcast_key(ROOM_LONG, int(stream.started)))
    assert item is not None
    # The danmaku is written when asked for, as any extra's (yt-dlp's --write-subs --sub-langs danmaku).
    with Exporter(settings.data_dir / "export", open_blob_store(settings), "{title}.{ext}",
                  extras=ExtrasChoice(write_subs=True, sub_langs=("danmaku",))) as exporter:
        exporter.export_item(item)
    names = sorted(p.name for p in (settings.data_dir / "export").iterdir() if not p.name.startswith("."))
    (video,) = [n for n in names if n.endswith(".mp4")]
    stem = video.removesuffix(".mp4")
    assert names == sorted([f"{stem}.jsonl", video, f"{stem}.danmaku.xml"]), names
    print(f"stored {stored} of {sent} comments through a dropped stream ({sent - stored} sent while disconnected; "
          f"{summary['offline_seconds']} s without a connection on record)")


async def test_a_worker_killed_mid_recording_loses_no_comment_it_was_sent(
        temporal_client: Client, settings: Settings, bili: BilibiliSite, sim: Simulator, tmp_path: Path) -> None:
    """The recording's download moves to the other worker with its comment log: comments the server
    sent to the dead worker before the kill are kept, none is stored twice, and only those sent
    while no worker was connected are missing."""
    platform_env = {f"TRAWL_PLATFORMS__BILIBILI__{name.upper()}": str(value) for name, value in
                    bili.settings().model_dump().items() if name.endswith("_base") or name == "requests_per_second"}
    chat = bili.rooms.chats[ROOM_LONG]
    async with two_workers(temporal_client, settings, tmp_path, **platform_env) as workers:
        # On air once both workers poll, however slowly they started.
        stream = bili.rooms.start_broadcast(ROOM_LONG, LiveStream(length=30.0, window=9))
        registry = build_registry(settings.platforms)
        started = await start_item(temporal_client, settings, registry, bili.rooms.url(ROOM_SHORT))
        await wait_until(lambda: len(chat.delivered) >= 8, "comments delivered", timeout=60)
        await kill_the_recorder(temporal_client, started.handle, workers)
        before_kill = set(chat.delivered)
        result = await asyncio.wait_for(item_result(started.handle, ""), 120)
    assert result.outcome == "committed", result
    assert stream.started is not None
    summary, comments, lines, _ = stored_comments(settings, broadcast_key(ROOM_LONG, int(stream.started)))
    stored, sent = check_once_each(comments, lines, bili)
    assert summary["connections"] == 2  # one on each worker
    assert {comment_id(ROOM_LONG, n) for n in before_kill} <= {c.id for c in comments}
    assert max(chat.delivered) == sent - 1  # the stream was recorded to the end on the other worker
    numbers = sorted(chat.delivered)
    gap = sorted(set(range(numbers[0], sent)) - set(numbers))
    print(f"stored {stored} of {sent} comments through a SIGKILL; {len(gap)} sent while no worker was connected "
          f"({len(gap) / PER_SECOND:.1f} s; {summary['offline_seconds']} s without a connection on record)")
    assert gap and len(gap) / PER_SECOND < 15
    (offline,) = summary["offline"]  # the worker change: no connection for at least as long as the gap
    assert summary["offline_seconds"] == offline["seconds"] >= len(gap) / PER_SECOND - 0.5, summary
