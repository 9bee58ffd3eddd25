"""The resume protocol, branch by branch, against the simulator over real sockets."""

import hashlib
import os

from collections import deque
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from trawl.download import http as http_module
from trawl.download.http import OVERLAP, HttpDownloader
from trawl.download.state import ResumeState, Stopped, file_sha256, fresher, load_state, save_state, state_path
from trawl.errors import ContentCorrupt, StorageError, TooLarge, Truncated, TrawlError, UnsupportedUrl, UrlExpired
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.verify import verify_file

SIZE = 3 * 1024 * 1024 + 17
CUT = 1_200_000
# Every test twice: bodies through buffers, and spliced into the file (conftest.body_path).
pytestmark = pytest.mark.usefixtures("body_path")


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as c:
        yield c


@pytest.fixture
def part(tmp_path: Path) -> Path:
    return tmp_path / "work" / "video.part"


def make(client: httpx.Client, beats: list[ResumeState] | None = None, **kw) -> HttpDownloader:
    return HttpDownloader(client, max_file_size=kw.pop("max_file_size", 1 << 40),
                      heartbeat=(beats.append if beats is not None else (lambda s: None)), heartbeat_every=0, **kw)


def test_whole_file_streams_with_exact_sha256(sim: Simulator, client: httpx.Client, part: Path) -> None:
    media = MediaFile("mp4", "whole", SIZE)
    sim.add_file("/f.mp4", media)
    out = make(client).download([sim.url("/f.mp4")], part)
    assert (out.size, out.sha256, out.total, out.resumed_from) == (SIZE, media.sha256(), SIZE, 0)
    assert file_sha256(part) == media.sha256()
    assert sim.stats["/f.mp4"].ranges == [None]


def test_cut_body_is_truncated_then_resumed_with_206(sim: Simulator, client: httpx.Client, part: Path) -> None:
    media = MediaFile("mp4", "cut", SIZE)
    sim.add_file("/f.mp4", media, FileBehaviour(cut_at=CUT))
    beats: list[ResumeState] = []
    with pytest.raises(Truncated):
        make(client, beats).download([sim.url("/f.mp4")], part)
    assert beats[-1].offset == CUT == part.stat().st_size
    assert load_state(part).etag == media.etag
    out = make(client).download([sim.url("/f.mp4")], part)
    assert out.resumed_from == CUT and out.transferred == SIZE - CUT
    assert out.sha256 == media.sha256() == file_sha256(part)
    assert sim.stats["/f.mp4"].ranges == [None, f"bytes={CUT}-"]
    assert sim.bytes_sent("/f.mp4") == SIZE  # nothing sent twice


def test_heartbeat_offset_smaller_than_file_wins(sim: Simulator, client: httpx.Client, part: Path) -> None:
    media = MediaFile("mp4", "smaller", SIZE)
    sim.add_file("/f.mp4", media)
    part.parent.mkdir(parents=True)
    part.write_bytes(media.read(0, 500_000) + b"garbage written after the last heartbeat")
    previous = ResumeState(offset=500_000, total=SIZE, etag=media.etag, url=sim.url("/f.mp4"))
    out = make(client).download([sim.url("/f.mp4")], part, previous=previous)
    assert out.resumed_from == 500_000 and out.sha256 == media.sha256()


def test_server_ignoring_range_restarts_from_zero(sim: Simulator, client: httpx.Client, part: Path) -> None:
    media = MediaFile("mp4", "norange", SIZE)
    sim.add_file("/f.mp4", media, FileBehaviour(cut_at=CUT, ignore_range=True))
    with pytest.raises(Truncated):
        make(client).download([sim.url("/f.mp4")], part)
    out = make(client).download([sim.url("/f.mp4")], part)
    assert out.resumed_from == 0 and out.sha256 == media.sha256() == file_sha256(part)


