"""Filters during the walk through the command and the API: `trawl crawl --dateafter ... SPACE_URL`
crawls only the recent videos and reads one uploads page; a filter that does not parse is one line
and exit 2, before anything starts; a watch and an API crawl carry the filters in the listings'
definitions."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pydantic import ValidationError
from temporalio.client import Client

from tests.e2e.test_cli import records, run, trawl_env
from tests.e2e.test_crawl_cli import cli, env_for
from tests.e2e.test_watch import triggered_run
from tests.e2e.test_platforms import platform_env
from trawl.api.models import CrawlCreate
from trawl.api.watches import WatchCreate
from trawl.platforms.bilibili.listing_site import DAY, FIRST_PUBDATE, expected_urls
from trawl.platforms.bilibili.site import LIST_MID, install_bilibili_site
from trawl.settings import Settings
from trawl.simulator import Simulator
from trawl.worker.main import running_worker


def day_of(video: int) -> str:
    return dt.datetime.fromtimestamp(FIRST_PUBDATE + video * DAY, dt.timezone.utc).strftime("%Y%m%d")


def test_a_crawl_with_dateafter_reads_one_page_and_crawls_the_recent_videos(
        sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    site = install_bilibili_site(sim)
    env = trawl_env(tmp_path, temporal_address, **platform_env("bilibili", site.settings(thumbnails=False)))
    crawled = run(["crawl", "--json", "--dateafter", day_of(38), site.space_url(f"{LIST_MID}/video")], env, tmp_path)
    assert crawled.returncode == 0, crawled.stderr
    results = records(crawled.stdout)
    assert sorted(r["canonical_key"] for r in results) == sorted(
        "bilibili:" + u.rsplit("/", 1)[-1] for u in expected_urls("", [40, 39, 38]))
    assert {r["outcome"] for r in results} == {"committed"}
    assert sim.stats["/x/space/wbi/arc/search"].requests == 1  # one uploads page of the two
    # the same listing, detached, with -I and --max-downloads: only the listing's first entry
    detached = run(["crawl", "--detach", "-I", "1-5", "--max-downloads", "1", site.space_url(LIST_MID)], env, tmp_path)
    assert detached.returncode == 0, detached.stderr
    assert detached.stdout.startswith("crawl-")


@pytest.mark.parametrize(("flags", "says"), [
    (["--match-filters", "duration >> 60"], "trawl crawl: --match-filters: match filter 'duration >> 60': "),
    (["--dateafter", "last tuesday"], "trawl crawl: --dateafter: date 'last tuesday': give YYYYMMDD"),
    (["-I", "1,,3"], "trawl crawl: --playlist-items: playlist items '1,,3': '' is not a position"),
    (["--max-downloads", "-2"], "trawl crawl: --max-downloads: max downloads -2: give 1 or more"),
])
def test_a_filter_that_does_not_parse_is_one_line_and_exit_2(flags: list[str], says: str, tmp_path: Path) -> None:
    done = run(["crawl", *flags, "bilisearchall:anything"], trawl_env(tmp_path), tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(says) and done.stderr.count("\n") == 1, done.stderr


def test_watch_add_refuses_a_bad_filter_in_one_line(tmp_path: Path) -> None:
    done = run(["watch", "add", "news", "bilisearchdateall:港口", "--every", "1h", "--match-filters", "title ~= ("],
               trawl_env(tmp_path), tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "not a regex" in done.stderr


def test_the_api_takes_the_filters_as_fields_and_refuses_bad_ones() -> None:
    crawl = CrawlCreate(urls=["bilisearchall:港口"], dateafter="now-7days", match_filter="duration > 60")
    filters = crawl.filters()
    assert filters is not None and filters.as_dict() == {"dateafter": "now-7days", "match_filter": "duration > 60"}
    assert CrawlCreate(urls=["x"]).filters() is None
    with pytest.raises(ValidationError, match="playlist items"):
        CrawlCreate(urls=["x"], playlist_items="a-b")
    with pytest.raises(ValidationError, match="unknown field 'length'"):
        WatchCreate(name="w", urls=["x"], every="1h", match_filter="length > 1")


async def test_a_watch_carries_its_filters_to_every_run(
        temporal_client: Client, settings: Settings, sim: Simulator, tmp_path: Path) -> None:
    site = install_bilibili_site(sim)
    config = site.settings(thumbnails=False)
    settings = settings.model_copy(update={"platforms": settings.platforms.model_copy(update={"bilibili": config})})
    env = env_for(settings, tmp_path, **platform_env("bilibili", config))
    async with running_worker(temporal_client, settings):
        added = await cli(["watch", "add", "recent", site.space_url(LIST_MID), "--every", "1h", "--paused",
                           "--dateafter", day_of(39)], env, tmp_path)
        assert added.returncode == 0, added.stderr
        first = await triggered_run(temporal_client, settings, "recent", env, tmp_path)
        assert sim.stats["/x/space/wbi/arc/search"].requests == 1
        second = await triggered_run(temporal_client, settings, "recent", env, tmp_path)
    assert first.outcomes == {"committed": 2}  # videos 40 and 39 only
    assert second.outcomes == {"duplicate": 2}
    assert sim.stats["/x/space/wbi/arc/search"].requests == 2  # one page a run
