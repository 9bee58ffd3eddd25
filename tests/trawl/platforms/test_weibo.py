import copy
import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import REFERENCE
from trawl.errors import TrawlError
from trawl.models import Resolved
from trawl.platforms.base import ResolveContext
from trawl.platforms.weibo.resolver import (
    WeiboResolver,
    mblogid_to_mid,
    mid_to_mblogid,
    parse_created_at,
    resolvers,
    user_post_urls,
)
from trawl.platforms.weibo import WeiboSettings
from trawl.simulator import Response, Simulator
from trawl.simulator.faults import html_error, status
from trawl.platforms.weibo.site import WeiboSite, install_weibo_site

REFERER = "https://weibo.com/"
PLAYBACK = json.loads((REFERENCE / "weibo_ajax_page_info_playback_list_1.json").read_text())
URLS = json.loads((REFERENCE / "weibo_mweibocn_page_info_urls_2023_1.json").read_text())
NOVIDEO = json.loads((REFERENCE / "weibo_mweibocn_statuses_show_1_noVideo.json").read_text())


@pytest.fixture
def ctx() -> Iterator[ResolveContext]:
    with httpx.Client(follow_redirects=True) as client:
        yield ResolveContext(client, max_page_bytes=5 * 1024 * 1024)


@pytest.fixture
def verbatim(sim: Simulator) -> WeiboSite:
    return install_weibo_site(sim, rewrite_media=False)


@pytest.fixture
def site(sim: Simulator) -> WeiboSite:
    return install_weibo_site(sim)


def kind_of(error: pytest.ExceptionInfo[TrawlError]) -> str:
    return error.value.error_class


# -- routing ---------------------------------------------------------------------------------
SIM_BASE = "http://127.0.0.1:8999"
ROUTES = [
    ("https://weibo.com/5973737418/HyZVegYAP", "weibo:4383411844046171"),
    ("https://www.weibo.com/5973737418/HyZVegYAP", "weibo:4383411844046171"),
    ("http://weibo.com/5973737418/HyZVegYAP/", "weibo:4383411844046171"),
    ("https://weibo.com/5973737418/HyZVegYAP?pagetype=profilefeed#comment", "weibo:4383411844046171"),
    ("https://weibo.com/5973737418/4383411844046171", "weibo:4383411844046171"),
    ("https://weibo.com/5349576923/HyZJN4tmf", "weibo:4383404751066167"),
    ("https://m.weibo.cn/status/HyZVegYAP", "weibo:4383411844046171"),
    ("https://m.weibo.cn/status/4383411844046171?luicode=10000011", "weibo:4383411844046171"),
    ("https://m.weibo.cn/detail/4383411844046171", "weibo:4383411844046171"),
    ("https://m.weibo.cn/detail/HyZVegYAP", "weibo:4383411844046171"),
    ("https://weibo.com/7640678322/MbvNTd5Eh", f"weibo:{mblogid_to_mid('MbvNTd5Eh')}"),
    ("https://weibo.com/tv/show/1034:4857848069554290", None),
    ("https://weibo.com/tv/show/1034:4857848069554290?from=old_pc_videoshow", None),
    ("https://weibo.com/tv/show/1034:633c288cc043d0ca7808030f1157da64", None),  # yt-dlp's test: 32-hex oid
    ("https://video.weibo.com/show?fid=1034:633c288cc043d0ca7808030f1157da64", None),
    ("https://weibo.com/0/4224132150961381", "weibo:4224132150961381"),  # uid 0, as yt-dlp's tests have it
    ("https://video.weibo.com/show?fid=1034:4857848069554290", None),
    ("https://video.weibo.com/show?fid=1034%3A4857856063897666&luicode=10000011", None),
    (f"{SIM_BASE}/5973737418/HyZVegYAP", "weibo:4383411844046171"),
    (f"{SIM_BASE}/status/4383411844046171", "weibo:4383411844046171"),
    (f"{SIM_BASE}/detail/HyZVegYAP", "weibo:4383411844046171"),
    (f"{SIM_BASE}/tv/show/1034:4857848069554290", None),
    (f"{SIM_BASE}/show?fid=1034:4857848069554290", None),
]
NOT_CLAIMED = [
    "https://weibo.com/",
    "https://weibo.com/u/5973737418",
    "https://weibo.com/5973737418",
    "https://weibo.com/n/upupming",
    "https://m.weibo.cn/u/5973737418",
    "https://m.weibo.cn/status/",
    "https://weibo.com/5973737418/HyZVegYAP/comments",
    "https://weibo.com.evil.example/5973737418/HyZVegYAP",
    "https://notweibo.com/5973737418/HyZVegYAP",
    "https://weibo.com/tv/show/",
    "https://video.weibo.com/show?fid=abc",
    "https://www.bilibili.com/video/BV117411r7R1",
    f"{SIM_BASE}/u/5973737418",
    "http://127.0.0.1:9000/5973737418/HyZVegYAP",  # another port is not the configured base
]


