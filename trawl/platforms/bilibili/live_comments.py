"""A Bilibili live room's comments (弹幕), read from its message stream while the room records.

The servers and the token come from ``xlive/web-room/v1/index/getDanmuInfo?id=<long room id>``
(WBI-signed; ``data.token``, ``data.host_list[]{host, port, wss_port, ws_port}``), asked with a
visitor's ``buvid3`` cookie as the web page has one (``x/frontend/finger/spi``: ``data.b_3``).
Never a login: the auth packet says ``uid`` 0, so the stream is a visitor's (Bilibili masks
other users' names and ids for visitors). bilibili-API-collect ``docs/live/message_stream.md``
documents the protocol this module speaks:

- A WebSocket at ``wss://<host>:<wss_port>/sub`` (``ws://<host>:<ws_port>/sub`` when the
  configured ``live_api_base`` is plain http, as the simulator's is).
- Every frame holds packets, each a 16-byte header (big-endian: packet length, header length
  16, protocol version, operation, sequence) and a body. Versions: 0 JSON, 1 heartbeat and auth,
  2 a zlib body of more packets, 3 a brotli body of more packets. Operations: 2 heartbeat
  (sent every 30 s), 3 heartbeat reply (the room's popularity), 5 a message (JSON, ``cmd``
  names it), 7 auth (sent first: ``{uid, roomid, protover, buvid, platform, type, key}``),
  8 auth reply (``{"code": 0}``).
- ``DANMU_MSG``: ``info[0][1]`` mode, ``info[0][2]`` size, ``info[0][3]`` colour,
  ``info[0][4]`` sent time (ms), ``info[0][15].extra`` (a JSON string) with ``id_str`` and
  ``user_hash``, ``info[1]`` the text, ``info[2][0]`` the sender's uid, ``info[2][1]`` the name.

Decoding is bounded: a frame, a packet, a decompressed body (checked while it inflates, so a
compression bomb stops at the cap) and the packets of one frame are capped; a body past a cap or
a malformed header ends that frame, never the recording. The stream is reconnected with
backoff (the next host of the list, then a fresh getDanmuInfo) until the recording ends.

:class:`BilibiliLiveComments` is the room's :class:`~trawl.download.live_comments.CommentSource`;
:func:`live_comments` is the platform's hook (``Platform.live_comments``).
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import ssl
import struct
import time
import urllib.parse
import urllib.request
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpx

from trawl.download.live_comments import CommentContext, CommentFile, LoggedMessage
from trawl.errors import NetworkError, ParseError
from trawl.logs import get_logger
from trawl.netguard import check_address, check_proxied_target
from trawl.platforms.base import dig, int_or_none, str_or_none
from trawl.platforms.bilibili.config import BilibiliSettings
from trawl.platforms.bilibili.danmaku import MAX_TEXT_CHARS, Danmaku, danmaku_xml
from trawl.platforms.bilibili.resolver import _key_from_url, wbi_sign

try:  # protocol version 3 (brotli) when the pinned library is there, else 2 (zlib)
    import brotli
except ImportError:  # pragma: no cover - pinned in pyproject.toml
    brotli = None

log = get_logger("trawl.live.comments")

HEADER = struct.Struct(">IHHII")
HEADER_SIZE = 16
VERSION_JSON, VERSION_HEARTBEAT, VERSION_ZLIB, VERSION_BROTLI = 0, 1, 2, 3
OP_HEARTBEAT, OP_HEARTBEAT_REPLY, OP_MESSAGE, OP_AUTH, OP_AUTH_REPLY = 2, 3, 5, 7, 8
PROTOVER = VERSION_BROTLI if brotli is not None else VERSION_ZLIB

MAX_FRAME = 4 * 1024 * 1024  # a WebSocket frame (the library refuses larger ones)
MAX_INFLATED = 16 * 1024 * 1024  # a compressed packet's body once inflated
MAX_PACKETS = 20_000  # packets in one frame, nested ones included
HEARTBEAT_EVERY = 30.0  # the web page's pace; the server drops a connection silent for 60 s
SILENCE_LIMIT = 75.0  # no frame at all for this long (a heartbeat reply is due every 30 s): reconnect
AUTH_TIMEOUT = 10.0
BACKOFF_FIRST, BACKOFF_MAX = 1.0, 30.0
# What a comment file keeps of a live message: everything but lists of other rooms.
SKIPPED_COMMANDS = frozenset({"STOP_LIVE_ROOM_LIST"})
# A live room's canonical URL (rooms.py): https://live.bilibili.com/<long id>
_ROOM_URL = re.compile(r"^https?://[^/]+/(?P<id>\d{1,12})/?$")


class StreamError(ValueError):
    """A frame that is not the message stream's packets, or past the bounds."""


