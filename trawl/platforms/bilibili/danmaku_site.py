"""The simulated live rooms' comment streams: a WebSocket server on loopback speaking Bilibili's
message-stream protocol (bilibili-API-collect ``docs/live/message_stream.md``; the packets are
:mod:`.live_comments`'s own codec).

A connection must send the auth packet first (``roomid`` a simulated room, ``key`` the room's
token from getDanmuInfo, a ``buvid``): it gets ``{"code": 0}`` (operation 8); anything else is
closed. Then it gets a heartbeat reply (operation 3, the popularity) for each heartbeat, and the
room's comments as they are sent: while a broadcast is on air the room's audience sends
``per_second`` comments a second (comment ``n`` at the broadcast's start plus ``n / per_second``),
and every ``batch_every`` seconds each connection gets those sent since its last batch in one
packet, compressed as its auth asked (``protover`` 3: brotli, 2: zlib, else plain packets). A
connection gets only comments sent while it is connected: the stream never replays. When the
broadcast ends a ``PREPARING`` message follows the last comment.

Each comment is the documented ``DANMU_MSG`` example with its own text (``弹幕 <n>``), id
(``info[0][15].extra.id_str``), sent time, colour and sender. :meth:`RoomChat.delivered` counts
what was sent of each comment over all connections, and :meth:`DanmakuServer.drop` closes every
connection (a dropped stream).
"""

from __future__ import annotations

import copy
import json
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

from trawl.logs import get_logger
from trawl.platforms.bilibili.live_comments import (
    OP_AUTH,
    OP_AUTH_REPLY,
    OP_HEARTBEAT,
    OP_HEARTBEAT_REPLY,
    OP_MESSAGE,
    VERSION_BROTLI,
    VERSION_JSON,
    VERSION_ZLIB,
    StreamError,
    brotli,
    pack,
    unpack,
)

log = get_logger("trawl.simulator.danmaku")

# docs/live/message_stream.md, the DANMU_MSG example (its info array, abridged where it repeats
# the sender's medal); text, ids, times and sender are replaced per comment.
_EXTRA = {"send_from_me": False, "mode": 0, "color": 9920249, "dm_type": 0, "font_size": 25, "player_mode": 1,
          "show_player_type": 0, "content": "白花300块[热]", "user_hash": "197700816", "emoticon_unique": "",
          "bulge_display": 0, "recommend_score": 3, "main_state_dm_color": "", "objective_state_dm_color": "",
          "direction": 0, "pk_direction": 0, "quartet_direction": 0, "anniversary_crowd": 0, "yeah_space_type": "",
          "yeah_space_url": "", "jump_to_url": "", "space_type": "", "space_url": "", "animation": {}, "emots": {},
          "is_audited": False, "id_str": "364b06e3c561af3d5921f1253d66c1d575", "icon": None, "show_reply": True,
          "reply_mid": 0, "reply_uname": "", "reply_uname_color": "", "reply_is_mystery": False, "hit_combo": 0}
DANMU_MSG: dict[str, Any] = {"cmd": "DANMU_MSG", "dm_v2": "", "info": [
    [0, 1, 25, 9920249, 1723979200649, -1312973962, 0, "0bc8acd0", 0, 0, 0, "", 0, "{}", "{}",
     {"extra": "", "mode": 0, "show_player_type": 0,
      "user": {"base": {"face": "https://i1.hdslb.com/bfs/face/5a9bb9cac3afbb58347c808ae76aaa41ca967d07.jpg",
                        "is_mystery": False, "name": "tim1997", "name_color": 0, "name_color_str": ""},
               "uid": 6088969}},
     {"activity_identity": "", "activity_source": 0, "not_show": 0}, 0],
    "白花300块[热]",
    [6088969, "tim1997", 0, 0, 0, 10000, 1, ""],
    [29, "果咩吖", "果宝Official", 31180317, 2951253, "", 0, 16771156, 2951253, 10329087, 1, 1, 3546569288714792],
    [39, 0, 10512625, 42523, 2], ["", ""], 0, 0, None, {"ct": "AFFF4206", "ts": 1723979200}, 0, 0, None, None, 0,
    1040, [49], None]}
COLORS = (0xFFFFFF, 9920249, 0xFE0302, 0x00CD00)


def comment_id(room_id: int, n: int) -> str:
    return f"{room_id:012x}{n:08x}"


def danmu_msg(room_id: int, n: int, sent_at: float) -> dict[str, Any]:
    """Comment ``n`` of a room's broadcast, sent at ``sent_at`` (Unix seconds)."""
    message = copy.deepcopy(DANMU_MSG)
    info = message["info"]
    text = f"弹幕 {n}"
    color = COLORS[n % len(COLORS)]
    uid = 1000 + n % 7
    info[0][3], info[0][4] = color, int(sent_at * 1000)
    info[0][15]["extra"] = json.dumps({**_EXTRA, "content": text, "color": color, "id_str": comment_id(room_id, n),
                                       "user_hash": f"{zlib.crc32(str(uid).encode()):x}"}, ensure_ascii=False)
    info[0][15]["user"]["uid"] = uid
    info[1] = text
    info[2][0], info[2][1] = uid, f"viewer{uid}"
    info[9] = {"ct": "AFFF4206", "ts": int(sent_at)}
    return message