@pytest.fixture
def routing() -> WeiboResolver:
    return WeiboResolver(WeiboSettings(page_base=SIM_BASE, mobile_base=SIM_BASE, video_base=SIM_BASE))


@pytest.mark.parametrize(("url", "key"), ROUTES)
def test_claimed_urls_and_offline_keys(routing: WeiboResolver, url: str, key: str | None) -> None:
    assert routing.claims(url)
    assert routing.offline_key(url) == key


@pytest.mark.parametrize("url", NOT_CLAIMED)
def test_urls_not_claimed(routing: WeiboResolver, url: str) -> None:
    assert not routing.claims(url)
    assert routing.offline_key(url) is None


def test_resolvers_factory_and_names() -> None:
    [resolver] = resolvers(WeiboSettings())
    assert isinstance(resolver, WeiboResolver)
    assert (resolver.name, resolver.platform) == ("weibo:status", "weibo")
    assert resolver.claims("https://m.weibo.cn/detail/4383411844046171")


# -- mid <-> mblogid -------------------------------------------------------------------------
def pairs_in(node: Any) -> Iterator[tuple[str, str]]:
    """Every (mid, bid) pair a captured status states about itself."""
    if isinstance(node, dict):
        if isinstance(node.get("mid"), str) and isinstance(node.get("bid"), str):
            yield node["mid"], node["bid"]
        for value in node.values():
            yield from pairs_in(value)
    elif isinstance(node, list):
        for value in node:
            yield from pairs_in(value)


BASE62_TABLE = [
    ("4383411844046171", "HyZVegYAP"),  # the captured repost
    ("4383404751066167", "HyZJN4tmf"),  # the status it reposts
    ("1000000000000001", "a00000001"),  # zero groups are padded, not dropped
    ("3900000000000000", "D00000000"),
    ("99", "1B"),
    ("10000000", "10000"),
]


@pytest.mark.parametrize(("mid", "mblogid"), BASE62_TABLE)
def test_base62_table(mid: str, mblogid: str) -> None:
    assert mid_to_mblogid(mid) == mblogid
    assert mid_to_mblogid(int(mid)) == mblogid
    assert mblogid_to_mid(mblogid) == mid


def test_pairs_stated_by_the_captures() -> None:
    pairs = set(pairs_in(NOVIDEO))
    assert pairs == {("4383411844046171", "HyZVegYAP"), ("4383404751066167", "HyZJN4tmf")}
    for mid, bid in pairs:
        assert (mid_to_mblogid(mid), mblogid_to_mid(bid)) == (bid, mid)


@pytest.mark.parametrize("mid", ["4857851275384530", "4857848069554290", "1", "9999999", "10000000",
                                 "12345678901234567890", "4383536474746840"])
def test_base62_round_trip(mid: str) -> None:
    assert mblogid_to_mid(mid_to_mblogid(mid)) == mid


@pytest.mark.parametrize("bad", ["", "0", "12a", "-5", "４５"])
def test_bad_mid(bad: str) -> None:
    with pytest.raises(ValueError):
        mid_to_mblogid(bad)


@pytest.mark.parametrize("bad", ["", "HyZ-egYAP", "ZZZZZZZZZ", "0000", "Hy Vé"])
def test_bad_mblogid(bad: str) -> None:
    with pytest.raises(ValueError):
        mblogid_to_mid(bad)


@pytest.mark.parametrize(("raw", "iso"), [
    ("Sat Jun 15 11:44:46 +0800 2019", "2019-06-15T11:44:46+08:00"),
    ("Mon Jan 02 03:04:05 -0130 2006", "2006-01-02T03:04:05-01:30"),
    ("06-27", None), ("刚刚", None), (None, None), (1560570286, None), ("Sat Foo 15 11:44:46 +0800 2019", None),
    ("Sat Feb 30 11:44:46 +0800 2019", None),
])
def test_created_at(raw: Any, iso: str | None) -> None:
    assert parse_created_at(raw) == iso


