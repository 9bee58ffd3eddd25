"""The simulated site's live rooms: ``room_init``, ``getRoomPlayInfo`` and signed live playlists.

Answer shapes: :data:`ROOM_INIT` and :data:`ROOM_PLAY_INFO` are the example answers pasted in
bilibili-API-collect ``docs/live/info.md`` (commit 7ffb221; ``room_init?id=76`` and
``getRoomPlayInfo?room_id=3``), served with the room's own ids, status and start, and with every
``base_url`` and ``url_info`` pointing at the simulator. Left out of the served answer: the
``fmp4`` format (the simulator's live segments are MPEG-TS only); kept as it is: the FLV stream
(``http_stream``), which nothing reads. Invented: the 60004 answer's envelope (the code is the
documented one, the envelope the captured ``bilibili_error_-412.json``'s), the signature
(``sign`` is an md5 over the path, ``expires`` and the room's URL generation), and the paths.

A room is on air while its broadcast (a :class:`~trawl.simulator.live_site.LiveStream`, one
one-second MPEG-TS segment a second) has not ended; then ``live_status`` is 0 (2 for a room set to
show rotating replays). Its playlist is ``/live-bvc/<room id>/live_<uid>_<room id>.m3u8?<extra>``
with segments ``seg-<sequence>.ts`` beside it; a playlist URL whose signature is wrong, or whose
``expires`` passed, answers 403 (:meth:`RoomSite.expire_urls` makes every URL issued so far
so). ``/liveroom/<id>`` is the room's page (what a b23.tv link to a room leads to).

Live comments: ``getDanmuInfo`` answers the documented example's shape (bilibili-API-collect
``docs/live/message_stream.md``, room 1017) with the room's token and a ``host_list`` naming the
simulator's comment server (:mod:`.danmaku_site`, a WebSocket server on loopback, started at the
first ask) under every port field; it checks the WBI signature as ``playurl`` does when the site
gives the keys. ``x/frontend/finger/spi`` gives a visitor's ``b_3``/``b_4`` (the documented
``data{b_3, b_4}``; the values invented). A broadcast's audience comments at
``RoomSite.comments_per_second`` from its start to its end.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from trawl.platforms.bilibili.danmaku_site import DanmakuServer, RoomChat
from trawl.simulator.live_site import PLAYLIST_TYPE, LiveStream, live_segment, ranged_segment
from trawl.simulator.server import Request, Response, Simulator

# BAC docs/live/info.md, the room_init example (id=76).
ROOM_INIT: dict[str, Any] = {
    "code": 0, "msg": "ok", "message": "ok",
    "data": {"room_id": 14073662, "short_id": 76, "uid": 50333369, "need_p2p": 0, "is_hidden": False,
             "is_locked": False, "is_portrait": False, "live_status": 1, "hidden_till": 0, "lock_till": 0,
             "encrypted": False, "pwd_verified": False, "live_time": 1602151186, "room_shield": 1, "is_sp": 0,
             "special_type": 0},
}
# BAC docs/live/info.md: room_init's live_time off air.
OFF_AIR_TIME = -62170012800
_CODEC = {"codec_name": "avc", "current_qn": 10000, "accept_qn": [10000, 150], "hdr_qn": None, "dolby_type": 0,
          "attr_name": ""}
_HOST = "https://cn-hbcd-cu-02-20.bilivideo.com"
# BAC docs/live/info.md, the getRoomPlayInfo example (room_id=3).
ROOM_PLAY_INFO: dict[str, Any] = {
    "code": 0, "message": "0", "ttl": 1,
    "data": {
        "room_id": 23058, "short_id": 3, "uid": 11153765, "is_hidden": False, "is_locked": False,
        "is_portrait": False, "live_status": 1, "hidden_till": 0, "lock_till": 0, "encrypted": False,
        "pwd_verified": True, "live_time": 1671425336, "room_shield": 1, "all_special_types": [],
        "playurl_info": {
            "conf_json": "{\"cdn_rate\":10000,\"report_interval_sec\":150}",
            "playurl": {
                "cid": 23058,
                "g_qn_desc": [{"qn": qn, "desc": desc, "hdr_desc": hdr, "attr_desc": None} for qn, desc, hdr in (
                    (30000, "杜比", ""), (20000, "4K", ""), (10000, "原画", ""), (400, "蓝光", "HDR"),
                    (250, "超清", "HDR"), (150, "高清", ""), (80, "流畅", ""))],
                "stream": [
                    {"protocol_name": "http_stream", "format": [{"format_name": "flv", "codec": [{
                        **_CODEC, "base_url": "/live-bvc/462997/live_11153765_9369560.flv?",
                        "url_info": [{"host": _HOST, "extra": (
                            "expires=1674103815&pt=web&deadline=1674103815&len=0&oi=1963941079&platform=web"
                            "&qn=10000&trid=1000061f434c07ac4f4184820bfb141e75e8&uipk=100&uipv=100&nbs=1"
                            "&uparams=cdn,deadline,len,oi,platform,qn,trid,uipk,uipv,nbs&cdn=cn-gotcha01"
                            "&upsig=f494aa9e92e24943061fe5082494ec44&sk=33541455720f64c7671bc1480acfb176"
                            "&p2p_type=1&src=57345&sl=1&free_type=0&sid=cn-hbcd-cu-02-20&chash=1&sche=ban"
                            "&score=12&pp=rtmp&machinezone=jd&source=onetier&trace=0"
                            "&site=92e80b6f3ebfd393e7d1c1e2e648d9c1&order=1"), "stream_ttl": 3600}]}]}]},
                    {"protocol_name": "http_hls", "format": [
                        {"format_name": "ts", "codec": [{
                            **_CODEC, "base_url": "/live-bvc/462997/live_11153765_9369560.m3u8?",
                            "url_info": [{"host": _HOST, "extra": (
                                "expires=1674103815&len=0&oi=1963941079&pt=web&qn=10000"
                                "&trid=1003061f434c07ac4f4184820bfb141e75e8&sigparams=cdn,expires,len,oi,pt,qn,trid"
                                "&cdn=cn-gotcha01&sign=4f9bcec18e3afdca04b31ffb285ec915"
                                "&sk=33541455720f64c7671bc1480acfb176&p2p_type=1&src=57345&sl=1&free_type=0"
                                "&sid=cn-hbcd-cu-02-20&chash=1&sche=ban&score=12&pp=rtmp&machinezone=jd"
                                "&source=onetier&trace=0&site=92e80b6f3ebfd393e7d1c1e2e648d9c1&order=1"),
                                "stream_ttl": 3600}]}]},
                        {"format_name": "fmp4", "codec": [{
                            **_CODEC, "base_url": "/live-bvc/462997/live_11153765_9369560/index.m3u8?",
                            "url_info": [
                                {"host": _HOST, "extra": (
                                    "expires=1674103815&len=0&oi=1963941079&pt=web&qn=10000"
                                    "&trid=1007061f434c07ac4f4184820bfb141e75e8"
                                    "&sigparams=cdn,expires,len,oi,pt,qn,trid&cdn=cn-gotcha01"
                                    "&sign=cc57dce528316d8389f2f34e7bd15f5c&sk=a99391b8b4d5779b2e32e41dbc989d2d"
                                    "&flvsk=33541455720f64c7671bc1480acfb176&p2p_type=1&src=57345&sl=1"
                                    "&free_type=0&sid=cn-hbcd-cu-02-20&chash=1&sche=ban&bvchls=1&score=12"
                                    "&pp=rtmp&machinezone=jd&source=onetier&trace=0"
                                    "&site=92e80b6f3ebfd393e7d1c1e2e648d9c1&order=1"), "stream_ttl": 3600},
                                {"host": "https://c1--cn-gotcha208.bilivideo.com", "extra": (
                                    "expires=1674103815&len=0&oi=1963941079&pt=web&qn=10000"
                                    "&trid=1007061f434c07ac4f4184820bfb141e75e8"
                                    "&sigparams=cdn,expires,len,oi,pt,qn,trid&cdn=cn-gotcha208"
                                    "&sign=2ff96adf5056c8dbee546955260fc2df&sk=a99391b8b4d5779b2e32e41dbc989d2d"
                                    "&p2p_type=1&src=57345&sl=1&free_type=0&pp=rtmp&machinezone=jd"
                                    "&source=onetier&trace=0&site=92e80b6f3ebfd393e7d1c1e2e648d9c1&order=2"),
                                 "stream_ttl": 3600}]}]}]},
                ],
                "p2p_data": {"p2p": True, "p2p_type": 1, "m_p2p": False, "m_servers": None},
                "dolby_qn": None,
            },
        },
    },
}
# The simulated rooms (short id, long id, uid): ROOM_INIT's own, and an off-air one.
ROOM_SHORT, ROOM_LONG, ROOM_UID = 76, 14073662, 50333369
OFFLINE_ROOM = 21452505
ROOM_SHORT_LINK = "liveRm76"  # b23.tv/<code> -> the room's page
SECRET = b"trawl-simulated-live-cdn"
# BAC docs/live/message_stream.md, the getDanmuInfo example (id=1017); token and hosts replaced.
DANMU_INFO: dict[str, Any] = {
    "code": 0, "message": "0", "ttl": 1,
    "data": {"group": "live", "business_id": 0, "refresh_row_factor": 0.125, "refresh_rate": 100, "max_delay": 5000,
             "token": "", "host_list": []},
}
# x/frontend/finger/spi: data{b_3, b_4} (values invented in the real ones' shapes).
FINGER_SPI: dict[str, Any] = {"code": 0, "data": {"b_3": "8C2D0D9F-0C2B-7C8E-1A55-5E3B2E8F4A1B41567infoc",
                                                  "b_4": "A1B2C3D4-E5F6-0718-293A-4B5C6D7E8F9041567-023120517-abc=="},
                              "message": "ok"}


@dataclass
class Room:
    room_id: int
    short_id: int = 0
    uid: int = ROOM_UID
    broadcast: LiveStream | None = None  # the latest broadcast; on air until it ends
    live_time: int = 0
    rotating: bool = False  # off air, shows rotating replays (live_status 2)

    def status(self) -> int:
        if self.broadcast is not None and not self.broadcast.ended():
            return 1
        return 2 if self.rotating else 0

    @property
    def playlist_path(self) -> str:
        return f"/live-bvc/{self.room_id}/live_{self.uid}_{self.room_id}.m3u8"


@dataclass
class RoomSite:
    sim: Simulator
    url_ttl: float = 3600.0  # seconds a playlist URL is valid (stream_ttl)
    rooms: dict[int, Room] = field(default_factory=dict)
    generation: int = 0  # bumped by expire_urls(): every signature issued before fails
    wbi_keys: tuple[str, str] | None = None  # (img, sub): getDanmuInfo checks its WBI signature
    comments_per_second: float = 2.0
    danmaku: DanmakuServer | None = None  # the comment server, once a getDanmuInfo asked for it
    chats: dict[int, RoomChat] = field(default_factory=dict)
    # Broadcasts that go on air a while after their room is first asked about (go_live_when_asked).
    pending: dict[int, tuple[LiveStream, float, float | None]] = field(default_factory=dict)
    stale_status: int = 403  # what a playlist URL whose signature fails answers (expire_urls)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self) -> RoomSite:
        """Routes, and two rooms off air: ROOM_INIT's (a broadcast starts with
        :meth:`start_broadcast`) and :data:`OFFLINE_ROOM`."""
        self.add_room(Room(ROOM_LONG, ROOM_SHORT))
        self.add_room(Room(OFFLINE_ROOM))
        self.sim.add_exact("/room/v1/Room/room_init", self.room_init)
        self.sim.add_exact("/xlive/web-room/v2/index/getRoomPlayInfo", self.play_info)
        self.sim.add_exact("/xlive/web-room/v1/index/getDanmuInfo", self.danmu_info)
        self.sim.add_exact("/x/frontend/finger/spi", lambda req: _json(FINGER_SPI))
        self.sim.add_route(r"/live-bvc/(?P<room>\d+)/(?P<file>[\w.-]+)", self.serve)
        self.sim.add_route(r"/liveroom/(?:h5/|blanc/)?\d+/?", self.page)
        return self

    def add_room(self, room: Room) -> Room:
        with self._lock:
            self.rooms[room.room_id] = room
            self.chats[room.room_id] = RoomChat(room.room_id, self.comments_per_second)
        return room

    def start_broadcast(self, room_id: int, stream: LiveStream, at: float | None = None) -> LiveStream:
        """Put ``stream`` on air in the room, begun now (or at ``at``, a ``time.time()``): its
        start is the broadcast's ``live_time``."""
        room = self.rooms[room_id]
        stream.start(at)
        assert stream.started is not None
        room.broadcast, room.live_time = stream, int(stream.started)
        chat = self.chats[room_id]
        chat.per_second = self.comments_per_second
        chat.start = stream.started
        chat.end = None if stream.length is None else stream.started + stream.length * stream.segment_seconds
        return stream

    def go_live_when_asked(self, room_id: int, stream: LiveStream, after: float = 0.0) -> None:
        """Put ``stream`` on air ``after`` seconds after the room is first asked about (room_init),
        as the simulator's live stream starts at its first request: a reader's crawl or watch finds
        the broadcast from its start however long it took to begin."""
        self.pending[room_id] = (stream, after, None)

    def _on_air_if_due(self, room: Room) -> None:
        entry = self.pending.get(room.room_id)
        if entry is None:
            return
        stream, after, asked = entry
        now = time.time()
        if asked is None:
            self.pending[room.room_id] = (stream, after, now)
            asked = now
        if now >= asked + after:
            del self.pending[room.room_id]
            self.start_broadcast(room.room_id, stream)

    def url(self, room: int | str, form: str = "") -> str:
        """A room's page URL (``form``: ``h5/`` or ``blanc/`` for those forms)."""
        return self.sim.url(f"/liveroom/{form}{room}")

    def expire_urls(self, status: int = 403) -> None:
        """Every playlist URL issued so far answers ``status`` (403, or 404 as a CDN node that
        dropped the stream does); answers from now on carry fresh ones."""
        self.stale_status = status
        self.generation += 1

    # -- answers -----------------------------------------------------------------------------
    def _room(self, value: str | None) -> Room | None:
        number = int(value) if value and value.isdigit() else -1
        with self._lock:
            return self.rooms.get(number) or next((r for r in self.rooms.values() if r.short_id == number), None)

    def room_init(self, req: Request) -> Response:
        room = self._room(req.arg("id"))
        if room is None:
            return _json({"code": 60004, "message": "直播间不存在", "ttl": 1})
        self._on_air_if_due(room)
        doc = copy.deepcopy(ROOM_INIT)
        status = room.status()
        doc["data"].update(room_id=room.room_id, short_id=room.short_id, uid=room.uid, live_status=status,
                           live_time=room.live_time if status == 1 else OFF_AIR_TIME)
        return _json(doc)

    def play_info(self, req: Request) -> Response:
        room = self._room(req.arg("room_id"))
        if room is None:
            return _json({"code": 60004, "message": "直播间不存在", "ttl": 1})
        doc = copy.deepcopy(ROOM_PLAY_INFO)
        data = doc["data"]
        status = room.status()
        data.update(room_id=room.room_id, short_id=room.short_id, uid=room.uid, live_status=status,
                    live_time=room.live_time if status == 1 else 0)
        if status != 1:
            data["playurl_info"] = None  # as off air: nothing to play
            return _json(doc)
        streams = data["playurl_info"]["playurl"]["stream"]
        for stream in streams:
            for fmt in stream["format"]:
                for codec in fmt["codec"]:
                    path = room.playlist_path if fmt["format_name"] == "ts" else \
                        f"/live-bvc/{room.room_id}/live_{room.uid}_{room.room_id}.{fmt['format_name']}"
                    codec["base_url"] = path + "?"
                    codec["url_info"] = [{"host": self.sim.base_url, "extra": self._extra(path), "stream_ttl":
                                          int(self.url_ttl)}]
        for hls in (s for s in streams if s["protocol_name"] == "http_hls"):
            hls["format"] = [f for f in hls["format"] if f["format_name"] == "ts"]
        return _json(doc)

    def token(self, room_id: int) -> str:
        return hashlib.md5(SECRET + f"danmaku|{room_id}|{self.generation}".encode(), usedforsecurity=False).hexdigest()

    def comment_server(self) -> DanmakuServer:
        """The rooms' comment server, started at the first call (and stopped with the simulator)."""
        with self._lock:
            if self.danmaku is None:
                self.danmaku = DanmakuServer(self.token, self.chats).start()
                self.sim.on_stop(self.danmaku.stop)
            return self.danmaku

    def danmu_info(self, req: Request) -> Response:
        if self.wbi_keys is not None and not _wbi_ok(req, *self.wbi_keys):
            return _json({"code": -352, "message": "-352", "ttl": 1})
        room = self._room(req.arg("id"))
        if room is None:
            return _json({"code": 1, "message": "错误", "ttl": 1})
        port = self.comment_server().port
        doc = copy.deepcopy(DANMU_INFO)
        doc["data"]["token"] = self.token(room.room_id)
        doc["data"]["host_list"] = [{"host": "127.0.0.1", "port": port, "wss_port": port, "ws_port": port}
                                    for _ in range(2)]
        return _json(doc)

    def _extra(self, path: str) -> str:
        expires = int(time.time() + self.url_ttl)
        return urlencode({"expires": expires, "len": 0, "oi": 0, "pt": "web", "qn": 10000, "trid": "0" * 36,
                          "sigparams": "cdn,expires,len,oi,pt,qn,trid", "cdn": "cn-gotcha01",
                          "sign": self._sign(path, expires, self.generation)}, safe=",")

    @staticmethod
    def _sign(path: str, expires: int, generation: int) -> str:
        return hashlib.md5(SECRET + f"{path}|{expires}|{generation}".encode(), usedforsecurity=False).hexdigest()

    def serve(self, req: Request) -> Response:
        assert req.match is not None
        room = self._room(req.match.group("room"))
        file = req.match.group("file")
        if room is None or room.broadcast is None:
            return _not_found()
        stream = room.broadcast
        if req.path == room.playlist_path:
            expires = int(req.arg("expires") or 0) if (req.arg("expires") or "").isdigit() else 0
            if expires < time.time() or req.arg("sign") != self._sign(req.path, expires, self.generation):
                if self.stale_status == 404:
                    return _not_found()
                return Response(403, {"Content-Type": "text/html"}, b"<html><body>403 Forbidden</body></html>")
            return Response(200, {"Content-Type": PLAYLIST_TYPE, "Cache-Control": "no-cache"},
                            stream.playlist().encode())
        if file.startswith("seg-") and file.endswith(".ts") and file[4:-3].isdigit():
            sequence = int(file[4:-3])
            if sequence < stream.published():
                return ranged_segment(req, live_segment(sequence))
        return _not_found()

    def page(self, req: Request) -> Response:
        return Response(200, {"Content-Type": "text/html; charset=utf-8"},
                        b"<!DOCTYPE html><html><head><title>bilibili live</title></head><body></body></html>")

    def segment_requests(self, room_id: int, upto: int) -> list[int]:
        """Requests each segment ``0 .. upto - 1`` of the room's broadcast got."""
        paths = [f"/live-bvc/{room_id}/seg-{s}.ts" for s in range(upto)]
        return [self.sim.stats[p].requests if p in self.sim.stats else 0 for p in paths]


def _wbi_ok(req: Request, img: str, sub: str) -> bool:
    from trawl.platforms.bilibili.resolver import wbi_sign

    params = {k: v[0] for k, v in req.query.items() if k != "w_rid"}
    wts = params.pop("wts", None)
    return bool(wts and wts.isdigit() and req.arg("w_rid") == wbi_sign(params, img, sub, now=int(wts))["w_rid"])


def _json(doc: Any) -> Response:
    return Response(200, {"Content-Type": "application/json; charset=utf-8"}, json.dumps(doc, ensure_ascii=False).encode())


def _not_found() -> Response:
    return Response(404, {"Content-Type": "text/html"}, b"<html><body>Not Found</body></html>")
