"""HLS downloads against the simulator over real sockets: every playlist shape, resume at segment
granularity (the origin's per-segment counts prove what was fetched again), missing and broken
segments, AES-128, live playlists, and the result with and without ffmpeg."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from trawl.activities.application_errors import to_application_error
from trawl.download.hls import HlsDownloader, HlsState, load_hls_state, remux_output
from trawl.download.state import fresher
from trawl.download.state import Stopped, save_state, state_path
from trawl.errors import (BlockedAddress, ContentCorrupt, ParseError, SegmentMissing, TooLarge, UnsupportedUrl,
                          UrlExpired)
from trawl.hls_playlists import MAX_SEGMENTS, MediaPlaylist, parse_playlist
from trawl.http_client import make_client
from trawl.settings import NetSettings
from trawl.simulator import Simulator
from trawl.simulator.faults import html_error, reset, status
from trawl.simulator.hls_site import HlsSite, HlsStream, id3_playlist_segment, install_hls_site, ts_segment
from trawl.sniff import sniff

FFMPEG = shutil.which("ffmpeg")
needs_ffmpeg = pytest.mark.skipif(FFMPEG is None, reason="ffmpeg is not installed (.ci/run installs it)")


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as c:
        yield c


@pytest.fixture
def site(sim: Simulator) -> HlsSite:
    return install_hls_site(sim)


def downloader(client: httpx.Client, **kw) -> HlsDownloader:  # noqa: ANN003 - HlsDownloader's options
    kw.setdefault("retry_delay", 0.01)
    return HlsDownloader(client, max_file_size=1 << 30, **kw)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def video_codec() -> list[str]:
    """H.264 as real streams carry it, when this ffmpeg has the encoder; MPEG-2 video otherwise."""
    encoders = subprocess.run([FFMPEG or "ffmpeg", "-hide_banner", "-encoders"], capture_output=True, text=True).stdout
    if " libx264 " in encoders:
        return ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
    return ["-c:v", "mpeg2video"]


def real_stream(work: Path, fmp4: bool = False, seconds: int = 4) -> HlsStream:
    """A real HLS stream (MPEG-4 video + AAC in MPEG-TS or fMP4 segments) made by ffmpeg."""
    assert FFMPEG is not None
    work.mkdir(parents=True, exist_ok=True)
    kind = ["-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "init.mp4"] if fmp4 else []
    subprocess.run([FFMPEG, "-v", "error", "-f", "lavfi", "-i", "testsrc=size=96x64:rate=10", "-f", "lavfi", "-i",
                    "sine=frequency=440:sample_rate=8000", "-t", str(seconds), *video_codec(), "-g", "10",
                    "-c:a", "aac", "-b:a", "24k", "-f", "hls", "-hls_time", "1", "-hls_list_size", "0", *kind,
                    str(work / "index.m3u8")], check=True, capture_output=True, timeout=120)
    playlist = parse_playlist((work / "index.m3u8").read_text(), "http://x/index.m3u8")
    assert isinstance(playlist, MediaPlaylist)
    segments = [(work / seg.url.rsplit("/", 1)[1]).read_bytes() for seg in playlist.segments]
    return HlsStream(segments, [seg.duration for seg in playlist.segments],
                     init=(work / "init.mp4").read_bytes() if fmp4 else None)


@pytest.mark.parametrize("name", ["fmp4", "aes", "aes-iv", "range", "range-fmp4", "disc"])
def test_every_playlist_shape_gives_the_plain_stream(client: httpx.Client, site: HlsSite, sim: Simulator,
                                                     tmp_path: Path, name: str) -> None:
    out = downloader(client).download([site.url(name)], tmp_path / "video.part")
    stream = site.streams[name]
    assert out.sha256 == sha(stream.plain()) == sha(Path(out.path).read_bytes())
    assert out.size == len(stream.plain())
    assert site.segment_requests(name) == [1] * len(stream.segments)
    if stream.key is not None:
        assert sim.stats[f"/hls/{name}/key.bin"].requests == 1  # one key fetch for every segment
    assert out.mime == ("video/mp4" if stream.init else "video/mp2t")
    state = load_hls_state(tmp_path / "video.part")
    assert state is not None and state.done and state.segment == state.segments == len(stream.segments)


@pytest.mark.parametrize(("quality", "variant"), [(1080, "vod-1080"), (720, "vod-720"), (480, "vod-360")])
def test_a_master_playlist_downloads_the_variant_the_quality_picks(client: httpx.Client, site: HlsSite,
                                                                    tmp_path: Path, quality: int, variant: str) -> None:
    out = downloader(client, quality=quality).download([site.sim.url("/hls/vod/master.m3u8")], tmp_path / "v.part")
    assert out.sha256 == sha(site.streams[variant].plain())
    others = {"vod-360", "vod-720", "vod-1080", "vod-audio"} - {variant}
    assert all(sum(site.segment_requests(o)) == 0 for o in others)


@pytest.mark.parametrize("remembered", ["state file", "heartbeat"])
def test_an_interrupted_download_fetches_at_most_the_segment_in_flight_again(
        client: httpx.Client, site: HlsSite, tmp_path: Path, remembered: str) -> None:
    stream = HlsStream([ts_segment(f"resume-{i}", 100) for i in range(10)], throttle_bps=200_000)
    url = site.add_stream("resume", stream)
    size = len(stream.segments[0])
    part = tmp_path / "video.part"
    beats: list[HlsState] = []
    # Stop once segment 6 has been asked for: mid-transfer (the origin sends it in paced pieces),
    # or just after it when this process was too slow to see the pieces apart.
    first = downloader(client, heartbeat=beats.append, should_stop=lambda: site.segment_requests("resume")[6] > 0)
    with pytest.raises(Stopped) as stopped:
        first.download([url], part)
    kept = beats[-1]
    assert kept.segment in (6, 7)
    assert stopped.value.offset == kept.offset == kept.segment * size == part.stat().st_size  # a cut segment is gone
    if remembered == "heartbeat":
        state_path(part).unlink()
    out = downloader(client).download([url], part, previous=kept if remembered == "heartbeat" else None)
    assert out.sha256 == sha(stream.plain()) and out.resumed_from == kept.segment * size
    counts = site.segment_requests("resume")
    # Every segment once, but the one in flight when it stopped: that one at most twice.
    assert counts == [1] * 6 + [1 if kept.segment == 7 else 2] + [1] * 3, counts


def test_a_changed_stream_starts_over(client: httpx.Client, site: HlsSite, tmp_path: Path) -> None:
    part = tmp_path / "video.part"
    part.write_bytes(b"x" * 5000)
    stale = HlsState(url=site.url("disc"), fingerprint="another-stream", segment=2, segments=4, offset=5000)
    out = downloader(client).download([site.url("disc")], part, previous=stale)
    assert out.sha256 == sha(site.streams["disc"].plain()) and out.resumed_from == 0


def test_the_state_beside_the_file_wins_over_a_heartbeat_of_another_stream(client: httpx.Client, site: HlsSite,
                                                                          tmp_path: Path) -> None:
    """The saved state describes the bytes on this disk; a heartbeat of the playlist's stream over
    another stream's bytes would splice the two."""
    url = site.url("disc")
    saved = HlsState(url=url, fingerprint="another-stream", segment=2, segments=4, offset=5000)
    assert fresher(HlsState(url=url, fingerprint="this", segment=3, segments=4, offset=7000), saved) is saved
    ahead = HlsState(url=url, fingerprint="another-stream", segment=3, segments=4, offset=7000)
    assert fresher(ahead, saved) is saved and fresher(ahead, None) is ahead
    # What a retry makes of it: the playlist's stream now is not the saved one, so it starts over.
    part = tmp_path / "video.part"
    part.write_bytes(b"x" * 5000)
    current = downloader(client).download([url], tmp_path / "probe.part")
    heartbeat = HlsState(url=url, fingerprint=load_hls_state(tmp_path / "probe.part").fingerprint, segment=2,
                         segments=4, offset=5000)
    save_state(part, saved)
    out = downloader(client).download([url], part, previous=heartbeat)
    assert out.sha256 == current.sha256 == sha(site.streams["disc"].plain()) and out.resumed_from == 0


