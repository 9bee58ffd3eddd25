"""Downloads in segments over several connections, edge case by edge case, against the simulator."""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from trawl.download.http import HttpDownloader
from trawl.download.segmented import HASH_RATE, MIN_PIECE, HostSlots, plan_rounds, plan_segments
from trawl.download.state import ResumeState, Stopped, file_sha256, load_state, save_state
from trawl.errors import NotFound, TrawlError
from trawl.ranges import parse_range
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.simulator.server import Request, Response

SIZE = 4 * 1024 * 1024 + 123
MIN = 1024 * 1024  # segment_min_size in these tests
# Every test twice: bodies through buffers, and spliced into the file (conftest.body_path).
pytestmark = pytest.mark.usefixtures("body_path")


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as c:
        yield c


@pytest.fixture
def part(tmp_path: Path) -> Path:
    return tmp_path / "work" / "video.part"


def make(client: httpx.Client, beats: list[ResumeState] | None = None, *, segments: int = 4, **kw) -> HttpDownloader:
    # Every connection at once (split_after_s=0) unless a test says otherwise: these edge cases
    # are about the segments, on a simulator fast enough for one connection.
    kw.setdefault("split_after_s", 0)
    return HttpDownloader(client, max_file_size=1 << 40, segments=segments, segment_min_size=MIN,
                      heartbeat=(beats.append if beats is not None else (lambda s: None)), heartbeat_every=0, **kw)


def ranges_of(sim: Simulator, path: str = "/f.mp4") -> list[str | None]:
    return list(sim.stats[path].ranges)


def first_byte(range_header: str | None) -> int:
    return int(range_header.removeprefix("bytes=").split("-")[0]) if range_header else 0


def segment_ranges(total: int, count: int) -> set[str]:
    return {f"bytes={s}-{e - 1}" for s, e, _ in plan_segments(total, count)[1:]}


def route(sim: Simulator, media: MediaFile, answer) -> None:  # noqa: ANN001 - a (req, serve) callback
    """Serve ``media`` at /f.mp4 through ``answer(req, serve)``; ``serve(req)`` is the normal answer."""
    serve = lambda req: sim.serve_media(req, media)  # noqa: E731
    sim.add_exact("/f.mp4", lambda req: answer(req, serve))


def without_range(req: Request) -> Request:
    return dataclasses.replace(req, headers={k: v for k, v in req.headers.items() if k not in ("range", "if-range")})


def range_start(req: Request) -> int | None:
    wanted = parse_range(req.headers.get("range"), SIZE)
    return wanted[0] if isinstance(wanted, tuple) else None


def rounds_as_on_an_idle_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """plan_rounds weighing a request at nothing: it weighs it at the first answer's wait, which
    grows with the machine's load (under a loaded test run, to the point of one round only)."""
    import trawl.download.segmented

    plan = trawl.download.segmented.plan_rounds
    monkeypatch.setattr(trawl.download.segmented, "plan_rounds",
                        lambda rest, connections, pace, request_s: plan(rest, connections, pace, 0.0))


def test_a_large_file_comes_in_segments_with_the_whole_file_sha256(sim: Simulator, client: httpx.Client,
                                                                    part: Path) -> None:
    media = MediaFile("mp4", "seg", SIZE)
    sim.add_file("/f.mp4", media)
    beats: list[ResumeState] = []
    out = make(client, beats).download([sim.url("/f.mp4")], part)
    assert (out.size, out.total, out.connections) == (SIZE, SIZE, 4)
    assert out.sha256 == media.sha256() == file_sha256(part)
    assert ranges_of(sim)[0] == "bytes=0-" and set(ranges_of(sim)[1:]) == segment_ranges(SIZE, 4)
    # Every heartbeat carries every segment; the offset is the bytes done across them.
    assert all(b.segments and b.offset == sum(d for _, _, d in b.segments) for b in beats)
    assert beats[-1].segments == [[s, e, e - s] for s, e, _ in plan_segments(SIZE, 4)]


