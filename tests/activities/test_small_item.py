"""small_item's attempts (download, verify and commit of an item in one activity): a file an attempt
downloaded and verified is not downloaded again by the next one, whether it still waits beside its
partial file or a failed commit already put it into the store; a cover that fails for now does not
hold the video back. Real activities, a real catalog, real files, the simulator on loopback."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from trawl.activities.small import SmallItemActivities
from tests.activities import one_activity_parts
from trawl.contracts import SmallItemInput
from trawl.download import verified_path
from trawl.errors import ContentCorrupt
from trawl.models import Asset, Resolved
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.storage.blobs import LocalBlobStore
from trawl.storage.catalog import Catalog

VIDEO = MediaFile("mp4", "one-activity-video", 300_000)
COVER = MediaFile("jpeg", "one-activity-cover", 20_000)
WORKFLOW_ID = "item-one-activity"


class FailingOnceAfterPut(LocalBlobStore):
    """A store whose first put moves the file in and then fails (a commit that fails after its
    put: the partial file is gone, the blob is there)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.failures = 1

    def put(self, source: Path, sha256: str, size: int) -> str:
        key = super().put(source, sha256, size)
        if self.failures:
            self.failures -= 1
            raise OSError("the store went away after the put")
        return key


@pytest.fixture
def small(tmp_path: Path, catalog: Catalog) -> Iterator[tuple[SmallItemActivities, FailingOnceAfterPut]]:
    store = FailingOnceAfterPut(tmp_path / "blobs")
    with httpx.Client() as http:
        yield one_activity_parts(http, catalog, store, tmp_path / "work"), store


def attempt(number: int, run: str = "run-1") -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, activity_type="small_item", workflow_id=WORKFLOW_ID, attempt=number,
                                   workflow_run_id=run, heartbeat_timeout=timedelta(seconds=10))
    return env


def item(sim: Simulator, *assets: Asset) -> SmallItemInput:
    resolved = Resolved("web:one-activity", sim.url("/p/one-activity"), "generic", list(assets), title="one")
    return SmallItemInput(WORKFLOW_ID, resolved.canonical_url, resolved, stage_attempts=10)


def test_a_retry_after_a_commit_failed_past_its_put_commits_without_a_download(
        sim: Simulator, catalog: Catalog, small: tuple[SmallItemActivities, FailingOnceAfterPut]) -> None:
    activities, store = small
    sim.add_file("/v.mp4", VIDEO)
    inp = item(sim, Asset("video", "video", [sim.url("/v.mp4")], expected_size=VIDEO.size))
    with pytest.raises(ApplicationError) as failed:
        attempt(1).run(activities.small_item, inp)
    assert failed.value.type == "storage_error" and not failed.value.non_retryable
    part = activities.downloads.part_path(WORKFLOW_ID, "video")
    assert not part.exists() and verified_path(part).exists()  # in the store, its record kept
    result = attempt(2).run(activities.small_item, inp)
    assert result.outcome == "committed" and [a.sha256 for a in result.assets] == [VIDEO.sha256()]
    assert sim.stats["/v.mp4"].bytes_sent == VIDEO.size  # served once
    stored = catalog.get("web:one-activity")
    assert stored is not None and store.exists(stored.assets[0].key)
    assert not part.parent.exists()  # the commit removed the item's work directory, record and all


def test_a_record_whose_file_is_gone_everywhere_is_dropped_and_the_file_downloaded_again(
        sim: Simulator, small: tuple[SmallItemActivities, FailingOnceAfterPut]) -> None:
    activities, store = small
    store.failures = 0
    sim.add_file("/v.mp4", VIDEO)
    inp = item(sim, Asset("video", "video", [sim.url("/v.mp4")], expected_size=VIDEO.size))
    part = activities.downloads.part_path(WORKFLOW_ID, "video")
    part.parent.mkdir(parents=True)
    verified_path(part).write_text('{"run": "run-1", "download": {"asset_name": "video", "path": "%s", '
                                   '"size": 300000, "sha256": "%s", "url": "x"}, "mime": "video/mp4"}'
                                   % (part, "ab" * 32))
    result = attempt(1).run(activities.small_item, inp)
    assert [a.sha256 for a in result.assets] == [VIDEO.sha256()]
    assert sim.stats["/v.mp4"].bytes_sent == VIDEO.size