def test_changed_etag_is_never_appended_to(sim: Simulator, client: httpx.Client, part: Path) -> None:
    media = MediaFile("mp4", "changing", SIZE)
    sim.add_file("/f.mp4", media, FileBehaviour(cut_at=CUT))
    with pytest.raises(Truncated):
        make(client).download([sim.url("/f.mp4")], part)
    old_sha = media.sha256()
    media.version += 1  # the resource changes: new bytes, new ETag
    out = make(client).download([sim.url("/f.mp4")], part)
    assert sim.stats["/f.mp4"].ranges[-1] == f"bytes={CUT}-"  # asked with If-Range, got a 200
    assert out.resumed_from == 0
    assert out.sha256 == media.sha256() == file_sha256(part) != old_sha


def test_416_with_complete_file_is_done(sim: Simulator, client: httpx.Client, part: Path) -> None:
    media = MediaFile("mp4", "complete", 100_000)
    sim.add_file("/f.mp4", media)
    part.parent.mkdir(parents=True)
    part.write_bytes(media.read(0, 100_000))
    previous = ResumeState(offset=100_000, total=100_000, etag=media.etag, url=sim.url("/f.mp4"))
    out = make(client).download([sim.url("/f.mp4")], part, previous=previous)
    assert out.transferred == 0 and out.sha256 == media.sha256()
    assert sim.bytes_sent("/f.mp4") == 0


def test_backup_url_used_when_primary_fails(sim: Simulator, client: httpx.Client, part: Path) -> None:
    media = MediaFile("mp4", "backup", 200_000)
    sim.add_file("/primary.mp4", media, FileBehaviour(statuses=deque([502])))
    sim.add_file("/backup.mp4", media)
    out = make(client).download([sim.url("/primary.mp4"), sim.url("/backup.mp4")], part)
    assert out.url == sim.url("/backup.mp4") and out.sha256 == media.sha256()


def test_all_urls_failing_raises_the_primary_failure(sim: Simulator, client: httpx.Client, part: Path) -> None:
    with pytest.raises(TrawlError) as caught:
        make(client).download([sim.url("/missing-a.mp4"), sim.url("/missing-b.mp4")], part)
    assert caught.value.error_class == "not_found"


def test_403_on_a_url_that_worked_before_is_url_expired(sim: Simulator, client: httpx.Client, part: Path) -> None:
    import time

    media = MediaFile("mp4", "expiring", SIZE)
    how = sim.add_file("/f.mp4", media, FileBehaviour(cut_at=CUT))
    with pytest.raises(Truncated):
        make(client).download([sim.url("/f.mp4")], part)
    how.expires_at = time.time() - 1
    with pytest.raises(UrlExpired):
        make(client).download([sim.url("/f.mp4")], part)
    assert part.stat().st_size == CUT  # the bytes are kept for the fresh URL


def test_too_large_refused_early_and_while_streaming(sim: Simulator, client: httpx.Client, part: Path) -> None:
    sim.add_file("/big.mp4", MediaFile("mp4", "big", SIZE))
    with pytest.raises(TooLarge):
        make(client, max_file_size=1000).download([sim.url("/big.mp4")], part, expected_size=SIZE)
    assert sim.stats["/big.mp4"].requests == 0
    with pytest.raises(TooLarge):
        make(client, max_file_size=1000).download([sim.url("/big.mp4")], part)
    assert not part.exists()


def test_disk_full_is_storage_error(sim: Simulator, client: httpx.Client, part: Path) -> None:
    sim.add_file("/f.mp4", MediaFile("mp4", "full", SIZE))
    part.parent.mkdir(parents=True)
    part.symlink_to("/dev/full")  # every write fails with ENOSPC
    with pytest.raises(StorageError, match="No space left"):
        make(client).download([sim.url("/f.mp4")], part)


def test_stop_request_keeps_partial_file_and_state(sim: Simulator, client: httpx.Client, part: Path) -> None:
    media = MediaFile("mp4", "stop", SIZE)
    sim.add_file("/f.mp4", media, FileBehaviour(throttle_bps=2_000_000))
    beats: list[ResumeState] = []
    with pytest.raises(Stopped):
        make(client, beats, should_stop=lambda: bool(beats) and beats[-1].offset > 200_000).download(
            [sim.url("/f.mp4")], part)
    kept = part.stat().st_size
    assert 0 < kept < SIZE and load_state(part).offset == kept and state_path(part).exists()
    out = make(client).download([sim.url("/f.mp4")], part)
    assert out.resumed_from == kept and out.sha256 == media.sha256()


