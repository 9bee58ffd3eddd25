"""What a watch of a Bilibili live room polls: the bilibili_live listing against the simulated room
(the room's URL while it is live, nothing off air, not_found for no such room) and the source a
room's URL stands for."""

from __future__ import annotations

import httpx
import pytest

from trawl.errors import NotFound, UnsupportedUrl
from trawl.platforms.base import ResolveContext
from trawl.platforms.bilibili.listings import LISTINGS
from trawl.platforms.bilibili.resolver import resolvers
from trawl.platforms.bilibili.room_site import OFFLINE_ROOM, ROOM_LONG, ROOM_SHORT
from trawl.platforms.bilibili.site import install_bilibili_site
from trawl.platforms.registry import build_registry
from trawl.settings import PlatformsSettings
from trawl.simulator import Simulator
from trawl.simulator.live_site import LiveStream


def test_the_listing_names_the_room_only_while_it_is_live(sim: Simulator) -> None:
    site = install_bilibili_site(sim)
    video = resolvers(site.settings())[0]
    listing = LISTINGS["bilibili_live"]
    with httpx.Client() as client:
        ctx = ResolveContext(client, 5 << 20)
        assert listing(video, ctx, str(ROOM_SHORT), 1, None) == []
        site.rooms.start_broadcast(ROOM_LONG, LiveStream(length=60.0))
        assert listing(video, ctx, str(ROOM_SHORT), 1, None) == [site.rooms.url(ROOM_LONG)]
        assert listing(video, ctx, str(OFFLINE_ROOM), 1, None) == []
        with pytest.raises(NotFound):
            listing(video, ctx, "999999", 1, None)
        with pytest.raises(UnsupportedUrl, match="digits"):
            listing(video, ctx, "76abc", 1, None)


def test_a_rooms_url_stands_for_its_listing_and_a_videos_for_nothing(sim: Simulator) -> None:
    site = install_bilibili_site(sim)
    registry = build_registry(PlatformsSettings(bilibili=site.settings()))
    for form in ("", "h5/", "blanc/"):
        url = site.rooms.url(ROOM_SHORT, form)
        assert registry.route(url).resolver.watch_source(url) == {"name": url, "kind": "bilibili_live",
                                                                  "id": str(ROOM_SHORT)}
    assert registry.route(site.url("BV117411r7R1")).resolver.watch_source(site.url("BV117411r7R1")) is None


def test_a_room_set_to_go_live_when_asked_is_off_air_until_then(sim: Simulator) -> None:
    site = install_bilibili_site(sim)
    site.rooms.go_live_when_asked(ROOM_LONG, LiveStream(length=60.0), after=3600)
    video = resolvers(site.settings())[0]
    with httpx.Client() as client:
        ctx = ResolveContext(client, 5 << 20)
        assert LISTINGS["bilibili_live"](video, ctx, str(ROOM_SHORT), 1, None) == []  # asked: on air in an hour
        assert site.rooms.rooms[ROOM_LONG].broadcast is None
        site.rooms.pending[ROOM_LONG] = (site.rooms.pending[ROOM_LONG][0], 0.0, None)
        assert LISTINGS["bilibili_live"](video, ctx, str(ROOM_SHORT), 1, None) == [site.rooms.url(ROOM_LONG)]
        stream = site.rooms.rooms[ROOM_LONG].broadcast
        assert stream is not None and site.rooms.chats[ROOM_LONG].start == stream.started