class CorruptOnce(LocalBlobStore):
    """A store that finds the bytes are not what verify hashed, once (a copy that hashes on the way)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.corrupt = 1

    def put(self, source: Path, sha256: str, size: int) -> str:
        if self.corrupt:
            self.corrupt -= 1
            raise ContentCorrupt(f"{source.name}: the bytes stored do not hash to {sha256[:12]}")
        return super().put(source, sha256, size)


def test_bytes_the_commit_finds_corrupt_are_downloaded_again_not_taken_from_the_record(
        sim: Simulator, catalog: Catalog, tmp_path: Path) -> None:
    sim.add_file("/v.mp4", VIDEO)
    inp = item(sim, Asset("video", "video", [sim.url("/v.mp4")], expected_size=VIDEO.size))
    with httpx.Client() as http:
        activities = one_activity_parts(http, catalog, CorruptOnce(tmp_path / "blobs"), tmp_path / "work")
        with pytest.raises(ApplicationError) as failed:
            attempt(1).run(activities.small_item, inp)
        assert failed.value.type == "content_corrupt"
        part = activities.downloads.part_path(WORKFLOW_ID, "video")
        assert not part.exists() and not verified_path(part).exists()
        result = attempt(1).run(activities.small_item, inp)  # the workflow's next activity
    assert [a.sha256 for a in result.assets] == [VIDEO.sha256()]
    assert sim.stats["/v.mp4"].bytes_sent == 2 * VIDEO.size


def test_a_record_of_another_run_is_not_trusted(
        sim: Simulator, small: tuple[SmallItemActivities, FailingOnceAfterPut]) -> None:
    """A failed run keeps its files (a re-crawl of the URL resumes from them, checked against the
    server): its records must not make the next run commit those bytes unasked."""
    activities, store = small
    store.failures = 0
    old, new = MediaFile("mp4", "one-activity-old", VIDEO.size), VIDEO
    sim.add_file("/v.mp4", old)
    inp = item(sim, Asset("video", "video", [sim.url("/v.mp4")], expected_size=VIDEO.size))
    part = activities.downloads.part_path(WORKFLOW_ID, "video")
    store.failures = 1
    with pytest.raises(ApplicationError):  # run 1: downloaded and verified, then its commit fails (it ends so)
        attempt(1, run="run-1").run(activities.small_item, inp)
    assert verified_path(part).exists()
    sim.add_file("/v.mp4", new)  # the platform changed the file since
    result = attempt(1, run="run-2").run(activities.small_item, inp)
    assert [a.sha256 for a in result.assets] == [new.sha256()]


def test_a_cover_failing_for_now_lets_the_video_download_and_the_next_attempt_tries_it_alone(
        sim: Simulator, small: tuple[SmallItemActivities, FailingOnceAfterPut]) -> None:
    activities, store = small
    store.failures = 0
    cover = FileBehaviour()
    sim.add_file("/v.mp4", VIDEO)
    sim.add_file("/c.jpg", COVER, cover)
    sim.faults.rule(r"/c\.jpg").failure_rate = 1.0  # 503 until the rule goes
    inp = item(sim, Asset("video", "video", [sim.url("/v.mp4")], expected_size=VIDEO.size),
               Asset("cover", "thumbnail", [sim.url("/c.jpg")]))
    with pytest.raises(ApplicationError) as failed:
        attempt(1).run(activities.small_item, inp)
    assert failed.value.type == "http_5xx"  # the cover's, raised once the video was done
    assert sim.stats["/v.mp4"].bytes_sent == VIDEO.size
    sim.faults.rule(r"/c\.jpg").failure_rate = 0.0
    result = attempt(2).run(activities.small_item, inp)
    assert sorted((a.name, a.sha256) for a in result.assets) == [("cover", COVER.sha256()), ("video", VIDEO.sha256())]
    assert sim.stats["/v.mp4"].bytes_sent == VIDEO.size  # the second attempt took the cover alone
