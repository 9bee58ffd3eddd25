"""An item's progress book (trawl.workflows.progress), outside a workflow: its total is the sizes
the platform gave with the others as their servers announce them or their downloads end, and none
until every asset has one."""

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


def book_of(sizes: dict[str, int | None]) -> ProgressBook:
    book = ProgressBook()
    book.progress.stage = "download"
    book.known_sizes(sizes)
    return book


def test_no_total_until_every_asset_has_a_size(shown: list[str]) -> None:
    book = book_of({"video": None, "thumbnail": None})
    book.downloaded("thumbnail", 1 * MiB)  # a cover image ends before it would report
    book.verified("thumbnail", 1 * MiB)
    book.show("download")
    assert book.progress.bytes_total is None and shown[-1].startswith("download 1.0 MiB"), shown[-1]
    book.reported(DownloadProgress("video", 4 * MiB, 40 * MiB))  # the video's server says its size
    assert (book.progress.bytes_done, book.progress.bytes_total) == (5 * MiB, 41 * MiB)
    assert shown[-1].startswith("download 12% 5.0/41.0 MiB"), shown[-1]
    book.downloaded("video", 40 * MiB)
    book.verified("video", 40 * MiB)
    assert book.progress.bytes_done == book.progress.bytes_total == 41 * MiB


def test_sizes_the_platform_gave_stay_and_the_others_are_announced(shown: list[str]) -> None:
    book = book_of({"video": 40 * MiB, "audio": None})
    assert book.progress.bytes_total is None
    book.reported(DownloadProgress("audio", 1 * MiB, 10 * MiB))
    assert book.progress.bytes_total == 50 * MiB
    book.reported(DownloadProgress("video", 4 * MiB, 41 * MiB))  # a server's word does not replace the platform's
    assert book.progress.bytes_total == 50 * MiB
    book.reported(DownloadProgress("small-item", 0, 3 * MiB, stage="commit"))  # not an asset's
    assert book.progress.bytes_total == 50 * MiB


def test_an_asset_left_out_leaves_the_total(shown: list[str]) -> None:
    book = book_of({"video": 40 * MiB, "thumbnail": None})
    book.left_out("thumbnail")
    assert book.progress.bytes_total == 40 * MiB


def test_a_recording_s_part_is_not_its_size(shown: list[str]) -> None:
    book = book_of({"live": None})
    book.downloaded("live", 5 * MiB, whole=False)
    assert book.progress.bytes_total is None


def test_a_guessed_size_gives_way_to_the_downloaded_one(shown: list[str]) -> None:
    book = book_of({"video": None})
    book.reported(DownloadProgress("video", 4 * MiB, 10 * MiB))  # an HLS VOD's estimate so far
    book.downloaded("video", 10 * MiB + 300_000)
    assert book.progress.bytes_done == book.progress.bytes_total == 10 * MiB + 300_000
