"""The download activity in an ActivityEnvironment, against the simulator over loopback.

What the worker does around ``HttpDownloader``: heartbeats carrying the resume state, a retry that
resumes from the last heartbeat's details, cancellation and worker shutdown polled at heartbeats
(the partial file is kept), and failures classified into ApplicationErrors.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.testing import ActivityEnvironment

from trawl.activities import download as download_activity
from trawl.activities.download import PROGRESS_STEPS, DownloadActivities
from trawl.contracts import DownloadInput
from trawl.download import ResumeState, file_sha256, load_state, save_state, state_path
from trawl.models import Asset
from trawl.settings import DownloadSettings
from trawl.simulator import FileBehaviour, MediaFile, Simulator

WORKFLOW_ID = "url-activity-test"
SIZE = 1_500_000
# Bytes/s: the transfer spans several of the downloader's 0.2 s heartbeats, even when this
# process is descheduled for a while on a loaded machine (the server paces by its own clock).
THROTTLE = 1_000_000


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as c:
        yield c


@dataclasses.dataclass
class Harness:
    """A DownloadActivities on a temporary work dir, in an ActivityEnvironment that records heartbeats."""

    activities: DownloadActivities
    env: ActivityEnvironment
    beats: list[dict[str, Any]]
    reports: list[tuple[str, dict[str, Any]]]

    def run(self, url: str, size: int | None = SIZE, started_s_ago: float = 0.0):
        asset = Asset("video", "video", [url], expected_size=size)
        # The attempt started now, or that long ago (an earlier download of the same activity).
        started = datetime.now(timezone.utc) - timedelta(seconds=started_s_ago)
        self.env.info = dataclasses.replace(self.env.info, started_time=started)
        return self.env.run(self.activities.download, DownloadInput(WORKFLOW_ID, asset, "generic", url))

    @property
    def part(self) -> Path:
        return self.activities.part_path(WORKFLOW_ID, "video")


def harness(client: httpx.Client, work: Path, *, attempt: int = 1, heartbeat_details: list[Any] | None = None,
            on_beat=None, max_attempts: int = 0,  # noqa: ANN001 - a callback
            heartbeat_timeout: timedelta = timedelta(seconds=10)) -> Harness:
    reports: list[tuple[str, dict[str, Any]]] = []
    activities = DownloadActivities(client, work, DownloadSettings(), timedelta(seconds=60), max_attempts,
                                    progress=lambda wid, report: reports.append((wid, report)))
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, activity_type="download", workflow_id=WORKFLOW_ID, attempt=attempt,
                                   heartbeat_details=heartbeat_details or [],
                                   heartbeat_timeout=heartbeat_timeout)
    beats: list[dict[str, Any]] = []

    def heartbeat(*details: Any) -> None:
        beats.append(details[0])
        if on_beat is not None:
            on_beat(env, details[0])

    env.on_heartbeat = heartbeat
    return Harness(activities, env, beats, reports)


def cancel_once_started(env: ActivityEnvironment, beat: dict[str, Any]) -> None:
    if beat["offset"] > 0:
        env.cancel()


def test_heartbeats_carry_the_resume_state_as_the_offset_grows(sim: Simulator, client: httpx.Client,
                                                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(download_activity, "REPORT_AFTER_S", 0.0)  # reports from the start: this one lasts 1.5 s
    media = MediaFile("mp4", "beats", SIZE)
    sim.add_file("/beats.mp4", media, FileBehaviour(throttle_bps=THROTTLE))
    h = harness(client, tmp_path / "work")
    result = h.run(sim.url("/beats.mp4"))
    assert (result.size, result.sha256, result.resumed_from) == (SIZE, media.sha256(), 0)
    offsets = [beat["offset"] for beat in h.beats]
    assert offsets == sorted(offsets) and offsets[0] < SIZE == offsets[-1]
    # Every heartbeat is the whole resume state a retry on another worker needs.
    assert all((b["url"], b["total"], b["etag"]) == (sim.url("/beats.mp4"), SIZE, media.etag) for b in h.beats)
    # The item hears about it at coarse steps only (each report is a signal in its history).
    assert 2 <= len(h.reports) <= PROGRESS_STEPS + 1 and {wid for wid, _ in h.reports} == {WORKFLOW_ID}
    done = [r["bytes_done"] for _, r in h.reports]
    # None at completion: the activity's result tells the item just after.
    assert done == sorted(done) and done[-1] < SIZE and h.reports[-1][1]["bytes_total"] == SIZE


def test_a_download_heartbeats_once_its_activity_has_run_a_while(sim: Simulator, client: httpx.Client,
                                                                 tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK sends an activity's first heartbeat to the server at once: a download that ends
    within FIRST_BEAT_AFTER_S of its activity's start (every tiny item's) sends none, its resume
    state on disk all the same; a longer one sends its first after that long, and every one after."""
    monkeypatch.setattr(download_activity, "FIRST_BEAT_AFTER_S", 60.0)  # however loaded the machine
    small = MediaFile("mp4", "quick", 2_000)
    sim.add_file("/quick.mp4", small)
    quick = harness(client, tmp_path / "quick", heartbeat_timeout=timedelta(minutes=10))
    assert quick.run(sim.url("/quick.mp4"), size=2_000).sha256 == small.sha256()
    assert quick.beats == []
    assert (saved := load_state(quick.part)) is not None and saved.offset == 2_000

    delay = 0.6
    monkeypatch.setattr(download_activity, "FIRST_BEAT_AFTER_S", delay)
    sim.add_file("/long.mp4", MediaFile("mp4", "long", SIZE), FileBehaviour(throttle_bps=THROTTLE))  # 1.5 s
    beats: list[tuple[float, int]] = []
    long = harness(client, tmp_path / "long", on_beat=lambda env, beat: beats.append((time.monotonic(), beat["offset"])))
    began = time.monotonic()
    long.run(sim.url("/long.mp4"))
    # (The quiet second is timed from the attempt's start by the wall clock, the beats here by
    # the monotonic one: a few milliseconds either way.)
    assert beats and beats[0][0] - began >= delay - 0.05 and beats[-1][1] == SIZE, (began, beats)


