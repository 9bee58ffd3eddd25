"""The sidecar that records a live recording's comments beside it (trawl.download.live_comments),
with a scripted source: the log it keeps across attempts, its anchor to the media, the files it
lists for the commit, and nothing recorded once the recording is done."""

from __future__ import annotations

import hashlib
import json
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from tests.polling import wait_until
from trawl.download.live import LiveState
from trawl.download.live_comments import (
    CommentContext,
    CommentFile,
    LiveCommentSidecars,
    LiveCommentsSidecar,
    LoggedMessage,
    comment_files,
    log_path,
    part_comment_files,
)
from trawl.download.state import save_state
from trawl.models import LIVE_PROTOCOL, Asset


class Scripted:
    """A source that sends ``script`` once connected, then waits to be stopped."""

    def __init__(self, script: list[dict[str, Any]]) -> None:
        self.script = script
        self.sent = threading.Event()

    def run(self, ctx: CommentContext) -> None:
        ctx.connected()
        for message in self.script:
            ctx.sink(message)
        self.sent.set()
        ctx.stopping.wait()

    def key(self, message: dict[str, Any]) -> str | None:
        return message.get("id")

    def keep(self, message: dict[str, Any]) -> bool:
        return message.get("cmd") != "NOISE"

    def render(self, logged: list[LoggedMessage], media_zero: float | None) -> list[CommentFile]:
        lines = [f"{m.received - (media_zero or 0):.1f} {m.message['id']}" for m in logged if m.message.get("id")]
        return [CommentFile("comments-text", "danmaku", "text/plain", "\n".join(lines).encode(), len(lines))]

    def summary(self) -> dict[str, Any]:
        return {"source": "scripted"}


def recording(part: Path, **fields: Any) -> None:
    part.parent.mkdir(parents=True, exist_ok=True)
    save_state(part, LiveState(url="http://x/index.m3u8", started_at="2026-12-05T00:00:00+00:00", **fields))


def test_two_attempts_keep_one_log_and_the_end_lists_the_files(tmp_path: Path) -> None:
    part = tmp_path / "item" / "video.part"
    recording(part, segments=3, seconds=9.0)
    ended = {"segments": 3, "seconds": 9.0, "ended": "endlist"}
    clock = iter(float(t) for t in range(100, 200)).__next__
    first = Scripted([{"cmd": "DM", "id": "a"}, {"cmd": "NOISE"}, {"cmd": "DM", "id": "b"}])
    with httpx.Client() as client:
        try:
            with LiveCommentsSidecar(first, part, client, clock=clock):
                assert first.sent.wait(5)
                raise RuntimeError("the worker's download failed")  # no files: the next attempt goes on
        except RuntimeError:
            pass
        assert not (part.parent / "video.comments.json").exists()
        part_one = Scripted([{"cmd": "DM", "id": "a"}])  # a part of the recording returns: not the end
        with LiveCommentsSidecar(part_one, part, client, clock=clock):
            assert part_one.sent.wait(5)
        assert not (part.parent / "video.comments.json").exists()
        second = Scripted([{"cmd": "DM", "id": "b"}, {"cmd": "DM", "id": "c"}, {"cmd": "GIFT"}])
        with LiveCommentsSidecar(second, part, client, clock=clock) as sidecar:
            assert second.sent.wait(5)
            wait_until(lambda: sidecar.log.anchor, "the anchor", timeout=5)
            recording(part, **ended)  # the recording ends as this attempt returns
        assert sidecar.log.duplicates == 1
    files, summary = comment_files(part.parent)
    assert [(f.name, f.kind, f.mime) for f in files] == [("comments-text", "danmaku", "text/plain"),
                                                         ("live-messages", "messages", "application/x-ndjson")]
    for file in files:
        assert hashlib.sha256(file.path.read_bytes()).hexdigest() == file.sha256 and file.path.stat().st_size == file.size
    assert summary is not None and (summary["source"], summary["connections"], summary["messages"],
                                    summary["comments"]) == ("scripted", 3, 4, 3)
    assert len(summary["offline"]) == 2  # between the attempts: no line says when the first two ended
    messages = [json.loads(line) for line in files[1].path.read_bytes().splitlines()]
    assert [m["message"].get("id") for m in messages] == ["a", "b", "c", None]
    # The anchor: the first time the sidecar saw media (9 s held) stands for media second 9.
    zero = summary["media_zero"]
    assert zero is not None and all(m["seconds"] == round(m["received"] - zero, 3) for m in messages)

    # An attempt after the end (its answer lost) records nothing and writes the same files.
    recording(part, **ended, done=True)
    late = Scripted([{"cmd": "DM", "id": "late"}])
    with httpx.Client() as client, LiveCommentsSidecar(late, part, client):
        assert not late.sent.wait(0.5)
    assert comment_files(part.parent)[0] == files
    assert b"late" not in log_path(part).read_bytes()


