"""Recording live HLS (trawl.download.live) against the simulator's live streams over loopback:
every media sequence once, gaps recorded where the window slid past, a stopped recording going
on from the next sequence, the ends (ENDLIST, max duration, stall), the address guard."""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import httpx
import pytest

from trawl.contracts import LivePart
from trawl.download import DownloadOutcome, Stopped, save_state
from trawl.download.live import (
    LiveHlsRecorder,
    LiveState,
    fresher_live,
    gap,
    load_live_state,
    load_record,
    plan,
    restarted,
)
from trawl.errors import BlockedAddress, NotFound, UrlExpired
from trawl.hls_playlists import MediaPlaylist, parse_playlist
from trawl.http_client import make_client
from trawl.settings import ConfigError, NetSettings, load_settings
from trawl.simulator import Simulator
from trawl.simulator.faults import stall
from trawl.simulator.live_site import LiveSite, LiveStream, live_segment

FFMPEG = shutil.which("ffmpeg")
FFPROBE = shutil.which("ffprobe")
needs_ffmpeg = pytest.mark.skipif(FFMPEG is None or FFPROBE is None, reason="ffmpeg is not installed (.ci/run installs it)")


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as c:
        yield c


@pytest.fixture
def site(sim: Simulator) -> LiveSite:
    return LiveSite(sim).install()


def recorder(client: httpx.Client, **kw) -> LiveHlsRecorder:  # noqa: ANN003 - LiveHlsRecorder's options
    kw.setdefault("retry_delay", 0.05)
    kw.setdefault("stall_timeout", 5.0)
    return LiveHlsRecorder(client, max_file_size=1 << 30, **kw)


def probe(path: Path) -> tuple[float, int]:
    """The file's duration (ffprobe) and its video packets."""
    done = subprocess.run([FFPROBE or "ffprobe", "-v", "error", "-count_packets", "-show_entries",
                           "format=duration:stream=nb_read_packets", "-of", "json", str(path)],
                          capture_output=True, text=True, check=True, timeout=60)
    info = json.loads(done.stdout)
    return float(info["format"]["duration"]), int(info["streams"][0]["nb_read_packets"])


def playlist_at(stream: LiveStream, seconds: float) -> MediaPlaylist:
    assert stream.started is not None
    parsed = parse_playlist(stream.playlist(stream.started + seconds), "http://127.0.0.1/live/x/index.m3u8")
    assert isinstance(parsed, MediaPlaylist)
    return parsed


# -- gaps, without a network -------------------------------------------------------------------
def test_a_window_that_slid_past_the_last_sequence_held_is_a_gap() -> None:
    stream = LiveStream(length=None, window=6).start(1000.0)
    early, late = playlist_at(stream, 8.5), playlist_at(stream, 20.5)  # sequences 2..7, then 14..19
    assert (early.media_sequence, early.target_duration, early.endlist) == (2, 1.0, False)
    new, missed = plan(early, None)  # nothing held: the whole window, no gap
    assert [early.sequence(s) for s in new] == [2, 3, 4, 5, 6, 7] and missed is None
    new, missed = plan(early, 4)  # held up to 4: the rest of the window
    assert [early.sequence(s) for s in new] == [5, 6, 7] and missed is None
    assert plan(early, 7) == ([], None)  # nothing new
    new, missed = plan(late, 7)  # 8..13 slid past while nothing was read
    assert [late.sequence(s) for s in new] == [14, 15, 16, 17, 18, 19] and missed == (8, 13)
    state = LiveState(segments=6, seconds=6.0)
    found = gap(8, 13, state, 1.0, "window slid past", now=1_780_000_000.0)
    assert found == {"first_sequence": 8, "last_sequence": 13, "segments": 6, "seconds": 6.0, "at_seconds": 6.0,
                     "noticed_at": "2026-05-28T20:26:40+00:00", "reason": "window slid past"}


def test_the_simulated_segments_carry_on_one_another() -> None:
    first, second = live_segment(0), live_segment(1)
    assert len(first) == len(second) and len(first) % 188 == 0 and first != second
    assert all(first[i] == 0x47 for i in range(0, len(first), 188))


