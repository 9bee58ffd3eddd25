"""A Bilibili live room's comments: the message stream's codec (pure), what a comment says, the
log beside a recording, and the client against the simulated room's WebSocket over loopback
(a dropped stream reconnects; nothing is stored twice)."""

from __future__ import annotations

import json
import threading
import zlib
from pathlib import Path

import brotli
import httpx
import pytest

from tests.polling import wait_until
from trawl.download.live_comments import CommentContext, CommentLog, LoggedMessage
from trawl.platforms.bilibili import BilibiliSettings
from trawl.platforms.bilibili.danmaku import parse_danmaku_xml
from trawl.platforms.bilibili.danmaku_site import comment_id, danmu_msg
from trawl.platforms.bilibili.live_comments import (
    OP_AUTH,
    OP_HEARTBEAT,
    OP_MESSAGE,
    VERSION_BROTLI,
    VERSION_JSON,
    VERSION_ZLIB,
    BilibiliLiveComments,
    StreamError,
    auth_packet,
    danmaku_of,
    inflate,
    live_comments,
    message_key,
    messages,
    pack,
    render,
    unpack,
)
from trawl.platforms.bilibili.room_site import ROOM_LONG
from trawl.platforms.bilibili.site import install_bilibili_site
from trawl.simulator import Simulator
from trawl.simulator.live_site import LiveStream


def _batch(items: list[dict], version: int) -> bytes:
    plain = b"".join(pack(OP_MESSAGE, json.dumps(m).encode(), VERSION_JSON) for m in items)
    body = zlib.compress(plain) if version == VERSION_ZLIB else brotli.compress(plain)
    return pack(OP_MESSAGE, body, version)


def test_the_auth_packet_is_a_visitors_with_the_buvid_and_token() -> None:
    data = auth_packet(14073662, "tok", "buvid3-value", protover=3)
    (packet,) = unpack(data)
    assert (packet.operation, packet.version) == (OP_AUTH, 1)
    assert data[:16] == len(data).to_bytes(4, "big") + b"\x00\x10\x00\x01\x00\x00\x00\x07\x00\x00\x00\x01"
    assert json.loads(packet.body) == {"uid": 0, "roomid": 14073662, "protover": 3, "buvid": "buvid3-value",
                                       "platform": "web", "type": 2, "key": "tok"}


def test_the_documented_heartbeat_reply_and_auth_reply_read_back() -> None:
    # docs/live/message_stream.md: the auth reply and a heartbeat reply (popularity 2466), byte for byte.
    reply = bytes.fromhex("0000001a001000010000000800000001") + b'{"code":0}'
    beat = bytes.fromhex("00000014001000010000000300000000000009a2")
    assert [(p.operation, p.body) for p in unpack(reply)] == [(8, b'{"code":0}')]
    assert [(p.operation, int.from_bytes(p.body[:4], "big")) for p in unpack(beat)] == [(3, 2466)]
    assert unpack(pack(OP_HEARTBEAT, b"[object Object]"))[0].operation == OP_HEARTBEAT


@pytest.mark.parametrize("version", [VERSION_ZLIB, VERSION_BROTLI])
def test_a_compressed_batch_gives_its_messages_in_order(version: int) -> None:
    sent = [danmu_msg(ROOM_LONG, n, 1_700_000_000 + n) for n in range(5)] + [{"cmd": "SEND_GIFT", "data": {"tid": "9"}}]
    frame = _batch(sent, version) + pack(OP_MESSAGE, b'{"cmd":"LIVE"}', VERSION_JSON)
    assert messages(unpack(frame)) == [*sent, {"cmd": "LIVE"}]


def test_bounds_stop_bombs_broken_headers_nesting_and_floods() -> None:
    bomb = zlib.compress(b"\0" * 5_000_000)
    with pytest.raises(StreamError, match="inflates past"):
        inflate(bomb, VERSION_ZLIB, limit=1_000_000)
    with pytest.raises(StreamError, match="inflates past"):
        inflate(brotli.compress(b"\0" * 5_000_000), VERSION_BROTLI, limit=1_000_000)
    with pytest.raises(StreamError, match="does not fit"):
        unpack(pack(OP_MESSAGE, b"{}")[:-1] + b"")
    with pytest.raises(StreamError, match="does not fit"):
        unpack((10).to_bytes(4, "big") + bytes(12))  # a length shorter than the header
    nested = pack(OP_MESSAGE, zlib.compress(_batch([{"cmd": "X"}], VERSION_ZLIB)), VERSION_ZLIB)
    with pytest.raises(StreamError, match="inside a compressed"):
        unpack(nested)
    with pytest.raises(StreamError, match="packets in one frame"):
        unpack(pack(OP_MESSAGE, b"{}", VERSION_JSON) * 11, max_packets=10)
    with pytest.raises(StreamError, match="does not inflate"):
        inflate(b"not zlib", VERSION_ZLIB)
    # A body that is not JSON is skipped, not a failure.
    assert messages(unpack(pack(OP_MESSAGE, b"\xff{", VERSION_JSON) + pack(OP_MESSAGE, b'{"cmd":"A"}', 0))) == [
        {"cmd": "A"}]


