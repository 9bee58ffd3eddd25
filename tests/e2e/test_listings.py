"""Listings given as URLs (a feed here; each platform's forms in tests/trawl/platforms/): recognised
offline, listed by `trawl resolve` without a download, expanded by `trawl crawl` (attached and
detached), by the API's crawls and by a watch, each listing once per crawl."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
from temporalio.client import Client

from tests.e2e.test_cli import records, run, trawl_env
from tests.e2e.test_crawl_cli import cli, env_for, wait_finished
from tests.e2e.test_platforms import platform_env
from tests.e2e.test_watch import triggered_run
from tests.api.test_api import TOKEN, free_port, serving
from trawl.routing import crawl_item
from trawl.platforms.bilibili.site import (COLLECTION_ID, FAVORITES_ID, LIST_MID, PRIVATE_FAVORITES_ID, SERIES_ID,
                                           install_bilibili_site)
from trawl.platforms.facebook.site import install_facebook_site
from trawl.platforms.registry import build_registry
from trawl.platforms.weibo.site import install_weibo_site
from trawl.settings import ApiSettings, Settings
from trawl.starter.client import crawl_handle
from trawl.simulator import MediaFile, Simulator
from trawl.simulator.feed import FeedSite, install_feed_site
from trawl.worker.main import running_worker


def media_requests(sim: Simulator, feed: FeedSite) -> int:
    stats = sim.stats_snapshot()
    return sum(stats.get(entry.media_path, {}).get("requests", 0) for entry in feed.entries)


def test_a_listing_url_is_routed_offline_to_its_source(sim: Simulator) -> None:
    feed = install_feed_site(sim, 2)
    registry = build_registry()
    item = crawl_item(registry, feed.url)
    assert item.workflow_id.startswith("listing-") and item.platform == "generic"
    assert item.listing is not None and (item.listing["kind"], item.listing["url"]) == ("feed", feed.url)
    media = crawl_item(registry, sim.url("/feeds/media/e0.mp4"))
    assert media.listing is None and media.workflow_id.startswith("url-")


async def test_resolve_lists_a_listing_without_downloading(settings: Settings, sim: Simulator, tmp_path: Path) -> None:
    feed = install_feed_site(sim, 3)
    env = env_for(settings, tmp_path)
    listed = await cli(["resolve", feed.url, "--json"], env, tmp_path)
    assert listed.returncode == 0, listed.stderr
    entries = records(listed.stdout)
    assert [e["url"] for e in entries] == [sim.url(e.media_path) for e in feed.entries]
    assert {(e["outcome"], e["listing"], e["listing_kind"]) for e in entries} == {("listed", feed.url, "feed")}
    plain = await cli(["resolve", feed.url], env, tmp_path)
    assert plain.returncode == 0 and plain.stdout.splitlines()[-1] == f"3 entries in feed {feed.url}"
    assert media_requests(sim, feed) == 0


async def test_crawl_of_a_listing_url_commits_its_items_and_a_second_one_finds_them_known(
        temporal_client: Client, settings: Settings, sim: Simulator, tmp_path: Path) -> None:
    feed = install_feed_site(sim, 3)
    sim.add_file("/one.mp4", MediaFile("mp4", "listing-one", 30_000))
    env = env_for(settings, tmp_path)
    async with running_worker(temporal_client, settings):
        # The feed given twice and beside a plain URL: its items once each.
        done = await cli(["crawl", "--json", feed.url, sim.url("/one.mp4"), feed.url], env, tmp_path)
        assert done.returncode == 0, done.stderr
        assert sorted(r["outcome"] for r in records(done.stdout)) == ["committed"] * 4
        # Detached: the crawl expands it (known entries start nothing), a listing given twice is
        # read once, and one that cannot be read is one failed URL that says why.
        gone = sim.url("/gone/feed.xml")
        detached = await cli(["crawl", "--detach", "--json", feed.url, feed.url, gone], env, tmp_path)
        assert detached.returncode == 0, detached.stderr
        crawl_id = json.loads(detached.stdout)["crawl_id"]
        status = await wait_finished(crawl_id, env, tmp_path)
        shown = await cli(["crawl-status", crawl_id], env, tmp_path)
    assert status["status"] == "COMPLETED" and status["stats"]["outcomes"] == {"duplicate": 4, "failed": 1}
    assert f"listing {gone}: HTTP 404" in shown.stdout, shown.stdout


async def test_api_crawls_expand_listing_urls_and_jobs_point_to_them(
        temporal_client: Client, settings: Settings, sim: Simulator) -> None:
    feed = install_feed_site(sim, 2, path="/api-feed/rss.xml")
    settings = settings.model_copy(update={"api": ApiSettings(port=free_port(), token=TOKEN)})
    async with serving(settings, temporal_client), running_worker(temporal_client, settings):
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{settings.api.port}",
                                     headers={"Authorization": f"Bearer {TOKEN}"}) as api:
            job = await api.post("/api/v1/jobs", json={"url": feed.url})
            assert job.status_code == 422 and "is a listing (feed" in job.json()["detail"]
            created = await api.post("/api/v1/crawls", json={"urls": [feed.url]})
            assert created.status_code == 202, created.text
            crawl_id = created.json()["id"]
            stats = await asyncio.wait_for(crawl_handle(temporal_client, crawl_id).result(), 90)
    assert stats.outcomes == {"committed": 2}


async def test_a_watch_of_a_listing_url_crawls_its_new_entries(
        temporal_client: Client, settings: Settings, sim: Simulator, tmp_path: Path) -> None:
    feed = install_feed_site(sim, 2)
    env = env_for(settings, tmp_path)
    async with running_worker(temporal_client, settings):
        added = await cli(["watch", "add", "listing", "--url", feed.url, "--every", "1h", "--paused"], env, tmp_path)
        assert added.returncode == 0, added.stderr
        first = await triggered_run(temporal_client, settings, "listing", env, tmp_path)
        feed.add_entry("new", MediaFile("mp4", "listing-new", 41_000))
        second = await triggered_run(temporal_client, settings, "listing", env, tmp_path)
    assert first.outcomes == {"committed": 2}
    # The feed's one page holds known entries too: they start no item workflow.
    assert second.outcomes == {"committed": 1, "duplicate": 2}


# -- each platform's listing URLs, through the command ----------------------------------------------
def test_weibo_profile_tabs_and_names_list_and_crawl(sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    site = install_weibo_site(sim)
    site.add_posts("playback", 3)
    site.page_size = 2  # the lists page
    env = trawl_env(tmp_path, temporal_address, **platform_env("weibo", site.settings()))
    videos = run(["resolve", "--json", sim.url("/u/7640678322?tabtype=newVideo")], env, tmp_path)
    assert videos.returncode == 0, videos.stderr
    listed = records(videos.stdout)
    assert len(listed) == 4 and all(e["canonical_key"].startswith("weibo:") for e in listed)
    assert {e["listing_kind"] for e in listed} == {"weibo_videos"}
    crawled = run(["crawl", "--json", sim.url("/n/贵妃醉影")], env, tmp_path)  # the same user, by name
    assert crawled.returncode == 0, crawled.stderr
    results = records(crawled.stdout)
    assert sorted(r["canonical_key"] for r in results) == sorted(e["canonical_key"] for e in listed)
    assert {r["outcome"] for r in results} == {"committed"}


def test_bilibili_collections_series_and_favourites_list_and_private_ones_say_why(
        sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    site = install_bilibili_site(sim)
    env = trawl_env(tmp_path, temporal_address, **platform_env("bilibili", site.settings(thumbnails=False)))
    urls = {"bilibili_collection": site.space_url(f"{LIST_MID}/lists/{COLLECTION_ID}?type=season"),
            "bilibili_series": site.space_url(f"{LIST_MID}/channel/seriesdetail?sid={SERIES_ID}"),
            "bilibili_favorites": sim.url(f"/list/ml{FAVORITES_ID}")}
    counts = {}
    for kind, url in urls.items():
        listed = run(["resolve", "--json", url], env, tmp_path)
        assert listed.returncode == 0, listed.stderr
        entries = records(listed.stdout)
        assert {e["listing_kind"] for e in entries} == {kind}
        assert all(e["canonical_key"] == "bilibili:" + e["url"].rsplit("/", 1)[-1] for e in entries)
        counts[kind] = len(entries)
    assert counts == {"bilibili_collection": 32, "bilibili_series": 36, "bilibili_favorites": 23}
    private = run(["resolve", "--json", site.space_url(f"{LIST_MID}/favlist?fid={PRIVATE_FAVORITES_ID}"),
                   sim.url("/watchlater")], env, tmp_path)
    assert private.returncode == 1
    assert [r["error_class"] for r in records(private.stdout)] == ["login_required", "login_required"]


def test_facebook_tabs_and_photo_sets_list_and_their_photos_commit(
        sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    site = install_facebook_site(sim)
    env = trawl_env(tmp_path, temporal_address, **platform_env("facebook", site.settings()))
    videos = run(["resolve", "--json", sim.url("/harbourcouncil/videos/")], env, tmp_path)
    assert videos.returncode == 0, videos.stderr
    assert [e["canonical_key"] for e in records(videos.stdout)] == [
        "facebook:1029384756473829", "facebook:2847561930284756", "facebook:3958271046382910"]
    album = sim.url("/media/set/?set=a.4410000000000001&type=3")
    crawled = run(["crawl", "--json", album], env, tmp_path)
    assert crawled.returncode == 0, crawled.stderr
    photos = records(crawled.stdout)
    assert sorted(p["canonical_key"] for p in photos) == [f"facebook:photo:881000000000000{i}" for i in (1, 2, 3, 4)]
    assert {(p["outcome"], p["assets"][0]["kind"]) for p in photos} == {("committed", "image")}
    refused = run(["resolve", "--json", "https://www.facebook.com/me/photos"], env, tmp_path)
    assert refused.returncode == 1 and records(refused.stdout)[0]["error_class"] == "login_required"