def test_only_a_live_video_of_a_platform_with_a_hook_gets_a_sidecar(tmp_path: Path) -> None:
    asked: list[str] = []

    def hook(url: str) -> Scripted | None:
        asked.append(url)
        return Scripted([]) if "room" in url else None

    sidecars = LiveCommentSidecars({"bilibili": hook})
    live = Asset("video", "video", ["http://x/index.m3u8"], protocol=LIVE_PROTOCOL)
    part = tmp_path / "video.part"
    with httpx.Client() as client:
        assert isinstance(sidecars.around(live, "bilibili", "https://x/room", part, client), LiveCommentsSidecar)
        for asset, platform, url in ((live, "bilibili", "https://x/other"), (live, "generic", "https://x/room"),
                                     (Asset("video", "video", ["http://x/a.mp4"]), "bilibili", "https://x/room")):
            assert not isinstance(sidecars.around(asset, platform, url, part, client), LiveCommentsSidecar)
    assert asked == ["https://x/room", "https://x/other"]


def test_each_part_gets_the_comments_of_its_media_timed_from_its_start(tmp_path: Path) -> None:
    """A recording in parts: when a part's download returns, the messages received while its media
    was live become its own files (times from the part's first second), listed in its manifest;
    the split is written in the log, so doing it again gives the same part, and a log an earlier
    recording of the item left keeps its messages to itself."""
    started = "2026-12-05T00:00:00+00:00"
    epoch = datetime(2026, 12, 5, tzinfo=UTC).timestamp()
    part = tmp_path / "item" / "video.part"
    with httpx.Client() as client:
        sidecar = LiveCommentsSidecar(Scripted([]), part, client, clock=lambda: epoch + 100)
        log = sidecar.log.open()
        log.bound("2026-12-04T23:00:00+00:00", 1, epoch - 50)  # a failed run's part, an hour before
        log.append({"cmd": "DM", "id": "old"}, "old", epoch - 60)
        log.follow(started)
        log.set_anchor(epoch + 2, 1.0)  # media second 0 is epoch + 1
        for n, after in enumerate([0.5, 2.0, 3.5, 4.2, 6.0]):
            log.append({"cmd": "DM", "id": f"c{n}"}, f"c{n}", epoch + 1 + after)
        first = LiveState(url="http://x/index.m3u8", started_at=started, part=1, segments=4, seconds=4.0,
                          part_segments=4, part_seconds=4.0, done=True)
        save_state(part, first)
        sidecar.finish_part(first)
        log.set_anchor(epoch + 2.6, 2.0)  # a later anchor moves media second 0 earlier: the split stays
        sidecar.finish_part(first)
        ended = LiveState(url="http://x/index.m3u8", started_at=started, part=2, segments=6, seconds=6.0,
                          part_segments=2, part_seconds=2.0, done=True, ended="endlist")
        save_state(part, ended)
        sidecar.finish_part(ended)
        log.close()
    parts = {index: part_comment_files(part.parent, index) for index in (1, 2)}
    assert [f.name for f in parts[1][0]] == ["comments-text", "live-messages"]
    assert [f.name for f in parts[2][0]] == ["comments-text-part002", "live-messages-part002"]
    texts = {index: files[0].path.read_text().split("\n") for index, (files, _) in parts.items()}
    assert [line.split()[1] for line in texts[1]] == ["c0", "c1", "c2"]  # received before media second 4 was live
    assert [line.split()[1] for line in texts[2]] == ["c3", "c4"]
    # Part 2's times count from its own start (media second 4); media second 0 is now epoch + 0.6.
    assert [float(line.split()[0]) for line in texts[2]] == [0.6, 2.4]
    assert parts[1][1] is not None and parts[1][1]["comments"] == 3 and parts[2][1]["messages"] == 2
    assert comment_files(part.parent) == ([], None)  # no file for the whole recording


class EndsLate(Scripted):
    """Sends its script, then the platform's end notice a moment after it is asked to stop waiting
    (the broadcast's end, seen by the media first)."""

    def __init__(self, script: list[dict[str, Any]], delay: float) -> None:
        super().__init__(script)
        self.delay = delay

    def run(self, ctx: CommentContext) -> None:
        ctx.connected()
        for message in self.script:
            ctx.sink(message)
        self.sent.set()
        if not ctx.stopping.wait(self.delay):
            ctx.sink({"cmd": "END"})
        ctx.stopping.wait()

    def ends(self, message: dict[str, Any]) -> bool:
        return message.get("cmd") == "END"


def test_an_ended_broadcast_keeps_the_end_notice_that_comes_after_its_last_segment(tmp_path: Path) -> None:
    """The playlist's ENDLIST is read a moment before the platform's own end notice comes on the
    comment stream: the recording's end waits for it (briefly), so the messages end with it."""
    part = tmp_path / "item" / "video.part"
    recording(part, segments=3, seconds=9.0)
    source = EndsLate([{"cmd": "DM", "id": "a"}], delay=0.4)
    with httpx.Client() as client:
        with LiveCommentsSidecar(source, part, client) as sidecar:
            assert source.sent.wait(5)
            wait_until(lambda: sidecar.log.anchor, "the anchor", timeout=5)
            recording(part, segments=3, seconds=9.0, ended="endlist")
    files, _ = comment_files(part.parent)
    messages = [json.loads(line) for line in next(f for f in files if f.name == "live-messages").path.read_bytes()
                .splitlines()]
    assert [m["message"].get("cmd") for m in messages] == ["DM", "END"]
