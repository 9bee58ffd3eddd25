"""Weibo's visitor cookies against the simulated Sina Visitor System: a desktop API request sent
there gets visitor cookies (genvisitor, then incarnate) and is asked again, once; the cookies are
kept for the next requests, by every worker over one catalog; without the flow it falls back as before."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from trawl.platforms.base import ResolveContext
from trawl.platforms.weibo.resolver import WeiboResolver
from trawl.platforms.weibo.site import WeiboSite, install_weibo_site
from trawl.platforms.weibo.visitor import jsonp
from trawl.simulator import Simulator
from trawl.storage.catalog import Catalog
from trawl.storage.catalog_state import CatalogState


@pytest.fixture
def site(sim: Simulator) -> WeiboSite:
    site = install_weibo_site(sim)
    site.login_redirect = True  # the desktop API sends clients without cookies to the visitor system
    return site


@pytest.fixture
def ctx() -> Iterator[ResolveContext]:
    with httpx.Client(follow_redirects=True) as http:  # as trawl's client (trawl.http_client)
        yield ResolveContext(http, 5 * 1024 * 1024)


def asked(sim: Simulator, path: str) -> int:
    return sim.stats_snapshot().get(path, {}).get("requests", 0)


def test_a_visitor_gets_its_cookies_once_and_the_desktop_api_answers(site: WeiboSite, sim: Simulator,
                                                                     ctx: ResolveContext) -> None:
    site.visitor_flow = True
    weibo = WeiboResolver(site.settings())
    for key in ("playback", "pictures"):
        assert weibo.resolve(site.posts[key].url, ctx).canonical_key == f"weibo:{site.posts[key].mid}"
    assert asked(sim, "/visitor/genvisitor") == 1 and weibo.visitor.renewals == 1
    assert asked(sim, "/ajax/statuses/show") == 3  # sent away once, then answered twice
    assert asked(sim, "/statuses/show") == 0  # no fallback to the mobile API was needed


def test_without_the_flow_it_falls_back_as_before(site: WeiboSite, sim: Simulator, ctx: ResolveContext) -> None:
    weibo = WeiboResolver(site.settings())
    item = weibo.resolve(site.posts["pictures"].url, ctx)
    assert [a.name for a in item.assets] == ["image-1", "image-2"]
    assert weibo.visitor.renewals == 0 and asked(sim, "/statuses/show") == 1


def test_jsonp_answers_are_read_bounded() -> None:
    assert jsonp(b'window.cb && cb({"retcode": 20000000, "data": {"sub": "x"}});') == {
        "retcode": 20000000, "data": {"sub": "x"}}
    assert jsonp(b"<html>not jsonp</html>") == {} and jsonp(b"cb([1, 2])") == {} and jsonp(b"cb({)") == {}


def test_workers_over_one_catalog_visit_the_visitor_system_once(site: WeiboSite, sim: Simulator,
                                                                catalog_url: str) -> None:
    site.visitor_flow = True
    catalogs = [Catalog(catalog_url), Catalog(catalog_url)]
    catalogs[0].create_schema()
    workers = [WeiboResolver(site.settings()), WeiboResolver(site.settings())]
    with httpx.Client(follow_redirects=True) as http:
        contexts = [ResolveContext(http, 5 * 1024 * 1024, shared=CatalogState(catalog)) for catalog in catalogs]
        assert workers[0].resolve(site.posts["playback"].url, contexts[0]).assets
        assert workers[1].resolve(site.posts["pictures"].url, contexts[1]).assets  # with the first one's cookies
    assert asked(sim, "/visitor/genvisitor") == 1 and [w.visitor.renewals for w in workers] == [1, 0]
    assert asked(sim, "/ajax/statuses/show") == 3  # sent away once, then answered twice
    for catalog in catalogs:
        catalog.close()