def test_a_comment_says_its_text_time_colour_sender_and_id() -> None:
    message = danmu_msg(ROOM_LONG, 7, 1_700_000_123.5)
    assert message_key(message) == f"dm:{comment_id(ROOM_LONG, 7)}"
    comment = danmaku_of(message, 12.25)
    assert comment is not None
    assert (comment.seconds, comment.text, comment.mode, comment.size, comment.sent_at, comment.id) == (
        12.25, "弹幕 7", 1, 25, 1_700_000_123, comment_id(ROOM_LONG, 7))
    assert comment.color == 0x00CD00 and comment.user_hash
    # Without info[0][15] (older messages), the key is its time, sender and text.
    bare = {"cmd": "DANMU_MSG:4:0:2:2:2:0", "info": [[0, 1, 25, 16777215, 1700000000000], "hi", [42, "x"]]}
    assert message_key(bare).startswith("dm:1700000000000:42:") and danmaku_of(bare, -3).seconds == 0.0
    assert message_key({"cmd": "SUPER_CHAT_MESSAGE", "data": {"id": 55}}) == "super_chat_message:55"
    assert message_key({"cmd": "WATCHED_CHANGE", "data": {"num": 3}}) is None
    assert danmaku_of({"cmd": "SEND_GIFT"}, 1) is None and danmaku_of({"cmd": "DANMU_MSG", "info": "x"}, 1) is None


def test_render_gives_the_xml_players_read_timed_from_the_media_zero() -> None:
    logged = [LoggedMessage(1000.0 + n, danmu_msg(ROOM_LONG, n, 1000.0 + n)) for n in range(3)]
    logged.append(LoggedMessage(1001.5, {"cmd": "SEND_GIFT", "data": {"tid": "1"}}))
    (xml,) = render(logged, media_zero=995.0, room_id=ROOM_LONG)
    assert (xml.name, xml.kind, xml.mime, xml.count) == ("live-danmaku", "danmaku", "application/xml", 3)
    chat, comments = parse_danmaku_xml(xml.body)
    assert chat == str(ROOM_LONG) and [(c.seconds, c.text) for c in comments] == [
        (5.0, "弹幕 0"), (6.0, "弹幕 1"), (7.0, "弹幕 2")]


def test_the_log_drops_a_torn_line_keeps_keys_and_its_anchor_across_attempts(tmp_path: Path) -> None:
    path = tmp_path / "video.comments.jsonl"
    first = CommentLog(path).open()
    assert first.append({"cmd": "A"}, "a", 10.0) and first.append({"cmd": "N"}, None, 11.0)
    first.set_anchor(12.0, 9.0)
    first.connected(12.5)
    first.close()
    with open(path, "ab") as torn:
        torn.write(b'{"t": 13.0, "key": "b", "msg": {"cmd"')  # a kill mid-write
    second = CommentLog(path).open()
    assert (second.count, second.keys, second.media_zero, second.connections) == (2, {"a"}, 3.0, 1)
    assert not second.append({"cmd": "A"}, "a", 14.0) and second.duplicates == 1
    assert second.append({"cmd": "B"}, "b", 15.0) and second.append({"cmd": "N"}, None, 16.0)
    assert [(m.received, m.message["cmd"]) for m in second.read()] == [(10.0, "A"), (11.0, "N"), (15.0, "B"),
                                                                      (16.0, "N")]
    second.close()
    assert all(json.loads(line) for line in path.read_bytes().splitlines())


def test_the_hook_claims_room_recordings_only() -> None:
    config = BilibiliSettings()
    assert isinstance(live_comments(config, "https://live.bilibili.com/14073662"), BilibiliLiveComments)
    assert live_comments(config, "https://www.bilibili.com/video/BV117411r7R1") is None
    assert live_comments(BilibiliSettings(live_comments=False), "https://live.bilibili.com/14073662") is None