def test_a_download_after_the_first_second_of_its_activity_heartbeats_at_once(
        sim: Simulator, client: httpx.Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """small_item downloads a cover, verifies it, then the video, in one activity: the quiet
    second is the activity's, not each download's, so its stages never add up to a silence."""
    monkeypatch.setattr(download_activity, "FIRST_BEAT_AFTER_S", 1.0)
    sim.add_file("/later.mp4", MediaFile("mp4", "later", 2_000))
    h = harness(client, tmp_path / "work")
    h.run(sim.url("/later.mp4"), size=2_000, started_s_ago=5.0)
    assert h.beats and h.beats[-1]["offset"] == 2_000  # (a stalled machine may beat mid-body too)


def test_a_short_heartbeat_timeout_brings_the_first_heartbeat_forward(sim: Simulator, client: httpx.Client,
                                                                      tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A quarter of the heartbeat timeout at most: the server must hear from the download well
    before it would time the activity out."""
    monkeypatch.setattr(download_activity, "FIRST_BEAT_AFTER_S", 60.0)
    sim.add_file("/soon.mp4", MediaFile("mp4", "soon", 2_000))
    h = harness(client, tmp_path / "work", heartbeat_timeout=timedelta(seconds=2))
    # Half a second into its attempt (a resolve before it): a quarter of 2 s has passed.
    h.run(sim.url("/soon.mp4"), size=2_000, started_s_ago=0.5)
    assert h.beats and h.beats[-1]["offset"] == 2_000


def test_a_retry_trusts_the_state_beside_the_file_over_a_heartbeat_of_another_version(
        sim: Simulator, client: httpx.Client, tmp_path: Path) -> None:
    """The saved state describes the bytes on this disk; a heartbeat may describe another host's
    file or an attempt before a restart. Resuming this file's bytes under the heartbeat's version
    would splice two versions into one file once the server serves that version again."""
    media = MediaFile("mp4", "served", SIZE)
    sim.add_file("/v.mp4", media)
    url = sim.url("/v.mp4")
    h = harness(client, tmp_path / "work", attempt=3,
                heartbeat_details=[{"offset": 600_000, "total": SIZE, "etag": media.etag, "url": url}])
    # On disk: 400 kB of another version of the file, recorded as such.
    h.part.parent.mkdir(parents=True)
    h.part.write_bytes(b"x" * 400_000)
    save_state(h.part, ResumeState(offset=400_000, total=SIZE, etag='"another-version"', url=url))
    result = h.run(url)
    assert result.sha256 == media.sha256() == file_sha256(Path(result.path))
    assert result.resumed_from == 0


def test_a_download_shorter_than_the_report_delay_tells_the_item_nothing(sim: Simulator, client: httpx.Client,
                                                                        tmp_path: Path) -> None:
    """Each report is a signal and a workflow task: one of a size the item knows that ends within
    REPORT_AFTER_S sends none, its heartbeats still carry every offset."""
    assert SIZE / THROTTLE < download_activity.REPORT_AFTER_S
    media = MediaFile("mp4", "short", SIZE)
    sim.add_file("/short.mp4", media, FileBehaviour(throttle_bps=THROTTLE))
    h = harness(client, tmp_path / "work")
    assert h.run(sim.url("/short.mp4")).sha256 == media.sha256()
    assert len(h.beats) >= 3 and h.reports == []


def test_a_download_of_a_size_the_item_does_not_know_reports_at_once(sim: Simulator, client: httpx.Client,
                                                                     tmp_path: Path) -> None:
    """Its server's size is how the item learns its total (trawl.workflows.progress)."""
    sim.add_file("/unsized.mp4", MediaFile("mp4", "unsized", SIZE), FileBehaviour(throttle_bps=THROTTLE))
    h = harness(client, tmp_path / "work")
    h.run(sim.url("/unsized.mp4"), size=None)
    assert h.reports and h.reports[0][1]["bytes_total"] == SIZE


def test_a_step_passed_before_the_report_delay_is_told_at_the_first_heartbeat_after(
        sim: Simulator, client: httpx.Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    delay = 0.7
    monkeypatch.setattr(download_activity, "REPORT_AFTER_S", delay)
    media = MediaFile("mp4", "late", SIZE)
    sim.add_file("/late.mp4", media, FileBehaviour(throttle_bps=THROTTLE))
    beats: list[tuple[float, int]] = []
    h = harness(client, tmp_path / "work", on_beat=lambda env, beat: beats.append((time.monotonic(), beat["offset"])))
    sent: list[tuple[float, int]] = []
    sink = h.activities.progress
    h.activities.progress = lambda wid, report: (sent.append((time.monotonic(), report["bytes_done"])),
                                                 sink(wid, report))
    reporters: list[download_activity.ProgressReporter] = []

    class Kept(download_activity.ProgressReporter):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            reporters.append(self)

    monkeypatch.setattr(download_activity, "ProgressReporter", Kept)
    h.run(sim.url("/late.mp4"))
    assert sent and len(sent) <= PROGRESS_STEPS, sent
    first_at, first_bytes = sent[0]
    quiet_until = reporters[0].quiet_until
    assert first_at >= quiet_until
    # Sent with a heartbeat (the one just before it, at the same offset), the first one after the
    # delay: none came between the delay's end and it.
    before = [beat for beat in beats if beat[0] <= first_at]
    assert before[-1][1] == first_bytes > 0
    assert not [at for at, _ in before[:-1] if at >= quiet_until], (quiet_until, beats, sent)


def test_cancellation_stops_at_a_heartbeat_and_keeps_the_partial_file(sim: Simulator, client: httpx.Client,
                                                                      tmp_path: Path) -> None:
    media = MediaFile("mp4", "cancelled", SIZE)
    sim.add_file("/c.mp4", media, FileBehaviour(throttle_bps=THROTTLE))
    h = harness(client, tmp_path / "work", on_beat=cancel_once_started)
    with pytest.raises(CancelledError) as caught:
        h.run(sim.url("/c.mp4"))
    (details,) = caught.value.details
    kept = details["offset"]
    assert 0 < kept < SIZE
    assert h.part.stat().st_size == kept == h.beats[-1]["offset"]  # what is recorded is what is on disk
    assert load_state(h.part).offset == kept
    assert h.part.read_bytes() == media.read(0, kept)


def test_a_retry_resumes_from_the_last_heartbeat_with_a_range_request(sim: Simulator, client: httpx.Client,
                                                                      tmp_path: Path) -> None:
    media = MediaFile("mp4", "resumed", SIZE)
    sim.add_file("/r.mp4", media, FileBehaviour(throttle_bps=THROTTLE))
    first = harness(client, tmp_path / "work", on_beat=cancel_once_started)
    with pytest.raises(CancelledError):
        first.run(sim.url("/r.mp4"))
    last = first.beats[-1]
    # Only the heartbeat details say where to resume: the state file beside the part is gone.
    state_path(first.part).unlink()
    retry = harness(client, tmp_path / "work", attempt=2, heartbeat_details=[last])
    result = retry.run(sim.url("/r.mp4"))
    assert result.resumed_from == last["offset"] and result.transferred == SIZE - last["offset"]
    assert result.sha256 == media.sha256() == file_sha256(Path(result.path))
    assert sim.stats["/r.mp4"].ranges == [None, f"bytes={last['offset']}-"]
    assert retry.beats[0]["offset"] >= last["offset"]  # heartbeats go on from there, not from zero


def test_worker_shutdown_stops_with_a_retryable_error_and_keeps_the_partial_file(
        sim: Simulator, client: httpx.Client, tmp_path: Path) -> None:
    sim.add_file("/s.mp4", MediaFile("mp4", "shutdown", SIZE), FileBehaviour(throttle_bps=THROTTLE))

    def shut_down(env: ActivityEnvironment, beat: dict[str, Any]) -> None:
        if beat["offset"] > 0:
            env.worker_shutdown()

    h = harness(client, tmp_path / "work", on_beat=shut_down)
    with pytest.raises(ApplicationError) as caught:
        h.run(sim.url("/s.mp4"))
    assert caught.value.type == "worker_shutdown" and not caught.value.non_retryable
    assert 0 < h.part.stat().st_size == h.beats[-1]["offset"] < SIZE


@pytest.mark.parametrize(("status", "attempt", "error_class", "final"), [
    (503, 1, "http_5xx", False),  # retried by the stage's policy
    (503, 3, "http_5xx", True),  # final at the stage's attempt limit (3 here)
    (404, 1, "not_found", True),  # never retried
])
def test_failures_leave_classified(sim: Simulator, client: httpx.Client, tmp_path: Path, status: int,
                                   attempt: int, error_class: str, final: bool) -> None:
    how = sim.add_file("/f.mp4", MediaFile("mp4", "failing", SIZE))
    how.statuses.append(status)
    h = harness(client, tmp_path / "work", attempt=attempt, max_attempts=3)
    with pytest.raises(ApplicationError) as caught:
        h.run(sim.url("/f.mp4"))
    assert (caught.value.type, caught.value.non_retryable) == (error_class, final)


def test_a_403_on_a_url_that_worked_before_is_url_expired(sim: Simulator, client: httpx.Client,
                                                          tmp_path: Path) -> None:
    """Signed media URLs expire: a retry that finds its URL refused asks the workflow for fresh ones."""
    media = MediaFile("mp4", "signed", SIZE)
    how = sim.add_file("/signed.mp4", media, FileBehaviour(throttle_bps=THROTTLE))
    first = harness(client, tmp_path / "work", on_beat=cancel_once_started)
    with pytest.raises(CancelledError):
        first.run(sim.url("/signed.mp4"))
    how.statuses.append(403)
    retry = harness(client, tmp_path / "work", attempt=2, heartbeat_details=[first.beats[-1]])
    with pytest.raises(ApplicationError) as caught:
        retry.run(sim.url("/signed.mp4"))
    assert (caught.value.type, caught.value.non_retryable) == ("url_expired", True)
    assert retry.part.stat().st_size == first.beats[-1]["offset"]  # the bytes stay for the fresh URL