# -- against the captured answers, served verbatim -------------------------------------------
def test_playback_list_post_verbatim(verbatim: WeiboSite, ctx: ResolveContext) -> None:
    post = verbatim.posts["playback"]
    item = WeiboResolver(verbatim.settings()).resolve(post.url, ctx)
    assert item.canonical_key == "weibo:4857851275384530" == f"weibo:{PLAYBACK['actionlog']['mid']}"
    assert item.canonical_url == "https://weibo.com/7640678322/MogYvmALg"
    assert item.platform == "weibo"
    assert item.title == PLAYBACK["content2"] == "湖南农民画工，20多年临摹了10万张梵高的画，见到真迹后却沉默了"
    assert item.uploader == "贵妃醉影"
    assert item.duration == 593  # media_info.duration, not the stream's 593.872
    assert item.published_at == "2023-01-14T16:37:41+08:00"
    best = PLAYBACK["media_info"]["playback_list"][0]["play_info"]
    video, cover = item.assets
    assert (video.name, video.kind, video.urls, video.expected_size, video.mime) == (
        "video", "video", [best["url"]], 171277497, "video/mp4")
    assert "label=mp4_1080p" in video.urls[0]
    assert video.headers == {"Referer": REFERER, "User-Agent": verbatim.settings().user_agent}
    # The page picture is the cover: a thumbnail asset with the media headers.
    assert (cover.name, cover.kind, cover.urls) == ("thumbnail", "thumbnail", [PLAYBACK["page_pic"]])
    assert cover.headers == video.headers
    meta = item.metadata
    assert {k: meta[k] for k in ("mid", "mblogid", "uid")} == {
        "mid": "4857851275384530", "mblogid": "MogYvmALg", "uid": "7640678322"}
    assert (meta["id"], meta["display_id"], meta["uploader_id"], meta["uploader"]) == (
        "4857851275384530", "MogYvmALg", "7640678322", "贵妃醉影")
    assert (meta["timestamp"], meta["upload_date"], meta["duration"]) == (1673685461, "20230114", 593)
    assert meta["view_count"] == PLAYBACK["media_info"]["online_users_number"] == 15725
    assert (meta["thumbnail"], meta["webpage_url"]) == (PLAYBACK["page_pic"], item.canonical_url)


def test_urls_style_post_verbatim(verbatim: WeiboSite, ctx: ResolveContext) -> None:
    post = verbatim.posts["urls"]
    item = WeiboResolver(verbatim.settings()).resolve(post.url, ctx)
    assert item.canonical_key == f"weibo:{post.mid}"
    assert item.title == " ".join(URLS["content2"].split())
    assert item.uploader == "巨浪视频"
    assert item.duration == 21.222
    video, cover = item.assets
    assert cover.urls == [URLS["page_pic"]["url"]]  # the mobile shape: page_pic is {url, pid, ...}
    # Best first (720p), then HD and LD as backups; the duplicate fields collapse.
    assert video.urls == [URLS["urls"]["mp4_720p_mp4"], URLS["media_info"]["stream_url_hd"],
                          URLS["media_info"]["stream_url"]]
    assert video.expected_size is None


def test_same_post_through_the_mobile_api(verbatim: WeiboSite, sim: Simulator, ctx: ResolveContext) -> None:
    sim.faults.add(r"/ajax/statuses/show", status(403, times=10))
    resolver = WeiboResolver(verbatim.settings())
    for key in ("playback", "urls", "pictures"):
        post = verbatim.posts[key]
        item = resolver.resolve(f"https://m.weibo.cn/status/{post.mblogid}", ctx)
        media = [a for a in item.assets if a.kind != "thumbnail"]  # video posts also have their cover
        assert (item.canonical_key, item.title, item.uploader, len(media)) == (
            f"weibo:{post.mid}", post.title, post.uploader, post.asset_count)
    assert sim.stats["/statuses/show"].requests == 3


def test_desktop_403_falls_back_to_mobile(verbatim: WeiboSite, sim: Simulator, ctx: ResolveContext) -> None:
    sim.faults.add(r"/ajax/statuses/show", status(403))
    post = verbatim.posts["playback"]
    item = WeiboResolver(verbatim.settings()).resolve(post.url, ctx)
    assert item.assets[0].expected_size == 171277497
    assert (sim.stats["/ajax/statuses/show"].requests, sim.stats["/statuses/show"].requests) == (1, 1)