class Listener:
    """A source's run in a thread, what it receives kept in order."""

    def __init__(self, source: BilibiliLiveComments, client: httpx.Client) -> None:
        self.got: list[dict] = []
        self.stopping = threading.Event()
        ctx = CommentContext(client, self.got.append, self.stopping, allow_private=True)
        self.thread = threading.Thread(target=source.run, args=(ctx,), daemon=True)

    def __enter__(self) -> Listener:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join(10)
        assert not self.thread.is_alive()

    def comments(self) -> list[str]:
        return [message_key(m) for m in self.got if m.get("cmd") == "DANMU_MSG"]


@pytest.mark.parametrize("protover", [VERSION_BROTLI, VERSION_ZLIB])
def test_the_client_records_the_simulated_room_and_reconnects_after_a_drop(
        sim: Simulator, protover: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("trawl.platforms.bilibili.live_comments.PROTOVER", protover)
    site = install_bilibili_site(sim)
    site.rooms.comments_per_second = 10
    site.rooms.start_broadcast(ROOM_LONG, LiveStream(length=None))
    source = BilibiliLiveComments(site.settings(), ROOM_LONG, heartbeat_every=0.3)
    with httpx.Client() as client, Listener(source, client) as listener:
        wait_until(lambda: len(listener.comments()) >= 5, "comments before the drop", timeout=20)
        server = site.rooms.comment_server()
        assert server.drop() == 1
        wait_until(lambda: source.connections == 2, "a reconnect", timeout=20)
        held = len(listener.comments())
        wait_until(lambda: len(listener.comments()) >= held + 5, "comments after the reconnect", timeout=20)
        assert sim.stats["/x/frontend/finger/spi"].requests == 1  # one visitor, however many connections
    chat = site.rooms.chats[ROOM_LONG]
    got = listener.comments()
    delivered = {f"dm:{comment_id(ROOM_LONG, n)}" for n in chat.delivered}
    assert len(got) == len(set(got)) and set(got) == delivered  # all sent, none twice
    numbers = sorted(chat.delivered)
    missed = sorted(set(range(numbers[0], numbers[-1] + 1)) - set(numbers))
    print(f"{len(got)} comments over 2 connections; {len(missed)} sent while disconnected")
    assert source.failures == 1  # the drop


def test_stale_wbi_keys_are_asked_again_not_raised(sim: Simulator) -> None:
    site = install_bilibili_site(sim)
    site.rooms.start_broadcast(ROOM_LONG, LiveStream(length=None))
    source = BilibiliLiveComments(site.settings(), ROOM_LONG)
    source._wbi = ("0" * 32, "1" * 32)  # stale keys: getDanmuInfo answers -352, nav is asked again
    with httpx.Client() as client, Listener(source, client):
        wait_until(lambda: source.connections == 1, "a connection after fresh keys", timeout=20)
    assert source.failures == 1 and sim.stats["/x/web-interface/nav"].requests == 1


def test_the_stream_goes_through_the_configured_proxy(sim: Simulator) -> None:
    """As every request does: the WebSocket asks the proxy (net.proxy) to CONNECT to the comment
    server, never the server itself (this proxy answers 502, so the source keeps retrying)."""
    from tests.trawl.test_http_client import RecordingProxy

    site = install_bilibili_site(sim)
    site.rooms.start_broadcast(ROOM_LONG, LiveStream(length=None))
    source = BilibiliLiveComments(site.settings(), ROOM_LONG)
    with RecordingProxy() as proxy, httpx.Client() as client:
        stopping = threading.Event()
        ctx = CommentContext(client, lambda m: None, stopping, allow_private=True, proxy=proxy.url)
        thread = threading.Thread(target=source.run, args=(ctx,), daemon=True)
        thread.start()
        try:
            wait_until(lambda: proxy.asked, "the proxy asked", timeout=20)
        finally:
            stopping.set()
            thread.join(10)
    port = site.rooms.comment_server().port
    assert proxy.asked[0] == f"CONNECT 127.0.0.1:{port} HTTP/1.1" and source.connections == 0
    assert site.rooms.comment_server().connections == 0


def test_the_anchor_kept_is_the_one_nearest_the_live_edge(tmp_path: Path) -> None:
    """A recording catching up (one segment of a window held at first) is behind the live edge;
    the anchor that places media second 0 earliest wins, in this attempt and the next."""
    path = tmp_path / "video.comments.jsonl"
    first = CommentLog(path).open()
    first.set_anchor(20.0, 1.0)  # one segment of nine held: far behind the edge
    first.set_anchor(20.5, 9.0)  # caught up
    first.set_anchor(30.0, 12.0)  # behind again (a slow segment, a gap): not kept
    assert first.media_zero == 11.5
    first.close()
    assert CommentLog(path).open().media_zero == 11.5
    assert len([line for line in path.read_bytes().splitlines() if b"anchor" in line]) == 2