class BytesFile:
    """Served like a MediaFile, from bytes a test controls (to replace a file in precise ways)."""

    content_type = "video/mp4"

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.size = len(data)
        self.etag = '"unused"'

    def chunks(self, start: int, end: int, chunk: int = 256 * 1024) -> Iterator[bytes]:
        for pos in range(start, end + 1, chunk):
            yield self.data[pos:min(pos + chunk, end + 1)]


NO_VALIDATORS = dict(validators=False, cut_at=CUT)


def test_without_validators_a_replaced_file_is_started_again_not_spliced(sim: Simulator, client: httpx.Client,
                                                                          part: Path) -> None:
    """No ETag, no Last-Modified: the file is swapped for another of the same size mid-download.
    The resume sees that the bytes before its offset changed and starts over."""
    first, second = MediaFile("mp4", "before", SIZE), MediaFile("mp4", "after", SIZE)
    sim.add_file("/f.mp4", first, FileBehaviour(**NO_VALIDATORS))
    with pytest.raises(Truncated):
        make(client).download([sim.url("/f.mp4")], part)
    assert (load_state(part).etag, load_state(part).last_modified) == (None, None)
    sim.add_file("/f.mp4", second, FileBehaviour(validators=False))
    out = make(client).download([sim.url("/f.mp4")], part)
    assert out.sha256 == second.sha256() == file_sha256(part)  # the new file whole, not a splice
    assert out.resumed_from == 0
    assert sim.stats["/f.mp4"].ranges == [None, f"bytes={CUT - OVERLAP}-", None]


def test_without_validators_an_unchanged_file_resumes_after_the_overlap_matches(sim: Simulator,
                                                                              client: httpx.Client,
                                                                              part: Path) -> None:
    media = MediaFile("mp4", "same", SIZE)
    sim.add_file("/f.mp4", media, FileBehaviour(**NO_VALIDATORS))
    with pytest.raises(Truncated):
        make(client).download([sim.url("/f.mp4")], part)
    out = make(client).download([sim.url("/f.mp4")], part)
    assert (out.resumed_from, out.transferred) == (CUT, SIZE - CUT)
    assert out.sha256 == media.sha256() == file_sha256(part)
    assert sim.stats["/f.mp4"].ranges == [None, f"bytes={CUT - OVERLAP}-"]
    assert sim.bytes_sent("/f.mp4") == SIZE + OVERLAP  # only the proof window is sent twice


def test_a_splice_the_overlap_cannot_see_is_caught_by_the_platform_checksum(sim: Simulator, client: httpx.Client,
                                                                            part: Path) -> None:
    """The replacement differs before the overlap window and after the offset, so the overlap
    matches and the resumed file is a splice; the platform's md5 (of the new file) rejects it in verify."""
    old = b"".join(MediaFile("mp4", "splice", SIZE).chunks(0, SIZE - 1))
    flip = CUT + 100_000  # changed before the overlap window and after the offset, equal inside it
    new = (old[:1000] + bytes(b ^ 0xFF for b in old[1000:2000]) + old[2000:flip]
           + bytes(b ^ 0xFF for b in old[flip:flip + 1000]) + old[flip + 1000:])
    sim.add_file("/f.mp4", BytesFile(old), FileBehaviour(**NO_VALIDATORS))  # type: ignore[arg-type]
    with pytest.raises(Truncated):
        make(client).download([sim.url("/f.mp4")], part)
    sim.add_file("/f.mp4", BytesFile(new), FileBehaviour(validators=False))  # type: ignore[arg-type]
    out = make(client).download([sim.url("/f.mp4")], part)
    assert out.resumed_from == CUT and out.sha256 not in (hashlib.sha256(old).hexdigest(),
                                                          hashlib.sha256(new).hexdigest())
    with pytest.raises(ContentCorrupt, match="md5"):
        verify_file(part, kind="video", sha256=out.sha256, size=out.size,
                    expected_md5=hashlib.md5(new, usedforsecurity=False).hexdigest())


