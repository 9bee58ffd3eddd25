"""What the ``trawl`` commands print for people (issue 24): result and item rows, as pure logic."""

from __future__ import annotations

import itertools

import pytest
from wcwidth import wcswidth

from trawl.contracts import StoredAsset
from trawl.cli import steering
from trawl.cli.output import ITEMS_HEADER, clean, item_line, result_line
from trawl.storage.records import CatalogItem, CommittedAsset
from trawl.contracts import ItemResult

SHA = "ab" * 32
BLOCKED = ("refusing 127.0.0.1 -> 127.0.0.1: not a public address (set net.allow_private or "
           "net.allowed_networks to allow)")


def test_a_failed_result_line_keeps_the_whole_fix() -> None:
    line = result_line(ItemResult("url-1", "http://127.0.0.1:8/x.mp4", "failed", error_class="blocked_address",
                                  error=BLOCKED))
    assert "(set net.allow_private or net.allowed_networks to allow)" in line, line
    assert line.startswith("failed     blocked_address") and "http://127.0.0.1:8/x.mp4" in line
    assert "\n" not in result_line(ItemResult("u", "http://x/", "failed", error_class="e", error="a\nb\x1b[31m"))
    assert "\x1b" not in result_line(ItemResult("u", "http://x/", "failed", error_class="e", error="a\nb\x1b[31m"))


def _column_of(line: str, marker: str) -> int:
    """The terminal column ``marker`` starts at in ``line``."""
    return wcswidth(line[: line.index(marker)])


@pytest.mark.parametrize("title", ["plain title", "当当当当当当当当当当当当当当当当当当当当当当当当",
                                   "日本語のタイトル", "mixed 한국어 title that is rather long indeed",
                                   "emoji 🎬🎬🎬🎬🎬🎬🎬🎬🎬🎬🎬🎬🎬🎬🎬🎬🎬🎬"])
def test_wide_titles_keep_the_columns(title: str) -> None:
    asset = StoredAsset("video", "video", SHA, 2048)
    line = result_line(ItemResult("url-1", "http://x/a.mp4", "committed", title=title, assets=[asset]))
    reference = result_line(ItemResult("url-1", "http://x/a.mp4", "committed", title="a", assets=[asset]))
    assert _column_of(line, "2.0 KiB") == _column_of(reference, "2.0 KiB"), (line, reference)
    item = CatalogItem(canonical_key="web:1", platform="generic", canonical_url="http://x/a", source_url="http://x/a",
                       title=title, uploader=None, duration=None, published_at=None, status="committed",
                       workflow_id="url-1", created_at="", assets=[CommittedAsset("video", "video", SHA, 2048,
                                                                                  "video/mp4", "k")])
    row = item_line(item)
    assert _column_of(row, "2.0 KiB") == _column_of(item_line(item.__class__(**{**item.__dict__, "title": "a"})),
                                                    "2.0 KiB"), row
    assert _column_of(row, SHA[:12]) == _column_of(ITEMS_HEADER, "SHA256")  # under its header


def test_clean_cuts_by_terminal_columns() -> None:
    assert clean("当" * 20, 10) == "当" * 4 + "~"  # 9 columns: a fifth would make 11
    assert wcswidth(clean("当" * 20, 10)) <= 10
    assert clean("short", 10) == "short" and clean(None, 5) == "-"
    for width, text in itertools.product(range(2, 12), ["aé当🎬b" * 4, "x" * 30]):
        assert wcswidth(clean(text, width)) <= width


async def test_a_one_off_look_measures_over_its_whole_span() -> None:
    """`trawl status --once` of a download that moves in steps: the speed over the seconds it
    looked, not the first step's size per second."""
    looks = iter([0, 1 << 20, 1 << 20, 1 << 20])
    now = itertools.count()

    async def progress_of(client: object, handle: object) -> dict:
        return {"bytes_done": next(looks), "bytes_total": 10 << 20, "stage": "download", "paused": False}

    progress, speed = await steering.measured_progress(None, None, every=0, clock=lambda: float(next(now)),
                                                       look=progress_of)
    assert progress["bytes_done"] == 1 << 20
    assert speed == pytest.approx((1 << 20) / 3)


def test_a_blocked_address_names_the_variable_that_allows_it() -> None:
    """Issue 43, point 9: the refusal names the environment variable, not only the setting."""
    import pytest

    from trawl.errors import BlockedAddress
    from trawl.netguard import check_address

    with pytest.raises(BlockedAddress) as refused:
        check_address("127.0.0.1", "127.0.0.1", allow_private=False)
    assert "net.allow_private" in str(refused.value) and "TRAWL_NET__ALLOW_PRIVATE=true" in str(refused.value)