def test_a_missing_segment_is_retried_by_the_policy_then_fails_as_segment_missing(
        client: httpx.Client, site: HlsSite, sim: Simulator, tmp_path: Path) -> None:
    sim.faults.add(r"/hls/disc/seg-2\.ts", status(404, times=3))
    part = tmp_path / "video.part"
    for attempt in (1, 2, 3):  # what the download policy does: attempts resume from the state file
        with pytest.raises(SegmentMissing) as caught:
            downloader(client).download([site.url("disc")], part)
        error = to_application_error(caught.value, attempt=attempt, stage_attempts=20)
        assert error.type == "segment_missing"
        assert error.non_retryable == (attempt == 3)
    assert "segment 3 of 4" in str(caught.value) and "HTTP 404" in str(caught.value)
    assert "never skips" in error.message
    # Each attempt asked for the missing segment once; the two before it were fetched once only.
    assert site.segment_requests("disc") == [1, 1, 3, 0]
    out = downloader(client).download([site.url("disc")], part)  # back at the origin: nothing skipped
    assert out.sha256 == sha(site.streams["disc"].plain())
    assert site.segment_requests("disc") == [1, 1, 4, 1]


def test_transient_segment_failures_are_asked_again_in_place(client: httpx.Client, site: HlsSite, sim: Simulator,
                                                             tmp_path: Path) -> None:
    sim.faults.add(r"/hls/aes/seg-1\.ts", status(503))
    sim.faults.add(r"/hls/aes/seg-2\.ts", reset())
    sim.faults.add(r"/hls/aes/seg-3\.ts", html_error())
    out = downloader(client).download([site.url("aes")], tmp_path / "video.part")
    assert out.sha256 == sha(site.streams["aes"].plain())
    assert site.segment_requests("aes") == [1, 2, 2, 2, 1]