def test_a_body_is_read_from_the_socket_and_its_connection_not_reused(sim: Simulator, client: httpx.Client,
                                                                     part: Path) -> None:
    from trawl.download.fastpath import RawBody

    media = MediaFile("mp4", "raw", SIZE)
    sim.add_file("/f.mp4", media)
    with client.stream("GET", sim.url("/f.mp4")) as resp:
        raw = RawBody.of(resp)
        assert raw is not None and len(raw.leading) + raw.remaining == SIZE
    # The connection a raw read left mid-body is closed, never handed to the next request.
    for name in ("a", "b", "c"):
        out = make(client).download([sim.url("/f.mp4")], part.with_name(f"{name}.part"))
        assert out.sha256 == media.sha256() == file_sha256(part.with_name(f"{name}.part"))
    mock = httpx.Client(transport=httpx.MockTransport(lambda req: httpx.Response(200, content=b"x" * 10)))
    with mock, mock.stream("GET", "http://example.test/f") as resp:
        assert RawBody.of(resp) is None  # no socket of httpcore's behind it: read through httpx


def test_a_raw_body_is_handed_over_piece_by_piece_in_order(sim: Simulator, client: httpx.Client) -> None:
    from trawl.download.fastpath import PIECE, RawBody

    media = MediaFile("mp4", "pieces", SIZE)
    sim.add_file("/f.mp4", media)
    received = bytearray()
    with client.stream("GET", sim.url("/f.mp4")) as resp:
        raw = RawBody.of(resp)
        assert raw is not None
        buffer = bytearray(1 << 20)
        while not raw.done:
            pieces: list[tuple[int, int]] = []
            filled, error = raw.fill(buffer, 5.0, on_piece=lambda piece, start: pieces.append((start, len(piece))))
            assert error is None
            # Contiguous, each at most PIECE bytes, together exactly what the buffer holds.
            assert [start for start, _ in pieces] == [sum(n for _, n in pieces[:i]) for i in range(len(pieces))]
            assert all(0 < n <= PIECE for _, n in pieces) and sum(n for _, n in pieces) == filled
            received += buffer[:filled]
    assert hashlib.sha256(received).hexdigest() == media.sha256()


def test_a_piece_that_cannot_be_taken_is_not_counted(sim: Simulator, client: httpx.Client) -> None:
    from trawl.download.fastpath import RawBody

    sim.add_file("/f.mp4", MediaFile("mp4", "refused", SIZE))
    taken: list[int] = []

    def take(piece: memoryview, start: int) -> None:
        if len(taken) == 3:
            raise OSError(28, "No space left on device")
        taken.append(len(piece))

    with client.stream("GET", sim.url("/f.mp4")) as resp:
        raw = RawBody.of(resp)
        assert raw is not None
        filled, error = raw.fill(bytearray(1 << 20), 5.0, on_piece=take)
    assert isinstance(error, OSError) and error.errno == 28
    assert filled == sum(taken) and len(taken) == 3


def test_a_small_body_is_read_into_a_buffer_of_its_size(sim: Simulator, client: httpx.Client, part: Path,
                                                        monkeypatch: pytest.MonkeyPatch, body_path: str) -> None:
    import trawl.download.fastpath

    sizes: list[int] = []
    real = bytearray
    monkeypatch.setattr(trawl.download.fastpath, "bytearray", lambda n: sizes.append(n) or real(n), raising=False)
    media = MediaFile("mp4", "tiny", 2_000)
    sim.add_file("/tiny.mp4", media)
    out = make(client).download([sim.url("/tiny.mp4")], part)
    # One buffer, of the body's size (not four of 1 MiB); none when the body is spliced.
    assert sizes == ([] if body_path == "spliced" else [2_000])
    assert out.sha256 == media.sha256() == file_sha256(part)