# -- recordings ----------------------------------------------------------------------------------
@needs_ffmpeg
def test_a_live_stream_is_recorded_once_per_sequence_until_its_endlist(client: httpx.Client, site: LiveSite,
                                                                       sim: Simulator, tmp_path: Path) -> None:
    url = site.add_stream("a", LiveStream(length=8.0).start())
    beats: list[LiveState] = []
    started = time.monotonic()
    out = recorder(client, ffmpeg=FFMPEG, heartbeat=beats.append).download([url], tmp_path / "video.part")
    took = time.monotonic() - started
    assert site.segment_requests("a") == [1] * 8  # every sequence, once
    assert 7.0 < took < 12.0, took  # it followed the broadcast to its end
    record = load_record(Path(out.path))
    assert record is not None
    assert (record["ended"], record["first_sequence"], record["last_sequence"], record["segments"],
            record["gaps"], record["missing_segments"]) == ("endlist", 0, 7, 8, [], 0)
    assert out.mime == "video/mp4" and out.path.endswith("video.mp4.part")
    duration, packets = probe(Path(out.path))
    assert abs(duration - 8.0) <= 0.4 and packets == 80, (duration, packets)
    assert beats[-1].done and beats[-1].last_sequence == 7
    # A heartbeat after each segment names the last sequence held.
    assert [b.last_sequence for b in beats if b.last_sequence is not None][:1] == [0]
    assert sim.stats["/live/a/index.m3u8"].requests <= 2 * 8 + 4  # about one read per target duration


def test_a_playlist_read_that_outlasts_the_window_leaves_a_recorded_gap(site: LiveSite, sim: Simulator,
                                                                        tmp_path: Path) -> None:
    stream = LiveStream(length=12.0, window=3).start(time.time() - 2)  # sequences 0..1 out already
    url = site.add_stream("g", stream)
    sim.faults.add(r"/live/g/index\.m3u8", [*stall(0, times=2), *stall(4)])  # the third read hangs 4 s
    with httpx.Client(timeout=20) as patient:  # the hung read is answered, not timed out
        out = recorder(patient, stall_timeout=20.0).download([url], tmp_path / "video.part")
    record = load_record(Path(out.path))
    assert record is not None and record["ended"] == "endlist"
    (found,) = record["gaps"]
    missed = set(range(found["first_sequence"], found["last_sequence"] + 1))
    fetched = {s for s, n in enumerate(site.segment_requests("g", 12)) if n}
    assert found["segments"] == len(missed) >= 1 and found["reason"] == "window slid past"
    assert fetched | missed == set(range(12)) and not fetched & missed  # nothing spliced, nothing twice
    assert max(site.segment_requests("g", 12)) == 1
    assert found["seconds"] == float(len(missed)) and found["at_seconds"] == float(min(missed))
    assert record["missing_segments"] == len(missed) and record["segments"] == len(fetched)
    assert Path(out.path).read_bytes() == b"".join(live_segment(s) for s in sorted(fetched))


def test_a_stopped_recording_goes_on_from_the_next_sequence(client: httpx.Client, site: LiveSite, sim: Simulator,
                                                           tmp_path: Path) -> None:
    """What a worker change does, in one process: the first recorder stops (its worker shut down),
    the second starts from the first one's last heartbeat and the file beside it."""
    url = site.add_stream("s", LiveStream(length=10.0).start(time.time() - 2))
    beats: list[LiveState] = []
    stop = threading.Event()
    part = tmp_path / "video.part"
    with pytest.raises(Stopped):
        recorder(client, heartbeat=beats.append,
                 should_stop=lambda: stop.is_set() or (len(beats) > 3 and beats[-1].segments >= 4)).download([url], part)
    held = beats[-1]
    assert held.segments >= 4 and load_live_state(part) == held
    time.sleep(1.5)  # the worker change: the window (6) still holds what comes next
    out = recorder(client).download([url], part, previous=held)
    assert site.segment_requests("s") == [1] * 10  # none fetched twice, none left out
    record = load_record(Path(out.path))
    assert record is not None and record["gaps"] == [] and record["segments"] == 10
    assert out.resumed_from == held.offset and out.sha256 == _sha(b"".join(live_segment(s) for s in range(10)))


def test_a_playlist_that_never_ends_stops_at_the_longest_recording(client: httpx.Client, site: LiveSite,
                                                                   tmp_path: Path) -> None:
    url = site.add_stream("m", LiveStream(length=None).start(time.time() - 2))
    out = recorder(client, max_duration=4.0).download([url], tmp_path / "video.part")
    record = load_record(Path(out.path))
    assert record is not None and (record["ended"], record["segments"], record["seconds"]) == ("max_duration", 4, 4.0)


