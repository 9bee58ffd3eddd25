"""Filters applied while a listing pages (yt-dlp's --dateafter/--datebefore, --match-filters,
--max-downloads, --playlist-items): their syntax, a mistake said in one line, and a walk that stops
as soon as nothing after can pass."""

from __future__ import annotations

from datetime import date

import pytest

from trawl.listing_filters import (
    FilterError,
    ListingFilters,
    PageEntry,
    Walk,
    day_start,
    parse_date,
    parse_match_filter,
    parse_playlist_items,
)

TODAY = date(2026, 3, 31)


@pytest.mark.parametrize(("text", "day"), [
    ("20260101", date(2026, 1, 1)), ("today", TODAY), ("now", TODAY), ("yesterday", date(2026, 3, 30)),
    ("now-7days", date(2026, 3, 24)), ("today-1day", date(2026, 3, 30)), ("now-2weeks", date(2026, 3, 17)),
    ("now-1month", date(2026, 2, 28)), ("today-1year", date(2025, 3, 31)), ("NOW+3days", date(2026, 4, 3)),
])
def test_dates_as_yt_dlp_writes_them(text: str, day: date) -> None:
    assert parse_date(text, TODAY) == day


@pytest.mark.parametrize(("text", "says"), [
    ("2026-01-01", "give YYYYMMDD"), ("20261332", "no such day"), ("last week", "give YYYYMMDD"),
    ("now-7 days", "give YYYYMMDD"), ("now-7fortnights", "give YYYYMMDD"),
])
def test_a_bad_date_is_one_line_naming_it(text: str, says: str) -> None:
    with pytest.raises(FilterError, match=says) as caught:
        parse_date(text, TODAY)
    assert "\n" not in str(caught.value) and repr(text) in str(caught.value)


CLIP = PageEntry("u1", timestamp=day_start(date(2026, 3, 1)), duration=90, view_count=1500, title="Harbour News at six")
SHORT = PageEntry("u2", timestamp=day_start(date(2026, 3, 2)), duration=30, view_count=20, title="teaser")
UNKNOWN = PageEntry("u3")


@pytest.mark.parametrize(("spec", "passing"), [
    ("duration > 60", {"u1", "u3"}),
    ("duration >= 30 & view_count < 1k", {"u2", "u3"}),
    ("view_count >= 1000", {"u1", "u3"}),
    ("title ~= (?i)news", {"u1", "u3"}),
    ("title *= teaser", {"u2", "u3"}),
    ("title = 'Harbour News at six'", {"u1", "u3"}),
    ("title ^= Harbour & title $= six", {"u1", "u3"}),
    ("title != teaser", {"u1", "u3"}),
    ("!is_live", {"u1", "u2", "u3"}),
    ("upload_date >= 20260302", {"u2", "u3"}),
    ("duration <? 60", {"u2", "u3"}),
])
def test_match_filters_on_what_the_listing_says(spec: str, passing: set[str]) -> None:
    conditions = parse_match_filter(spec)
    kept = {e.url for e in (CLIP, SHORT, UNKNOWN) if all(c.passes(e) for c in conditions)}
    assert kept == passing  # an entry the listing says nothing of (u3) is kept, as yt-dlp keeps it


@pytest.mark.parametrize(("spec", "says"), [
    ("duration >> 60", "not a number"), ("length > 60", "unknown field 'length'"),
    ("duration ~= 6", "compares text"), ("title > 5", "compares numbers"), ("duration >", "no value after >"), ("duration 60", "give FIELD OP VALUE"),
    ("duration > 60 &", "an empty condition"), ("title ~= (unclosed", "not a regex"),
    ("view_count >= lots", "not a number"), ("& ".join(["!is_live"] * 21), "more than 20"),
])
def test_a_bad_match_filter_is_one_line_naming_the_mistake(spec: str, says: str) -> None:
    with pytest.raises(FilterError, match=says) as caught:
        parse_match_filter(spec)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(("spec", "total", "wanted"), [
    ("1-3", 10, [1, 2, 3]), ("1-3,7", 10, [1, 2, 3, 7]), ("2:4", 10, [2, 3, 4]), ("::3", 10, [1, 4, 7, 10]),
    ("-3:", 10, [8, 9, 10]), ("-1", 10, [10]), ("8-", 10, [8, 9, 10]), ("1,1,2", 5, [1, 2]),
])
def test_playlist_items_as_yt_dlp_writes_them(spec: str, total: int, wanted: list[int]) -> None:
    items = parse_playlist_items(spec)
    assert [i for i in range(1, total + 1) if items.wanted(i, total)] == wanted


