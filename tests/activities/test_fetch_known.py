"""fetch asks the catalog first: a known item costs no request to its platform.

Against the Bilibili simulator and a generic site over loopback, with a real SQLite catalog; the
simulator's request counts are the proof.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from temporalio.testing import ActivityEnvironment

from trawl.activities.crawl import all_known
from trawl.activities.fetch import FetchActivities
from trawl.activities.tiny import TinyItemActivities
from trawl.contracts import FetchInput, FetchResult
from trawl.platforms.base import ResolveContext
from trawl.platforms.registry import build_registry
from trawl.settings import PlatformsSettings
from trawl.simulator import MediaFile, Simulator
from trawl.platforms.bilibili.site import HIRES_VIDEO, install_bilibili_site
from trawl.simulator.demo import og_page
from trawl.storage.catalog import Catalog, CommittedAsset


def commit(catalog: Catalog, key: str, source_url: str, canonical_url: str | None = None,
           metadata: dict | None = None) -> None:
    catalog.commit_item(canonical_key=key, platform=key.split(":")[0], canonical_url=canonical_url or source_url,
                        source_url=source_url, title="stored", uploader=None, duration=None, published_at=None,
                        metadata=metadata or {}, workflow_id="wf-1",
                        assets=[CommittedAsset("video", "video", "a" * 64, 10, "video/mp4", "sha256/aa/aa/" + "a" * 64)])


def requests(sim: Simulator) -> int:
    return sum(s["requests"] for s in sim.stats_snapshot().values())


def fetch(activities: FetchActivities, url: str, fresh_urls: bool = False):  # noqa: ANN201 - a FetchResult
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, activity_type="fetch", workflow_id="wf-2",
                                   heartbeat_timeout=timedelta(seconds=10))
    return env.run(activities.fetch, FetchInput(url, "wf-2", fresh_urls=fresh_urls))


def test_a_refetch_for_fresh_urls_resolves_even_when_the_item_is_stored(sim: Simulator, catalog: Catalog) -> None:
    """A download whose URLs expired asks for fresh ones; another URL form may have committed the
    item meanwhile, and the catalog's answer has no media URLs to resume with."""
    sim.add_file("/cdn/fresh.mp4", MediaFile("mp4", "fresh", 20_000))
    url = sim.url("/cdn/fresh.mp4")
    with httpx.Client() as http:
        activities = FetchActivities(build_registry(), ResolveContext(http, 1 << 20), catalog, timedelta(seconds=5))
        first = fetch(activities, url)
        commit(catalog, first.resolved.canonical_key, url)
        assert fetch(activities, url).resolved.assets == []  # known: answered from the catalog
        before = requests(sim)
        fresh = fetch(activities, url, fresh_urls=True)
        assert fresh.resolved.assets and fresh.resolved.assets[0].urls == [url]
        assert requests(sim) > before


def test_a_known_platform_item_is_answered_without_a_request(sim: Simulator, catalog: Catalog) -> None:
    site = install_bilibili_site(sim)
    registry = build_registry(PlatformsSettings(bilibili=site.settings()))
    with httpx.Client() as http:
        activities = FetchActivities(registry, ResolveContext(http, 1 << 20), catalog, timedelta(seconds=5))
        url = site.url("BV117411r7R1")
        first = fetch(activities, url)  # not in the catalog: resolved on the platform
        assert not first.committed and first.resolved.assets and requests(sim) > 0
        # Stored with what the platform said (its parts), as the commit activity stores it.
        commit(catalog, first.resolved.canonical_key, url, first.resolved.canonical_url, first.resolved.metadata)
        before = requests(sim)
        again = fetch(activities, url + "?spm_id_from=333.999")
        assert again.committed and again.resolved.canonical_key == "bilibili:BV117411r7R1"
        assert again.stored[0].sha256 == "a" * 64 and again.resolved.title == "stored"
        assert requests(sim) == before  # not one request to the platform