def test_a_page_served_as_a_segment_fails_as_content_corrupt(client: httpx.Client, site: HlsSite, sim: Simulator,
                                                            tmp_path: Path) -> None:
    sim.faults.add(r"/hls/disc/seg-1\.ts", html_error(times=10))
    with pytest.raises(ContentCorrupt, match=r"segment 2 of 4 .* HTML page"):
        downloader(client, segment_retries=2).download([site.url("disc")], tmp_path / "video.part")
    assert site.segment_requests("disc") == [1, 3, 0, 0]
    assert (tmp_path / "video.part").stat().st_size == len(site.streams["disc"].segments[0])


def test_a_segment_refused_after_others_worked_is_an_expired_url(client: httpx.Client, site: HlsSite,
                                                                 sim: Simulator, tmp_path: Path) -> None:
    sim.faults.add(r"/hls/disc/seg-2\.ts", status(403, times=5))
    with pytest.raises(UrlExpired):
        downloader(client).download([site.url("disc")], tmp_path / "video.part")


def test_the_key_is_fetched_through_the_guarded_client(site: HlsSite, sim: Simulator, tmp_path: Path) -> None:
    port = sim.base_url.rsplit(":", 1)[1]
    stream = HlsStream([ts_segment("guarded")], key=bytes(16), key_uri=f"http://127.0.0.2:{port}/hls/aes/key.bin")
    url = site.add_stream("guarded", stream)
    with make_client(NetSettings(allowed_networks=["127.0.0.1/32"])) as guarded:  # the simulator only
        with pytest.raises(BlockedAddress, match="127.0.0.2"):
            downloader(guarded).download([url], tmp_path / "video.part")
    assert sim.stats["/hls/guarded/index.m3u8"].requests == 1 and site.segment_requests("guarded") == [0]


