"""Source listings page only as far as needed: the first page of known items is the last one read."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from trawl.platforms.base import ResolveContext
from trawl.platforms.registry import build_registry
from trawl.settings import PlatformsSettings, Settings, SourceSettings
from trawl.simulator import Simulator
from trawl.platforms.weibo.site import install_weibo_site
from trawl.sources import SourceError, describe, expand, source_definition, source_from_definition


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


def test_a_source_travels_as_its_definition() -> None:
    """A watch carries its source's definition; the worker that expands a run reads it back, and
    refuses, saying why, one it does not know (a newer trawl's field, a missing argument)."""
    source = SourceSettings(name="news", kind="feed", url="https://example.org/feed.xml", max_pages=2)
    carried = source_definition(source)
    assert json.loads(json.dumps(carried)) == carried and source_from_definition(carried) == source
    for definition, why in (({**carried, "since": "2026"}, "since: Extra inputs are not permitted"),
                            ({"name": "news", "kind": "feed"}, "kind feed needs url"),
                            ({"name": "news", "kind": "mailbox"}, "kind: Input should be")):
        with pytest.raises(SourceError, match="source 'news': its definition is not one this worker reads") as err:
            source_from_definition(definition)
        assert why in str(err.value), err.value