def test_desktop_api_wants_the_referer(verbatim: WeiboSite, sim: Simulator) -> None:
    url = sim.url(f"/ajax/statuses/show?id={verbatim.posts['playback'].mblogid}")
    assert httpx.get(url).status_code == 403
    answer = httpx.get(url, headers={"Referer": REFERER})
    assert answer.status_code == 200 and answer.json()["mblogid"] == "MogYvmALg"


def test_visitor_redirect_falls_back_to_mobile(verbatim: WeiboSite, sim: Simulator, ctx: ResolveContext) -> None:
    verbatim.login_redirect = True
    item = WeiboResolver(verbatim.settings()).resolve(verbatim.posts["pictures"].url, ctx)
    assert [a.name for a in item.assets] == ["image-1", "image-2"]
    assert sim.stats["/visitor/visitor"].requests == 1
    assert sim.stats["/statuses/show"].requests == 1


def test_mobile_answer_is_the_capture_byte_for_byte(verbatim: WeiboSite, sim: Simulator) -> None:
    body = httpx.get(sim.url("/statuses/show?id=4383411844046171")).content
    assert body == (REFERENCE / "weibo_mweibocn_statuses_show_1_noVideo.json").read_bytes()


def test_post_without_media_is_unsupported(verbatim: WeiboSite, ctx: ResolveContext) -> None:
    with pytest.raises(TrawlError) as error:
        WeiboResolver(verbatim.settings()).resolve("https://m.weibo.cn/detail/4383411844046171", ctx)
    assert kind_of(error) == "unsupported_url"
    assert "no media" in str(error.value) and "4383404751066167" in str(error.value)


def test_captured_mobile_status_parses_offline() -> None:
    with pytest.raises(TrawlError) as error:
        WeiboResolver(WeiboSettings()).from_status(NOVIDEO["data"], "https://m.weibo.cn/detail/HyZVegYAP")
    assert kind_of(error) == "unsupported_url"


def test_pictures_become_image_assets(verbatim: WeiboSite, ctx: ResolveContext) -> None:
    post = verbatim.posts["pictures"]
    item = WeiboResolver(verbatim.settings()).resolve(post.url, ctx)
    pids = post.desktop["pic_ids"]
    assert [(a.name, a.kind, a.urls) for a in item.assets] == [
        (f"image-{n}", "image", [f"https://wx1.sinaimg.cn/large/{pid}.jpg"]) for n, pid in enumerate(pids, 1)]
    assert all(a.headers["Referer"] == REFERER for a in item.assets)
    assert item.title == "春天的两张照片 #trawl#"
    assert item.duration is None


@pytest.mark.parametrize("url", [
    "https://weibo.com/123/HyZVegYAQ",  # a valid mblogid nobody posted
    "https://m.weibo.cn/detail/4383411844046172",
    "https://weibo.com/tv/show/1034:1111111111111111",
])
def test_unknown_id_is_not_found(verbatim: WeiboSite, ctx: ResolveContext, url: str) -> None:
    with pytest.raises(TrawlError) as error:
        WeiboResolver(verbatim.settings()).resolve(url, ctx)
    assert kind_of(error) == "not_found"


def test_too_many_requests_is_rate_limited(verbatim: WeiboSite, ctx: ResolveContext) -> None:
    verbatim.rate_limit_per_s = 1
    resolver = WeiboResolver(verbatim.settings())
    resolver.resolve(verbatim.posts["playback"].url, ctx)
    with pytest.raises(TrawlError) as error:
        resolver.resolve(verbatim.posts["playback"].url, ctx)
    assert kind_of(error) == "rate_limited"
    assert error.value.retry_after and error.value.retry_after > 0


def test_rate_limited_mobile_api_after_desktop_403(verbatim: WeiboSite, sim: Simulator, ctx: ResolveContext) -> None:
    sim.faults.add(r"/ajax/statuses/show", status(403))
    verbatim.rate_limit_per_s = 0
    with pytest.raises(TrawlError) as error:
        WeiboResolver(verbatim.settings()).resolve(verbatim.posts["urls"].url, ctx)
    assert kind_of(error) == "rate_limited"


@pytest.mark.parametrize("form", [
    "https://weibo.com/tv/show/{oid}",
    "https://video.weibo.com/show?fid={quoted}&luicode=10000011",
    "{base}/tv/show/{oid}",
    "{base}/show?fid={oid}",
    "https://weibo.com/tv/show/{hex}?from=old_pc_videoshow",  # the newer 32-hex object ids
    "{base}/show?fid={hex}",
])
@pytest.mark.parametrize("key", ["playback", "urls"])
def test_video_pages_resolve_to_their_post(verbatim: WeiboSite, sim: Simulator, ctx: ResolveContext,
                                           form: str, key: str) -> None:
    post = verbatim.posts[key]
    assert post.oid and post.hex_oid
    url = form.format(oid=post.oid, quoted=post.oid.replace(":", "%3A"), base=sim.base_url, hex=post.hex_oid)
    item = WeiboResolver(verbatim.settings()).resolve(url, ctx)
    assert item.canonical_key == f"weibo:{post.mid}"
    assert item.canonical_url == post.url