def test_a_live_playlist_is_refused_before_any_segment(client: httpx.Client, site: HlsSite, tmp_path: Path) -> None:
    with pytest.raises(UnsupportedUrl, match="live HLS stream") as caught:
        downloader(client).download([site.url("live")], tmp_path / "video.part")
    assert caught.value.error_class == "unsupported_url"
    assert site.segment_requests("live") == [0, 0, 0]


def test_without_ffmpeg_the_result_is_the_segments_concatenated(client: httpx.Client, site: HlsSite,
                                                                tmp_path: Path) -> None:
    out = downloader(client, ffmpeg=None).download([site.url("disc")], tmp_path / "video.part")
    assert out.path == str(tmp_path / "video.part") and sniff(Path(out.path).read_bytes()[:512]) == "mpegts"


@needs_ffmpeg
def test_ffmpeg_that_cannot_remux_keeps_the_concatenation(client: httpx.Client, site: HlsSite, tmp_path: Path) -> None:
    out = downloader(client, ffmpeg=FFMPEG).download([site.url("disc")], tmp_path / "video.part")  # synthetic packets
    assert out.path == str(tmp_path / "video.part") and out.sha256 == sha(site.streams["disc"].plain())
    assert not remux_output(tmp_path / "video.part").exists()


@needs_ffmpeg
@pytest.mark.parametrize("fmp4", [False, True], ids=["ts", "fmp4"])
def test_with_ffmpeg_a_real_stream_is_remuxed_to_mp4(client: httpx.Client, site: HlsSite, tmp_path: Path,
                                                     fmp4: bool) -> None:
    stream = real_stream(tmp_path / "made", fmp4=fmp4)
    url = site.add_stream("real", stream)
    part = tmp_path / "work" / "video.part"
    out = downloader(client, ffmpeg=FFMPEG).download([url], part)
    result = Path(out.path)
    assert result == remux_output(part) and not part.exists()
    assert out.mime == "video/mp4" and sniff(result.read_bytes()[:512]) == "mp4"
    assert out.sha256 == sha(result.read_bytes()) and out.size == result.stat().st_size
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration:stream=codec_type",
                            "-of", "default=nw=1:nk=1", str(result)], capture_output=True, text=True, check=True)
    lines = probe.stdout.split()
    assert {"video", "audio"} <= set(lines) and abs(float(lines[-1]) - 4.0) < 0.5
    # A retry after the answer was lost returns the same file without asking the origin again.
    again = downloader(client, ffmpeg=FFMPEG).download([url], part)
    assert (again.path, again.sha256) == (out.path, out.sha256)
    assert site.segment_requests("real") == [1] * len(stream.segments)


def test_a_rate_limited_stream_is_held_to_the_rate_and_stops_while_it_waits(client: httpx.Client, site: HlsSite,
                                                                          tmp_path: Path) -> None:
    """``download.limit_rate`` holds HLS segments too; the waits run on a fake clock (no wall-clock
    threshold), heartbeat, and notice a stop."""
    from tests.trawl.test_throttle import FakeClock
    from trawl.download.throttle import Throttle

    plain = site.streams["disc"].plain()
    rate = len(plain) // 4  # a tenth of a second in the bucket, then 3.9 s of waiting
    beats: list[HlsState] = []
    stop = {"now": False}
    hls = downloader(client, ffmpeg=None, limit_rate=rate, heartbeat=beats.append, should_stop=lambda: stop["now"])
    clock = FakeClock()
    hls.throttle = Throttle(rate, clock=clock, sleep=clock.sleep)
    out = hls.download([site.url("disc")], tmp_path / "video.part")
    assert out.sha256 == sha(plain)
    assert sum(clock.slept) == pytest.approx(3.9, abs=0.05)

    def stop_soon(seconds: float) -> None:
        clock.sleep(seconds)
        stop["now"] = True

    hls.throttle = Throttle(rate, clock=clock, sleep=stop_soon)
    with pytest.raises(Stopped):
        hls.download([site.url("range")], tmp_path / "other.part")