@dataclass(frozen=True)
class Packet:
    operation: int
    version: int
    body: bytes


def pack(operation: int, body: bytes = b"", version: int = VERSION_HEARTBEAT, sequence: int = 1) -> bytes:
    """One packet: its header, then ``body``."""
    return HEADER.pack(HEADER_SIZE + len(body), HEADER_SIZE, version, operation, sequence) + body


def auth_packet(room_id: int, token: str, buvid: str, protover: int = PROTOVER) -> bytes:
    body = {"uid": 0, "roomid": room_id, "protover": protover, "buvid": buvid, "platform": "web", "type": 2,
            "key": token}
    return pack(OP_AUTH, json.dumps(body, separators=(",", ":")).encode())


def heartbeat_packet() -> bytes:
    return pack(OP_HEARTBEAT, b"[object Object]")


def unpack(frame: bytes, *, max_inflated: int = MAX_INFLATED, max_packets: int = MAX_PACKETS) -> list[Packet]:
    """The packets of one frame, a compressed packet's own packets in its place (one level: a
    compressed body holds plain packets).

    Raises:
        StreamError: a header that does not fit the frame, a body past ``max_inflated`` once
            inflated, more than ``max_packets`` packets, or nesting past one level.
    """
    found: list[Packet] = []
    _unpack_into(found, frame, max_inflated, max_packets, nested=False)
    return found


def _unpack_into(found: list[Packet], data: bytes, max_inflated: int, max_packets: int, nested: bool) -> None:
    at = 0
    while at < len(data):
        if len(data) - at < HEADER_SIZE:
            raise StreamError(f"{len(data) - at} bytes left after the packets, not a header")
        length, header, version, operation, _ = HEADER.unpack_from(data, at)
        if header < HEADER_SIZE or length < header or at + length > len(data):
            raise StreamError(f"packet header (length {length}, header {header}) does not fit the frame")
        body = data[at + header:at + length]
        at += length
        if operation == OP_MESSAGE and version in (VERSION_ZLIB, VERSION_BROTLI):
            if nested:
                raise StreamError("a compressed packet inside a compressed packet")
            _unpack_into(found, inflate(body, version, max_inflated), max_inflated, max_packets, nested=True)
        else:
            found.append(Packet(operation, version, body))
        if len(found) > max_packets:
            raise StreamError(f"over {max_packets} packets in one frame")