# -- issue 11: refusals classified, reposts resolved ----------------------------------------
def test_login_wall_on_both_apis_is_login_required(verbatim: WeiboSite, sim: Simulator, ctx: ResolveContext) -> None:
    verbatim.login_wall = {"desktop", "mobile"}
    post = verbatim.posts["playback"]
    with pytest.raises(TrawlError) as error:
        WeiboResolver(verbatim.settings()).resolve(post.url, ctx)
    assert kind_of(error) == "login_required" and not error.value.retryable
    assert "platforms.weibo.cookies_file" in str(error.value) and post.url in str(error.value)
    assert sim.stats["/statuses/show"].requests == 1  # the mobile API was tried before giving up


def test_login_wall_on_the_desktop_api_falls_back_to_mobile(verbatim: WeiboSite, sim: Simulator,
                                                            ctx: ResolveContext) -> None:
    verbatim.login_wall = {"desktop"}
    post = verbatim.posts["playback"]
    item = WeiboResolver(verbatim.settings()).resolve(post.url, ctx)
    assert item.canonical_key == f"weibo:{post.mid}" and item.assets
    assert (sim.stats["/ajax/statuses/show"].requests, sim.stats["/statuses/show"].requests) == (1, 1)


@pytest.mark.parametrize("code", [432, 418])
def test_throttling_statuses_are_rate_limited(verbatim: WeiboSite, sim: Simulator, ctx: ResolveContext,
                                              code: int) -> None:
    verbatim.throttle_status = code
    with pytest.raises(TrawlError) as error:
        WeiboResolver(verbatim.settings()).resolve(verbatim.posts["playback"].url, ctx)
    assert kind_of(error) == "rate_limited" and error.value.retryable
    assert error.value.retry_after and error.value.retry_after > 0
    assert str(code) in str(error.value)
    assert sim.stats["/statuses/show"].requests == 0  # a throttled client does not hammer the other API


def test_visitor_redirect_without_a_mobile_answer_is_rate_limited(verbatim: WeiboSite, sim: Simulator,
                                                                  ctx: ResolveContext) -> None:
    verbatim.login_redirect = True
    sim.faults.add(r"/statuses/show", html_error())
    with pytest.raises(TrawlError) as error:
        WeiboResolver(verbatim.settings()).resolve(verbatim.posts["playback"].url, ctx)
    assert kind_of(error) == "rate_limited" and error.value.retryable
    assert "visitor system" in str(error.value).lower()


def test_mobile_redirect_to_a_login_page_is_login_required(verbatim: WeiboSite, sim: Simulator,
                                                           ctx: ResolveContext) -> None:
    sim.faults.add(r"/ajax/statuses/show", status(403))
    sim.add_exact("/statuses/show", lambda req: Response(302, {"Location": sim.url("/signin/login?entry=mweibo")}))
    sim.add_page("/signin/login", "<html><body><form id='loginform'></form></body></html>")
    post = verbatim.posts["playback"]
    with pytest.raises(TrawlError) as error:
        WeiboResolver(verbatim.settings()).resolve(post.url, ctx)
    assert kind_of(error) == "login_required"  # not a parse_error about an HTML answer
    assert "platforms.weibo.cookies_file" in str(error.value) and post.url in str(error.value)


@pytest.mark.parametrize(("answer", "error_class"), [
    ({"ok": 0, "msg": "微博不存在或暂无查看权限!"}, "not_found"),
    ({"ok": -2, "msg": "出了点问题"}, "platform_error"),
    ({"ok": 0, "msg": "请求过于频繁,歇歇吧"}, "rate_limited"),
])
def test_weibo_ok_values_carry_ok_message_and_url(sim: Simulator, ctx: ResolveContext, answer: dict,
                                                  error_class: str) -> None:
    body = json.dumps(answer, ensure_ascii=False).encode()
    sim.add_exact("/ajax/statuses/show", lambda req: Response(403))
    sim.add_exact("/statuses/show", lambda req: Response(200, {"Content-Type": "application/json"}, body))
    resolver = WeiboResolver(WeiboSettings(page_base=sim.base_url, mobile_base=sim.base_url))
    url = "https://m.weibo.cn/detail/HyZVegYAP"
    with pytest.raises(TrawlError) as error:
        resolver.resolve(url, ctx)
    assert kind_of(error) == error_class
    message = str(error.value)
    assert f"ok:{answer['ok']}" in message and answer["msg"] in message and url in message