def test_a_partial_of_one_variant_is_never_resumed_with_another(client: httpx.Client, site: HlsSite,
                                                                  tmp_path: Path) -> None:
    """720p and 1080p of one master have the same shape; their segment paths tell them apart."""
    master, part = site.sim.url("/hls/vod/master.m3u8"), tmp_path / "video.part"
    stop = downloader(client, quality=720, should_stop=lambda: site.segment_requests("vod-720")[2] > 0)
    with pytest.raises(Stopped):
        stop.download([master], part)
    assert part.stat().st_size > 0
    out = downloader(client, quality=1080).download([master], part)
    assert out.resumed_from == 0 and out.sha256 == sha(site.streams["vod-1080"].plain())
    assert site.segment_requests("vod-1080") == [1] * 6


def test_a_key_refused_after_segments_worked_is_an_expired_url(client: httpx.Client, site: HlsSite, sim: Simulator,
                                                               tmp_path: Path) -> None:
    part = tmp_path / "video.part"
    with pytest.raises(Stopped):
        downloader(client, should_stop=lambda: site.segment_requests("aes")[1] > 0).download([site.url("aes")], part)
    sim.faults.add(r"/hls/aes/key\.bin", status(403, times=5))
    with pytest.raises(UrlExpired):  # the resumed attempt fetches the key again: its signature expired
        downloader(client).download([site.url("aes")], part)


def test_a_wrong_key_is_fetched_again_on_the_in_place_retry(client: httpx.Client, site: HlsSite, sim: Simulator,
                                                            tmp_path: Path) -> None:
    sim.faults.add(r"/hls/aes/key\.bin", html_error())
    out = downloader(client).download([site.url("aes")], tmp_path / "video.part")
    assert out.sha256 == sha(site.streams["aes"].plain())
    assert sim.stats["/hls/aes/key.bin"].requests == 2 and site.segment_requests("aes") == [1] * 5


def test_byte_ranges_adding_up_past_the_size_limit_are_refused_before_any_segment(
        client: httpx.Client, site: HlsSite, tmp_path: Path) -> None:
    size = len(site.streams["range"].plain())
    with pytest.raises(TooLarge, match="byte ranges add up"):
        HlsDownloader(client, max_file_size=size - 1).download([site.url("range")], tmp_path / "video.part")
    assert site.segment_requests("range") == [0] * 5


def test_a_playlist_over_its_cap_keeps_the_resumable_partial_file(client: httpx.Client, site: HlsSite,
                                                                   tmp_path: Path) -> None:
    part = tmp_path / "video.part"
    with pytest.raises(Stopped):
        downloader(client, should_stop=lambda: site.segment_requests("disc")[1] > 0).download([site.url("disc")], part)
    kept = part.read_bytes()
    site.streams["disc"] = HlsStream([b""] * (MAX_SEGMENTS + 1))  # the origin now names too many segments
    with pytest.raises(TooLarge, match="segments"):
        downloader(client).download([site.url("disc")], part)
    assert part.read_bytes() == kept and load_hls_state(part) is not None


def test_a_hung_ffmpeg_is_given_up_and_the_concatenation_kept(client: httpx.Client, site: HlsSite,
                                                              tmp_path: Path) -> None:
    hung = tmp_path / "ffmpeg"
    hung.write_text("#!/bin/sh\nexec sleep 30\n")
    hung.chmod(0o755)
    began = time.monotonic()
    out = downloader(client, ffmpeg=str(hung), remux_timeout=0.5).download([site.url("disc")],
                                                                             tmp_path / "video.part")
    assert time.monotonic() - began < 15
    assert out.path == str(tmp_path / "video.part") and out.sha256 == sha(site.streams["disc"].plain())
    assert not remux_output(tmp_path / "video.part").exists()


