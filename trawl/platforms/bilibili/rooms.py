"""Bilibili live rooms: ``live.bilibili.com/<room id>`` (a short or a long id), ``/h5/<id>``,
``/blanc/<id>``, and ``b23.tv`` links that lead to one (followed by the video resolver, which
hands the room here). A live room is a *recording*: the broadcast on air now, recorded by the
``hls-live`` download until it ends (docs/live.md).

The room is read from two APIs (bilibili-API-collect ``docs/live/info.md``; the simulator serves
their documented example answers):

- ``room/v1/Room/room_init?id=<id>``: ``data{room_id (the long id), short_id, uid, live_status
  (0 off air, 1 live, 2 rotating replays 轮播), live_time (unix s of the broadcast's start),
  is_locked, encrypted, pwd_verified}``; code 60004: no such room.
- ``xlive/web-room/v2/index/getRoomPlayInfo?room_id=<long id>&protocol=0,1&format=0,1,2&codec=0,1
  &qn=<qn>&platform=web``: ``live_status``, ``live_time`` and
  ``playurl_info.playurl.stream[]{protocol_name, format[]{format_name, codec[]{codec_name,
  current_qn, accept_qn, base_url, url_info[]{host, extra, stream_ttl}}}}``.

The stream recorded is an HLS one (``http_hls``: ``ts`` before ``fmp4``), at the quality asked
(the crawl's ``-f`` height, else ``live_quality``) or the closest below it, AVC before HEVC before
AV1 as for videos; its playlist URLs are ``host + base_url + extra``, one per ``url_info`` entry
(the first is tried first). They are signed and expire (``expires=``, about an hour): a
playlist that answers 403 mid-recording makes the download fail ``url_expired``, the item fetches
the room again and the recording goes on from the next media sequence.

One item per broadcast: the key is the long room id and the broadcast's start
(``bilibili:live-14073662-20201008T095946Z``), so a broadcast is stored once and the next one of
the room is a new item. A room off air (``live_status`` 0 or 2) is ``not_found``: nothing to
record now, not retried. A room offering no HLS stream (FLV only) is ``unsupported_url``.

The offline key of a room URL is the room's own (``bilibili:live-<id as given>``), never an
item's: every crawl of a room URL asks the room (what is on air changes), none is answered from
the catalog's memory of an earlier broadcast. The URL's run hands the broadcast it finds to the
broadcast's own workflow (its id is the broadcast's key), so every URL form of the room and every
crawl while it records join one recording.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from trawl.errors import Forbidden, NotFound, ParseError, UnsupportedUrl
from trawl.models import LIVE_PROTOCOL, Asset, Resolved, compact
from trawl.platforms.base import ResolveContext, Resolver, base_pattern, dig, get_json, int_or_none, str_or_none
from trawl.platforms.bilibili.config import BilibiliSettings
from trawl.platforms.bilibili.errors import ANSWERS

# live_status in both answers.
OFF_AIR, LIVE, ROTATING = 0, 1, 2
# A live qn for the tallest height wanted (-f): (at least this many lines, qn). 10000 is the
# original (原画, the broadcaster's own, usually 1080 lines), 20000 4K; 400 blu-ray (蓝光),
# 250 super (超清), 150 high (高清), 80 smooth (流畅) are the CDN's transcodes.
LIVE_QN_BY_HEIGHT = ((2160, 20000), (1080, 10000), (720, 250), (480, 150), (0, 80))
# HLS container preference: MPEG-TS segments, then fMP4 (EXT-X-MAP); FLV (http_stream) is not recorded.
FORMAT_RANK = {"ts": 0, "fmp4": 1}
# Codec preference among streams of one quality, as for videos (CODEC_RANK): AVC plays everywhere.
LIVE_CODEC_RANK = {"avc": 0, "hevc": 1, "av1": 2}
STATUS_WORDS = {OFF_AIR: "off air", ROTATING: "showing rotating replays (轮播), not live"}


def live_qn_for_height(height: int) -> int:
    """The live ``qn`` for "at most ``height`` lines"."""
    return next(qn for floor, qn in LIVE_QN_BY_HEIGHT if height >= floor)


def broadcast_key(room_id: int, live_time: int) -> str:
    """The item key of one broadcast: the long room id and the start, UTC."""
    return f"bilibili:live-{room_id}-{datetime.fromtimestamp(live_time, UTC):%Y%m%dT%H%M%SZ}"


class BilibiliLiveResolver(Resolver):
    name = "bilibili:live"
    platform = "bilibili"
    answers = ANSWERS

    def __init__(self, config: BilibiliSettings) -> None:
        self.config = config
        live = base_pattern(r"live\.bilibili\.com", config.live_base)
        self.url_patterns = (re.compile(rf"{live}/(?:h5/|blanc/)?(?P<id>\d{{1,12}})/?(?:[?#].*)?$"),)

    def room_id(self, url: str) -> int | None:
        match = self.match(url)
        return int(match.group("id")) if match else None

    def offline_key(self, url: str) -> str | None:
        """The room's key (never a committed item's): see the module docstring."""
        room = self.room_id(url)
        return f"bilibili:live-{room}" if room is not None else None

    def watch_source(self, url: str) -> dict[str, Any] | None:
        """A watch of a room polls its status (:func:`live_room_listing`, kind ``bilibili_live``)."""
        room = self.room_id(url)
        return {"name": url, "kind": "bilibili_live", "id": str(room)} if room is not None else None

    def _headers(self) -> dict[str, str]:
        return {"Referer": f"{self.config.live_base.rstrip('/')}/", "User-Agent": self.config.user_agent,
                **self.config.headers}

    def resolve(self, url: str, ctx: ResolveContext) -> Resolved:
        room = self.room_id(url)
        if room is None:
            raise UnsupportedUrl(f"{url}: not a Bilibili live room URL")
        headers = self._headers()
        api = self.config.live_api_base.rstrip("/")
        init = get_json(self, f"{api}/room/v1/Room/room_init?id={room}", ctx, headers, item_url=url)
        data = init.get("data") if isinstance(init.get("data"), dict) else {}
        long_id = int_or_none(data.get("room_id"))
        if not long_id:
            raise ParseError(f"bilibili: {url}: room_init answer has no data.room_id")
        _require_open(url, data)
        _require_live(url, long_id, int_or_none(data.get("live_status")))
        qn = live_qn_for_height(ctx.quality) if ctx.quality else self.config.live_quality
        query = urllib.parse.urlencode({"room_id": long_id, "protocol": "0,1", "format": "0,1,2", "codec": "0,1",
                                        "qn": qn, "platform": "web"}, safe=",")
        play = get_json(self, f"{api}/xlive/web-room/v2/index/getRoomPlayInfo?{query}", ctx, headers,
                        item_url=url)
        info = play.get("data") if isinstance(play.get("data"), dict) else {}
        _require_live(url, long_id, int_or_none(info.get("live_status", data.get("live_status"))))
        live_time = _start(info.get("live_time")) or _start(data.get("live_time"))
        if live_time is None:
            raise ParseError(f"bilibili: {url}: neither answer gives the broadcast's start (live_time)")
        stream = pick_stream(dig(info, "playurl_info", "playurl", "stream"), qn)
        if stream is None:
            raise UnsupportedUrl(f"bilibili: {url}: live room {long_id} offers no HLS stream (FLV only?), "
                                 "which trawl does not record")
        began = datetime.fromtimestamp(live_time, UTC)
        short_id = int_or_none(data.get("short_id")) or int_or_none(info.get("short_id")) or None
        uid = int_or_none(data.get("uid")) or int_or_none(info.get("uid"))
        canonical = f"https://live.bilibili.com/{long_id}"
        key = broadcast_key(long_id, live_time)
        return Resolved(
            canonical_key=key,
            canonical_url=canonical,
            platform=self.platform,
            title=f"live room {short_id or long_id} (live {began:%Y-%m-%d %H:%M} UTC)",
            published_at=began.isoformat(timespec="seconds"),
            assets=[Asset(name="video", kind="video", urls=stream.urls, headers=headers, protocol=LIVE_PROTOCOL)],
            metadata=compact({
                "id": key.split(":", 1)[1], "live_status": "is_live", "room_id": long_id, "short_id": short_id,
                "uploader_id": str(uid) if uid else None, "release_timestamp": live_time,
                "webpage_url": canonical, "format": stream.format, "vcodec": stream.codec, "live_qn": stream.qn,
            }),
        )


def live_room_listing(resolver: BilibiliLiveResolver, ctx: ResolveContext, room: str) -> list[str]:
    """``bilibili_live`` (a watch of a room): the room's URL while it is live, nothing while it is
    off air, so a watch polls the room with one ``room_init`` a run and records each broadcast as
    it starts (a broadcast being recorded keeps the watch's run going: the schedule skips runs
    meanwhile). A room that does not exist is ``not_found``; a locked one ``forbidden``."""
    if not room.isdigit() or len(room) > 12:
        raise UnsupportedUrl(f"bilibili_live id {room!r}: give a live room's id (digits)")
    api = resolver.config.live_api_base.rstrip("/")
    init = get_json(resolver, f"{api}/room/v1/Room/room_init?id={room}", ctx, resolver._headers())
    data = init.get("data") if isinstance(init.get("data"), dict) else {}
    long_id = int_or_none(data.get("room_id"))
    if not long_id:
        raise ParseError(f"bilibili: room {room}: room_init answer has no data.room_id")
    _require_open(f"room {room}", data)
    if int_or_none(data.get("live_status")) != LIVE:
        return []
    return [f"{resolver.config.live_base.rstrip('/')}/{long_id}"]


@dataclass(frozen=True)
class RoomStream:
    """A stream of a getRoomPlayInfo answer: its container, codec, quality and playlist URLs."""

    format: str
    codec: str
    qn: int
    urls: list[str]


def pick_stream(streams: Any, wanted: int) -> RoomStream | None:
    """The HLS stream to record (see the module docstring); None when the answer offers none with
    a URL. The quality is ``wanted`` or the best below it, else the lowest above it."""
    candidates: list[RoomStream] = []
    for stream in streams if isinstance(streams, list) else []:
        if not isinstance(stream, dict) or stream.get("protocol_name") != "http_hls":
            continue
        for fmt in stream.get("format") if isinstance(stream.get("format"), list) else []:
            name = str_or_none(dig(fmt, "format_name"))
            if name not in FORMAT_RANK:
                continue
            for codec in fmt.get("codec") if isinstance(fmt.get("codec"), list) else []:
                urls = playlist_urls(codec)
                if urls:
                    candidates.append(RoomStream(name, str_or_none(dig(codec, "codec_name")) or "",
                                                 int_or_none(dig(codec, "current_qn")) or 0, urls))
    if not candidates:
        return None
    offered = {c.qn for c in candidates}
    at_or_below = [q for q in offered if q <= wanted]
    chosen = max(at_or_below) if at_or_below else min(offered)
    return min((c for c in candidates if c.qn == chosen),
               key=lambda c: (LIVE_CODEC_RANK.get(c.codec, 9), FORMAT_RANK[c.format]))


def playlist_urls(codec: Any) -> list[str]:
    """``host + base_url + extra`` for each ``url_info`` entry of one codec (``base_url`` ends in
    ``?`` in the documented answers; an ``extra`` with its own ``?`` is joined all the same)."""
    base = str_or_none(dig(codec, "base_url"))
    if not base or not isinstance(codec, dict):
        return []
    urls = []
    for entry in codec.get("url_info") if isinstance(codec.get("url_info"), list) else []:
        host = str_or_none(dig(entry, "host"))
        if not host or not host.lower().startswith(("http://", "https://")):
            continue
        extra = (dig(entry, "extra") if isinstance(dig(entry, "extra"), str) else "").lstrip("?&")
        if "?" not in base:
            joined = f"{base}?{extra}" if extra else base
        else:
            joined = base + extra if base.endswith(("?", "&")) or not extra else f"{base}&{extra}"
        urls.append(host.rstrip("/") + joined)
    return list(dict.fromkeys(urls))


def _require_open(url: str, room: dict[str, Any]) -> None:
    if room.get("is_locked") is True:
        raise Forbidden(f"bilibili: {url}: live room {room.get('room_id')} is locked (封禁)")
    if room.get("encrypted") is True and room.get("pwd_verified") is not True:
        raise Forbidden(f"bilibili: {url}: live room {room.get('room_id')} is password-protected")


def _require_live(url: str, room: int, status: int | None) -> None:
    if status == LIVE:
        return
    words = STATUS_WORDS.get(status if status is not None else -1, f"not live (live_status {status})")
    raise NotFound(f"bilibili: {url}: live room {room} is {words}: nothing to record now")


def _start(value: Any) -> int | None:
    """A broadcast's start in unix seconds; None for none (room_init says -62170012800 off air)."""
    start = int_or_none(value)
    return start if start is not None and start > 0 else None
