"""An item's progress book (trawl.workflows.progress), outside a workflow: the total of sizes the
platform did not give counts every asset whose size is known, reported or finished."""

from __future__ import annotations

import types

import pytest

from trawl.contracts import DownloadProgress
from trawl.workflows import progress as progress_module
from trawl.workflows.progress import ProgressBook

MiB = 1024 * 1024


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    lines: list[str] = []
    monkeypatch.setattr(progress_module, "workflow", types.SimpleNamespace(set_current_details=lines.append))
    return lines


def test_an_asset_that_ended_before_reporting_counts_in_the_total(shown: list[str]) -> None:
    book = ProgressBook()
    book.known_total(None)  # the platform gave no sizes
    book.show("download")
    book.reported(DownloadProgress("video", 4 * MiB, 40 * MiB))
    book.downloaded("audio", 2 * MiB)  # a short download: no report
    assert (book.progress.bytes_done, book.progress.bytes_total) == (6 * MiB, 42 * MiB)
    book.verified("audio", 2 * MiB)
    book.show("download")
    assert shown[-1].startswith("download 14% 6.0/42.0 MiB"), shown[-1]
    book.downloaded("video", 40 * MiB)
    book.verified("video", 40 * MiB)
    assert book.progress.bytes_done == book.progress.bytes_total == 42 * MiB


def test_sizes_the_platform_gave_stay_the_total(shown: list[str]) -> None:
    book = ProgressBook()
    book.known_total(50 * MiB)
    book.downloaded("audio", 2 * MiB)
    book.verified("audio", 2 * MiB)
    assert book.progress.bytes_total == 50 * MiB


def test_a_small_item_done_in_one_step_is_its_own_total(shown: list[str]) -> None:
    book = ProgressBook()
    book.known_total(None)
    book.all_done(["video", "thumbnail"], 3 * MiB)
    assert book.progress.bytes_done == book.progress.bytes_total == 3 * MiB