def secret_file(work: Path) -> Path:
    """A small real MPEG-TS file on this machine, standing for any file a worker can read."""
    assert FFMPEG is not None
    work.mkdir(parents=True, exist_ok=True)
    secret = work / "secret.ts"
    subprocess.run([FFMPEG, "-v", "error", "-f", "lavfi", "-i", "testsrc=size=32x32:rate=5", "-f", "lavfi", "-i",
                    "sine=frequency=440:sample_rate=8000", "-t", "2", "-c:v", "mpeg2video", "-c:a", "mp2",
                    str(secret)], check=True, capture_output=True, timeout=60)
    return secret


def test_an_id3_led_segment_is_refused_as_content_corrupt(client: httpx.Client, site: HlsSite,
                                                          tmp_path: Path) -> None:
    """A video stream's segment is MPEG-TS or fMP4: an ID3 tag (packed audio, or a playlist text
    dressed as MP3 for ffmpeg to follow) is not one."""
    url = site.add_stream("id3", HlsStream([ts_segment("id3-0"), id3_playlist_segment(["/etc/hostname"])]))
    with pytest.raises(ContentCorrupt, match=r"segment 2 of 2 .*ID3"):
        downloader(client, ffmpeg=None).download([url], tmp_path / "video.part")
    assert (tmp_path / "video.part").stat().st_size == len(ts_segment("id3-0"))


@needs_ffmpeg
def test_the_remux_reads_nothing_but_its_input(client: httpx.Client, tmp_path: Path) -> None:
    """Whatever the segment check let through, ffmpeg is told the input's format and may open
    only that one file: a concatenation that reads as a playlist never pulls in another file."""
    secret = secret_file(tmp_path / "host")
    part = tmp_path / "work" / "video.part"
    part.parent.mkdir()
    part.write_bytes(id3_playlist_segment([str(secret)]))
    out = remux_output(part)
    assert downloader(client, ffmpeg=FFMPEG)._remux(part, out, HlsState()) is False
    assert not out.exists() and not out.with_name(out.name + ".tmp").exists()


def test_ffmpeg_flooding_stderr_does_not_hang_the_remux(client: httpx.Client, site: HlsSite, tmp_path: Path) -> None:
    """ffmpeg's errors are drained while it runs: more than a pipe's 64 KiB of them must not block
    it until the remux timeout."""
    flooding = tmp_path / "ffmpeg"
    flooding.write_text("#!/bin/sh\nhead -c 204800 /dev/zero | tr '\\0' e >&2\nexit 1\n")
    flooding.chmod(0o755)
    timeout = 30.0
    began = time.monotonic()
    out = downloader(client, ffmpeg=str(flooding), remux_timeout=timeout).download([site.url("disc")],
                                                                                   tmp_path / "video.part")
    assert time.monotonic() - began < timeout  # failed on its own, not killed at the timeout
    assert out.path == str(tmp_path / "video.part") and out.sha256 == sha(site.streams["disc"].plain())
    assert not remux_output(tmp_path / "video.part").exists()


def test_a_playlist_is_parsed_only_after_a_heartbeat(client: httpx.Client, site: HlsSite, tmp_path: Path) -> None:
    """Parsing a playlist at its caps takes seconds: the heartbeat goes first. This one cannot be
    downloaded (a media sequence of -1 is no IV), which is the playlist's fault: parse_error."""
    url = site.add_stream("minus-one", HlsStream([ts_segment("m1")], key=bytes(16), media_sequence=-1))
    beats: list[HlsState] = []
    with pytest.raises(ParseError, match="media sequence -1") as caught:
        downloader(client, heartbeat=beats.append).download([url], tmp_path / "video.part")
    assert caught.value.error_class == "parse_error" and not caught.value.retryable
    assert beats and site.segment_requests("minus-one") == [0]
