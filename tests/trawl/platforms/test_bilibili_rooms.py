"""Bilibili live rooms: URL forms, the stream picked from the documented getRoomPlayInfo answer, and
rooms resolved against the simulator (on air, off air, rotating, missing, through b23.tv)."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import httpx
import pytest

from trawl.errors import NotFound, UnsupportedUrl
from trawl.models import LIVE_PROTOCOL
from trawl.platforms.base import ResolveContext
from trawl.platforms.bilibili import BilibiliSettings
from trawl.platforms.bilibili.resolver import resolvers
from trawl.platforms.bilibili.room_site import (
    OFFLINE_ROOM,
    ROOM_LONG,
    ROOM_PLAY_INFO,
    ROOM_SHORT,
    ROOM_SHORT_LINK,
    Room,
)
from trawl.platforms.bilibili.rooms import BilibiliLiveResolver, broadcast_key, live_qn_for_height, pick_stream
from trawl.platforms.bilibili.site import BilibiliSite, install_bilibili_site
from trawl.platforms.registry import default_registry
from trawl.simulator import Simulator
from trawl.simulator.live_site import LiveStream

REAL = BilibiliLiveResolver(BilibiliSettings())


@pytest.mark.parametrize(("url", "key"), [
    ("https://live.bilibili.com/76", "bilibili:live-76"),
    ("https://live.bilibili.com/14073662/", "bilibili:live-14073662"),
    ("https://live.bilibili.com/h5/76", "bilibili:live-76"),
    ("https://live.bilibili.com/blanc/76?liteVersion=true", "bilibili:live-76"),
    ("http://live.bilibili.com/76?broadcast_type=0&is_room_feed=1&spm_id_from=333.1#x", "bilibili:live-76"),
])
def test_room_url_forms_and_the_rooms_key(url: str, key: str) -> None:
    assert REAL.claims(url) and REAL.offline_key(url) == key
    route = default_registry().route(url)
    assert route.platform == "bilibili" and route.workflow_id == f"item-{key}"


@pytest.mark.parametrize("url", [
    "https://live.bilibili.com/",
    "https://live.bilibili.com/p/eden/area-tags",
    "https://live.bilibili.com/76abc",
    "https://www.bilibili.com/76",
])
def test_other_urls_are_not_rooms(url: str) -> None:
    assert not REAL.claims(url)


def test_the_documented_answer_gives_the_ts_avc_playlist_host_base_url_extra() -> None:
    chosen = pick_stream(ROOM_PLAY_INFO["data"]["playurl_info"]["playurl"]["stream"], 10000)
    assert chosen is not None and (chosen.format, chosen.codec, chosen.qn) == ("ts", "avc", 10000)
    assert chosen.urls == ["https://cn-hbcd-cu-02-20.bilivideo.com/live-bvc/462997/live_11153765_9369560.m3u8?"
                           "expires=1674103815&len=0&oi=1963941079&pt=web&qn=10000"
                           "&trid=1003061f434c07ac4f4184820bfb141e75e8&sigparams=cdn,expires,len,oi,pt,qn,trid"
                           "&cdn=cn-gotcha01&sign=4f9bcec18e3afdca04b31ffb285ec915"
                           "&sk=33541455720f64c7671bc1480acfb176&p2p_type=1&src=57345&sl=1&free_type=0"
                           "&sid=cn-hbcd-cu-02-20&chash=1&sche=ban&score=12&pp=rtmp&machinezone=jd"
                           "&source=onetier&trace=0&site=92e80b6f3ebfd393e7d1c1e2e648d9c1&order=1"]


def _streams() -> list[dict]:
    return copy.deepcopy(ROOM_PLAY_INFO["data"]["playurl_info"]["playurl"]["stream"])


def test_fmp4_alone_gives_one_url_per_host_and_flv_alone_is_none() -> None:
    streams = _streams()
    hls = streams[1]
    hls["format"] = [f for f in hls["format"] if f["format_name"] == "fmp4"]
    chosen = pick_stream(streams, 10000)
    assert chosen is not None and chosen.format == "fmp4"
    assert [u.split("/live-bvc/")[0] for u in chosen.urls] == ["https://cn-hbcd-cu-02-20.bilivideo.com",
                                                              "https://c1--cn-gotcha208.bilivideo.com"]
    assert all(u.count("?") == 1 and "/index.m3u8?expires=1674103815&" in u for u in chosen.urls)
    assert pick_stream(_streams()[:1], 10000) is None  # http_stream (FLV) only
    assert pick_stream(None, 10000) is None and pick_stream([{"protocol_name": "http_hls"}], 10000) is None
    odd = [{"protocol_name": "http_hls", "format": ["ts", {"format_name": "ts", "codec": ["avc", None]}]}]
    assert pick_stream(odd, 10000) is None


def test_the_quality_then_avc_then_ts_is_chosen() -> None:
    streams = _streams()
    ts = streams[1]["format"][0]
    hevc = copy.deepcopy(ts["codec"][0])
    hevc.update(codec_name="hevc", current_qn=250, base_url="/live-bvc/1/hevc.m3u8?")
    ts["codec"].append(hevc)
    assert pick_stream(streams, 250).codec == "hevc"  # type: ignore[union-attr]
    assert pick_stream(streams, 400).codec == "hevc"  # type: ignore[union-attr] # the best below 400
    assert pick_stream(streams, 80).codec == "hevc"  # type: ignore[union-attr] # nothing below: the lowest
    assert pick_stream(streams, 10000).codec == "avc"  # type: ignore[union-attr]
    assert [live_qn_for_height(h) for h in (4320, 1080, 720, 480, 360)] == [20000, 10000, 250, 150, 80]


def test_extra_with_its_own_question_mark_joins_once() -> None:
    codec = {"base_url": "/live/base.m3u8", "url_info": [{"host": "https://cdn.example.com/", "extra": "?token=abc"},
                                                         {"host": "javascript:x", "extra": ""}]}
    streams = [{"protocol_name": "http_hls", "format": [{"format_name": "ts", "codec": [codec]}]}]
    assert pick_stream(streams, 10000).urls == ["https://cdn.example.com/live/base.m3u8?token=abc"]  # type: ignore[union-attr]


# -- against the simulator ---------------------------------------------------------------------------
@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(follow_redirects=True) as c:
        yield c


@pytest.fixture
def site(sim: Simulator) -> BilibiliSite:
    return install_bilibili_site(sim)


def test_every_url_form_resolves_to_the_broadcast_on_air(site: BilibiliSite, sim: Simulator,
                                                         client: httpx.Client) -> None:
    stream = site.rooms.start_broadcast(ROOM_LONG, LiveStream(length=60.0))
    video, rooms, *_ = resolvers(site.settings())
    ctx = ResolveContext(client, 5 << 20)
    forms = [site.rooms.url(ROOM_SHORT), site.rooms.url(ROOM_LONG), site.rooms.url(ROOM_SHORT, "h5/"),
             site.rooms.url(ROOM_LONG, "blanc/") + "?liteVersion=true"]
    items = [rooms.resolve(url, ctx) for url in forms]
    items.append(video.resolve(sim.url(f"/b23/{ROOM_SHORT_LINK}"), ctx))  # b23.tv -> the room's page
    assert stream.started is not None
    key = broadcast_key(ROOM_LONG, int(stream.started))
    assert {i.canonical_key for i in items} == {key} and key.startswith(f"bilibili:live-{ROOM_LONG}-")
    item = items[0]
    assert item.canonical_url == f"https://live.bilibili.com/{ROOM_LONG}"
    assert item.title and item.title.startswith(f"live room {ROOM_SHORT} (live ")
    assert item.metadata["live_status"] == "is_live" and item.metadata["short_id"] == ROOM_SHORT
    assert (item.metadata["format"], item.metadata["vcodec"], item.metadata["live_qn"]) == ("ts", "avc", 10000)
    (asset,) = item.assets
    assert asset.protocol == LIVE_PROTOCOL and asset.kind == "video"
    assert asset.urls[0].startswith(sim.url(f"/live-bvc/{ROOM_LONG}/live_50333369_{ROOM_LONG}.m3u8?expires="))
    playlist = client.get(asset.urls[0])
    assert playlist.status_code == 200 and "#EXT-X-MEDIA-SEQUENCE" in playlist.text
    site.rooms.expire_urls()
    assert client.get(asset.urls[0]).status_code == 403  # a signature issued before: expired
    fresh = rooms.resolve(forms[0], ctx)
    assert fresh.canonical_key == key and client.get(fresh.assets[0].urls[0]).status_code == 200


def test_the_next_broadcast_is_another_item(site: BilibiliSite, client: httpx.Client) -> None:
    rooms = resolvers(site.settings())[1]
    ctx = ResolveContext(client, 5 << 20)
    site.rooms.start_broadcast(ROOM_LONG, LiveStream(length=None), at=1_700_000_000)
    assert rooms.resolve(site.rooms.url(ROOM_SHORT), ctx).canonical_key == "bilibili:live-14073662-20231114T221320Z"
    site.rooms.start_broadcast(ROOM_LONG, LiveStream(length=60.0))
    assert rooms.resolve(site.rooms.url(ROOM_SHORT), ctx).canonical_key != "bilibili:live-14073662-20231114T221320Z"


@pytest.mark.parametrize(("room", "words", "cls"), [
    (OFFLINE_ROOM, "is off air: nothing to record now", NotFound),
    (ROOM_SHORT, "is off air", NotFound),  # its broadcast has not begun
    (999, "code 60004", NotFound),
])
def test_a_room_off_air_or_missing_is_not_found(site: BilibiliSite, client: httpx.Client, room: int, words: str,
                                               cls: type) -> None:
    rooms = resolvers(site.settings())[1]
    with pytest.raises(cls, match=words):
        rooms.resolve(site.rooms.url(room), ResolveContext(client, 5 << 20))


def test_rotating_replays_and_an_ended_broadcast_are_not_live(site: BilibiliSite, client: httpx.Client) -> None:
    rooms = resolvers(site.settings())[1]
    ctx = ResolveContext(client, 5 << 20)
    site.rooms.add_room(Room(5440, 1, rotating=True))
    with pytest.raises(NotFound, match="rotating replays"):
        rooms.resolve(site.rooms.url(1), ctx)
    site.rooms.start_broadcast(ROOM_LONG, LiveStream(length=1.0), at=1_700_000_000)  # long over
    with pytest.raises(NotFound, match="off air"):
        rooms.resolve(site.rooms.url(ROOM_LONG), ctx)


def test_a_room_with_flv_alone_is_unsupported(site: BilibiliSite, client: httpx.Client,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from trawl.platforms.bilibili import room_site

    flv_only = copy.deepcopy(ROOM_PLAY_INFO)
    flv_only["data"]["playurl_info"]["playurl"]["stream"] = flv_only["data"]["playurl_info"]["playurl"]["stream"][:1]
    monkeypatch.setattr(room_site, "ROOM_PLAY_INFO", flv_only)
    site.rooms.start_broadcast(ROOM_LONG, LiveStream(length=60.0))
    with pytest.raises(UnsupportedUrl, match="offers no HLS stream"):
        resolvers(site.settings())[1].resolve(site.rooms.url(ROOM_SHORT), ResolveContext(client, 5 << 20))