@pytest.mark.parametrize("api", ["desktop", "mobile"])
def test_repost_of_a_video_resolves_to_its_own_key_with_the_video(verbatim: WeiboSite, sim: Simulator,
                                                                  ctx: ResolveContext, api: str) -> None:
    if api == "mobile":
        sim.faults.add(r"/ajax/statuses/show", status(403))
    repost, original = verbatim.posts["repost"], verbatim.posts["urls"]
    resolver = WeiboResolver(verbatim.settings())
    item = resolver.resolve(repost.url, ctx)
    assert sim.stats["/statuses/show"].requests == (1 if api == "mobile" else 0)
    assert item.canonical_key == f"weibo:{repost.mid}" != f"weibo:{original.mid}"
    assert item.title == URLS["title"] == repost.title  # the video's own title
    assert "转发微博" not in (item.title or "")
    assert item.uploader == repost.uploader and item.duration == URLS["media_info"]["duration"]
    video, _cover = item.assets
    assert video.kind == "video"
    assert video.urls == resolver.resolve(original.url, ctx).assets[0].urls


def test_repost_with_its_own_text_keeps_it_as_the_title() -> None:
    repost = copy.deepcopy(install_posts_by_key()["repost"].mobile["data"])
    repost.update(text="看这个 //@巨浪视频: 转发", raw_text="看这个 //@巨浪视频: 转发")
    item = WeiboResolver(WeiboSettings()).from_status(repost, "https://m.weibo.cn/detail/1")
    assert item.title == "看这个 //@巨浪视频: 转发" and item.assets


# -- rewritten media: real downloads -------------------------------------------------------
def test_rewritten_media_downloads_with_referer_only(site: WeiboSite, ctx: ResolveContext) -> None:
    item = WeiboResolver(site.settings()).resolve(site.posts["playback"].url, ctx)
    video, _cover = item.assets
    url = video.urls[0]
    assert url.startswith(site.sim.base_url) and "Expires=" in url and "ssig=" in url
    assert video.expected_size is not None and 100_000 <= video.expected_size <= 600_000
    answer = httpx.get(url, headers=video.headers)
    assert answer.status_code == 200
    assert len(answer.content) == video.expected_size
    assert answer.content[4:8] == b"ftyp"
    assert httpx.get(url).status_code == 403


def test_rewritten_images_download(site: WeiboSite, ctx: ResolveContext) -> None:
    item = WeiboResolver(site.settings()).resolve(site.posts["pictures"].url, ctx)
    bodies = [httpx.get(a.urls[0], headers=a.headers) for a in item.assets]
    assert [b.headers["content-type"] for b in bodies] == ["image/jpeg", "image/jpeg"]
    assert bodies[0].content[:2] == b"\xff\xd8" and bodies[0].content != bodies[1].content


def test_expired_media_urls_and_fresh_ones(site: WeiboSite, ctx: ResolveContext) -> None:
    resolver = WeiboResolver(site.settings())
    old = resolver.resolve(site.posts["urls"].url, ctx).assets[0]
    first = httpx.get(old.urls[0], headers=old.headers).content
    assert site.expire_media() > 0
    stale = httpx.get(old.urls[0], headers=old.headers)
    assert stale.status_code == 403 and b"expired" in stale.content
    new = resolver.resolve(site.posts["urls"].url, ctx).assets[0]
    assert new.urls[0] != old.urls[0]
    again = httpx.get(new.urls[0], headers=new.headers)
    assert again.status_code == 200
    assert hashlib.sha256(again.content).digest() == hashlib.sha256(first).digest()


def test_rewritten_sizes_match_files(site: WeiboSite, sim: Simulator) -> None:
    url = sim.url(f"/ajax/statuses/show?id={site.posts['playback'].mid}")
    doc = httpx.get(url, headers={"Referer": REFERER}).json()
    entries = doc["page_info"]["media_info"]["playback_list"]
    for entry in entries:
        media = site.media_file(entry["play_info"]["url"])
        assert media is not None
        if "size" in entry["play_info"]:
            assert entry["play_info"]["size"] == media.size
    assert json.dumps(doc).count("weibocdn.com") == 0 and json.dumps(doc).count("sinaimg.cn") == 0
    # The same original URL always stands for the same generated file.
    original = PLAYBACK["media_info"]["playback_list"][0]["play_info"]["url"]
    assert site.media_file(original) is site.media_file(entries[0]["play_info"]["url"])