def test_a_frozen_playlist_ends_as_stalled_and_one_without_segments_is_not_found(client: httpx.Client,
                                                                                 site: LiveSite,
                                                                                 tmp_path: Path) -> None:
    frozen = site.add_stream("f", LiveStream(length=None, stall_after=3.0).start(time.time() - 2))
    started = time.monotonic()
    out = recorder(client, stall_timeout=1.5).download([frozen], tmp_path / "f" / "video.part")
    record = load_record(Path(out.path))
    assert record is not None and (record["ended"], record["segments"]) == ("stalled", 3)
    assert time.monotonic() - started < 6
    offline = site.add_stream("o", LiveStream(length=None, stall_after=0.0).start())
    with pytest.raises(NotFound, match="gave no segment"):
        recorder(client, stall_timeout=1.5).download([offline], tmp_path / "o" / "video.part")
    assert not (tmp_path / "o" / "video.part").exists()


def test_segments_on_a_refused_address_are_never_fetched(site: LiveSite, sim: Simulator, tmp_path: Path) -> None:
    port = sim.base_url.rsplit(":", 1)[1]
    url = site.add_stream("b", LiveStream(length=None, segment_base=f"http://127.0.0.2:{port}/live/b/").start(
        time.time() - 3))
    with make_client(NetSettings(allowed_networks=["127.0.0.1/32"])) as guarded:  # the simulator only
        with pytest.raises(BlockedAddress, match="127.0.0.2"):
            recorder(guarded).download([url], tmp_path / "video.part")
    assert site.segment_requests("b", 3) == [0, 0, 0]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_the_saved_record_wins_over_a_heartbeat_from_before_the_recording_began(tmp_path: Path) -> None:
    saved = LiveState(url="http://x/index.m3u8", started_at="t", last_sequence=9, segments=10, offset=1880)
    assert fresher_live(LiveState(), saved) is saved  # an attempt that only waited for its turn
    assert fresher_live(None, saved) is saved
    behind = LiveState(url="http://x/index.m3u8", started_at="t", last_sequence=7, segments=8, offset=1504)
    assert fresher_live(behind, saved) is saved  # the heartbeat RPC is throttled; the file is not
    other = LiveState(url="http://x/other.m3u8", started_at="u", last_sequence=2, segments=3, offset=564)
    assert fresher_live(other, saved) is other  # another recording's file never replaces it