def test_the_protocol_picks_the_downloader() -> None:
    from trawl.download import DOWNLOADERS, HlsDownloader, downloader_for
    from trawl.download.live import LiveHlsRecorder

    assert DOWNLOADERS == {"http": HttpDownloader, "hls": HlsDownloader, "hls-live": LiveHlsRecorder}
    assert downloader_for("http") is HttpDownloader and downloader_for("hls") is HlsDownloader
    assert downloader_for("hls-live") is LiveHlsRecorder
    with pytest.raises(UnsupportedUrl, match="dash"):
        downloader_for("dash")
    previous = {"offset": 5, "url": "http://a.test/f"}
    assert HttpDownloader.previous_state(previous, ["http://a.test/f"]) == ResumeState(offset=5, url="http://a.test/f")
    assert HttpDownloader.previous_state(previous, ["http://b.test/f"]) is None  # another file's state
    assert HttpDownloader.previous_state({"protocol": "hls", "segment": 2}, ["http://a.test/f"]) is None
    assert HlsDownloader.previous_state({"protocol": "hls", "segment": 2}, []).segment == 2


def test_every_downloader_takes_what_the_protocol_offers() -> None:
    """Each downloader of the map accepts every parameter :class:`Downloader` names, by that name
    (the activity calls them by keyword), and takes no other without a default."""
    import inspect

    from trawl.download import DOWNLOADERS, Downloader

    for protocol, downloader in DOWNLOADERS.items():
        for method in ("from_settings", "previous_state", "download"):
            wanted = inspect.signature(getattr(Downloader, method)).parameters
            given = inspect.signature(getattr(downloader, method)).parameters
            assert set(wanted) - {"self"} <= set(given), (protocol, method)
            extra = [p for name, p in given.items() if name not in wanted and p.default is inspect.Parameter.empty]
            assert extra == [], (protocol, method)


def test_a_spliced_body_reaches_the_file_in_order(sim: Simulator, client: httpx.Client, tmp_path: Path,
                                                  body_path: str) -> None:
    from trawl.download.fastpath import PIPE_BYTES, RawBody

    media = MediaFile("mp4", "spliced", SIZE)
    sim.add_file("/f.mp4", media)
    writes: list[tuple[int, int]] = []
    with client.stream("GET", sim.url("/f.mp4")) as resp, open(tmp_path / "out", "w+b") as out:
        raw = RawBody.of(resp)
        assert raw is not None and raw.can_splice == (body_path == "spliced")
        if body_path != "spliced":
            return
        at = 0
        while not raw.done:
            filled, error = raw.splice(out.fileno(), at, 5.0, limit=1 << 20,
                                       guard=lambda start, n, write: (writes.append((start, n)), write()))
            assert error is None and 0 < filled <= 1 << 20
            at += filled
    # Written where they belong, one after another, at most a pipe's worth (or h11's leading bytes) each.
    assert [start for start, _ in writes] == [sum(n for _, n in writes[:i]) for i in range(len(writes))]
    assert all(0 < n <= PIPE_BYTES for _, n in writes) and at == SIZE
    assert file_sha256(tmp_path / "out") == media.sha256()


def test_a_spliced_piece_the_guard_refuses_is_not_written_nor_counted(sim: Simulator, client: httpx.Client,
                                                                      tmp_path: Path, body_path: str) -> None:
    from trawl.download.fastpath import RawBody

    if body_path != "spliced":
        pytest.skip("about splicing")
    sim.add_file("/f.mp4", MediaFile("mp4", "refused-splice", SIZE))
    taken: list[int] = []

    def guard(start: int, n: int, write) -> None:  # noqa: ANN001 - the write callback
        if len(taken) == 3:
            raise OSError(28, "No space left on device")
        taken.append(n)
        write()

    with client.stream("GET", sim.url("/f.mp4")) as resp, open(tmp_path / "out", "w+b") as out:
        raw = RawBody.of(resp)
        assert raw is not None
        filled, error = raw.splice(out.fileno(), 0, 5.0, guard=guard)
    assert isinstance(error, OSError) and error.errno == 28
    assert filled == sum(taken) == (tmp_path / "out").stat().st_size and len(taken) == 3