def test_small_files_and_known_small_sizes_stay_on_one_connection(sim: Simulator, client: httpx.Client,
                                                                  part: Path) -> None:
    media = MediaFile("mp4", "small", MIN - 1)
    sim.add_file("/f.mp4", media)
    out = make(client).download([sim.url("/f.mp4")], part)
    assert out.connections == 1 and out.sha256 == media.sha256()
    assert ranges_of(sim) == ["bytes=0-"]  # size unknown beforehand: asked open-ended, once
    make(client).download([sim.url("/f.mp4")], part.with_name("again.part"), expected_size=MIN - 1)
    assert ranges_of(sim)[-1] is None  # the size was known to be small: a plain GET


def test_server_ignoring_range_is_downloaded_over_one_connection(sim: Simulator, client: httpx.Client,
                                                                 part: Path) -> None:
    media = MediaFile("mp4", "norange", SIZE)
    sim.add_file("/f.mp4", media, FileBehaviour(ignore_range=True))
    out = make(client).download([sim.url("/f.mp4")], part)
    assert out.connections == 1 and out.sha256 == media.sha256() == file_sha256(part)
    assert ranges_of(sim) == ["bytes=0-"] and sim.bytes_sent("/f.mp4") == SIZE


def test_without_a_validator_there_are_no_segments(sim: Simulator, client: httpx.Client, part: Path) -> None:
    media = MediaFile("mp4", "novalidator", SIZE)
    sim.add_file("/f.mp4", media, FileBehaviour(validators=False))
    out = make(client).download([sim.url("/f.mp4")], part)
    assert out.connections == 1 and out.sha256 == media.sha256() and len(ranges_of(sim)) == 1


def test_a_segment_answered_200_falls_back_to_one_connection_from_the_prefix(sim: Simulator, client: httpx.Client,
                                                                             part: Path) -> None:
    media = MediaFile("mp4", "two-hundred", SIZE)
    third = plan_segments(SIZE, 4)[2][0]
    refused = threading.Event()

    def answer(req: Request, serve) -> Response:  # noqa: ANN001
        if range_start(req) == third and not refused.is_set():
            refused.set()
            return serve(without_range(req))  # the whole file, 200, same ETag
        return serve(req)

    route(sim, media, answer)
    out = make(client).download([sim.url("/f.mp4")], part)
    assert refused.is_set()
    assert out.sha256 == media.sha256() == file_sha256(part)
    # After the refusal: one open-ended request from the contiguous prefix, not more segments; a
    # plain GET when no byte of the prefix had come yet (a loaded machine: seen under load 9).
    after = ranges_of(sim)[ranges_of(sim).index(f"bytes={third}-{plan_segments(SIZE, 4)[2][1] - 1}") + 1:]
    assert after and (after[-1] is None or (after[-1].endswith("-") and after[-1] != "bytes=0-")), after
    assert load_state(part).segments is None


def test_etag_change_midway_restarts_every_segment(sim: Simulator, client: httpx.Client, part: Path) -> None:
    media = MediaFile("mp4", "changing", SIZE)
    old_sha = media.sha256()
    last = plan_segments(SIZE, 4)[3][0]

    def answer(req: Request, serve) -> Response:  # noqa: ANN001
        if range_start(req) == last and media.version == 0:
            media.version += 1  # new bytes and a new ETag: If-Range fails, a 200 of the new file
        return serve(req)

    route(sim, media, answer)
    out = make(client).download([sim.url("/f.mp4")], part)
    assert media.version == 1 and out.sha256 == media.sha256() == file_sha256(part) != old_sha
    assert ranges_of(sim).count("bytes=0-") == 2  # started again from nothing
    assert out.resumed_from == 0 and out.connections == 4


def test_etag_changing_again_after_the_restart_is_a_retryable_failure(sim: Simulator, client: httpx.Client,
                                                                      part: Path) -> None:
    media = MediaFile("mp4", "flapping", SIZE)
    last = plan_segments(SIZE, 4)[3][0]

    def answer(req: Request, serve) -> Response:  # noqa: ANN001
        if range_start(req) == last:
            media.version += 1
        return serve(req)

    route(sim, media, answer)
    with pytest.raises(TrawlError) as caught:
        make(client).download([sim.url("/f.mp4")], part)
    assert caught.value.retryable and "changed" in str(caught.value)


