"""Filters during the walk, against the simulated list APIs: a listing ordered newest first stops
paging at the first entry older than --dateafter (the simulator counts the pages asked for), and
the filters judge each entry by what its listing says of it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import httpx
import pytest
from pydantic import ValidationError

from trawl.listing_filters import ListingFilters, Walk
from trawl.platforms.base import ResolveContext
from trawl.platforms.bilibili.listing_site import FIRST_PUBDATE, DAY, expected_urls
from trawl.platforms.bilibili.listings import collection_listing, series_listing, uploader_listing
from trawl.platforms.bilibili.resolver import BilibiliResolver
from trawl.platforms.bilibili.site import COLLECTION_ID, LIST_MID, SERIES_ID, install_bilibili_site
from trawl.settings import SourceSettings
from trawl.simulator import Simulator
from trawl.sources import source_definition, source_from_definition

UPLOADS = "/x/space/wbi/arc/search"


def day_of(video: int) -> str:
    """The day (UTC, YYYYMMDD) pool video ``video`` was published."""
    return dt.datetime.fromtimestamp(FIRST_PUBDATE + video * DAY, dt.timezone.utc).strftime("%Y%m%d")


@pytest.fixture
def bili(sim: Simulator) -> Iterator[tuple[object, BilibiliResolver, ResolveContext]]:
    site = install_bilibili_site(sim, rewrite_media=False)
    with httpx.Client() as http:
        yield site, BilibiliResolver(site.settings()), ResolveContext(http, 5 * 1024 * 1024)


def test_a_date_ordered_listing_stops_paging_once_past_dateafter(bili, sim: Simulator) -> None:
    site, resolver, ctx = bili
    everything = uploader_listing(resolver, ctx, LIST_MID, 5, None)
    assert len(everything) == 40 and sim.stats[UPLOADS].requests == 2  # 38 entries: pages of 30
    walk = Walk(filters=ListingFilters(dateafter=day_of(30)))
    recent = uploader_listing(resolver, ctx, LIST_MID, 5, walk)
    assert sim.stats[UPLOADS].requests == 2 + 1  # the second page is never asked for
    assert walk.stopped_by == "date"
    assert sorted(recent) == sorted(expected_urls(resolver.config.page_base, range(30, 41)))
    # a window inside the first page: the entries after datebefore are skipped, not a stop
    window = Walk(filters=ListingFilters(dateafter=day_of(36), datebefore=day_of(38)))
    assert uploader_listing(resolver, ctx, LIST_MID, 5, window) == expected_urls(resolver.config.page_base, [38, 37, 36])
    assert sim.stats[UPLOADS].requests == 3 + 1


def test_series_pages_stop_too_and_a_collection_in_its_own_order_does_not(bili, sim: Simulator) -> None:
    site, resolver, ctx = bili
    walk = Walk(filters=ListingFilters(dateafter=day_of(25)))
    assert series_listing(resolver, ctx, f"{LIST_MID}:{SERIES_ID}", 5, walk) == expected_urls(
        resolver.config.page_base, range(40, 24, -1))
    assert sim.stats["/x/series/archives"].requests == 1 and walk.stopped_by == "date"
    loose = Walk(filters=ListingFilters(dateafter=day_of(25)))
    found = collection_listing(resolver, ctx, f"{LIST_MID}:{COLLECTION_ID}", 5, loose)
    assert sorted(found) == sorted(expected_urls(resolver.config.page_base, range(25, 33)))
    assert sim.stats["/x/polymer/web-space/seasons_archives_list"].requests == 2 and loose.stopped_by == ""


def test_match_filters_and_max_downloads_on_listing_entries(bili, sim: Simulator) -> None:
    site, resolver, ctx = bili
    # the series' entries say their duration (275 s) and plays (26555)
    assert series_listing(resolver, ctx, f"{LIST_MID}:{SERIES_ID}", 5,
                          Walk(filters=ListingFilters(match_filter="duration > 300"))) == []
    assert sim.stats["/x/series/archives"].requests == 2  # filtered out, not known: paging went on
    titled = Walk(filters=ListingFilters(match_filter="title ~= 第3\\d期 & view_count >= 1000", max_downloads=4))
    assert series_listing(resolver, ctx, f"{LIST_MID}:{SERIES_ID}", 5, titled) == expected_urls(
        resolver.config.page_base, [39, 38, 37, 36])
    assert titled.stopped_by == "max_downloads"


def test_a_source_carries_its_filters_only_when_set() -> None:
    plain = SourceSettings(name="s", kind="bilibili_uploader", id="1")
    assert "dateafter" not in source_definition(plain)  # as before: older workers read it
    filtered = source_definition(plain, ListingFilters(dateafter="now-7days", max_downloads=5))
    assert (filtered["dateafter"], filtered["max_downloads"]) == ("now-7days", 5)
    assert source_from_definition(filtered).dateafter == "now-7days"
    with pytest.raises(ValidationError, match="duration >> 1"):
        SourceSettings(name="s", kind="bilibili_uploader", id="1", match_filter="duration >> 1")


def test_a_weibo_profile_stops_at_dateafter_but_not_at_its_pinned_post(sim: Simulator) -> None:
    from trawl.platforms.weibo.listings import user_listing
    from trawl.platforms.weibo.resolver import WeiboResolver
    from trawl.platforms.weibo.site import install_weibo_site

    site = install_weibo_site(sim)
    clones = site.add_posts("playback", 25)  # an hour apart, newer than the captured post
    site.page_size = 5
    site.pinned = "playback"  # the oldest, shown first
    uid = site.posts["playback"].uid
    with httpx.Client() as http:
        ctx = ResolveContext(http, 5 * 1024 * 1024)
        resolver = WeiboResolver(site.settings())
        everything = user_listing(resolver, ctx, uid, 20, None)
        pages = sim.stats["/api/container/getIndex"].requests
        newest = max(int(c.mid) >> 22 for c in clones) + 515483463
        after = dt.datetime.fromtimestamp(newest, dt.timezone(dt.timedelta(hours=8))).astimezone(dt.timezone.utc)
        walk = Walk(filters=ListingFilters(dateafter=after.strftime("%Y%m%d")), today=after.date())
        recent = user_listing(resolver, ctx, uid, 20, walk)
    assert len(everything) == 26 and pages == 7  # six pages of 5 (the last of 1), then the empty one
    assert walk.stopped_by == "date" and sim.stats["/api/container/getIndex"].requests - pages < 7
    same_day = [c.url for c in sorted(clones, key=lambda c: -int(c.mid))
                if dt.datetime.fromtimestamp((int(c.mid) >> 22) + 515483463, dt.timezone.utc).date() == after.date()]
    assert recent == same_day and site.posts["playback"].url not in recent  # the old pinned post: filtered, no stop
    assert sim.stats["/api/container/getIndex"].requests - pages == (1 + len(same_day)) // 5 + 1  # up to the first older post