def test_a_known_item_answers_its_media_not_the_extras_added_after(sim: Simulator, catalog: Catalog) -> None:
    """A duplicate's result line shows the media's size, whether or not its danmaku and comments
    have landed yet (they are committed after the media, by activities of their own)."""
    site = install_bilibili_site(sim)
    registry = build_registry(PlatformsSettings(bilibili=site.settings()))
    with httpx.Client() as http:
        activities = FetchActivities(registry, ResolveContext(http, 1 << 20), catalog, timedelta(seconds=5))
        url = site.url("BV117411r7R1")
        first = fetch(activities, url)
        commit(catalog, first.resolved.canonical_key, url, first.resolved.canonical_url, first.resolved.metadata)
        before = [(a.name, a.size) for a in fetch(activities, url).stored]
        assert catalog.add_extras(first.resolved.canonical_key, [
            CommittedAsset("danmaku", "danmaku", "b" * 64, 7_000, "application/xml", "sha256/bb/bb/" + "b" * 64)], [])
        assert {a.name for a in catalog.get(first.resolved.canonical_key).assets} == {"video", "danmaku"}
        assert [(a.name, a.size) for a in fetch(activities, url).stored] == before == [("video", 10)]


def test_a_generic_url_form_that_led_to_an_item_is_remembered(sim: Simulator, catalog: Catalog) -> None:
    sim.add_file("/cdn/clip.mp4", MediaFile("mp4", "clip", 20_000))
    sim.add_page("/watch/clip", og_page("Clip", "/cdn/clip.mp4", canonical="/watch/clip"))
    sim.add_page("/m/watch/clip", og_page("Clip", "/cdn/clip.mp4", canonical="/watch/clip"))
    registry = build_registry()
    with httpx.Client() as http:
        activities = FetchActivities(registry, ResolveContext(http, 1 << 20), catalog, timedelta(seconds=5))
        page = fetch(activities, sim.url("/watch/clip"))
        assert not page.committed
        commit(catalog, page.resolved.canonical_key, sim.url("/watch/clip"), page.resolved.canonical_url)
        before = requests(sim)
        assert fetch(activities, sim.url("/watch/clip?utm_source=feed")).committed  # a remembered form
        assert requests(sim) == before
        # Another form, resolved once: found committed, and remembered from then on.
        mobile = fetch(activities, sim.url("/m/watch/clip"))
        assert mobile.committed and requests(sim) == before + 1
        assert fetch(activities, sim.url("/m/watch/clip")).committed and requests(sim) == before + 1
    assert catalog.key_for_url(sim.url("/m/watch/clip")) == page.resolved.canonical_key


def test_all_known_says_whether_a_listing_page_holds_only_stored_items(sim: Simulator, catalog: Catalog) -> None:
    site = install_bilibili_site(sim)
    registry = build_registry(PlatformsSettings(bilibili=site.settings()))
    stored, new = site.url("BV117411r7R1"), site.url("BV1GJ411x7h7")
    commit(catalog, "bilibili:BV117411r7R1", stored)
    commit(catalog, "web:feedfile", sim.url("/f/a.mp3"))
    assert all_known(catalog, registry, [stored, sim.url("/f/a.mp3")])
    assert not all_known(catalog, registry, [stored, new])
    assert not all_known(catalog, registry, [sim.url("/f/b.mp3")])
    assert not all_known(catalog, registry, ["ftp://nope/x"])
    assert requests(sim) == 0


def test_the_crawl_s_audio_choice_reaches_the_resolver(sim: Simulator, catalog: Catalog) -> None:
    """`-f ...+ba[acodec=...]` rides in the item's options to whichever worker fetches it."""
    site = install_bilibili_site(sim, rewrite_media=False)
    registry = build_registry(PlatformsSettings(bilibili=site.settings()))
    dash = site.videos[HIRES_VIDEO].playurl[4001]["data"]["dash"]
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, activity_type="fetch", workflow_id="wf-a",
                                   heartbeat_timeout=timedelta(seconds=10))
    with httpx.Client() as http:
        activities = FetchActivities(registry, ResolveContext(http, 5 << 20), catalog, timedelta(seconds=5))
        chosen = {audio: next(a for a in env.run(activities.fetch, FetchInput(site.url(HIRES_VIDEO), "wf-a",
                                                                                 audio=audio)).resolved.assets
                              if a.kind == "audio").urls[0]
                  for audio in ("", "aac")}
    assert chosen[""] == dash["flac"]["audio"]["baseUrl"]  # the setting's default: lossless first
    assert chosen["aac"] == max(dash["audio"], key=lambda a: a["bandwidth"])["baseUrl"]