def test_a_segment_failing_permanently_fails_the_download_with_its_class(sim: Simulator, client: httpx.Client,
                                                                         part: Path) -> None:
    media = MediaFile("mp4", "gone", SIZE)
    second = plan_segments(SIZE, 4)[1][0]

    def answer(req: Request, serve) -> Response:  # noqa: ANN001
        if range_start(req) == second:
            return Response(404, {"Content-Type": "text/plain"}, b"gone")
        return serve(req)

    route(sim, media, answer)
    with pytest.raises(NotFound):
        make(client).download([sim.url("/f.mp4")], part)
    saved = load_state(part)
    assert saved is not None and saved.segments and saved.segments[1][2] == 0  # kept for a later resume
    assert ranges_of(sim).count(f"bytes={second}-{plan_segments(SIZE, 4)[1][1] - 1}") == 1  # not retried


def test_a_cut_segment_is_asked_again_in_place(sim: Simulator, client: httpx.Client, part: Path) -> None:
    media = MediaFile("mp4", "cut", SIZE)
    start, end, _ = plan_segments(SIZE, 4)[2]
    cut = start + 300_000
    # The first (open-ended) answer is cut there too, after segment 0 stopped reading it.
    sim.add_file("/f.mp4", media, FileBehaviour(cut_at=cut, cut_times=2))
    out = make(client).download([sim.url("/f.mp4")], part)
    assert out.sha256 == media.sha256() == file_sha256(part)
    # The segment went on from where the cut left it, in the same attempt.
    assert f"bytes={cut}-{end - 1}" in ranges_of(sim)


def prepare(part: Path, media: MediaFile, segments: list[list[int]]) -> ResumeState:
    """A part file as a killed worker leaves it: the recorded bytes, then garbage after each."""
    part.parent.mkdir(parents=True, exist_ok=True)
    data = bytearray(b"\xee" * SIZE)  # unrecorded bytes are never trusted
    for start, _, done in segments:
        pos = start
        while pos < start + done:
            block = media.read(pos, start + done - pos)
            data[pos:pos + len(block)] = block
            pos += len(block)
    part.write_bytes(bytes(data))
    return ResumeState(sum(d for _, _, d in segments), SIZE, media.etag, None, None, segments)


@pytest.mark.parametrize("shape", ["in file order", "a taken half at the list's end"])
def test_resume_after_a_kill_asks_each_segment_only_for_what_it_lacks(sim: Simulator, client: httpx.Client,
                                                                      part: Path, shape: str) -> None:
    media = MediaFile("mp4", "resume", SIZE)
    sim.add_file("/f.mp4", media)
    (s0, e0, _), (s1, e1, _), (s2, e2, _), (s3, e3, _) = plan_segments(SIZE, 4)
    cut = s3 + (e3 - s3) // 2
    segments = {
        # Complete, half, untouched, nearly complete.
        "in file order": [[s0, e0, e0 - s0], [s1, e1, 400_000], [s2, e2, 0], [s3, e3, e3 - s3 - 10]],
        # Segment 3's second half was taken by another connection: it lies at the list's end.
        "a taken half at the list's end": [[s0, e0, e0 - s0], [s1, e1, e1 - s1], [s2, e2, 1000], [s3, cut, 2000],
                                           [cut, e3, 3000]],
    }[shape]
    previous = prepare(part, media, segments)
    previous.url = sim.url("/f.mp4")
    out = make(client).download([sim.url("/f.mp4")], part, previous=previous)
    assert out.sha256 == media.sha256() == file_sha256(part)
    assert sorted(ranges_of(sim)) == sorted(f"bytes={s + d}-{e - 1}" for s, e, d in segments if s + d < e)
    missing = sum(e - s - d for s, e, d in segments)
    assert sim.bytes_sent("/f.mp4") == missing == out.transferred
    assert out.resumed_from == SIZE - missing