@pytest.mark.parametrize("spec", ["1,,2", "a-b", "0", "1:5:0", "1-2-3", ""])
def test_bad_playlist_items_say_so(spec: str) -> None:
    with pytest.raises(FilterError, match="playlist items"):
        parse_playlist_items(spec)


def _days(newest: int, count: int) -> list[PageEntry]:
    """``count`` entries, newest first, one a day from March ``newest`` back."""
    return [PageEntry(f"d{d}", timestamp=day_start(date(2026, 3, d)) + 3600) for d in range(newest, newest - count, -1)]


def test_a_dated_walk_stops_at_the_first_entry_before_dateafter() -> None:
    walk = Walk(filters=ListingFilters(dateafter="20260325", datebefore="20260328"), today=TODAY)
    assert walk.page(_days(31, 5), dated=True) == ["d28", "d27"]  # 31..29 after datebefore: skipped, paging goes on
    assert not walk.done
    assert walk.page(_days(26, 5), dated=True) == ["d26", "d25"]
    assert walk.done and walk.stopped_by == "date"
    # not ordered by date: no stop, each entry judged alone
    loose = Walk(filters=ListingFilters(dateafter="20260325"), today=TODAY)
    assert loose.page(_days(26, 5)) == ["d26", "d25"] and not loose.done


def test_relative_dates_move_with_the_day_the_walk_runs() -> None:
    week = ListingFilters(dateafter="now-7days")
    assert Walk(filters=week, today=TODAY).window[0] == day_start(date(2026, 3, 24))
    assert Walk(filters=week, today=date(2026, 4, 30)).window[0] == day_start(date(2026, 4, 23))


def test_max_downloads_and_playlist_items_end_the_walk() -> None:
    walk = Walk(filters=ListingFilters(max_downloads=3))
    assert walk.page(["a", "b"]) == ["a", "b"] and not walk.done
    assert walk.page(["c", "d"]) == ["c"] and walk.stopped_by == "max_downloads"
    items = Walk(filters=ListingFilters(playlist_items="2-3,5"))
    assert items.page(["a", "b", "c"]) == ["b", "c"] and not items.done
    assert items.page(["d", "e", "f"]) == ["e"] and items.done and items.stopped_by == "playlist_items"
    # counted from the end: the whole listing is read, then chosen
    tail = Walk(filters=ListingFilters(playlist_items="-2:", max_downloads=1))
    kept = tail.page(["a", "b"]) + tail.page(["c", "d"])
    assert not tail.done and tail.select(kept) == ["c"]


def test_a_page_of_known_entries_stops_the_walk_unless_all_were_filtered_out() -> None:
    known = {"d30", "d29"}
    walk = Walk(known=lambda urls: set(urls) <= known, filters=ListingFilters(match_filter="duration > 60"))
    short = [PageEntry("new-short", duration=5)]
    assert walk.page(short) == [] and not walk.done  # nothing kept is not "all known"
    assert walk.page(_days(30, 2)) == ["d30", "d29"] and walk.stopped_by == "known"
    # a listing that pages without handing entries over: filtered once it is whole
    plain = Walk(filters=ListingFilters(playlist_items="2"))
    assert plain(["x"]) is False and plain.select(["x", "y", "z"]) == ["y"]
