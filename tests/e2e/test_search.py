"""Keyword searches through the command: a search pasted as yt-dlp spells it, or as a search page's
URL, listed by `trawl resolve` and crawled by `trawl crawl` against the simulated sites."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_cli import records, run, trawl_env
from tests.e2e.test_platforms import platform_env
from trawl.platforms.bilibili.listing_site import expected_urls
from trawl.platforms.bilibili.site import install_bilibili_site
from trawl.platforms.weibo.site import install_weibo_site
from trawl.simulator import Simulator


def test_a_bilibili_search_lists_and_crawls_its_newest_results(
        sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    site = install_bilibili_site(sim)
    env = trawl_env(tmp_path, temporal_address, **platform_env("bilibili", site.settings(thumbnails=False)))
    listed = run(["resolve", "--json", "bilisearchdate3:样片日记"], env, tmp_path)
    assert listed.returncode == 0, listed.stderr
    entries = records(listed.stdout)
    assert [e["url"] for e in entries] == expected_urls(site.settings().page_base, [40, 39, 38])
    assert {e["listing_kind"] for e in entries} == {"bilibili_search"}
    page = sim.url("/search-page/video?keyword=样片日记 第7期&order=pubdate")
    env["TRAWL_PLATFORMS__BILIBILI__SEARCH_BASE"] = sim.url("/search-page")
    crawled = run(["crawl", "--json", page], env, tmp_path)
    assert crawled.returncode == 0, crawled.stderr
    assert [(r["canonical_key"], r["outcome"]) for r in records(crawled.stdout)] == [
        ("bilibili:" + expected_urls("", [7])[0].rsplit("/", 1)[-1], "committed")]


def test_a_weibo_search_crawls_the_posts_it_finds(sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    site = install_weibo_site(sim)
    site.add_posts("playback", 2)
    env = trawl_env(tmp_path, temporal_address, **platform_env("weibo", site.settings()))
    crawled = run(["crawl", "--json", "weibosearchdateall:临摹了10万张梵高的画"], env, tmp_path)
    assert crawled.returncode == 0, crawled.stderr
    results = records(crawled.stdout)
    assert sorted(r["canonical_key"] for r in results) == sorted(
        f"weibo:{site.posts[k].mid}" for k in ("playback", "playback-1", "playback-2"))
    assert {r["outcome"] for r in results} == {"committed"}


def test_a_crawl_through_a_stale_visitor_session_renews_it_and_completes(
        sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    from trawl.platforms.bilibili.site import LIST_MID
    from trawl.platforms.bilibili.visitor_site import SPI_PATH

    site = install_bilibili_site(sim)
    site.visitor_required = True  # no visitor ids: -352
    site.expire_at_check = 3  # and the ids given expire at the third request: -352 again
    env = trawl_env(tmp_path, temporal_address, **platform_env("bilibili", site.settings(thumbnails=False)))
    crawled = run(["crawl", "--json", "--max-downloads", "3", site.space_url(LIST_MID)], env, tmp_path)
    assert crawled.returncode == 0, crawled.stderr
    results = records(crawled.stdout)
    assert len(results) == 3 and {r["outcome"] for r in results} == {"committed"}
    assert sim.stats[SPI_PATH].requests == 2  # asked once, renewed once


def test_a_search_crawl_within_a_date_window_reads_only_its_pages(
        sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    import datetime as dt

    from trawl.platforms.bilibili.listing_site import DAY, FIRST_PUBDATE
    from trawl.platforms.bilibili.search_site import SEARCH_PATH

    site = install_bilibili_site(sim)
    env = trawl_env(tmp_path, temporal_address, **platform_env("bilibili", site.settings(thumbnails=False)))
    after = dt.datetime.fromtimestamp(FIRST_PUBDATE + 38 * DAY, dt.timezone.utc).strftime("%Y%m%d")
    crawled = run(["crawl", "--json", "--dateafter", after, "bilisearchdateall:样片日记"], env, tmp_path)
    assert crawled.returncode == 0, crawled.stderr
    assert sorted(r["canonical_key"] for r in records(crawled.stdout)) == sorted(
        "bilibili:" + u.rsplit("/", 1)[-1] for u in expected_urls("", [40, 39, 38]))
    assert sim.stats[SEARCH_PATH].requests == 1  # the window's one page of the search's two