@dataclass
class RoomChat:
    """A room's audience: comments sent at a pace while its broadcast is on air."""

    room_id: int
    per_second: float = 2.0
    start: float | None = None  # the broadcast's start, time.time()
    end: float | None = None  # its end (None: on air until it is set)
    delivered: dict[int, int] = field(default_factory=dict)  # comment -> times sent to a connection
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def sent_by(self, now: float) -> int:
        """Comments sent by ``now``: ``0 .. sent_by - 1``."""
        if self.start is None:
            return 0
        until = now if self.end is None else min(now, self.end)
        return max(0, int((until - self.start) * self.per_second))

    def sent_at(self, n: int) -> float:
        assert self.start is not None
        return self.start + n / self.per_second

    def record(self, numbers: range) -> None:
        with self._lock:
            for n in numbers:
                self.delivered[n] = self.delivered.get(n, 0) + 1


@dataclass
class DanmakuServer:
    """The WebSocket server of every simulated room (see the module docstring)."""

    tokens: Any  # room id -> its current token (a callable)
    chats: dict[int, RoomChat] = field(default_factory=dict)
    batch_every: float = 0.5
    popularity: int = 2466
    connections: int = 0  # authenticated, over the server's life
    _server: Any = None
    _thread: threading.Thread | None = None
    _open: set[Any] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> DanmakuServer:
        from websockets.sync.server import serve

        self._server = serve(self._handle, "127.0.0.1", 0, compression=None, max_size=1024 * 1024,
                             ping_interval=None)
        self._thread = threading.Thread(target=self._server.serve_forever, name="simulated-danmaku", daemon=True)
        self._thread.start()
        return self

    @property
    def port(self) -> int:
        return int(self._server.socket.getsockname()[1])

    def stop(self) -> None:
        if self._server is not None:
            self.drop()
            self._server.shutdown()
            self._server = None

    def drop(self) -> int:
        """Close every connection (a dropped stream); returns how many were open."""
        with self._lock:
            open_now = list(self._open)
        for connection in open_now:
            connection.close()
        return len(open_now)

    def _handle(self, connection: Any) -> None:  # noqa: ANN401 - websockets' ServerConnection
        from websockets.exceptions import ConnectionClosed

        try:
            auth = self._auth(connection)
            if auth is None:
                connection.close(1008, "auth")
                return
            room, protover = auth
            chat = self.chats[room]
            with self._lock:
                self._open.add(connection)
                self.connections += 1
            connection.send(pack(OP_AUTH_REPLY, b'{"code":0}'))
            upto = chat.sent_by(time.time())  # only what is sent from now on
            ended = False
            while not ended:
                try:
                    frame = connection.recv(timeout=self.batch_every)
                except TimeoutError:
                    frame = None
                if isinstance(frame, bytes):
                    self._answer(connection, frame)
                now = time.time()
                sent = chat.sent_by(now)
                if sent > upto:
                    batch = [danmu_msg(room, n, chat.sent_at(n)) for n in range(upto, sent)]
                    connection.send(self._batch(batch, protover))
                    chat.record(range(upto, sent))
                    upto = sent
                if chat.end is not None and now >= chat.end and upto >= chat.sent_by(now):
                    connection.send(self._batch([{"cmd": "PREPARING", "roomid": room}], protover))
                    ended = True
            # The real server keeps the connection open off air; the simulated one waits for the client.
            while True:
                frame = connection.recv(timeout=60)
                if isinstance(frame, bytes):
                    self._answer(connection, frame)
        except (ConnectionClosed, TimeoutError):
            pass
        finally:
            with self._lock:
                self._open.discard(connection)

    def _auth(self, connection: Any) -> tuple[int, int] | None:  # noqa: ANN401
        try:
            frame = connection.recv(timeout=5)
            packets = unpack(frame) if isinstance(frame, bytes) else []
        except (TimeoutError, StreamError):
            return None
        if not packets or packets[0].operation != OP_AUTH:
            return None
        try:
            body = json.loads(packets[0].body)
        except ValueError:
            return None
        room = body.get("roomid") if isinstance(body, dict) else None
        if room not in self.chats or body.get("key") != self.tokens(room) or not body.get("buvid"):
            return None
        return room, int(body.get("protover") or 0)

    def _answer(self, connection: Any, frame: bytes) -> None:  # noqa: ANN401
        try:
            packets = unpack(frame)
        except StreamError:
            return
        if any(p.operation == OP_HEARTBEAT for p in packets):
            connection.send(pack(OP_HEARTBEAT_REPLY, self.popularity.to_bytes(4, "big") + b"[object Object]"))

    @staticmethod
    def _batch(messages: list[dict[str, Any]], protover: int) -> bytes:
        plain = b"".join(pack(OP_MESSAGE, json.dumps(m, ensure_ascii=False).encode(), VERSION_JSON) for m in messages)
        if protover == VERSION_BROTLI and brotli is not None:
            return pack(OP_MESSAGE, brotli.compress(plain), VERSION_BROTLI)
        if protover in (VERSION_ZLIB, VERSION_BROTLI):
            return pack(OP_MESSAGE, zlib.compress(plain), VERSION_ZLIB)
        return plain
