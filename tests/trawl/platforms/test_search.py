"""Keyword searches as listings (Bilibili video search, Weibo post search): their URL forms and
yt-dlp-style forms routed offline, any text passed safely, and the searches walked against the
simulated sites (pages, orders, the 1,000-result cap cut by date, stopping at known results)."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator

import httpx
import pytest

from trawl.errors import UnsupportedUrl
from trawl.listing_filters import ListingFilters, Walk, day_start, parse_date
from trawl.platforms.base import ResolveContext
from trawl.platforms.bilibili.listing_site import POOL, expected_urls
from trawl.platforms.bilibili.resolver import BilibiliResolver
from trawl.platforms.bilibili.search import parse_search, search_listing
from trawl.platforms.bilibili.search_site import MANY, MANY_FIRST, MANY_KEYWORD, SEARCH_PATH
from trawl.platforms.bilibili.site import install_bilibili_site
from trawl.platforms.registry import build_registry, default_registry
from trawl.platforms.weibo import search as weibo_search
from trawl.platforms.weibo.resolver import WeiboResolver
from trawl.platforms.weibo.site import install_weibo_site
from trawl.routing import crawl_item
from trawl.simulator import Simulator
from trawl.sources import listing_source

REGISTRY = default_registry()

# (as pasted, kind, the source id it stands for)
FORMS = [
    ("https://search.bilibili.com/all?keyword=%E6%B4%9B%E5%A4%A9%E4%BE%9D", "bilibili_search",
     "keyword=%E6%B4%9B%E5%A4%A9%E4%BE%9D"),
    ("https://search.bilibili.com/all?vt=123&keyword=cats&from_source=webtop_search&spm_id_from=333.1007",
     "bilibili_search", "keyword=cats"),
    ("https://search.bilibili.com/video?keyword=cats&order=pubdate", "bilibili_search", "keyword=cats&order=pubdate"),
    ("https://search.bilibili.com/video?keyword=cats&order=click&duration=4&page=3", "bilibili_search",
     "keyword=cats&order=click&duration=4"),
    ("https://search.bilibili.com/video?keyword=a&pubtime_begin_s=1700000000&pubtime_end_s=1700086400",
     "bilibili_search", "keyword=a&pubtime_begin_s=1700000000&pubtime_end_s=1700086400"),
    ("https://m.bilibili.com/search?keyword=cats", "bilibili_search", "keyword=cats"),
    ("bilisearch:cats and dogs", "bilibili_search", "keyword=cats+and+dogs&limit=1"),
    ("bilisearch25:cats", "bilibili_search", "keyword=cats&limit=25"),
    ("bilisearchall:cats", "bilibili_search", "keyword=cats"),
    ("bilisearchdate:cats", "bilibili_search", "keyword=cats&order=pubdate&limit=1"),
    ("bilisearchdateall:猫", "bilibili_search", "keyword=%E7%8C%AB&order=pubdate"),
    ("https://s.weibo.com/weibo?q=%E6%98%A5%E5%A4%A9", "weibo_search", "q=%E6%98%A5%E5%A4%A9"),
    ("https://s.weibo.com/weibo?q=spring&xsort=time&Refer=g", "weibo_search", "q=spring&type=61"),
    ("https://s.weibo.com/realtime?q=spring", "weibo_search", "q=spring&type=61"),
    ("https://m.weibo.cn/search?containerid=100103type%3D1%26q%3D%E6%98%A5", "weibo_search", "q=%E6%98%A5"),
    ("https://m.weibo.cn/search?containerid=100103type%3D61%26q%3Dspring", "weibo_search", "q=spring&type=61"),
    ("weibosearch:spring", "weibo_search", "q=spring&limit=1"),
    ("weibosearchdate10:spring rain", "weibo_search", "q=spring+rain&type=61&limit=10"),
    ("weibosearchall:spring", "weibo_search", "q=spring"),
]


@pytest.mark.parametrize(("url", "kind", "ident"), FORMS)
def test_search_forms_are_listings_routed_offline(url: str, kind: str, ident: str) -> None:
    route = REGISTRY.listing_for(url)
    assert route is not None and (route.kind, route.id) == (kind, ident)
    item = crawl_item(REGISTRY, url)
    assert item.listing is not None and item.workflow_id.startswith("listing-")
    assert listing_source(route).id == ident  # a valid source definition


# Texts no search may misread: separators, percent signs, quotes, newlines, emoji, very long.
ODD_TEXTS = ["a&order=click", "100%", "x#y?z=1", "keyword=inner", "line\nbreak", "tab\tand nul\x00", "😀 猫",
             "'; DROP TABLE items; --", "<em>", "+plus+", "two  spaces", "a" * 1000]


@pytest.mark.parametrize("text", ODD_TEXTS)
def test_any_search_text_is_kept_as_text(text: str) -> None:
    route = REGISTRY.listing_for(f"bilisearchall:{text}")
    assert route is not None and parse_search(route.id).keyword == text
    assert parse_search(route.id).order == "totalrank"  # "&order=click" in the text changes nothing
    weibo = REGISTRY.listing_for(f"weibosearchall:{text}")
    assert weibo is not None and weibo_search.parse_search(weibo.id).text == text


@pytest.mark.parametrize(("ident", "says"), [
    ("keyword=", "give the text"), ("   ", "give the text"), ("a" * 1001, "at most 1000"),
    ("keyword=cats&order=newest", "order 'newest' is not one of"), ("keyword=cats&duration=7", "is not 0-4"),
    ("keyword=cats&pubtime_begin_s=yesterday", "is not a number"),
])
def test_a_bad_search_says_what_is_wrong(ident: str, says: str) -> None:
    with pytest.raises(UnsupportedUrl, match=says):
        parse_search(ident)


def test_a_bad_search_url_is_refused_offline() -> None:
    with pytest.raises(UnsupportedUrl, match="order 'hot' is not one of"):
        REGISTRY.listing_for("https://search.bilibili.com/video?keyword=cats&order=hot")
    with pytest.raises(UnsupportedUrl, match="type '2' is not 1"):
        REGISTRY.listing_for("https://m.weibo.cn/search?containerid=100103type%3D2%26q%3Dx")


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client() as client:
        yield client


def _searches(sim: Simulator) -> int:
    return sim.stats[SEARCH_PATH].requests


def test_bilibili_search_pages_in_the_order_asked(sim: Simulator, http: httpx.Client) -> None:
    site = install_bilibili_site(sim)
    bili = BilibiliResolver(site.settings())
    ctx = ResolveContext(http, 10_000_000)
    newest = search_listing(bili, ctx, "keyword=样片日记&order=pubdate", 10, None)
    assert newest == expected_urls(site.settings().page_base, range(POOL, 0, -1))  # 40: two pages of 20
    assert _searches(sim) == 2
    assert search_listing(bili, ctx, "keyword=样片日记 第3期", 10, None) == expected_urls(
        site.settings().page_base, [3])
    assert search_listing(bili, ctx, "keyword=样片日记&duration=4", 10, None) == []  # none over an hour
    assert search_listing(bili, ctx, "keyword=样片日记&order=pubdate&limit=5", 10, None) == newest[:5]
    window = f"keyword=样片日记&order=pubdate&pubtime_begin_s={1700000000 + 10 * 86400}&pubtime_end_s={1700000000 + 12 * 86400}"
    assert search_listing(bili, ctx, window, 10, None) == expected_urls(site.settings().page_base, [12, 11, 10])


def test_bilibili_search_past_the_cap_is_cut_by_date(sim: Simulator, http: httpx.Client) -> None:
    site = install_bilibili_site(sim)
    bili = BilibiliResolver(site.settings())
    ctx = ResolveContext(http, 10_000_000)
    found = search_listing(bili, ctx, f"keyword={MANY_KEYWORD}&order=pubdate", 100, None)
    assert len(found) == len(set(found)) == MANY  # 1,300: past the 1,000 one search gives
    assert found[0].endswith(site.search.many[-1].bvid) and found[-1].endswith(site.search.many[0].bvid)
    assert MANY / 20 < _searches(sim) <= 100  # 65 pages, plus one probe per window cut
    before = _searches(sim)
    capped = search_listing(bili, ctx, f"keyword={MANY_KEYWORD}&order=pubdate", 5, None)
    assert len(capped) <= 5 * 20 and _searches(sim) - before == 5  # max_pages counts every request


def test_bilibili_date_ordered_search_stops_at_known_results_and_at_the_date_bound(
        sim: Simulator, http: httpx.Client) -> None:
    site = install_bilibili_site(sim)
    bili = BilibiliResolver(site.settings())
    ctx = ResolveContext(http, 10_000_000)
    known = set(expected_urls(site.settings().page_base, range(1, POOL + 1)))  # crawled by an earlier run
    walk = Walk(known=lambda urls: set(urls) <= known)
    assert len(search_listing(bili, ctx, "keyword=样片日记&order=pubdate", 10, walk)) == 20
    assert _searches(sim) == 1 and walk.stopped_by == "known"
    # by relevance, a new result can follow known ones: every page is read
    before = _searches(sim)
    relevance = Walk(known=lambda urls: set(urls) <= known)
    search_listing(bili, ctx, "keyword=样片日记", 10, relevance)
    assert _searches(sim) - before == 2 and relevance.stopped_by == ""
    # a date bound narrows the search itself (pubtime_begin_s)
    day = MANY_FIRST + 1200 * 6 * 3600
    after = Walk(filters=ListingFilters(dateafter=_yyyymmdd(day)))
    before = _searches(sim)
    recent = search_listing(bili, ctx, f"keyword={MANY_KEYWORD}&order=pubdate", 100, after)
    start = day_start(parse_date(_yyyymmdd(day)))
    pubdates = {f.bvid: f.pubdate for f in site.search.many}
    assert recent and all(pubdates[u.rsplit("/", 1)[-1]] >= start for u in recent)
    assert len(recent) == sum(1 for p in pubdates.values() if p >= start)
    assert _searches(sim) - before == -(-len(recent) // 20)  # only the window's pages


def _yyyymmdd(unix: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(unix, dt.timezone.utc).strftime("%Y%m%d")


def test_weibo_search_pages_and_groups(sim: Simulator, http: httpx.Client) -> None:
    site = install_weibo_site(sim)
    site.add_posts("playback", 25)
    weibo = WeiboResolver(site.settings())
    ctx = ResolveContext(http, 10_000_000)
    text = "临摹了10万张梵高的画"  # the playback post's text, and its 25 clones'
    realtime = weibo_search.search_listing(weibo, ctx, f"q={urllib.parse.quote(text)}&type=61", 10, None)
    assert len(realtime) == 26
    newest_first = sorted((p for p in site.posts.values() if text in str(p.mobile["data"].get("text"))),
                          key=lambda p: int(p.mid), reverse=True)
    assert realtime == [p.url for p in newest_first]
    assert sim.stats["/api/container/getIndex"].requests == 3  # pages of 10
    relevance = weibo_search.search_listing(weibo, ctx, text, 10, None)
    assert sorted(relevance) == sorted(realtime) and relevance != realtime
    assert weibo_search.search_listing(weibo, ctx, f"q={urllib.parse.quote(text)}&type=61&limit=4", 10, None) \
        == realtime[:4]
    known = set(realtime[10:])
    walk = Walk(known=lambda urls: set(urls) <= known)
    before = sim.stats["/api/container/getIndex"].requests
    weibo_search.search_listing(weibo, ctx, f"q={urllib.parse.quote(text)}&type=61", 10, walk)
    assert sim.stats["/api/container/getIndex"].requests - before == 2 and walk.stopped_by == "known"
    assert weibo_search.search_listing(weibo, ctx, "nothing like this", 10, None) == []


def test_search_forms_follow_the_configured_bases(sim: Simulator) -> None:
    site = install_bilibili_site(sim)
    from trawl.platforms.registry import PLATFORMS
    from trawl.platforms.platform import platforms_model

    config = platforms_model(PLATFORMS)(bilibili=site.settings(search_base=sim.url("/search-page")))
    registry = build_registry(config)
    route = registry.listing_for(sim.url("/search-page/all?keyword=样片日记"))
    assert route is not None and route.kind == "bilibili_search"


def test_a_search_source_expands_as_its_url_would(sim: Simulator, http: httpx.Client) -> None:
    from trawl.platforms.platform import platforms_model
    from trawl.platforms.registry import PLATFORMS
    from trawl.settings import Settings, SourceSettings
    from trawl.sources import expand

    site = install_bilibili_site(sim)
    registry = build_registry(platforms_model(PLATFORMS)(bilibili=site.settings()))
    source = SourceSettings(name="diary", kind="bilibili_search", id="keyword=样片日记&order=pubdate", max_pages=1)
    urls = expand(source, Settings(), registry, ResolveContext(http, 10_000_000))
    assert urls == expected_urls(site.settings().page_base, range(POOL, POOL - 20, -1))  # one page of 20
    plain = SourceSettings(name="diary", kind="bilibili_search", id="样片日记 第9期")
    assert expand(plain, Settings(), registry, ResolveContext(http, 10_000_000)) == expected_urls(
        site.settings().page_base, [9])


def test_weibo_real_time_search_stops_paging_once_past_dateafter(sim: Simulator, http: httpx.Client) -> None:
    import datetime as dt

    site = install_weibo_site(sim)
    clones = site.add_posts("playback", 40)  # an hour apart: about two days of posts
    weibo = WeiboResolver(site.settings())
    ctx = ResolveContext(http, 10_000_000)
    text = urllib.parse.quote("临摹了10万张梵高的画")
    newest = max((int(c.mid) >> 22) + 515483463 for c in clones)
    day = dt.datetime.fromtimestamp(newest, dt.timezone.utc).date()
    walk = Walk(filters=ListingFilters(dateafter=day.strftime("%Y%m%d")), today=day)
    found = weibo_search.search_listing(weibo, ctx, f"q={text}&type=61", 10, walk)
    on_the_day = [c for c in clones if dt.datetime.fromtimestamp((int(c.mid) >> 22) + 515483463,
                                                                 dt.timezone.utc).date() == day]
    assert sorted(found) == sorted(c.url for c in on_the_day) and walk.stopped_by == "date"
    assert sim.stats["/api/container/getIndex"].requests == len(on_the_day) // 10 + 1  # 5 pages without the bound
