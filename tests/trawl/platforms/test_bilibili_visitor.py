"""Bilibili's visitor session against the simulated site: ids from finger/spi sent with every API
request, a -352 (or a search's -412) answered once by renewing them, rotated WBI keys fetched
again after a failed signature, a refusal that persists returned as it is, and a cookies file's
own buvid3 left alone."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from trawl.errors import RateLimited
from trawl.platforms.base import ResolveContext
from trawl.platforms.bilibili.listings import uploader_listing
from trawl.platforms.bilibili.resolver import BilibiliResolver
from trawl.platforms.bilibili.search import search_listing
from trawl.platforms.bilibili.visitor import RENEWED_FOR, Visitor
from trawl.platforms.bilibili.site import LIST_MID, BilibiliSite, install_bilibili_site
from trawl.platforms.bilibili.visitor_site import SPI_PATH, expire_visitors, rotate_wbi
from trawl.simulator import Simulator
from trawl.storage.catalog import Catalog
from trawl.storage.catalog_state import CatalogState

VIDEO = "BV117411r7R1"


@pytest.fixture
def site(sim: Simulator) -> BilibiliSite:
    site = install_bilibili_site(sim)
    site.visitor_required = True
    return site


@pytest.fixture
def ctx() -> Iterator[ResolveContext]:
    with httpx.Client() as http:
        yield ResolveContext(http, 5 * 1024 * 1024)


def asked(sim: Simulator, path: str) -> int:
    return sim.stats_snapshot().get(path, {}).get("requests", 0)


def test_the_visitor_ids_are_asked_once_and_sent_with_every_request(site: BilibiliSite, sim: Simulator,
                                                                     ctx: ResolveContext) -> None:
    bili = BilibiliResolver(site.settings())
    assert bili.resolve(site.url(VIDEO), ctx).canonical_key == f"bilibili:{VIDEO}"
    assert len(uploader_listing(bili, ctx, LIST_MID, 5, None)) == 40
    assert len(search_listing(bili, ctx, "keyword=样片日记", 5, None)) == 40
    assert asked(sim, SPI_PATH) == 1 and bili.visitor.renewals == 0
    # without the session the same APIs refuse: -352, and the search's -412
    bare = BilibiliResolver(site.settings())
    bare.visitor.current = lambda *_: Visitor(0, "", "", None)  # type: ignore[method-assign]  # one that never asks
    with pytest.raises(RateLimited, match="-352"):
        uploader_listing(bare, ctx, LIST_MID, 1, None)


def test_a_stale_session_is_renewed_once_and_the_request_asked_again(site: BilibiliSite, sim: Simulator,
                                                                     ctx: ResolveContext) -> None:
    bili = BilibiliResolver(site.settings())
    bili.resolve(site.url(VIDEO), ctx)
    expire_visitors(site)  # the platform no longer takes these ids: -352
    assert bili.resolve(site.url(VIDEO), ctx).assets
    assert asked(sim, SPI_PATH) == 2 and bili.visitor.renewals == 1
    expire_visitors(site)  # the search says -412 instead
    bili.visitor.clock = lambda: time.time() + RENEWED_FOR  # long after the last renewal
    assert len(search_listing(bili, ctx, "keyword=样片日记", 5, None)) == 40
    assert asked(sim, SPI_PATH) == 3 and bili.visitor.renewals == 2


def test_rotated_wbi_keys_are_fetched_again(site: BilibiliSite, sim: Simulator, ctx: ResolveContext) -> None:
    bili = BilibiliResolver(site.settings())
    bili.resolve(site.url(VIDEO), ctx)
    navs = asked(sim, "/x/web-interface/nav")
    rotate_wbi(site)  # the signature made with the cached keys fails: -403
    assert bili.resolve(site.url(VIDEO), ctx).assets
    assert asked(sim, "/x/web-interface/nav") == navs + 1 and bili.visitor.renewals == 1


def test_a_refusal_that_persists_is_what_it_is(site: BilibiliSite, sim: Simulator, ctx: ResolveContext) -> None:
    bili = BilibiliResolver(site.settings())
    bili.resolve(site.url(VIDEO), ctx)
    site.rate_limit_per_s = 0.001  # every request over the limit: -352 whatever the session
    with pytest.raises(RateLimited, match="-352"):
        uploader_listing(bili, ctx, LIST_MID, 1, None)
    assert bili.visitor.renewals == 1  # renewed once, then the -352 stands
    with pytest.raises(RateLimited, match="-352"):
        uploader_listing(bili, ctx, LIST_MID, 1, None)
    assert bili.visitor.renewals == 1 and asked(sim, SPI_PATH) == 2  # no renewal again so soon
    with pytest.raises(RateLimited, match="HTTP 412"):  # an HTTP 412 is the address refused: never renewed
        bili.resolve(site.url(VIDEO), ctx)
    assert bili.visitor.renewals == 1


def test_a_cookies_file_with_its_own_buvid3_is_left_alone(site: BilibiliSite, sim: Simulator, ctx: ResolveContext,
                                                         tmp_path: Path) -> None:
    issued = "11111111-2222-3333-4444-555555555555infoc"
    site.visitors.add(issued)
    cookies = tmp_path / "cookies.txt"
    cookies.write_text("# Netscape HTTP Cookie File\n"
                       f".bilibili.com\tTRUE\t/\tFALSE\t2147483647\tbuvid3\t{issued}\n")
    bili = BilibiliResolver(site.settings(cookies_file=str(cookies)))
    assert bili.resolve(site.url(VIDEO), ctx).assets
    assert asked(sim, SPI_PATH) == 0


def test_workers_over_one_catalog_ask_for_one_session_and_see_its_renewal(site: BilibiliSite, sim: Simulator,
                                                                          catalog_url: str) -> None:
    # Two workers, as two processes would be: their own resolver and catalog connection each, one catalog.
    catalogs = [Catalog(catalog_url), Catalog(catalog_url)]
    catalogs[0].create_schema()
    workers = [BilibiliResolver(site.settings()), BilibiliResolver(site.settings())]
    with httpx.Client() as http:
        contexts = [ResolveContext(http, 5 * 1024 * 1024, shared=CatalogState(catalog)) for catalog in catalogs]
        with ThreadPoolExecutor(2) as pool:  # both at once: one asks, the other waits for its answer
            found = list(pool.map(lambda i: workers[i].resolve(site.url(VIDEO), contexts[i]), range(2)))
        assert all(item.assets for item in found)
        assert asked(sim, SPI_PATH) == 1 and asked(sim, "/x/web-interface/nav") == 1
        expire_visitors(site)  # -352 for everyone: the first to hear it renews for both
        assert workers[0].resolve(site.url(VIDEO), contexts[0]).assets
        assert asked(sim, SPI_PATH) == 2 and workers[0].visitor.renewals == 1
        assert workers[1].resolve(site.url(VIDEO), contexts[1]).assets  # sends the renewed ids at once
        assert asked(sim, SPI_PATH) == 2 and workers[1].visitor.renewals == 0
    for catalog in catalogs:
        catalog.close()