# -- the profile feed ------------------------------------------------------------------------
def test_user_post_urls_pages_until_empty(site: WeiboSite, sim: Simulator, ctx: ResolveContext) -> None:
    site.page_size = 1
    uid = site.posts["novideo"].uid
    urls = user_post_urls(site.settings(), ctx, uid)
    assert urls == [site.posts["pictures"].url, site.posts["novideo"].url]  # newest first
    assert sim.stats["/api/container/getIndex"].requests == 3  # the third page is empty
    resolver = WeiboResolver(site.settings())
    assert [resolver.offline_key(u) for u in urls] == [f"weibo:{site.posts[k].mid}" for k in ("pictures", "novideo")]


def test_user_post_urls_respects_max_pages(site: WeiboSite, ctx: ResolveContext) -> None:
    site.page_size = 1
    urls = user_post_urls(site.settings(), ctx, site.posts["novideo"].uid, max_pages=1)
    assert urls == [site.posts["pictures"].url]
    assert user_post_urls(site.settings(), ctx, "1") == []


# -- odd answers -----------------------------------------------------------------------------
def mangled_statuses() -> Iterator[tuple[str, Any]]:
    """Versions of real statuses with fields removed or of the wrong type."""
    site_posts = {p.key: p for p in install_posts()}
    bases = {
        "desktop-playback": site_posts["playback"].desktop,
        "desktop-pictures": site_posts["pictures"].desktop,
        "mobile-pictures": site_posts["pictures"].mobile["data"],
        "mobile-urls": site_posts["urls"].mobile["data"],
        "mobile-novideo": NOVIDEO["data"],
        "desktop-repost": site_posts["repost"].desktop,
        "mobile-repost": site_posts["repost"].mobile["data"],
    }
    wrong = [None, 0, -1, True, "x", "", [], {}, [[]], 1.5]
    paths: list[tuple[str | int, ...]] = [
        ("mid",), ("id",), ("idstr",), ("mblogid",), ("bid",), ("user",), ("user", "id"), ("user", "screen_name"),
        ("created_at",), ("text_raw",), ("text",), ("page_info",), ("page_info", "media_info"),
        ("page_info", "urls"), ("page_info", "media_info", "playback_list"),
        ("page_info", "media_info", "playback_list", 0), ("page_info", "media_info", "playback_list", 0, "play_info"),
        ("page_info", "media_info", "playback_list", 0, "play_info", "url"),
        ("page_info", "media_info", "playback_list", 0, "play_info", "size"),
        ("page_info", "media_info", "playback_list", 0, "play_info", "mime"),
        ("page_info", "media_info", "playback_list", 0, "meta"),
        ("page_info", "media_info", "playback_list", 0, "meta", "quality_index"),
        ("page_info", "media_info", "stream_url"), ("page_info", "media_info", "duration"),
        ("pic_ids",), ("pic_ids", 0), ("pic_infos",), ("pics",), ("pics", 0), ("pics", 0, "large"),
        ("retweeted_status",), ("retweeted_status", "page_info"), ("retweeted_status", "page_info", "urls"),
        ("retweeted_status", "page_info", "title"), ("retweeted_status", "text"), ("retweeted_status", "mid"),
    ]
    for name, base in bases.items():
        for key in list(base):
            changed = copy.deepcopy(base)
            del changed[key]
            yield f"{name}-without-{key}", changed
        for path in paths:
            for value in wrong:
                changed = copy.deepcopy(base)
                if set_path(changed, path, value):
                    yield f"{name}-{'.'.join(map(str, path))}={value!r}", changed
        yield f"{name}-pic_infos-values-wrong", {**base, "pic_infos": {"a": 1, "b": {"largest": "x"}}}
    yield "not-a-dict", ["mid", 1]
    yield "empty", {}


def set_path(node: Any, path: tuple[str | int, ...], value: Any) -> bool:
    for step in path[:-1]:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            return False
    try:
        node[path[-1]] = value
    except (IndexError, TypeError):
        return False
    return True


def install_posts() -> list[Any]:
    with Simulator() as sim:
        return list(install_weibo_site(sim, rewrite_media=False).posts.values())


