"""The download activity with an HLS asset: heartbeats carry the next segment and the bytes before
it, a retry resumes from them, a missing segment leaves as ``segment_missing``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.exceptions import ApplicationError, CancelledError

from trawl.contracts import DiscardInput, DownloadInput
from tests.activities.test_download_activity import WORKFLOW_ID, client, harness  # noqa: F401 - fixture
from tests.trawl.test_hls_download import needs_ffmpeg, real_stream
from trawl.download import state_path
from trawl.download.hls import remux_output
from trawl.models import Asset
from trawl.simulator import Simulator
from trawl.simulator.faults import status
from trawl.simulator.hls_site import HlsStream, install_hls_site, ts_segment


def run(h, url: str):  # noqa: ANN001, ANN201 - the test module's Harness and the activity's result
    asset = Asset("video", "video", [url], protocol="hls")
    return h.env.run(h.activities.download, DownloadInput(WORKFLOW_ID, asset, "generic", url))


def cancel_at_segment(n: int):  # noqa: ANN201 - a heartbeat callback
    def on_beat(env, beat: dict[str, Any]) -> None:  # noqa: ANN001 - the ActivityEnvironment
        if beat["segment"] >= n:
            env.cancel()
    return on_beat


def test_heartbeats_carry_segments_and_a_retry_resumes_from_them(sim: Simulator, client: httpx.Client,  # noqa: F811
                                                                 tmp_path: Path) -> None:
    site = install_hls_site(sim)
    stream = HlsStream([ts_segment(f"act-{i}", 300) for i in range(8)], throttle_bps=1_500_000)
    url = site.add_stream("act", stream)
    first = harness(client, tmp_path / "work", on_beat=cancel_at_segment(3))
    with pytest.raises(CancelledError) as caught:
        run(first, url)
    kept = caught.value.details[0]["offset"]
    last = first.beats[-1]
    assert (last["protocol"], last["segment"], last["segments"]) == ("hls", 3, 8)
    assert kept == last["offset"] == 3 * len(stream.segments[0]) == first.part.stat().st_size
    # The item hears the kept bytes (the SDK drops a cancelled activity's details).
    assert first.reports[-1][1]["bytes_done"] == kept
    state_path(first.part).unlink()  # only the heartbeat says where to go on
    retry = harness(client, tmp_path / "work", attempt=2, heartbeat_details=[last])
    result = run(retry, url)
    assert result.resumed_from == kept and result.sha256 and result.size == len(stream.plain())
    assert Path(result.path).read_bytes() == stream.plain()
    assert site.segment_requests("act") == [1] * 8  # stopped between segments: nothing fetched twice


def test_a_missing_segment_is_an_application_error_retried_a_few_attempts(sim: Simulator,
                                                                          client: httpx.Client,  # noqa: F811
                                                                          tmp_path: Path) -> None:
    site = install_hls_site(sim)
    sim.faults.add(r"/hls/disc/seg-1\.ts", status(404, times=10))
    for attempt, final in ((1, False), (3, True)):
        h = harness(client, tmp_path / "work", attempt=attempt, max_attempts=20)
        with pytest.raises(ApplicationError) as caught:
            run(h, site.url("disc"))
        assert (caught.value.type, caught.value.non_retryable) == ("segment_missing", final)


def test_discard_removes_what_an_hls_download_left(client: httpx.Client, tmp_path: Path) -> None:  # noqa: F811
    h = harness(client, tmp_path / "work")
    h.part.parent.mkdir(parents=True)
    for path in (h.part, state_path(h.part), remux_output(h.part)):
        path.write_bytes(b"x")
    h.env.run(h.activities.discard, DiscardInput(WORKFLOW_ID, ["video"]))
    assert list(h.part.parent.glob("video*")) == []


@needs_ffmpeg
@pytest.mark.parametrize("ffmpeg_on_path", [True, False], ids=["ffmpeg", "no-ffmpeg"])
def test_the_stream_is_remuxed_to_mp4_only_where_ffmpeg_is_installed(
        sim: Simulator, client: httpx.Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        ffmpeg_on_path: bool) -> None:
    site = install_hls_site(sim)
    stream = real_stream(tmp_path / "made")
    url = site.add_stream("real", stream)
    if not ffmpeg_on_path:
        monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # the worker finds no ffmpeg
    h = harness(client, tmp_path / "work")
    result = run(h, url)
    if ffmpeg_on_path:
        assert (result.path, result.mime) == (str(remux_output(h.part)), "video/mp4")
        assert Path(result.path).read_bytes()[4:8] == b"ftyp" and not h.part.exists()
    else:
        assert (result.path, result.mime) == (str(h.part), "video/mp2t")
        assert Path(result.path).read_bytes() == stream.plain()