def test_a_retried_fetch_that_committed_its_tiny_item_says_committed_not_duplicate(sim: Simulator,
                                                                                  catalog: Catalog) -> None:
    """A tiny item's fetch committed it, then its worker died before the reply: the retry finds the
    item committed by this run (same workflow id, since the run began) and says committed. The same
    URL crawled again later (a new run of that workflow id) is a duplicate, as is a first attempt."""
    sim.add_file("/cdn/own.mp4", MediaFile("mp4", "own", 20_000))
    url = sim.url("/cdn/own.mp4")

    def attempt(number: int, run_started_at: str, older: bool = False) -> FetchResult:
        """An attempt of fetch_and_store_tiny, or (``older``) of fetch as a run started before it asks."""
        env = ActivityEnvironment()
        env.info = dataclasses.replace(env.info, activity_type="fetch" if older else "fetch_and_store_tiny",
                                       workflow_id="wf-1", attempt=number, heartbeat_timeout=timedelta(seconds=10))
        return env.run(activities.fetch if older else tiny.fetch_and_store_tiny,
                       FetchInput(url, "wf-1", with_fetch_size=1 << 20, run_started_at=run_started_at))

    with httpx.Client() as http:
        activities = FetchActivities(build_registry(), ResolveContext(http, 1 << 20), catalog, timedelta(seconds=5))
        tiny = TinyItemActivities(activities, None, timedelta(seconds=5))  # type: ignore[arg-type] - stores nothing here
        activities.older_tiny = tiny.fetched_and_stored
        began = datetime.now(UTC) - timedelta(minutes=1)
        commit(catalog, fetch(activities, url).resolved.canonical_key, url)  # by workflow wf-1, now
        own = attempt(2, began.isoformat())
        assert (own.committed, own.finished.outcome, own.finished.assets[0].sha256) == (False, "committed", "a" * 64)
        assert attempt(1, began.isoformat()).committed  # a first attempt committed nothing itself
        later = attempt(2, (datetime.now(UTC) + timedelta(minutes=1)).isoformat())  # a later run of wf-1
        assert later.committed and later.finished is None
        # A run started before fetch_and_store_tiny asks fetch, which answers the same.
        assert attempt(2, began.isoformat(), older=True) == own
        assert fetch(activities, url).committed and fetch(activities, url).finished is None  # fetch alone: resolves


def test_a_recording_that_never_ended_is_not_known_and_the_next_goes_on_after_it(
        sim: Simulator, catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """A live item whose recording stopped before the broadcast ended (live_status is_live: its
    workflow failed or was cancelled) is resolved again, not answered from the catalog, and its
    live asset says where the stored recording stopped; once a recording ended, it is known."""
    from trawl.models import LIVE_PROTOCOL
    from trawl.platforms import generic
    from trawl.simulator.live_site import LiveSite, LiveStream

    class SameSecond(datetime):
        """A live playlist's key names the second its recording began: the fetches below are one
        broadcast's, however long a loaded machine takes between them."""

        @classmethod
        def now(cls, tz=None):  # noqa: ANN001, ANN206 - datetime's own signature
            return datetime(2026, 12, 5, 10, 0, 0, tzinfo=tz)

    monkeypatch.setattr(generic, "datetime", SameSecond)

    url = LiveSite(sim).install().add_stream("again", LiveStream(length=None).start())
    with httpx.Client() as http:
        activities = FetchActivities(build_registry(), ResolveContext(http, 1 << 20), catalog, timedelta(seconds=5))
        first = fetch(activities, url)
        assert first.resolved.assets[0].protocol == LIVE_PROTOCOL and first.resolved.assets[0].live_after is None
        live = {"playlist": url, "last_sequence": 41, "ended": None, "parts": [{"part": 1, "asset": "video"}]}
        commit(catalog, first.resolved.canonical_key, url, metadata={"live_status": "is_live", "live": live})
        again = fetch(activities, url)
        assert not again.committed and again.resolved.assets[0].live_after == {"playlist": url, "last_sequence": 41}
        catalog.add_to_item(canonical_key=first.resolved.canonical_key, platform="generic", canonical_url=url,
                            source_url=url, title="stored", uploader=None, published_at=None, workflow_id="wf-1",
                            assets=[], describe=lambda metadata, every: (
                                {**metadata, "live_status": "was_live", "live": {**live, "ended": "endlist"}}, None))
        assert fetch(activities, url).committed
