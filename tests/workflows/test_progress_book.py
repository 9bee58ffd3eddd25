"""An item's progress book (trawl.workflows.progress), outside a workflow: its total is the sizes
the platform gave with those its servers announce, and none until every asset has one."""

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


def test_no_total_until_every_asset_has_a_size(shown: list[str]) -> None:
    book = ProgressBook()
    book.progress.stage = "download"
    # The thumbnail's size was given (its download may end before it would report); the video's not.
    book.known_sizes({"video": None, "thumbnail": 1 * MiB})
    book.downloaded("thumbnail", 1 * MiB)
    book.verified("thumbnail", 1 * MiB)
    book.show("download")
    assert book.progress.bytes_total is None and shown[-1].startswith("download 1.0 MiB"), shown[-1]
    book.reported(DownloadProgress("video", 4 * MiB, 40 * MiB))  # the video's server says its size
    assert (book.progress.bytes_done, book.progress.bytes_total) == (5 * MiB, 41 * MiB)
    assert shown[-1].startswith("download 12% 5.0/41.0 MiB"), shown[-1]
    book.downloaded("video", 40 * MiB)
    book.verified("video", 40 * MiB)
    assert book.progress.bytes_done == book.progress.bytes_total == 41 * MiB


def test_sizes_the_platform_gave_are_the_total_from_the_start(shown: list[str]) -> None:
    book = ProgressBook()
    book.known_sizes({"video": 40 * MiB, "audio": 10 * MiB})
    assert book.progress.bytes_total == 50 * MiB
    book.reported(DownloadProgress("video", 4 * MiB, 41 * MiB))  # a server's word does not replace the platform's
    assert book.progress.bytes_total == 50 * MiB


def test_a_report_for_a_name_that_is_no_asset_does_not_make_a_total(shown: list[str]) -> None:
    book = ProgressBook()
    book.known_sizes({"video": None})
    book.reported(DownloadProgress("small-item", 0, 3 * MiB, stage="commit"))
    assert book.progress.bytes_total is None