def test_resume_with_the_state_file_ahead_of_the_heartbeat(sim: Simulator, client: httpx.Client,
                                                          part: Path) -> None:
    media = MediaFile("mp4", "statefile", SIZE)
    sim.add_file("/f.mp4", media)
    plan = plan_segments(SIZE, 4)
    saved = prepare(part, media, [[s, e, (e - s) // 2] for s, e, _ in plan])
    saved.url = sim.url("/f.mp4")
    from trawl.download.state import save_state

    save_state(part, saved)
    stale = ResumeState(1000, SIZE, media.etag, None, sim.url("/f.mp4"), [[s, e, 250] for s, e, _ in plan])
    out = make(client).download([sim.url("/f.mp4")], part, previous=stale)
    assert out.sha256 == media.sha256() and out.transferred == SIZE - saved.offset


def test_a_heartbeat_of_segments_done_never_takes_a_new_run_s_holes_for_them(sim: Simulator, client: httpx.Client,
                                                                            part: Path) -> None:
    """A new segmented run records its plan before it gives the file its length; a heartbeat of
    an earlier run of the same version (whose file was lost since) must not take the new file's
    holes for its segments done: they would be committed as zeros."""
    media = MediaFile("mp4", "holes", SIZE)
    sim.add_file("/f.mp4", media)
    plan = plan_segments(SIZE, 4)
    part.parent.mkdir(parents=True, exist_ok=True)
    with open(part, "wb") as new_run:
        new_run.truncate(SIZE)  # the new run's file at its full length: holes
    save_state(part, ResumeState(0, SIZE, media.etag, None, sim.url("/f.mp4"), [[s, e, 0] for s, e, _ in plan]))
    earlier = [[s, e, (e - s) // 2] for s, e, _ in plan]
    heartbeat = ResumeState(sum(d for _, _, d in earlier), SIZE, media.etag, None, sim.url("/f.mp4"), earlier)
    out = make(client).download([sim.url("/f.mp4")], part, previous=heartbeat)
    assert out.sha256 == media.sha256() == file_sha256(part)
    assert out.resumed_from == 0 and out.transferred == SIZE


def test_segments_of_an_expired_url_go_on_under_the_fresh_one(sim: Simulator, client: httpx.Client,
                                                            part: Path) -> None:
    media = MediaFile("mp4", "re-signed", SIZE)
    sim.add_file("/fresh.mp4", media)
    previous = prepare(part, media, [[s, e, (e - s) // 2] for s, e, _ in plan_segments(SIZE, 4)])
    previous.url = sim.url("/expired.mp4")  # the URL the segments were written from
    out = make(client).download([sim.url("/fresh.mp4")], part, previous=previous)
    assert out.sha256 == media.sha256() == file_sha256(part)
    assert out.resumed_from == previous.offset and out.transferred == SIZE - previous.offset
    assert "bytes=0-" not in ranges_of(sim, "/fresh.mp4")
    assert load_state(part).url == sim.url("/fresh.mp4")


def test_segments_under_a_new_url_of_another_version_start_over(sim: Simulator, client: httpx.Client,
                                                                part: Path) -> None:
    old, new = MediaFile("mp4", "old-version", SIZE), MediaFile("mp4", "new-version", SIZE)
    sim.add_file("/new.mp4", new)
    previous = prepare(part, old, [[s, e, (e - s) // 2] for s, e, _ in plan_segments(SIZE, 4)])
    previous.url = sim.url("/old.mp4")
    out = make(client).download([sim.url("/new.mp4")], part, previous=previous)
    assert out.sha256 == new.sha256() == file_sha256(part)  # no byte of the old version kept


def test_segment_state_without_its_file_starts_over(sim: Simulator, client: httpx.Client, part: Path) -> None:
    media = MediaFile("mp4", "lostfile", SIZE)
    sim.add_file("/f.mp4", media)
    previous = ResumeState(SIZE // 2, SIZE, media.etag, None, sim.url("/f.mp4"),
                           [[s, e, (e - s) // 2] for s, e, _ in plan_segments(SIZE, 4)])
    out = make(client).download([sim.url("/f.mp4")], part, previous=previous)
    assert out.resumed_from == 0 and out.sha256 == media.sha256()
    assert ranges_of(sim)[0] == "bytes=0-"


def test_a_stop_records_every_segment_and_the_resume_goes_on_from_there(sim: Simulator, client: httpx.Client,
                                                                        part: Path) -> None:
    media = MediaFile("mp4", "stop", SIZE)
    # About 2 s over four connections: the stop (at the first checkpoint past a quarter, 0.5 s in,
    # and the coordinator's next look) comes well before the end even on a loaded machine.
    how = sim.add_file("/f.mp4", media, FileBehaviour(throttle_bps=500_000))
    beats: list[ResumeState] = []
    stop_after = lambda: bool(beats) and beats[-1].offset > SIZE // 4  # noqa: E731
    with pytest.raises(Stopped) as caught:
        make(client, beats, should_stop=stop_after).download([sim.url("/f.mp4")], part)
    saved = load_state(part)
    assert saved.segments and caught.value.offset == saved.offset == sum(d for _, _, d in saved.segments)
    assert beats[-1].segments == saved.segments
    assert 0 < saved.offset < SIZE
    how.throttle_bps = None
    before = len(ranges_of(sim))
    out = make(client).download([sim.url("/f.mp4")], part)
    assert out.sha256 == media.sha256() == file_sha256(part)
    assert out.resumed_from == saved.offset
    wanted = {f"bytes={s + d}-{e - 1}" for s, e, d in saved.segments if s + d < e}
    assert set(ranges_of(sim)[before:]) == wanted


def test_the_host_cap_limits_the_extra_connections(sim: Simulator, client: httpx.Client, part: Path) -> None:
    media = MediaFile("mp4", "capped", SIZE)
    sim.add_file("/f.mp4", media)
    slots = HostSlots(1)
    out = make(client, host_slots=slots).download([sim.url("/f.mp4")], part)
    assert out.connections == 2 and out.sha256 == media.sha256()
    assert set(ranges_of(sim)[1:]) == segment_ranges(SIZE, 4)  # every segment, over two connections
    assert slots.in_use("127.0.0.1:" + sim.base_url.rsplit(":", 1)[1]) == 0  # given back
    taken = HostSlots(0)
    out = make(client, host_slots=taken).download([sim.url("/f.mp4")], part.with_name("b.part"))
    assert out.connections == 1 and out.sha256 == media.sha256()


def test_a_server_fast_enough_for_one_connection_gets_the_segments_over_that_one(sim: Simulator,
                                                                                client: httpx.Client, part: Path) -> None:
    media = MediaFile("mp4", "fast", SIZE)
    sim.add_file("/f.mp4", media)
    beats: list[ResumeState] = []
    # Judged fast: the rest would take one connection less than a minute.
    out = make(client, beats, split_after_s=60).download([sim.url("/f.mp4")], part)
    assert out.connections == 1 and out.sha256 == media.sha256() == file_sha256(part)
    # One request: the answer to "bytes=0-" read on through every segment; the state (what a
    # resume reads) is the same segments as ever.
    assert ranges_of(sim) == ["bytes=0-"]
    assert beats[-1].segments == [[s, e, e - s] for s, e, _ in plan_segments(SIZE, 4)]


def test_a_run_that_splits_late_shares_what_the_first_answer_has_not_reached_among_every_connection(
        sim: Simulator, client: httpx.Client, part: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import trawl.download.segmented

    size = 16 * MIN + 123
    media = MediaFile("mp4", "splits-late", size)
    plan = plan_segments(size, 4)
    sim.add_file("/f.mp4", media, FileBehaviour(throttle_bps=8_000_000))  # segment 1 takes about 0.5 s
    # Judged slow once the first answer is 100 kB into segment 1 (it read on into it unsplit).
    monkeypatch.setattr(trawl.download.segmented, "worth_splitting", lambda done, *_: done > plan[1][0] + 100_000)
    rounds_as_on_an_idle_machine(monkeypatch)
    beats: list[ResumeState] = []
    out = make(client, beats, split_after_s=60).download([sim.url("/f.mp4")], part)
    assert out.sha256 == media.sha256() == file_sha256(part)
    assert out.connections == 4
    segments = sorted(beats[-1].segments)
    assert [s for s, _, _ in segments[1:]] == [e for _, e, _ in segments[:-1]] and segments[-1][1] == size
    assert all(d == e - s for s, e, d in segments)
    # The first answer covered segment 0 and went on into 1, which it ended early: from where it
    # was when the run split, it read as much as each other connection's first piece.
    first_end = next(e for s, e, _ in segments if s == plan[1][0])
    asked = ranges_of(sim)
    assert asked[0] == "bytes=0-", asked
    pieces = sorted((int(a), int(b) + 1) for a, b in (r.removeprefix("bytes=").split("-") for r in asked[1:]))
    assert pieces[0][0] == first_end and [a for a, _ in pieces[1:]] == [b for _, b in pieces[:-1]]
    assert pieces[-1][1] == size  # each piece asked once, and together they are the rest of the file
    share = pieces[0][1] - pieces[0][0]
    assert [b - a for a, b in pieces[:3]] == [share] * 3
    assert plan[1][0] + 100_000 < first_end - share < plan[1][1]  # where it was when the run split
    # Then one or more rounds of smaller pieces, one per connection each: the first round is
    # hashed while they come.
    assert len(pieces) >= 3 + 4 and (len(pieces) - 3) % 4 == 0 and all(b - a < share // 4 for a, b in pieces[3:])


def test_a_split_after_the_first_answer_broke_keeps_the_segment_its_own_request_asked_for(
        sim: Simulator, client: httpx.Client, part: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import trawl.download.segmented

    size = 16 * MIN + 123
    media = MediaFile("mp4", "cut-then-split", size)
    plan = plan_segments(size, 4)
    cut = 100_000  # the first answer breaks inside segment 0: the rest of it is asked with an end
    sim.add_file("/f.mp4", media, FileBehaviour(throttle_bps=8_000_000, cut_at=cut))
    monkeypatch.setattr(trawl.download.segmented, "worth_splitting", lambda done, *_: done > cut + 1_000_000)
    # The cut takes segment 0's one retry: an answer of that segment that ended short again (a
    # segment lengthened past the end its own request asked for) would fail the download.
    monkeypatch.setattr(trawl.download.segmented, "SEGMENT_RETRIES", 1)
    out = make(client, split_after_s=60).download([sim.url("/f.mp4")], part)
    assert out.sha256 == media.sha256() == file_sha256(part)
    asked = ranges_of(sim)
    assert asked[:2] == ["bytes=0-", f"bytes={cut}-{plan[0][1] - 1}"], asked
    # Shared out, segment 0 would end past the end its own request asked for: the plan stays.
    assert sorted(asked[2:]) == sorted(f"bytes={s}-{e - 1}" for s, e, _ in plan[1:]), asked


def test_a_slow_connection_has_its_segment_taken_half_by_half_by_the_others(sim: Simulator, client: httpx.Client,
                                                                            part: Path) -> None:
    size = 16 * MIN + 123
    media = MediaFile("mp4", "one-slow", size)
    plan = plan_segments(size, 4)

    def answer(req: Request, serve) -> Response:  # noqa: ANN001
        resp = serve(req)
        start = first_byte(req.headers.get("range"))
        # The connection asked for segment 3 crawls; every other one is fast.
        return dataclasses.replace(resp, throttle_bps=500_000 if start == plan[3][0] else None)

    route(sim, media, answer)
    beats: list[ResumeState] = []
    out = make(client, beats).download([sim.url("/f.mp4")], part)
    assert out.sha256 == media.sha256() == file_sha256(part)
    segments = sorted(beats[-1].segments)
    assert [s for s, _, _ in segments[1:]] == [e for _, e, _ in segments[:-1]] and segments[-1][1] == size
    assert all(d == e - s for s, e, d in segments)
    # Segment 3 ends far short of where it was planned to: the fast connections took the rest.
    third = next(seg for seg in segments if seg[0] == plan[3][0])
    assert third[1] < plan[3][1] - MIN
    assert any(first_byte(asked) > plan[3][0] for asked in ranges_of(sim))


def test_a_slow_reader_is_cut_before_the_last_round_s_pieces_are_read(
        sim: Simulator, client: httpx.Client, part: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    size = 32 * MIN + 123
    media = MediaFile("mp4", "slow-in-rounds", size)
    arrived = itertools.count()

    def answer(req: Request, serve) -> Response:  # noqa: ANN001
        # The fourth request (the third extra connection's first piece) crawls; every other is fast.
        return dataclasses.replace(serve(req), throttle_bps=2_000_000 if next(arrived) == 3 else 8_000_000)

    route(sim, media, answer)
    rounds_as_on_an_idle_machine(monkeypatch)
    beats: list[ResumeState] = []
    out = make(client, beats, split_after_s=0.5).download([sim.url("/f.mp4")], part)
    assert out.sha256 == media.sha256() == file_sha256(part)
    asked = ranges_of(sim)
    slow_start, slow_end = (int(n) for n in asked[3].removeprefix("bytes=").split("-"))
    # A fast connection took part of the slow one's piece before it read the last round's pieces
    # (they lie after it): a slow reader ends a margin's time after its last cut.
    cut_at = min(n for n, r in enumerate(asked) if slow_start < first_byte(r) <= slow_end)
    last_round = max(n for n, r in enumerate(asked) if first_byte(r) > slow_end)
    assert cut_at < last_round, asked
    segments = sorted(beats[-1].segments)
    assert [s for s, _, _ in segments[1:]] == [e for _, e, _ in segments[:-1]] and segments[-1][1] == size
    assert all(d == e - s for s, e, d in segments)


def test_a_cut_while_reading_on_asks_again_for_the_rest_of_that_segment(sim: Simulator, client: httpx.Client,
                                                                       part: Path) -> None:
    media = MediaFile("mp4", "cut-on", SIZE)
    plan = plan_segments(SIZE, 4)
    cut = plan[2][0] + 100_000  # the first answer, read on through 0 and 1, breaks inside segment 2
    sim.add_file("/f.mp4", media, FileBehaviour(cut_at=cut))
    out = make(client, split_after_s=60).download([sim.url("/f.mp4")], part)
    assert out.sha256 == media.sha256() == file_sha256(part)
    # Segment 2 goes on from where the cut left it; segment 3 is asked as a whole: nothing is lost or asked twice.
    assert ranges_of(sim) == ["bytes=0-", f"bytes={cut}-{plan[2][1] - 1}", f"bytes={plan[3][0]}-{plan[3][1] - 1}"]


def test_a_slow_first_connection_opens_the_others(sim: Simulator, client: httpx.Client, part: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    size = 16 * MIN + 123
    media = MediaFile("mp4", "slow", size)
    sim.add_file("/f.mp4", media, FileBehaviour(throttle_bps=8_000_000))  # about 2 s over one connection
    rounds_as_on_an_idle_machine(monkeypatch)
    beats: list[ResumeState] = []
    out = make(client, beats, split_after_s=0.5).download([sim.url("/f.mp4")], part)
    assert out.connections == 4 and out.sha256 == media.sha256() == file_sha256(part)
    # What the first had not reached was planned again (plan_rounds): from where it was, its own
    # segment as long as each other connection's first piece, then smaller pieces; each asked once.
    segments = beats[-1].segments
    assert len(segments) > 4 and all(d == e - s for s, e, d in segments)
    first_round = [e - s for s, e, _ in segments[1:4]]
    assert segments[0][0] == 0 and first_round == first_round[:1] * 3
    assert 0 <= segments[0][1] - first_round[0] < size // 4  # where the first answer was when the run split
    assert all(e - s < first_round[0] for s, e, _ in segments[4:])
    assert sorted(ranges_of(sim)[1:]) == sorted(f"bytes={s}-{e - 1}" for s, e, _ in segments[1:])


@pytest.mark.parametrize(("rest", "connections", "pace", "request_s", "most_rounds"), [
    (96 << 20, 4, 4_000_000, 0.0005, 0),  # the throttled CDN on loopback
    (96 << 20, 4, 4_000_000, 0.05, 0),  # the same at 50 ms a request
    (10 << 30, 4, 4_000_000, 0.002, 0),  # a large file: more rounds, each hiding the hashing before it
    (96 << 20, 4, 100_000_000, 0.0005, 1),  # fast connections: hiding the hashing takes too large a piece
    (96 << 20, 4, 4_000_000, 0.2, 1),  # a request dearer than the whole hashing it would save
    (600 << 10, 4, 4_000_000, 0.0005, 1),  # too little to share in rounds
    (96 << 20 | 3, 2, 4_000_000, 0.0005, 0),
])
def test_each_connection_s_share_comes_in_rounds_while_they_pay(rest: int, connections: int, pace: float,
                                                              request_s: float, most_rounds: int) -> None:
    rounds = plan_rounds(rest, connections, pace, request_s)
    assert sum(rounds) == rest // connections and rounds == sorted(rounds, reverse=True)
    if most_rounds:
        assert len(rounds) <= most_rounds
        return
    assert len(rounds) >= 2 and all(size >= MIN_PIECE for size in rounds)
    for before, after in zip(rounds, rounds[1:]):
        # A round lasts at least twice as long as hashing what the other connections read in the
        # round before (the connection at the hashed prefix is hashed as it reads).
        assert after / pace >= 2 * (connections - 1) * before / HASH_RATE
    # What is hashed after the download: the other connections' pieces of the last round.
    assert (connections - 1) * rounds[-1] / HASH_RATE < max(request_s, 0.001) * 2


@pytest.mark.parametrize(("segments", "margin", "taken"), [
    # The most left to read: the first (60 of 0-100 done, 40 left); its reader keeps 20.
    ([[0, 100, 60], [100, 200, 90], [200, 300, 100]], 5, (0, 80)),
    ([[0, 100, 90], [100, 200, 50], [200, 300, 100]], 5, (1, 175)),
    # Odd: the reader keeps the larger half.
    ([[0, 100, 69]], 5, (0, 85)),
    # The reader keeps at least the margin (it may be filling a buffer beyond its recorded byte).
    ([[0, 100, 40]], 40, (0, 80)),
    # Too little to take: under 10 bytes would be left to the taker.
    ([[0, 100, 82], [100, 200, 100]], 5, None),
    ([[0, 100, 40]], 55, None),
    ([[0, 100, 100]], 5, None),
    ([], 5, None),
])
def test_a_connection_with_nothing_left_takes_the_second_half_of_the_largest_rest(
        segments: list[list[int]], margin: int, taken: tuple[int, int] | None) -> None:
    from trawl.download.segmented import steal

    assert steal(segments, margin, 10) == taken


@pytest.mark.parametrize(("rates", "own_rate", "taken"), [
    # Segment 1 would end last (100 bytes at 1/s, against 40 at 10/s); at 4/s the taker reads
    # 80 while its reader reads 20.
    ([10.0, 1.0], 4.0, (1, 220)),
    ([10.0, 1.0], None, (1, 250)),  # the taker's pace unknown: half
    ([10.0, 0.0], 4.0, (1, 205)),  # stalled: everything past the margin
    ([10.0, None], 4.0, (1, 250)),  # a reader too young to have a pace: taken at the taker's, so halved
    ([None, None], None, (1, 250)),  # no pace known at all: the most bytes, halved
    ([2.0, 100.0], 8.0, (0, 68)),  # fewer bytes left but slower: segment 0 ends last, keeps 8 of 40
])
def test_the_connection_that_would_end_last_loses_what_it_would_not_reach_in_time(
        rates: list[float | None], own_rate: float | None, taken: tuple[int, int]) -> None:
    from trawl.download.segmented import steal

    assert steal([[0, 100, 60], [100, 300, 100]], 5, 10, rates, own_rate) == taken


@pytest.mark.parametrize(("done", "elapsed", "after_s", "split"), [
    (0, 0.01, 2.0, False),  # too early to judge
    (0, 0.05, 2.0, False),  # no byte yet: the reader may not have run (a loaded machine)
    (0, 0.25, 2.0, True),  # still no byte: slow
    (1 << 20, 0.05, 2.0, True),  # 20 MiB/s: the other 99 MiB would take 5 s
    (50 << 20, 0.05, 2.0, False),  # 1 GiB/s: the rest in 0.05 s
    (10 << 20, 1.0, 10.0, False),  # 10 MiB/s: the rest in 9 s, under the 10 s asked for
    (10 << 20, 1.0, 5.0, True),
])
def test_the_split_is_worth_it_when_one_connection_would_take_long(done: int, elapsed: float, after_s: float,
                                                                   split: bool) -> None:
    from trawl.download.segmented import worth_splitting

    assert worth_splitting(done, 100 << 20, elapsed, after_s) is split
