"""The verify activity on real media: which duration a file is checked against (ffprobe installed)."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from trawl.activities.verify import VerifyActivities
from trawl.contracts import DownloadResult, VerifyInput
from trawl.download import file_sha256
from trawl.models import Asset
from trawl.simulator.media import SAMPLES

pytestmark = pytest.mark.skipif(shutil.which("ffprobe") is None,
                                reason="ffprobe is not installed (.ci/run installs it)")


def _verify(tmp_path: Path, asset_duration: float | None, item_duration: float = 180.0) -> None:
    """Verify the first of two 90 s segments of a video the platform says lasts ``item_duration``."""
    path = tmp_path / "video-1.part"
    shutil.copyfile(SAMPLES / "bilibili-p2-1.flv", path)
    download = DownloadResult("video-1", str(path), path.stat().st_size, file_sha256(path), "https://cdn/1")
    asset = Asset("video-1", "video", [download.url], duration=asset_duration)
    ActivityEnvironment().run(VerifyActivities(timedelta(seconds=1)).verify,
                              VerifyInput(asset, download, "bilibili", "https://example/v", item_duration))


def test_a_segment_is_checked_against_its_own_length(tmp_path: Path) -> None:
    _verify(tmp_path, 90.0)
    _verify(tmp_path, 0.0)  # a segment whose length the platform does not give: nothing to check
    with pytest.raises(ApplicationError, match="lasts 90.1 s, the platform says 60.0 s"):
        _verify(tmp_path, 60.0)


def test_a_file_without_its_own_length_is_checked_against_the_item(tmp_path: Path) -> None:
    with pytest.raises(ApplicationError, match="lasts 90.1 s, the platform says 180.0 s"):
        _verify(tmp_path, None)
    _verify(tmp_path, None, item_duration=90.0)