def inflate(body: bytes, version: int, limit: int = MAX_INFLATED) -> bytes:
    """A compressed body inflated, stopping past ``limit`` bytes (a compression bomb never
    grows past the cap in memory)."""
    try:
        if version == VERSION_ZLIB:
            inflater = zlib.decompressobj()
            out = inflater.decompress(body, limit + 1)
            if len(out) > limit or inflater.unconsumed_tail:
                raise StreamError(f"compressed body inflates past {limit} bytes")
            return out
        if brotli is None:
            raise StreamError("a brotli body, and no brotli library to read it")
        decompressor = brotli.Decompressor()
        chunks = [decompressor.process(body, output_buffer_limit=limit + 1)]
        size = len(chunks[0])
        # Past the output limit the rest comes by asking again with no input, until all is taken.
        while size <= limit and not decompressor.is_finished() and not decompressor.can_accept_more_data():
            chunk = decompressor.process(b"", output_buffer_limit=limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise StreamError(f"compressed body inflates past {limit} bytes")
        if not decompressor.is_finished():
            raise StreamError("compressed body ends before its stream does")
        return b"".join(chunks)
    except (zlib.error, getattr(brotli, "error", zlib.error)) as exc:
        raise StreamError(f"compressed body does not inflate: {exc}") from None


def messages(packets: Iterable[Packet]) -> list[dict[str, Any]]:
    """The JSON messages (operation 5) among ``packets``; a body that is not a JSON object is skipped."""
    found = []
    for packet in packets:
        if packet.operation != OP_MESSAGE:
            continue
        try:
            message = json.loads(packet.body)
        except ValueError:
            log.info("live comment message is not JSON; skipped", size=len(packet.body))
            continue
        if isinstance(message, dict):
            found.append(message)
    return found


# -- what a message says -------------------------------------------------------------------
def command(message: dict[str, Any]) -> str:
    """The message's ``cmd`` (``DANMU_MSG:4:0:2:2:2:0`` is a ``DANMU_MSG`` too)."""
    value = message.get("cmd")
    return value.split(":", 1)[0] if isinstance(value, str) else ""


def _extra(info: list[Any]) -> dict[str, Any]:
    extra = dig(info, 0, 15, "extra")
    if not isinstance(extra, str) or len(extra) > 64 * 1024:
        return {}
    try:
        parsed = json.loads(extra)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def message_key(message: dict[str, Any]) -> str | None:
    """What tells one message from another across a reconnect: a comment's ``id_str`` (else its
    sent time, sender and text), a super chat's or a gift's id; None for a message without one
    (kept every time it comes)."""
    cmd = command(message)
    if cmd == "DANMU_MSG":
        info = message.get("info")
        if not isinstance(info, list):
            return None
        id_str = str_or_none(_extra(info).get("id_str"))
        if id_str:
            return f"dm:{id_str}"
        text = info[1] if len(info) > 1 and isinstance(info[1], str) else ""
        digest = hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()[:12]
        return f"dm:{int_or_none(dig(info, 0, 4)) or 0}:{int_or_none(dig(info, 2, 0)) or 0}:{digest}"
    data = message.get("data") if isinstance(message.get("data"), dict) else {}
    for field_name in ("id", "tid", "batch_combo_id"):
        raw = data.get(field_name)
        value = str(raw)[:100] if isinstance(raw, (int, str)) and not isinstance(raw, bool) else ""
        if value and value != "0":
            return f"{cmd.lower()}:{value}"
    return None


def danmaku_of(message: dict[str, Any], seconds: float) -> Danmaku | None:
    """A ``DANMU_MSG`` as a :class:`Danmaku` shown ``seconds`` into the recording; None for any
    other message or one without text."""
    if command(message) != "DANMU_MSG" or not isinstance(message.get("info"), list):
        return None
    info = message["info"]
    text = info[1] if len(info) > 1 and isinstance(info[1], str) else ""
    if not text:
        return None
    extra = _extra(info)
    mode = int_or_none(dig(info, 0, 1)) or 1
    sent_ms = int_or_none(dig(info, 0, 4)) or 0
    uid = int_or_none(dig(info, 2, 0)) or 0
    user_hash = str_or_none(extra.get("user_hash")) or (f"{zlib.crc32(str(uid).encode()):08x}" if uid else "")
    return Danmaku(seconds=max(0.0, seconds), text=text[:MAX_TEXT_CHARS], mode=mode if mode in (1, 4, 5, 6, 7) else 1,
                   size=int_or_none(dig(info, 0, 2)) or 25, color=(int_or_none(dig(info, 0, 3)) or 0) & 0xFFFFFF,
                   sent_at=sent_ms // 1000, user_hash=user_hash, id=str_or_none(extra.get("id_str")) or "")


def render(logged: list[LoggedMessage], media_zero: float | None, room_id: int) -> list[CommentFile]:
    """The room's comments as Bilibili's XML danmaku file (``live-danmaku``), each shown at its
    arrival relative to ``media_zero`` (the wall time the recording's first media second stands for)."""
    zero = media_zero if media_zero is not None else (logged[0].received if logged else 0.0)
    comments = [c for c in (danmaku_of(m.message, m.received - zero) for m in logged) if c is not None]
    return [CommentFile("live-danmaku", "danmaku", "application/xml", danmaku_xml(comments, chat_id=room_id),
                        len(comments))]


# -- the connection ------------------------------------------------------------------------
@dataclass(frozen=True)
class Host:
    host: str
    port: int


class BilibiliLiveComments:
    """One room's message stream (a :class:`~trawl.download.live_comments.CommentSource`)."""

    def __init__(self, config: BilibiliSettings, room_id: int, *, heartbeat_every: float = HEARTBEAT_EVERY,
                 silence_limit: float = SILENCE_LIMIT) -> None:
        self.config = config
        self.room_id = room_id
        self.heartbeat_every = heartbeat_every
        self.silence_limit = silence_limit
        self.secure = urllib.parse.urlsplit(config.live_api_base).scheme != "http"
        self.connections = 0  # made and authenticated, for the record
        self.failures = 0
        self._buvid: str | None = None
        self._wbi: tuple[str, str] | None = None

    key = staticmethod(message_key)

    def keep(self, message: dict[str, Any]) -> bool:
        return command(message) not in SKIPPED_COMMANDS

    def render(self, logged: list[LoggedMessage], media_zero: float | None) -> list[CommentFile]:
        return render(logged, media_zero, self.room_id)

    def summary(self) -> dict[str, Any]:
        return {"room_id": self.room_id, "protocol_version": PROTOVER}

    def ends(self, message: dict[str, Any]) -> bool:
        return command(message) == "PREPARING"  # the room went off air

    def _headers(self) -> dict[str, str]:
        headers = {"Referer": f"{self.config.live_base.rstrip('/')}/", "User-Agent": self.config.user_agent,
                   **self.config.headers}
        if self._buvid:
            headers["Cookie"] = f"buvid3={self._buvid}"
        return headers

    def _get(self, ctx: CommentContext, url: str) -> dict[str, Any]:
        answer = ctx.client.get(url, headers=self._headers())
        if answer.status_code != 200:
            raise NetworkError(f"bilibili: {url.split('?')[0]} answered HTTP {answer.status_code}")
        if len(answer.content) > 1024 * 1024:
            raise ParseError(f"bilibili: {url.split('?')[0]} answered {len(answer.content)} bytes")
        try:
            doc = answer.json()
        except ValueError:
            raise ParseError(f"bilibili: {url.split('?')[0]} answered no JSON") from None
        if not isinstance(doc, dict):
            raise ParseError(f"bilibili: {url.split('?')[0]} answered no JSON object")
        return doc

    def buvid(self, ctx: CommentContext) -> str:
        """A visitor's buvid3, as the web page gets one (once per source)."""
        if self._buvid is None:
            doc = self._get(ctx, f"{self.config.api_base.rstrip('/')}/x/frontend/finger/spi")
            value = str_or_none(dig(doc, "data", "b_3"))
            if not value or len(value) > 200:
                raise ParseError(f"bilibili: finger/spi gave no visitor buvid3 (code {doc.get('code')})")
            self._buvid = value
        return self._buvid

    def _wbi_keys(self, ctx: CommentContext) -> tuple[str, str]:
        if self._wbi is None:
            nav = self._get(ctx, f"{self.config.api_base.rstrip('/')}/x/web-interface/nav")
            img = _key_from_url(dig(nav, "data", "wbi_img", "img_url"))
            sub = _key_from_url(dig(nav, "data", "wbi_img", "sub_url"))
            if not img or not sub:
                raise ParseError("bilibili: nav gave no WBI keys (data.wbi_img)")
            self._wbi = (img, sub)
        return self._wbi

    def danmu_info(self, ctx: CommentContext) -> tuple[str, list[Host]]:
        """The token and the hosts (in the answer's order) of the room's message stream."""
        self.buvid(ctx)
        params = wbi_sign({"id": self.room_id, "type": 0, "web_location": "444.8"}, *self._wbi_keys(ctx))
        url = (f"{self.config.live_api_base.rstrip('/')}/xlive/web-room/v1/index/getDanmuInfo?"
               f"{urllib.parse.urlencode(params)}")
        doc = self._get(ctx, url)
        if doc.get("code") != 0:
            self._wbi = None  # stale keys are the usual reason (-352); ask nav again next time
            raise NetworkError(f"bilibili: getDanmuInfo for room {self.room_id} answered code {doc.get('code')}: "
                               f"{str(doc.get('message'))[:100]}")
        token = str_or_none(dig(doc, "data", "token")) or ""
        hosts = []
        for entry in dig(doc, "data", "host_list") or []:
            host = str_or_none(dig(entry, "host"))
            port = int_or_none(dig(entry, "wss_port" if self.secure else "ws_port"))
            if host and port and 0 < port < 65536 and re.fullmatch(r"[A-Za-z0-9.:\[\]-]{1,255}", host):
                hosts.append(Host(host, port))
        if not hosts:
            raise ParseError(f"bilibili: getDanmuInfo for room {self.room_id} lists no host")
        return token, list(dict.fromkeys(hosts))

    def run(self, ctx: CommentContext) -> None:
        """Receive the room's messages into ``ctx.sink`` until ``ctx.stopping`` is set, reconnecting
        with backoff: the next host of the list, then a fresh getDanmuInfo once all were tried."""
        backoff = BACKOFF_FIRST
        while not ctx.stopping.is_set():
            try:
                token, hosts = self.danmu_info(ctx)
            except (httpx.HTTPError, NetworkError, ParseError, OSError) as exc:
                self.failures += 1
                log.warning("live comments: no servers to connect to; trying again", room=self.room_id,
                            error=str(exc)[:300], wait=backoff)
                ctx.stopping.wait(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX)
                continue
            for host in hosts:
                if ctx.stopping.is_set():
                    return
                try:
                    if self._session(ctx, host, token):
                        backoff = BACKOFF_FIRST  # it was authenticated: the next failure starts over
                except Exception as exc:  # noqa: BLE001 - any failure of one connection: the next host
                    self.failures += 1
                    log.warning("live comments: connection lost; reconnecting", room=self.room_id, host=host.host,
                                error_class=type(exc).__name__, error=str(exc)[:300], wait=backoff)
                ctx.stopping.wait(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX)

    def _connect(self, ctx: CommentContext, host: Host) -> Any:  # noqa: ANN401 - websockets' ClientConnection
        """A WebSocket to ``host``: through the proxy where requests go through one (``net.proxy``,
        or the environment's for this host), the target judged by the address guard first; else
        directly, the address connected to judged before a byte is sent."""
        from websockets.sync.client import connect

        scheme = "wss" if self.secure else "ws"
        uri = f"{scheme}://{host.host}:{host.port}/sub"
        options: dict[str, Any] = dict(
            max_size=MAX_FRAME, open_timeout=AUTH_TIMEOUT, close_timeout=2, compression=None,
            ssl=ssl.create_default_context() if self.secure else None,
            server_hostname=host.host if self.secure else None, origin=self.config.live_base.rstrip("/"),
            user_agent_header=self.config.user_agent, ping_interval=None)
        proxy = ctx.proxy or _environment_proxy(scheme, host.host)
        if proxy:
            if not ctx.allow_private:
                check_proxied_target(host.host, host.port, allowed_networks=ctx.allowed_networks)
            return connect(uri, proxy=proxy, **options)
        sock = socket.create_connection((host.host, host.port), timeout=AUTH_TIMEOUT)
        try:
            check_address(host.host, sock.getpeername()[0], allow_private=ctx.allow_private,
                          allowed_networks=ctx.allowed_networks)
            return connect(uri, sock=sock, **options)
        except BaseException:
            sock.close()
            raise

    def _session(self, ctx: CommentContext, host: Host, token: str) -> bool:
        """One connection: auth, then messages and heartbeats until it drops or the recording
        ends. True when it was authenticated."""
        with self._connect(ctx, host) as ws:
            ws.send(auth_packet(self.room_id, token, self.buvid(ctx)))
            if not self._authenticated(ws, ctx):
                return False
            self.connections += 1
            ctx.connected()
            log.info("live comments connected", room=self.room_id, host=host.host, connection=self.connections)
            try:
                self._receive(ctx, ws, host)
            finally:
                ctx.disconnected()
        return True

    def _receive(self, ctx: CommentContext, ws: Any, host: Host) -> None:  # noqa: ANN401
        """Messages and heartbeats on one authenticated connection until it drops or the recording ends."""
        from websockets.exceptions import ConnectionClosed

        next_beat = time.monotonic()
        last_frame = time.monotonic()
        while not ctx.stopping.is_set():
            now = time.monotonic()
            if now >= next_beat:
                ws.send(heartbeat_packet())
                next_beat = now + self.heartbeat_every
            if now - last_frame > self.silence_limit:
                raise NetworkError(f"no frame from {host.host} for {self.silence_limit:g} s")
            try:
                frame = ws.recv(timeout=min(1.0, max(0.05, next_beat - now)))
            except TimeoutError:
                continue
            except ConnectionClosed as closed:
                raise NetworkError(f"{host.host} closed the stream ({closed.rcvd.code if closed.rcvd else '-'})") \
                    from None
            last_frame = time.monotonic()
            self._take(ctx, frame)

    def _authenticated(self, ws: Any, ctx: CommentContext) -> bool:  # noqa: ANN401
        deadline = time.monotonic() + AUTH_TIMEOUT
        while time.monotonic() < deadline and not ctx.stopping.is_set():
            try:
                frame = ws.recv(timeout=max(0.05, deadline - time.monotonic()))
            except TimeoutError:
                break
            if not isinstance(frame, bytes):
                continue
            for packet in unpack(frame):
                if packet.operation == OP_AUTH_REPLY:
                    try:
                        code = json.loads(packet.body).get("code")
                    except (ValueError, AttributeError):
                        code = None
                    if code != 0:
                        raise NetworkError(f"auth refused (code {code})")
                    return True
        if not ctx.stopping.is_set():
            raise NetworkError(f"no auth reply within {AUTH_TIMEOUT:g} s")
        return False

    def _take(self, ctx: CommentContext, frame: Any) -> None:  # noqa: ANN401 - bytes or str
        if not isinstance(frame, bytes):
            return
        try:
            packets = unpack(frame)
        except StreamError as exc:
            log.warning("live comments: frame skipped", room=self.room_id, error=str(exc)[:200], size=len(frame))
            return
        for message in messages(packets):
            ctx.sink(message)


def _environment_proxy(scheme: str, host: str) -> str:
    """The proxy the environment names for ``host`` (HTTPS_PROXY for wss, HTTP_PROXY for ws, as
    requests go), or "" where NO_PROXY exempts it or none is set."""
    proxies = urllib.request.getproxies()
    proxy = proxies.get("https" if scheme == "wss" else "http", "")
    return "" if not proxy or urllib.request.proxy_bypass(host) else proxy


def room_of(canonical_url: str) -> int | None:
    match = _ROOM_URL.match(canonical_url)
    return int(match.group("id")) if match else None


def live_comments(config: BilibiliSettings, canonical_url: str) -> BilibiliLiveComments | None:
    """The platform's hook: the comment stream of the room a live item records (its canonical URL
    is the room's, ``https://live.bilibili.com/<long id>``); None for any other recording."""
    if not isinstance(config, BilibiliSettings) or not config.live_comments:
        return None
    live = urllib.parse.urlsplit(config.live_base)
    parts = urllib.parse.urlsplit(canonical_url)
    if parts.netloc not in ("live.bilibili.com", live.netloc):
        return None
    room = room_of(canonical_url)
    return BilibiliLiveComments(config, room) if room else None


__all__ = ["BilibiliLiveComments", "Packet", "StreamError", "auth_packet", "danmaku_of", "heartbeat_packet",
           "inflate", "live_comments", "message_key", "messages", "pack", "render", "unpack"]
