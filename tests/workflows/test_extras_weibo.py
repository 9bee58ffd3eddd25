"""A Weibo post's comments with their replies as an extra (issue 41, point 4), against a real
Temporal dev server, a real worker and the simulated m.weibo.cn."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.conftest import make_settings
from trawl.platforms.registry import build_registry
from trawl.platforms.weibo.site import WeiboSite, install_weibo_site
from trawl.settings import PlatformsSettings, Settings
from trawl.simulator import Simulator
from trawl.starter.client import item_result, start_item

FAST_RETRY = {stage: {"initial_interval": "100ms", "maximum_interval": "300ms"}
              for stage in ("fetch", "download", "verify", "commit", "extras")}


@pytest.fixture
def weibo(sim: Simulator) -> WeiboSite:
    return install_weibo_site(sim)


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str, weibo: WeiboSite) -> Settings:
    return make_settings(tmp_path, temporal_address, retry=FAST_RETRY,
                         platforms=PlatformsSettings(weibo=weibo.settings(requests_per_second=1000)))


async def test_a_posts_comments_and_replies_are_one_document(temporal_client: Client, settings: Settings,
                                                              weibo: WeiboSite, worker) -> None:
    post = weibo.posts["playback"]
    started = await start_item(temporal_client, settings, build_registry(settings.platforms), post.url)
    result = await asyncio.wait_for(item_result(started.handle, post.url), 90)
    assert result.outcome == "committed", result
    [stored] = [e for e in result.extras if e.name == "comments"]
    doc = json.loads((settings.blobs_dir / stored.blob).read_bytes())
    assert doc["platform"] == "weibo" and doc["id"] == post.mid
    assert doc["count"] == doc["total"] == weibo.comments.expected(post.mid) and not doc["truncated"]
    comments = doc["comments"]
    by_id = {c["id"]: c for c in comments}
    assert len(by_id) == len(comments) and sum(c["parent"] == "root" for c in comments) == 120
    assert all(c["parent"] in by_id for c in comments if c["parent"] != "root")
    assert any(by_id[c["parent"]]["parent"] != "root" for c in comments if c["parent"] != "root")
    assert comments[0]["text"].startswith('转发了 <a href="/n/某人">@某人</a>')  # HTML kept as given
    assert comments[0]["timestamp"] > 1_700_000_000 and comments[0]["author"].startswith("微博用户")
    assert len(weibo.comments.pages) == 6  # 120 comments, 20 a page
