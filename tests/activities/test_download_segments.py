"""The download activity with segments: heartbeats carry every segment, progress and a cancel
count the bytes done across them, and a retry resumes each segment from the heartbeat."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.exceptions import CancelledError
from temporalio.testing import ActivityEnvironment

from trawl.activities import download as download_activity
from trawl.activities.download import DownloadActivities
from trawl.contracts import DownloadInput
from trawl.download import file_sha256, state_path
from trawl.models import Asset
from trawl.settings import DownloadSettings
from trawl.simulator import FileBehaviour, MediaFile, Simulator

WORKFLOW_ID = "url-segments-test"
SIZE = 3 * 1024 * 1024
SETTINGS = DownloadSettings(segments=2, segments_by_platform={"bilibili": 3}, segment_min_size=1024 * 1024,
                            split_after="0s")


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as c:
        yield c


def run(client: httpx.Client, work: Path, url: str, *, platform: str = "bilibili", details: list[Any] | None = None,
        cancel_at: int | None = None, settings: DownloadSettings = SETTINGS,
        ) -> tuple[Any, list[dict[str, Any]], list[dict[str, Any]]]:
    reports: list[dict[str, Any]] = []
    activities = DownloadActivities(client, work, settings, timedelta(seconds=60),
                                    progress=lambda wid, report: reports.append(report))
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, activity_type="download", workflow_id=WORKFLOW_ID,
                                   heartbeat_details=details or [], heartbeat_timeout=timedelta(seconds=10))
    beats: list[dict[str, Any]] = []

    def heartbeat(*d: Any) -> None:
        beats.append(d[0])
        if cancel_at is not None and d[0]["offset"] >= cancel_at:
            env.cancel()

    env.on_heartbeat = heartbeat
    asset = Asset("video", "video", [url])
    try:
        result = env.run(activities.download, DownloadInput(WORKFLOW_ID, asset, platform, url))
    except CancelledError as cancelled:
        result = cancelled
    return result, beats, reports


def test_segments_per_platform_and_heartbeats_with_every_segment(sim: Simulator, client: httpx.Client,
                                                                  tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(download_activity, "REPORT_AFTER_S", 0.0)  # reports from the start, as a long download's
    media = MediaFile("mp4", "activity-seg", SIZE)
    # Slow enough for several checkpoints (each at least 0.5 s apart).
    how = sim.add_file("/a.mp4", media, FileBehaviour(throttle_bps=600_000))
    result, beats, reports = run(client, tmp_path / "work", sim.url("/a.mp4"))
    assert result.connections == 3 and result.sha256 == media.sha256() == file_sha256(Path(result.path))
    assert all(len(b["segments"]) == 3 and b["offset"] == sum(s[2] for s in b["segments"]) for b in beats)
    done = [r["bytes_done"] for r in reports]
    assert done == sorted(done) and done[-1] < SIZE and len(done) >= 2  # none at completion
    how.throttle_bps = None
    result, _, _ = run(client, tmp_path / "other", sim.url("/a.mp4"), platform="weibo")
    assert result.connections == 2  # the default for platforms without their own number


def test_a_throttled_download_splits_with_the_default_split_after(sim: Simulator, client: httpx.Client,
                                                                 tmp_path: Path) -> None:
    media = MediaFile("mp4", "activity-throttled", SIZE)
    # 5 s over one connection: judged slow at once, long before split_after (2 s) has passed.
    sim.add_file("/t.mp4", media, FileBehaviour(throttle_bps=600_000))
    settings = DownloadSettings(segments=4, segment_min_size=1024 * 1024)
    result, beats, _ = run(client, tmp_path / "work", sim.url("/t.mp4"), platform="weibo", settings=settings)
    assert result.connections == 4 and result.sha256 == media.sha256() == file_sha256(Path(result.path))
    assert sim.stats["/t.mp4"].ranges[0] == "bytes=0-" and len(sim.stats["/t.mp4"].ranges) == 4
    assert beats[-1]["segments"] and all(s[2] == s[1] - s[0] for s in beats[-1]["segments"])


def test_a_cancel_counts_the_bytes_of_every_segment_and_a_retry_resumes_each(sim: Simulator, client: httpx.Client,
                                                                             tmp_path: Path) -> None:
    media = MediaFile("mp4", "activity-cancel", SIZE)
    sim.add_file("/c.mp4", media, FileBehaviour(throttle_bps=1_000_000))
    cancelled, beats, _ = run(client, tmp_path / "work", sim.url("/c.mp4"), cancel_at=SIZE // 4)
    assert isinstance(cancelled, CancelledError)
    (details,) = cancelled.details
    last = beats[-1]
    assert details["offset"] == last["offset"] == sum(s[2] for s in last["segments"]) > 0
    (part,) = (tmp_path / "work").rglob("video.part")
    state_path(part).unlink()  # only the heartbeat details say where each segment stands
    before = len(sim.stats["/c.mp4"].ranges)
    result, _, _ = run(client, tmp_path / "work", sim.url("/c.mp4"), details=[last])
    assert result.sha256 == media.sha256() and result.resumed_from == last["offset"]
    wanted = {f"bytes={s + d}-{e - 1}" for s, e, d in last["segments"] if s + d < e}
    assert set(sim.stats["/c.mp4"].ranges[before:]) == wanted