@pytest.mark.parametrize("refused", ["from the socket", "into the file"])
def test_a_kernel_that_refuses_to_splice_gets_the_body_through_buffers(
        sim: Simulator, client: httpx.Client, part: Path, monkeypatch: pytest.MonkeyPatch, body_path: str,
        refused: str) -> None:
    import errno
    import os

    if body_path != "spliced":
        pytest.skip("about splicing")
    real = os.splice
    calls: list[str] = []

    def splice(src: int, dst: int, count: int, *args, **kw) -> int:  # noqa: ANN002, ANN003
        into_file = "offset_dst" in kw
        calls.append("into the file" if into_file else "from the socket")
        # The first pipe's worth goes through; then the kernel refuses (a file system without splice).
        if calls.count(refused) > 1 and calls[-1] == refused:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(src, dst, count, *args, **kw)

    monkeypatch.setattr(os, "splice", splice)
    media = MediaFile("mp4", f"refused-{refused}", SIZE)
    sim.add_file("/f.mp4", media)
    out = make(client).download([sim.url("/f.mp4")], part)
    assert out.sha256 == media.sha256() == file_sha256(part) and out.size == SIZE
    assert calls.count(refused) == 2  # refused once, then never asked again


def test_a_spliced_body_that_stalls_fails_at_the_read_timeout_and_keeps_what_came(
        tmp_path: Path, body_path: str) -> None:
    import socket
    import threading

    if body_path != "spliced":
        pytest.skip("about splicing")
    body = MediaFile("mp4", "stall", SIZE).read(0, 1 << 20)
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: video/mp4\r\n"
                         b"Content-Length: %d\r\nETag: \"s\"\r\n\r\n" % SIZE + body)
            done.wait(10)  # and then nothing more

    threading.Thread(target=serve, daemon=True).start()
    part = tmp_path / "video.part"
    try:
        with httpx.Client(timeout=httpx.Timeout(5.0, read=0.5)) as stalled, pytest.raises(TrawlError) as failed:
            make(stalled).download([f"http://127.0.0.1:{listener.getsockname()[1]}/f.mp4"], part)
    finally:
        done.set()
        listener.close()
    assert failed.value.retryable
    assert load_state(part).offset == len(body) == part.stat().st_size  # what came is kept, to resume from


def test_the_read_back_hasher_hashes_what_the_file_holds_as_it_grows(tmp_path: Path) -> None:
    from trawl.download.state import ReadBackHasher

    data = MediaFile("mp4", "read-back", SIZE).read(0, 1 << 20) * 3
    path = tmp_path / "grows"
    path.write_bytes(b"kept prefix")
    digest = hashlib.sha256(b"kept prefix")
    fd = os.open(path, os.O_RDWR)
    hasher = ReadBackHasher(digest, fd, len(b"kept prefix"))
    at = len(b"kept prefix")
    for start in range(0, len(data), 300_001):
        piece = data[start:start + 300_001]
        os.pwrite(fd, piece, at)
        at += len(piece)
        hasher.update([], None, len(piece))
    os.close(fd)  # the hasher reads its own descriptor
    hasher.finish()
    assert digest.hexdigest() == hashlib.sha256(b"kept prefix" + data).hexdigest()


def test_a_file_that_cannot_be_read_back_fails_its_hash(tmp_path: Path) -> None:
    from trawl.download.state import ReadBackHasher

    path = tmp_path / "short"
    path.write_bytes(b"x" * 1000)
    fd = os.open(path, os.O_RDWR)
    hasher = ReadBackHasher(hashlib.sha256(), fd, 0)
    hasher.update([], None, 5000)  # said written, but the file holds less (truncated under it)
    os.close(fd)
    with pytest.raises(OSError, match="read back"):
        hasher.finish()


