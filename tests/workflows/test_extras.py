"""Extras after the commit (issue 41, point 5), against a real Temporal dev server, a real worker
and the simulated Bilibili: each extra in its own activity, stored as an asset of the item with its
kind, or recorded missing with its class when it keeps failing; the item stays committed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.conftest import make_settings
from trawl.platforms.bilibili.danmaku import parse_danmaku_xml
from trawl.platforms.bilibili.site import BilibiliSite, install_bilibili_site
from trawl.platforms.registry import build_registry
from trawl.settings import PlatformsSettings, Settings
from trawl.simulator import Simulator
from trawl.starter.client import item_result, start_item
from trawl.storage.catalog import Catalog
from trawl.workflows.media_item import ItemResult

FAST_RETRY = {stage: {"initial_interval": "100ms", "maximum_interval": "300ms"}
              for stage in ("fetch", "download", "verify", "commit", "extras")}
VIDEO = "BV117411r7R1"  # 486 s: two danmaku segments


@pytest.fixture
def bili(sim: Simulator) -> BilibiliSite:
    return install_bilibili_site(sim)


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str, bili: BilibiliSite) -> Settings:
    return make_settings(tmp_path, temporal_address, retry=FAST_RETRY,
                         platforms=PlatformsSettings(bilibili=bili.settings()))


def _named(result: ItemResult, name: str):  # noqa: ANN202 - a StoredExtra
    return next(extra for extra in result.extras if extra.name == name)


async def crawl(client: Client, settings: Settings, url: str) -> ItemResult:
    started = await start_item(client, settings, build_registry(settings.platforms), url)
    return await asyncio.wait_for(item_result(started.handle, url), 90)


async def test_danmaku_of_every_segment_is_stored_as_an_asset(temporal_client: Client, settings: Settings,
                                                              bili: BilibiliSite, worker) -> None:
    result = await crawl(temporal_client, settings, bili.url(VIDEO))
    assert result.outcome == "committed", result
    danmaku = _named(result, "danmaku")
    assert (danmaku.name, danmaku.kind, danmaku.missing) == ("danmaku", "danmaku", "")
    item = Catalog(settings.catalog_url).get(f"bilibili:{VIDEO}")
    assert item is not None
    stored = next(a for a in item.assets if a.kind == "danmaku")
    assert stored.sha256 == danmaku.sha256 and stored.mime == "application/xml"
    chat_id, comments = parse_danmaku_xml((settings.blobs_dir / stored.key).read_bytes())
    cid = 146044693
    assert chat_id == str(cid) and bili.extras.segments(cid) == 2
    expected = bili.extras.danmaku(cid)
    # Both segments, every comment, the text as sent (markup-looking text stays text).
    assert [(c.id, c.text, c.seconds, c.color) for c in comments] == [(c.id, c.text, c.seconds, c.color)
                                                                      for c in expected]
    assert any("<b>" in c.text for c in comments) and comments[-1].seconds > 360
    assert result.assets and {a.kind for a in result.assets} >= {"video"}


async def test_an_extra_that_keeps_failing_is_recorded_missing_and_the_item_stays_committed(
        temporal_client: Client, settings: Settings, bili: BilibiliSite, worker) -> None:
    bili.extras.fault["danmaku"] = "503"
    result = await crawl(temporal_client, settings, bili.url(VIDEO))
    assert result.outcome == "committed", result
    danmaku = _named(result, "danmaku")
    assert danmaku.missing == "http_5xx" and "503" in danmaku.reason
    catalog = Catalog(settings.catalog_url)
    item = catalog.get(f"bilibili:{VIDEO}")
    assert item is not None and item.status == "committed" and "danmaku" not in {a.kind for a in item.assets}
    missing = next(m for m in catalog.missing_extras(f"bilibili:{VIDEO}") if m.name == "danmaku")
    assert (missing.name, missing.kind, missing.error_class) == ("danmaku", "danmaku", "http_5xx")
    assert "subtitles.zh-CN" in {a.name for a in item.assets}  # the other extras are stored all the same
    assert bili.extras.requests["danmaku"] == 5  # retry.extras.maximum_attempts, then no more


async def test_a_malformed_answer_is_a_parse_error_for_that_extra_alone(
        temporal_client: Client, settings: Settings, bili: BilibiliSite, worker) -> None:
    bili.extras.fault["danmaku"] = "garbage"
    result = await crawl(temporal_client, settings, bili.url(VIDEO))
    assert result.outcome == "committed", result
    danmaku = _named(result, "danmaku")
    assert danmaku.missing == "parse_error" and "DmSegMobileReply" in danmaku.reason
    assert bili.extras.requests["danmaku"] == 1  # a parse error is not retried


async def test_extras_turned_off_in_the_settings_are_not_fetched(tmp_path: Path, temporal_address: str,
                                                                 temporal_client: Client, bili: BilibiliSite) -> None:
    from trawl.worker.main import running_worker

    settings = make_settings(tmp_path, temporal_address, retry=FAST_RETRY,
                             platforms=PlatformsSettings(bilibili=bili.settings(extras=[])))
    async with running_worker(temporal_client, settings):
        result = await crawl(temporal_client, settings, bili.url(VIDEO))
    assert result.outcome == "committed" and result.extras == []
    assert "danmaku" not in bili.extras.requests


async def test_every_subtitle_track_is_an_asset_and_one_that_needs_a_login_is_recorded_missing(
        temporal_client: Client, settings: Settings, bili: BilibiliSite, worker) -> None:
    import json

    result = await crawl(temporal_client, settings, bili.url(VIDEO))
    assert result.outcome == "committed", result
    tracks = {e.name: e for e in result.extras if e.kind == "subtitles"}
    assert sorted(tracks) == ["subtitles.ai-en", "subtitles.ai-zh", "subtitles.zh-CN"]
    assert tracks["subtitles.ai-en"].missing == "login_required" and "cookies_file" in tracks["subtitles.ai-en"].reason
    catalog = Catalog(settings.catalog_url)
    item = catalog.get(f"bilibili:{VIDEO}")
    assert item is not None
    stored = {a.name: a for a in item.assets if a.kind == "subtitles"}
    assert {a.language for a in stored.values()} == {"zh-CN", "ai-zh"}
    body = json.loads((settings.blobs_dir / stored["subtitles.zh-CN"].key).read_bytes())
    assert body["body"] == bili.extras.cues(146044693, "zh-CN")  # stored as given
    assert "<i>原样</i>" in body["body"][0]["content"]
    assert [(m.name, m.language, m.error_class) for m in catalog.missing_extras(f"bilibili:{VIDEO}")] == [
        ("subtitles.ai-en", "ai-en", "login_required")]
    chapters = next(a for a in item.assets if a.kind == "chapters")
    assert [c["title"] for c in json.loads((settings.blobs_dir / chapters.key).read_bytes())] == [
        "开场", "正片 <一>", "彩蛋"]
    assert [c["title"] for c in item.metadata["chapters"]] == ["开场", "正片 <一>", "彩蛋"]  # in its metadata too


async def test_a_broken_subtitle_body_is_that_tracks_parse_error_alone(
        temporal_client: Client, settings: Settings, bili: BilibiliSite, worker) -> None:
    bili.extras.fault["subtitle"] = "garbage"
    result = await crawl(temporal_client, settings, bili.url(VIDEO))
    assert result.outcome == "committed", result
    tracks = {e.name: e.missing for e in result.extras if e.kind == "subtitles"}
    assert tracks == {"subtitles.zh-CN": "parse_error", "subtitles.ai-zh": "parse_error",
                      "subtitles.ai-en": "login_required"}
    assert _named(result, "danmaku").missing == "" and _named(result, "chapters").missing == ""


async def test_every_comment_and_reply_is_stored_in_one_document_paged_durably(
        temporal_client: Client, settings: Settings, bili: BilibiliSite, worker) -> None:
    import json

    bili.extras.fail_comment_page_once = 100  # the sixth page fails once: the retry goes on from it
    result = await crawl(temporal_client, settings, bili.url(VIDEO))
    assert result.outcome == "committed", result
    stored = _named(result, "comments")
    assert stored.missing == "" and stored.kind == "comments"
    doc = json.loads((settings.blobs_dir / stored.blob).read_bytes())
    aid = 85440373
    assert doc["count"] == doc["total"] == bili.extras.expected_comments(aid) == 858 and not doc["truncated"]
    comments = doc["comments"]
    assert len({c["id"] for c in comments}) == len(comments)
    pinned = comments[0]
    assert pinned["is_pinned"] and pinned["parent"] == "root" and pinned["id"] == str(aid * 1000)
    top = [c for c in comments if c["parent"] == "root"]
    assert len(top) == 251
    by_id = {c["id"]: c for c in comments}
    assert all(c["parent"] in by_id for c in comments if c["parent"] != "root")  # every reply's parent is there
    nested = [c for c in comments if c["parent"] != "root" and by_id[c["parent"]]["parent"] != "root"]
    assert nested  # replies answering a reply keep that parent
    assert any("<script>" in c["text"] for c in comments)  # text as given
    assert {"author", "author_id", "timestamp", "like_count", "text"} <= set(top[1])
    # Every page once, the failed one twice: the retried attempt went on from the heartbeated cursor.
    pages = bili.extras.comment_pages
    assert sorted(pages) == sorted([*range(0, 250, 20), 100]), pages


async def test_a_refresh_stores_a_dated_snapshot_beside_the_first_extras(
        temporal_client: Client, settings: Settings, bili: BilibiliSite, worker) -> None:
    from trawl.export_extras import latest
    from trawl.starter.client import start_extras_refresh

    first = await crawl(temporal_client, settings, bili.url(VIDEO))
    assert first.outcome == "committed", first
    handle = await start_extras_refresh(temporal_client, settings, f"bilibili:{VIDEO}", "bilibili",
                                        ["comments", "danmaku"])
    refreshed = await asyncio.wait_for(handle.result(), 60)
    assert sorted(e.name for e in refreshed.extras) == [f"comments@{refreshed.snapshot}", f"danmaku@{refreshed.snapshot}"]
    assert all(not e.missing for e in refreshed.extras) and len(refreshed.snapshot) == len("20261205T130800Z")
    item = Catalog(settings.catalog_url).get(f"bilibili:{VIDEO}")
    assert item is not None
    names = {a.name for a in item.assets}
    assert {"comments", "danmaku", f"comments@{refreshed.snapshot}", f"danmaku@{refreshed.snapshot}"} <= names
    # An export writes the newest of each.
    newest = {a.name for a in latest(item.assets) if a.kind in ("comments", "danmaku")}
    assert newest == {f"comments@{refreshed.snapshot}", f"danmaku@{refreshed.snapshot}"}


async def test_a_closed_comment_area_is_comments_missing_at_once(temporal_client: Client, settings: Settings,
                                                                 bili: BilibiliSite, worker) -> None:
    bili.extras.commented.clear()  # the simulated site answers code 12002, 评论区已关闭
    result = await crawl(temporal_client, settings, bili.url(VIDEO))
    assert result.outcome == "committed", result
    comments = _named(result, "comments")
    assert comments.missing == "not_found" and "12002" in comments.reason
    assert bili.extras.requests["comments"] == 1  # not retried


async def test_the_extras_stored_are_searched_line_by_line_and_a_refresh_replaces_them(
        temporal_client: Client, settings: Settings, bili: BilibiliSite, worker) -> None:
    from sqlalchemy import text

    from trawl.starter.client import start_extras_refresh
    from trawl.storage.library import LibraryQuery

    result = await crawl(temporal_client, settings, bili.url(VIDEO))
    assert result.outcome == "committed", result
    key = f"bilibili:{VIDEO}"
    catalog = Catalog(settings.catalog_url)
    first = bili.extras.danmaku(146044693)[0]  # 前方高能, the first of the video
    for words, kind, seconds in (("方高", "danmaku", first.seconds), ("第3句", "subtitles", 20.0),
                                 ("求BGM", "comments", None)):
        page = catalog.library(LibraryQuery(text=words))
        assert [i.canonical_key for i in page.items] == [key], words
        hit = page.hits[key]
        assert (hit.kind, hit.seconds) == (kind, seconds), words

    def danmaku_lines() -> int:
        with catalog.engine.connect() as connection:
            return connection.execute(text("SELECT count(*) FROM extras_lines WHERE kind = 'danmaku'")).scalar()

    indexed = danmaku_lines()
    assert indexed == len(bili.extras.danmaku(146044693))
    handle = await start_extras_refresh(temporal_client, settings, key, "bilibili", ["danmaku"])
    await asyncio.wait_for(handle.result(), 60)
    assert danmaku_lines() == indexed  # the snapshot's lines replaced the first ones
    assert catalog.library(LibraryQuery(text="方高")).hits[key].kind == "danmaku"
    catalog.close()
