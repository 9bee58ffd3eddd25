"""Source listings page only as far as needed: the first page of known items is the last one read."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from trawl.platforms.base import ResolveContext
from trawl.platforms.registry import build_registry
from trawl.settings import PlatformsSettings, Settings, SourceSettings
from trawl.simulator import Simulator
from trawl.simulator.weibo import install_weibo_site
from trawl.sources import describe, expand


@pytest.fixture
def ctx() -> Iterator[ResolveContext]:
    with httpx.Client(follow_redirects=True) as client:
        yield ResolveContext(client, 1 << 20)


def test_a_weibo_user_listing_stops_at_a_page_of_known_posts(sim: Simulator, ctx: ResolveContext) -> None:
    site = install_weibo_site(sim)
    site.page_size = 1
    settings = Settings(platforms=PlatformsSettings(weibo=site.settings()))
    registry = build_registry(settings.platforms)
    uid = site.posts["novideo"].uid
    source = SourceSettings(name="u", kind="weibo_user", id=uid, max_pages=10)
    everything = expand(source, settings, registry, ctx)
    assert len(everything) == 2 and sim.stats["/api/container/getIndex"].requests == 3
    known = set(everything)
    asked: list[list[str]] = []

    def all_known(urls: list[str]) -> bool:
        asked.append(urls)
        return set(urls) <= known

    assert expand(source, settings, registry, ctx, known=all_known) == everything[:1]
    assert asked == [everything[:1]] and sim.stats["/api/container/getIndex"].requests == 3 + 1
    full = source.model_copy(update={"full_listing": True})
    assert expand(full, settings, registry, ctx, known=all_known) == everything
    assert sim.stats["/api/container/getIndex"].requests == 3 + 1 + 3
    assert describe(source) == f"weibo_user {uid}"