def test_the_state_beside_the_file_wins_over_a_heartbeat_of_another_version() -> None:
    """The saved state describes the bytes on this disk (tests/activities: what a retry makes of it)."""
    url = "http://127.0.0.1:9/v.mp4"
    saved = ResumeState(offset=400, total=1000, etag='"b"', url=url)
    assert fresher(ResumeState(offset=600, total=1000, etag='"a"', url=url), saved) is saved
    assert fresher(ResumeState(offset=600, total=1000, etag='"b"', url=url + "?backup"), saved) is saved
    # The same version further on: another host's file, or this one's before a new segmented run
    # gave the file its length (its "done" segments would be holes here).
    ahead = ResumeState(offset=600, total=1000, etag='"b"', url=url, segments=[[0, 1000, 600]])
    assert fresher(ahead, saved) is saved
    # Only a file whose record could not be saved (and was removed) resumes from the heartbeat.
    assert fresher(None, saved) is saved and fresher(ahead, None) is ahead


def test_a_200_records_its_version_before_its_first_byte(sim: Simulator, client: httpx.Client, part: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The record beside the file wins over a heartbeat of another version: a crash as the new
    version's body begins must not leave the old version's record over its bytes."""
    media = MediaFile("mp4", "current", SIZE)
    sim.add_file("/f.mp4", media)
    part.parent.mkdir(parents=True)
    part.write_bytes(b"x" * 500_000)
    save_state(part, ResumeState(offset=500_000, total=SIZE, etag='"older"', url=sim.url("/f.mp4")))
    seen: list[ResumeState | None] = []
    hash_prefix = http_module.hash_prefix

    def as_the_body_begins(path: Path, size: int):  # noqa: ANN202 - the digest
        seen.append(load_state(path))  # what a crash here would leave
        return hash_prefix(path, size)

    monkeypatch.setattr(http_module, "hash_prefix", as_the_body_begins)
    out = make(client).download([sim.url("/f.mp4")], part)
    assert out.resumed_from == 0 and out.sha256 == media.sha256() == file_sha256(part)
    assert seen and (seen[-1].etag, seen[-1].offset) == (media.etag, 0), seen


def test_a_new_segmented_run_records_its_plan_before_the_file_takes_its_length(
        sim: Simulator, client: httpx.Client, part: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reserved at its full length, the file's holes would pass the size check of a resume; an
    earlier record (a heartbeat's) must not be what describes them."""
    media = MediaFile("mp4", "planned", SIZE)
    sim.add_file("/f.mp4", media)
    seen: list[ResumeState | None] = []
    reserve_file = http_module.reserve_file

    def as_the_file_is_reserved(path: Path, *args: object) -> None:
        seen.append(load_state(path))
        reserve_file(path, *args)

    monkeypatch.setattr(http_module, "reserve_file", as_the_file_is_reserved)
    out = make(client, segments=3, segment_min_size=1024 * 1024, split_after_s=0).download([sim.url("/f.mp4")], part)
    assert out.connections == 3 and out.sha256 == media.sha256()
    assert seen and seen[0] is not None and seen[0].etag == media.etag, seen
    assert seen[0].segments and all(done == 0 for _, _, done in seen[0].segments)


def test_a_state_that_cannot_be_saved_is_removed_and_the_heartbeat_speaks_for_the_file(
        sim: Simulator, client: httpx.Client, part: Path) -> None:
    media = MediaFile("mp4", "unsaved", SIZE)
    sim.add_file("/f.mp4", media, FileBehaviour(cut_at=CUT))
    part.parent.mkdir(parents=True)
    save_state(part, ResumeState(offset=0, total=SIZE, etag='"older"', url=sim.url("/f.mp4")))
    state_path(part).with_suffix(".tmp").mkdir()  # every save from now on fails: its temporary file is a directory
    beats: list[ResumeState] = []
    with pytest.raises(Truncated):
        make(client, beats).download([sim.url("/f.mp4")], part)
    assert load_state(part) is None  # no record of the bytes as they were
    assert (beats[-1].offset, beats[-1].etag) == (CUT, media.etag)
    sim.add_file("/f.mp4", media)  # served whole again
    out = make(client).download([sim.url("/f.mp4")], part, previous=beats[-1])
    assert out.resumed_from == CUT and out.sha256 == media.sha256() == file_sha256(part)