def test_an_attempt_waits_for_the_one_still_writing(client: httpx.Client, site: LiveSite, tmp_path: Path) -> None:
    """Two attempts of one recording never write its file at once: the second waits for the lock."""
    url = site.add_stream("t", LiveStream(length=4.0).start(time.time() - 3))
    part = tmp_path / "video.part"
    part.parent.mkdir(parents=True, exist_ok=True)
    with open(part.with_name(part.name + ".lock"), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        released = []
        timer = threading.Timer(1.0, lambda: (released.append(time.time()), fcntl.flock(held, fcntl.LOCK_UN)))
        timer.start()
        recorder(client).download([url], part)
        timer.join()
    first_request = min(t for s in range(4) for t in site.sim.stats[site.segment_path("t", s)].times)
    assert released and first_request >= released[0]  # no segment asked for before the lock came free
    assert site.segment_requests("t") == [1] * 4


@pytest.mark.parametrize(("env", "value"), [
    ("TRAWL_DOWNLOAD__LIVE_MAX_DURATION", "0s"), ("TRAWL_DOWNLOAD__LIVE_MAX_DURATION", "49h"),
    ("TRAWL_DOWNLOAD__LIVE_MAX_DURATION", "forever"), ("TRAWL_DOWNLOAD__LIVE_STALL_TIMEOUT", "1s"),
    ("TRAWL_DOWNLOAD__LIVE_STALL_TIMEOUT", "2h"),
])
def test_the_recording_bounds_are_validated(monkeypatch: pytest.MonkeyPatch, env: str, value: str) -> None:
    monkeypatch.setenv(env, value)
    with pytest.raises(ConfigError, match=env.split("__")[1].lower()):
        load_settings()


def test_the_recording_bounds_reach_the_recorder(client: httpx.Client) -> None:
    settings = load_settings(download={"live_max_duration": "90m", "live_stall_timeout": "20s"})
    made = LiveHlsRecorder.from_settings(client, settings.download, heartbeat=lambda s: None, should_stop=lambda: False)
    assert (made.max_duration, made.stall_timeout) == (5400.0, 20.0)


def test_a_recording_that_reaches_the_size_cap_ends_with_what_fits(client: httpx.Client, site: LiveSite,
                                                                   tmp_path: Path) -> None:
    url = site.add_stream("cap", LiveStream(length=None).start(time.time() - 5))
    cap = 3 * len(live_segment(0)) + 100  # three segments fit, the fourth does not
    out = LiveHlsRecorder(client, max_file_size=cap, stall_timeout=5.0).download([url], tmp_path / "video.part")
    record = load_record(Path(out.path))
    assert record is not None and (record["ended"], record["segments"]) == ("max_file_size", 3)
    assert out.size == 3 * len(live_segment(0)) == Path(out.path).stat().st_size


def test_an_encrypted_stream_behind_a_master_is_recorded_plain_from_the_chosen_variant(
        client: httpx.Client, site: LiveSite, sim: Simulator, tmp_path: Path) -> None:
    """AES-128 as in VOD (the IV is each segment's media sequence; the key fetched once per
    attempt), and a master's variant picked by quality as for VOD."""
    low = site.add_stream("low", LiveStream(length=4.0, key=bytes(range(16))).start(time.time() - 1))
    site.add_stream("high", LiveStream(length=4.0, key=bytes(range(16))).start(time.time() - 1))
    master = site.add_master("both", [("high", 3_000_000, 1080), ("low", 800_000, 360)])
    out = recorder(client, quality=480).download([master], tmp_path / "video.part")
    assert out.url == low and site.segment_requests("low") == [1] * 4 and sum(site.segment_requests("high")) == 0
    assert Path(out.path).read_bytes() == b"".join(live_segment(s) for s in range(4))  # decrypted
    assert sim.stats["/live/low/key.bin"].requests == 1


def test_a_recording_that_ended_but_was_not_finished_is_finished_without_its_playlist(
        client: httpx.Client, site: LiveSite, sim: Simulator, tmp_path: Path) -> None:
    """A worker lost between the end of the broadcast and the result (a remux under way): the next
    attempt finishes the file it left, even once the playlist is gone."""
    url = site.add_stream("gone", LiveStream(length=3.0).start(time.time() - 3))
    part = tmp_path / "video.part"
    recorder(client).download([url], part)
    held = load_live_state(part)
    assert held is not None and held.done and held.ended == "endlist"
    held.done, held.total = False, None  # as saved just before the end's remux
    save_state(part, held)
    del site.streams["gone"]  # the broadcast's playlist answers 404 from now on
    reads = sim.stats["/live/gone/index.m3u8"].requests
    out = recorder(client).download([url], part, previous=held)
    assert sim.stats["/live/gone/index.m3u8"].requests == reads and site.segment_requests("gone", 3) == [1, 1, 1]
    record = load_record(Path(out.path))
    assert record is not None and (record["ended"], record["segments"], record["ended_at"]) == (
        "endlist", 3, held.ended_at)
    assert out.sha256 == _sha(b"".join(live_segment(s) for s in range(3)))


def test_a_recording_must_end_before_its_download_is_given_up_on() -> None:
    with pytest.raises(ConfigError, match=r"live_max_duration \(30h\) must be shorter than "
                                          r"retry.download.schedule_to_close \(24h\)"):
        load_settings(download={"live_max_duration": "30h"})
    allowed = load_settings(download={"live_max_duration": "30h"}, retry={"download": {"schedule_to_close": "48h"}})
    assert allowed.download.live_max_duration.total_seconds() == 30 * 3600
    # A deployment whose downloads may take 2 hours in all, and that never named a recording length:
    # its recordings fit (its settings still load).
    fitted = load_settings(retry={"download": {"schedule_to_close": "2h"}})
    assert fitted.download.live_max_duration.total_seconds() == 0.9 * 7200


def test_a_slow_answer_does_not_silence_the_heartbeat(site: LiveSite, sim: Simulator, tmp_path: Path) -> None:
    """A recording's heartbeat timeout is seconds: while a segment takes 4 s to answer, the
    recording still heartbeats (at most KEEPALIVE_EVERY apart), so its worker is not taken for dead."""
    url = site.add_stream("slow", LiveStream(length=4.0).start(time.time() - 2))
    sim.faults.add(r"/live/slow/seg-1\.ts", stall(4))
    beats: list[float] = []
    with httpx.Client(timeout=20) as patient:
        recorder(patient, heartbeat=lambda state: beats.append(time.monotonic())).download([url], tmp_path / "v.part")
    assert site.segment_requests("slow") == [1, 1, 1, 1]
    assert max(later - earlier for earlier, later in zip(beats, beats[1:])) < 1.6, beats


# -- parts ---------------------------------------------------------------------------------------
def record_parts(rec: LiveHlsRecorder, url: str, anchor: Path, seconds: float, upto: int = 20,
                 after: dict | None = None, first: int = 1) -> list[DownloadOutcome]:
    """Parts ``first``, ``first + 1``, ... as the item asks for them, each going on from the last."""
    outcomes = []
    for index in range(first, upto + 1):
        out = rec.download([url], anchor, live_part=LivePart(index, seconds, after=after))
        outcomes.append(out)
        after = out.live
        if after is None or after["ended"]:
            break
    return outcomes


@needs_ffmpeg
def test_a_recording_in_parts_is_a_playable_file_a_part_adding_up_to_the_broadcast(
        client: httpx.Client, site: LiveSite, tmp_path: Path) -> None:
    url = site.add_stream("parts", LiveStream(length=7.0).start(time.time() - 1))
    outcomes = record_parts(recorder(client, ffmpeg=FFMPEG), url, tmp_path / "video.part", 3.0)
    records = [out.live for out in outcomes]
    assert site.segment_requests("parts") == [1] * 7  # every sequence once, across the parts' downloads
    assert [(r["part"], r["first_sequence"], r["last_sequence"], r["segments"], r["start_seconds"]) for r in records] \
        == [(1, 0, 2, 3, 0.0), (2, 3, 5, 3, 3.0), (3, 6, 6, 1, 6.0)], records
    assert [r["ended"] for r in records] == [None, None, "endlist"] and records[-1]["total_segments"] == 7
    probed = [probe(Path(out.path)) for out in outcomes]
    assert [out.mime for out in outcomes] == ["video/mp4"] * 3 and [Path(o.path).name for o in outcomes] == [
        "video-part001.mp4.part", "video-part002.mp4.part", "video-part003.mp4.part"]
    assert [packets for _, packets in probed] == [30, 30, 10]
    total = sum(duration for duration, _ in probed)
    assert abs(total - 7.0) <= 0.05 * 7.0, probed


def test_a_part_is_cut_by_size_and_stays_mpeg_ts_without_ffmpeg(client: httpx.Client, site: LiveSite,
                                                               tmp_path: Path) -> None:
    url = site.add_stream("sized", LiveStream(length=5.0).start(time.time() - 5))
    rec = recorder(client)
    size = len(live_segment(0))
    outcomes = []
    after = None
    for index in (1, 2, 3):
        out = rec.download([url], tmp_path / "video.part", live_part=LivePart(index, 3600.0, bytes=2 * size,
                                                                              after=after))
        again = rec.download([url], tmp_path / "video.part", live_part=LivePart(index, 3600.0, bytes=2 * size,
                                                                                after=after))
        assert (again.path, again.sha256, again.live) == (out.path, out.sha256, out.live)  # an answer lost: the same
        outcomes.append(out)
        after = out.live
    assert [o.live["segments"] for o in outcomes] == [2, 2, 1] and outcomes[-1].live["ended"] == "endlist"
    assert site.segment_requests("sized") == [1] * 5
    assert [o.mime for o in outcomes] == ["video/mp2t"] * 3
    assert Path(outcomes[1].path).read_bytes() == live_segment(2) + live_segment(3)


def test_a_part_recorded_on_a_host_without_the_state_goes_on_from_the_last_part_committed(
        client: httpx.Client, site: LiveSite, tmp_path: Path) -> None:
    """The item moved to another host: part 2 there goes on from part 1's record; the sequences
    the lost host held after it (and the window lost meanwhile) are a gap, never fetched twice."""
    url = site.add_stream("moved", LiveStream(length=None, window=3).start(time.time() - 1))
    (first,) = record_parts(recorder(client), url, tmp_path / "a" / "video.part", 2.0, upto=1)
    assert first.live is not None and first.live["last_sequence"] == 1
    time.sleep(5.5)  # the lost host's part and more slide out of the window (3)
    out = recorder(client).download([url], tmp_path / "b" / "video.part",
                                    live_part=LivePart(3, 2.0, after=first.live))
    record = out.live
    assert record is not None and record["part"] == 3
    (found,) = record["gaps"]
    assert found["reason"] == "lost with its host" and found["first_sequence"] == 2
    assert record["first_sequence"] == found["last_sequence"] + 1 and record["segments"] == 2
    assert record["total_segments"] == 4 and record["missing_segments"] == found["segments"]
    assert max(site.segment_requests("moved")) == 1


def test_a_stopped_part_goes_on_where_it_stopped(client: httpx.Client, site: LiveSite, tmp_path: Path) -> None:
    url = site.add_stream("sp", LiveStream(length=6.0).start(time.time() - 2))
    anchor = tmp_path / "video.part"
    beats: list[LiveState] = []
    with pytest.raises(Stopped):
        recorder(client, heartbeat=beats.append, should_stop=lambda: bool(beats) and beats[-1].segments >= 1
                 ).download([url], anchor, live_part=LivePart(1, 3.0))
    first = recorder(client).download([url], anchor, previous=beats[-1], live_part=LivePart(1, 3.0))
    rest = record_parts(recorder(client), url, anchor, 3.0, after=first.live, first=2)
    # The broadcast ended just after part 2 was cut: part 3 holds nothing but the end.
    assert [o.live["segments"] for o in (first, *rest)] == [3, 3, 0] and site.segment_requests("sp") == [1] * 6
    assert rest[-1].live["ended"] == "endlist" and rest[-1].path == ""


def test_a_part_that_ends_empty_brings_its_record_only(client: httpx.Client, site: LiveSite, tmp_path: Path) -> None:
    url = site.add_stream("ee", LiveStream(length=4.0).start(time.time() - 5))  # ended: 4 segments and ENDLIST
    outcomes = record_parts(recorder(client), url, tmp_path / "video.part", 4.0)
    assert [o.live["segments"] for o in outcomes] == [4, 0] and outcomes[-1].path == ""
    assert outcomes[-1].live["ended"] == "endlist" and outcomes[0].live["ended"] is None


@pytest.mark.parametrize(("env", "value"), [
    ("TRAWL_DOWNLOAD__LIVE_PART_DURATION", "1s"), ("TRAWL_DOWNLOAD__LIVE_PART_DURATION", "25h"),
    ("TRAWL_DOWNLOAD__LIVE_PART_SIZE", "100K"), ("TRAWL_DOWNLOAD__LIVE_PART_SIZE", "lots"),
])
def test_the_part_length_is_validated(monkeypatch: pytest.MonkeyPatch, env: str, value: str) -> None:
    monkeypatch.setenv(env, value)
    with pytest.raises(ConfigError, match=env.split("__")[1].lower()):
        load_settings()


def test_a_playlist_that_worked_and_answers_404_asks_for_fresh_urls_then_an_end_finishes_the_part(
        client: httpx.Client, site: LiveSite, tmp_path: Path) -> None:
    """A 404 from the playlist mid-recording is not a stall: the item is asked to resolve the source
    again (UrlExpired); when that says the source is over, the part held is finished as it is."""
    url = site.add_stream("gone404", LiveStream(length=None).start(time.time() - 1))
    anchor = tmp_path / "video.part"
    beats: list[LiveState] = []

    def drop_after_three() -> bool:
        if beats and beats[-1].segments >= 3:
            site.streams.pop("gone404", None)  # the playlist answers 404 from now on
        return False

    with pytest.raises(UrlExpired, match="404"):
        recorder(client, heartbeat=beats.append, should_stop=drop_after_three).download(
            [url], anchor, live_part=LivePart(1, 3600.0))
    held = load_live_state(anchor)
    assert held is not None and held.segments >= 3 and held.ended is None
    out = recorder(client).download([url], anchor, live_part=LivePart(1, 3600.0, end="source_ended"))
    assert out.live is not None and (out.live["ended"], out.live["segments"]) == ("source_ended", held.segments)
    assert Path(out.path).stat().st_size == held.offset == out.size
    with pytest.raises(NotFound, match="before it gave a segment"):  # nothing held: nothing to commit
        recorder(client).download([url], tmp_path / "other" / "video.part", live_part=LivePart(1, 3600.0, end="x"))


def test_a_recording_is_told_by_what_it_holds_and_waits_for() -> None:
    from trawl.download.live import recording_view
    from trawl.formatting import recording_words

    state = LiveState(url="http://x/index.m3u8", started_at="t", first_sequence=0, last_sequence=1208, segments=1207,
                      seconds=754.2, offset=3 << 20, bytes_before=45 << 20, part=3, window=[1200, 1208],
                      gaps=[{"segments": 2}])
    view = recording_view(asdict(state))
    assert view is not None and (view["bytes"], view["next"], view["missing"]) == (48 << 20, 1209, 2)
    assert recording_words(view) == ("recording 12:35 of media, 48.0 MiB, part 3, 2 missing; "
                                     "waits for 1209 (window 1200-1208)")
    assert recording_words({**view, "part": 1, "missing": 0}, speed=12288.0) == (
        "recording 12:35 of media, 48.0 MiB, 12.0 KiB/s; waits for 1209 (window 1200-1208)")
    assert recording_view({"protocol": "hls", "offset": 5}) is None


# -- a restarted stream ---------------------------------------------------------------------------
def test_a_stream_whose_media_sequence_starts_over_is_recorded_on_as_a_new_run(
        client: httpx.Client, site: LiveSite, tmp_path: Path) -> None:
    """The origin restarts after 4 segments (its window still names sequence 0): the playlist names
    sequences 0, 1... again, as other files. Recorded as one file, the new run follows the old
    one, every segment of both once, and the restart is in the record instead of a stall."""
    url = site.add_stream("restart", LiveStream(length=8.0, window=6, restart_after=4.0).start(time.time() - 1))
    out = recorder(client).download([url], tmp_path / "video.part")
    record = load_record(Path(out.path))
    assert record is not None
    assert site.segment_requests("restart") == [1] * 4 and site.segment_requests("restart", run=1) == [1] * 4
    assert (record["ended"], record["segments"], record["gaps"], record["missing_segments"]) == ("endlist", 8, [], 0)
    (restart,) = record["restarts"]
    assert (restart["after_sequence"], restart["first_sequence"], restart["at_seconds"], restart["reason"]) == (
        3, 0, 4.0, "media sequence restarted")
    assert Path(out.path).read_bytes() == b"".join(live_segment(n) for n in (0, 1, 2, 3, 0, 1, 2, 3))


@needs_ffmpeg
def test_in_parts_a_restarted_stream_begins_a_part_of_its_own(client: httpx.Client, site: LiveSite,
                                                              tmp_path: Path) -> None:
    url = site.add_stream("rparts", LiveStream(length=9.0, window=3, restart_after=5.0).start(time.time() - 1))
    outcomes = record_parts(recorder(client, ffmpeg=FFMPEG), url, tmp_path / "video.part", 3600.0)
    records = [out.live for out in outcomes]
    assert [(r["part"], r["first_sequence"], r["last_sequence"], r["segments"], r["start_seconds"], r["ended"])
            for r in records] == [(1, 0, 4, 5, 0.0, None), (2, 0, 3, 4, 5.0, "endlist")], records
    assert [len(r["restarts"]) for r in records] == [0, 1] and records[1]["restarts"][0]["after_sequence"] == 4
    assert site.segment_requests("rparts") == [1] * 5 and site.segment_requests("rparts", run=1) == [1] * 4
    probed = [probe(Path(out.path)) for out in outcomes]  # each part a playable file of its own run
    assert [packets for _, packets in probed] == [50, 40] and abs(sum(d for d, _ in probed) - 9.0) <= 0.45, probed


def test_a_lagging_copy_of_the_playlist_is_no_restart() -> None:
    stream = LiveStream(length=None, window=6, restart_after=10.0).start(0.0)
    state = LiveState(last_sequence=7, window=[2, 7], last_name="seg-7.ts")
    assert not restarted(playlist_at(stream, 6.5), state)  # a copy a little behind names 0..5
    assert not restarted(playlist_at(stream, 8.5), state)  # the same file for sequence 7
    assert restarted(playlist_at(stream, 11.5), state)  # the new run: 0, before the window read last
    late = LiveState(last_sequence=1, window=[0, 1], last_name="seg-1.ts")  # a young stream: a window from 0
    assert restarted(playlist_at(stream, 12.5), late)  # sequence 1 is another file now