def install_posts_by_key() -> dict[str, Any]:
    return {post.key: post for post in install_posts()}


def test_mangled_statuses_raise_only_trawl_errors() -> None:
    resolver = WeiboResolver(WeiboSettings())
    outcomes = {"resolved": 0, "failed": 0}
    cases = list(mangled_statuses())
    assert len(cases) > 500
    for name, status_doc in cases:
        try:
            item = resolver.from_status(status_doc, "https://weibo.com/1/HyZVegYAP")
        except TrawlError as exc:
            assert exc.error_class in ("parse_error", "unsupported_url"), name
            outcomes["failed"] += 1
        except Exception as exc:  # noqa: BLE001 - the point of the test
            pytest.fail(f"{name}: {type(exc).__name__}: {exc}")
        else:
            assert isinstance(item, Resolved) and item.assets and item.canonical_key.startswith("weibo:"), name
            assert all(isinstance(u, str) and u.startswith("http") for a in item.assets for u in a.urls), name
            outcomes["resolved"] += 1
    assert outcomes["resolved"] and outcomes["failed"]


def test_missing_mid_is_a_parse_error_naming_it() -> None:
    status_doc = {k: v for k, v in NOVIDEO["data"].items() if k not in ("id", "mid", "bid")}
    with pytest.raises(TrawlError) as error:
        WeiboResolver(WeiboSettings()).from_status(status_doc, "https://m.weibo.cn/detail/HyZVegYAP")
    assert kind_of(error) == "parse_error"
    assert "weibo" in str(error.value) and "https://m.weibo.cn/detail/HyZVegYAP" in str(error.value)
    assert "mid" in str(error.value)


ODD_ANSWERS: list[tuple[str, Callable[[], bytes]]] = [
    ("list", lambda: b"[]"),
    ("string", lambda: b'"ok"'),
    ("html", lambda: b"<html><body>busy</body></html>"),
    ("empty-object", lambda: b"{}"),
    ("ok-without-data", lambda: b'{"ok": 1}'),
    ("data-is-list", lambda: b'{"ok": 1, "data": []}'),
    ("ok-is-string", lambda: b'{"ok": "1", "data": {"mid": "4383411844046171"}}'),
    ("ok-zero", lambda: b'{"ok": 0}'),
    ("ok-null", lambda: b'{"ok": null, "data": null}'),
    ("mid-garbage", lambda: b'{"ok": 1, "mid": "abc", "data": {"mid": {"x": 1}}}'),
    ("truncated", lambda: b'{"ok": 1, "data": {"mid": '),
]


@pytest.mark.parametrize(("name", "body"), ODD_ANSWERS, ids=[n for n, _ in ODD_ANSWERS])
def test_odd_api_answers_raise_trawl_errors(sim: Simulator, ctx: ResolveContext, name: str,
                                            body: Callable[[], bytes]) -> None:
    answer = lambda req: Response(200, {"Content-Type": "application/json"}, body())  # noqa: E731
    for path in ("/ajax/statuses/show", "/statuses/show", "/tv/api/component"):
        sim.add_exact(path, answer)
    resolver = WeiboResolver(WeiboSettings(page_base=sim.base_url, mobile_base=sim.base_url, video_base=sim.base_url))
    for url in ("https://weibo.com/5973737418/HyZVegYAP", "https://weibo.com/tv/show/1034:4857848069554290"):
        with pytest.raises(TrawlError) as error:
            resolver.resolve(url, ctx)
        assert error.value.error_class in ("parse_error", "not_found", "unsupported_url"), name


def test_answer_for_another_status_is_refused(sim: Simulator, ctx: ResolveContext) -> None:
    other = {**NOVIDEO, "data": {**NOVIDEO["data"], "pics": [{"url": "https://wx1.sinaimg.cn/large/a.jpg"}]}}
    sim.add_exact("/ajax/statuses/show", lambda req: Response(403))
    sim.add_exact("/statuses/show", lambda req: Response(200, {"Content-Type": "application/json"},
                                                          json.dumps(other).encode()))
    resolver = WeiboResolver(WeiboSettings(page_base=sim.base_url, mobile_base=sim.base_url))
    assert resolver.resolve("https://m.weibo.cn/detail/HyZVegYAP", ctx).canonical_key == "weibo:4383411844046171"
    with pytest.raises(TrawlError) as error:
        resolver.resolve("https://m.weibo.cn/detail/HyZJN4tmf", ctx)
    assert kind_of(error) == "parse_error"
