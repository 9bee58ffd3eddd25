"""Weibo's newer content types: Live Photos, mixed-media posts, long texts, pictures at their
largest size (trawl/platforms/weibo/media.py, longtext.py; the simulated posts in content_site.py)."""

import copy
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from trawl.errors import TrawlError
from trawl.models import Resolved
from trawl.platforms.base import ResolveContext
from trawl.platforms.weibo import WeiboSettings
from trawl.platforms.weibo.content_site import LONG_TEXT, cut_text, live_file
from trawl.platforms.weibo.longtext import clean_long_text
from trawl.platforms.weibo.media import picture_assets
from trawl.platforms.weibo.resolver import WeiboResolver
from trawl.platforms.weibo.site import WeiboSite, install_weibo_site
from trawl.simulator import Response, Simulator


@pytest.fixture
def ctx() -> Iterator[ResolveContext]:
    with httpx.Client(follow_redirects=True) as client:
        yield ResolveContext(client, max_page_bytes=5 * 1024 * 1024)


@pytest.fixture
def verbatim(sim: Simulator) -> WeiboSite:
    return install_weibo_site(sim, rewrite_media=False)


def resolve(site: WeiboSite, key: str, ctx: ResolveContext, form: str = "desktop") -> Resolved:
    post = site.posts[key]
    url = site.sim.url(f"/{post.uid}/{post.mblogid}" if form == "desktop" else f"/detail/{post.mid}")
    return WeiboResolver(site.settings()).resolve(url, ctx)


def shape(item: Resolved) -> list[tuple[str, str, list[str]]]:
    return [(a.name, a.kind, a.urls) for a in item.assets]


# -- Live Photos -----------------------------------------------------------------------------
def test_live_photo_is_the_picture_and_the_video_behind_it(verbatim: WeiboSite, ctx: ResolveContext) -> None:
    live, still = verbatim.posts["livephoto"].desktop["pic_ids"]
    item = resolve(verbatim, "livephoto", ctx)
    wrapper = verbatim.posts["livephoto"].desktop["pic_infos"][live]["video"]
    assert wrapper.startswith("https://video.weibo.com/media/play?livephoto=")
    assert shape(item) == [
        ("image-1", "image", [f"https://wx1.sinaimg.cn/large/{live}.jpg"]),
        ("livephoto-1", "video", [live_file(live), wrapper]),  # the file first, the wrapper its backup
        ("image-2", "image", [f"https://wx1.sinaimg.cn/large/{still}.jpg"]),
    ]
    assert item.duration is None  # a Live Photo's seconds are not a post duration to verify against
    assert all(a.headers["Referer"] == "https://weibo.com/" for a in item.assets)


def test_live_photo_through_the_mobile_api(verbatim: WeiboSite, ctx: ResolveContext) -> None:
    verbatim.login_wall = {"desktop"}
    live, still = verbatim.posts["livephoto"].desktop["pic_ids"]
    item = resolve(verbatim, "livephoto", ctx, form="mobile")
    assert shape(item) == [
        ("image-1", "image", [f"https://wx1.sinaimg.cn/large/{live}.jpg"]),
        ("livephoto-1", "video", [live_file(live)]),  # videoSrc; the live_photo list names it again
        ("image-2", "image", [f"https://wx1.sinaimg.cn/large/{still}.jpg"]),
    ]


def test_live_photo_downloads_through_its_wrapper(sim: Simulator, ctx: ResolveContext) -> None:
    site = install_weibo_site(sim)
    item = resolve(site, "livephoto", ctx)
    video = next(a for a in item.assets if a.name == "livephoto-1")
    answer = httpx.get(video.urls[-1], headers=video.headers, follow_redirects=True)
    assert answer.status_code == 200 and answer.content[4:8] == b"ftyp"
    assert httpx.get(video.urls[-1], follow_redirects=True).status_code == 403  # the file wants the Referer


def mobile_status(**fields: Any) -> dict[str, Any]:
    pics = [{"pid": f"p{n}", "url": f"https://wx1.sinaimg.cn/orj360/p{n}.jpg",
             "large": {"url": f"https://wx1.sinaimg.cn/large/p{n}.jpg"}} for n in (1, 2)]
    return {"mid": "4383411844046171", "pics": pics, **fields}


@pytest.mark.parametrize(("fields", "expected"), [
    # the status-level list alone: its videos go to the pictures in order
    ({"live_photo": ["https://livephoto.us.sinaimg.cn/a.mov"]},
     ["image-1", "livephoto-1", "image-2"]),
    # the older pic_video string (weibo-crawler's reading)
    ({"pic_video": "0:00abcDEF,1:00ghiJKL"},
     ["image-1", "livephoto-1", "image-2", "livephoto-2"]),
    # more videos than pictures: the rest follow on their own
    ({"live_photo": [f"https://livephoto.us.sinaimg.cn/{n}.mov" for n in "abc"]},
     ["image-1", "livephoto-1", "image-2", "livephoto-2", "livephoto-3"]),
    # junk in the list is skipped
    ({"live_photo": [None, 5, "javascript:alert(1)", {"url": "x"}]}, ["image-1", "image-2"]),
    ({"pic_video": "0:../../etc,1:"}, ["image-1", "image-2"]),
])
def test_listed_live_photos_on_the_mobile_shape(fields: dict[str, Any], expected: list[str]) -> None:
    assert [a.name for a in picture_assets(mobile_status(**fields), {})] == expected


def test_pic_video_names_the_mov_file() -> None:
    assets = picture_assets(mobile_status(pic_video="0:00abcDEF"), {})
    assert assets[1].urls == ["https://us.sinaimg.cn/00abcDEF.mov"]


# -- mixed media -----------------------------------------------------------------------------
@pytest.mark.parametrize("form", ["desktop", "mobile"])
def test_mixed_media_post_keeps_its_order(verbatim: WeiboSite, ctx: ResolveContext, form: str) -> None:
    if form == "mobile":
        verbatim.login_wall = {"desktop"}
    post = verbatim.posts["mixed"]
    first, last = post.mobile["data"]["pic_ids"]
    item = resolve(verbatim, "mixed", ctx, form)
    assert [(a.name, a.kind) for a in item.assets] == [("image-1", "image"), ("video-1", "video"), ("image-2", "image")]
    assert item.assets[0].urls == [f"https://wx1.sinaimg.cn/large/{first}.jpg"]
    assert item.assets[2].urls == [f"https://wx1.sinaimg.cn/large/{last}.jpg"]
    assert item.assets[1].urls[0].startswith("http://f.video.weibocdn.com/") and ".mp4" in item.assets[1].urls[0]
    assert item.duration == post.duration == 593.0


def test_mixed_media_with_two_videos_has_no_post_duration(verbatim: WeiboSite) -> None:
    status = copy.deepcopy(verbatim.posts["mixed"].desktop)
    items = status["mix_media_info"]["items"]
    items.append(copy.deepcopy(items[1]))
    items.append({"type": "poll", "data": {}})  # a kind trawl does not know is left out
    item = WeiboResolver(WeiboSettings()).from_status(status, "https://weibo.com/1/x")
    assert [a.name for a in item.assets] == ["image-1", "video-1", "image-2", "video-2"]
    assert item.duration is None


@pytest.mark.parametrize("items", [[], [{"type": "pic"}], [{"type": "video", "data": {"media_info": 5}}], "x",
                                   [None, 3, {"type": ["pic"]}]])
def test_mixed_media_without_usable_items_is_no_media(verbatim: WeiboSite, items: Any) -> None:
    status = {**verbatim.posts["mixed"].desktop, "mix_media_info": {"items": items}}
    with pytest.raises(TrawlError) as error:
        WeiboResolver(WeiboSettings()).from_status(status, "https://weibo.com/1/x")
    assert error.value.error_class == "unsupported_url"


# -- largest pictures ------------------------------------------------------------------------
@pytest.mark.parametrize(("sizes", "expected"), [
    (("largest", "mw2000", "original", "large"), "large"),
    (("mw2000", "original", "large"), "mw2000"),
    (("original", "large", "bmiddle"), "orj1080"),
    (("thumbnail",), None),  # only a thumbnail: no picture rather than a thumbnail for one
])
def test_pictures_at_their_largest_size(verbatim: WeiboSite, sizes: tuple[str, ...], expected: str | None) -> None:
    status = copy.deepcopy(verbatim.posts["livephoto"].desktop)
    pid = status["pic_ids"][1]
    status["pic_infos"] = {pid: {k: v for k, v in status["pic_infos"][pid].items()
                                 if k in sizes or not isinstance(v, dict)}}
    urls = [a.urls for a in picture_assets(status, {})]
    assert urls == ([[f"https://wx1.sinaimg.cn/{expected}/{pid}.jpg"]] if expected else [])


# -- long text -------------------------------------------------------------------------------
def test_long_text_is_the_description(verbatim: WeiboSite, ctx: ResolveContext) -> None:
    item = resolve(verbatim, "longtext", ctx)
    assert item.metadata["description"] == LONG_TEXT
    assert "\n\n第二段" in item.metadata["description"]  # its paragraphs kept
    assert item.title == " ".join(cut_text(LONG_TEXT).split())
    assert "text_truncated" not in item.metadata


def test_long_text_through_the_mobile_api(verbatim: WeiboSite, ctx: ResolveContext) -> None:
    verbatim.login_wall = {"desktop"}  # the status and its long text both from m.weibo.cn
    item = resolve(verbatim, "longtext", ctx, form="mobile")
    assert item.metadata["description"] == LONG_TEXT


def test_long_text_gone_keeps_the_cut_text_and_says_so(verbatim: WeiboSite, ctx: ResolveContext) -> None:
    verbatim.long_text_gone = True
    item = resolve(verbatim, "longtext", ctx)
    assert item.metadata["description"] == " ".join(cut_text(LONG_TEXT).split())
    assert item.metadata["text_truncated"] is True
    assert [a.name for a in item.assets] == ["image-1"]


def test_long_text_a_server_error_is_retried(verbatim: WeiboSite, sim: Simulator, ctx: ResolveContext) -> None:
    failing = lambda req: Response(503, {"Content-Type": "text/html"}, b"busy")  # noqa: E731
    sim.add_exact("/ajax/statuses/longtext", failing)
    sim.add_exact("/statuses/extend", failing)
    with pytest.raises(TrawlError) as error:
        resolve(verbatim, "longtext", ctx)
    assert error.value.error_class == "http_5xx" and error.value.retryable


def test_a_short_post_asks_for_no_long_text(verbatim: WeiboSite, sim: Simulator, ctx: ResolveContext) -> None:
    asked: list[str] = []
    sim.add_exact("/ajax/statuses/longtext", lambda req: asked.append(req.path) or Response(500, {}, b""))
    resolve(verbatim, "pictures", ctx)
    assert asked == []


@pytest.mark.parametrize(("value", "markup", "expected"), [
    ("a<br />b&amp;c <a href='/n/x'>@x</a>", True, "a\nb&c @x"),
    ("a<b>c\r\n\r\n\r\n\r\nd  ", False, "a<b>c\n\nd"),  # plain text keeps what looks like a tag
    ("   ", False, None), (None, True, None), (12, False, None),
])
def test_clean_long_text(value: Any, markup: bool, expected: str | None) -> None:
    assert clean_long_text(value, markup=markup) == expected


# -- hostile answers -------------------------------------------------------------------------
def _set(node: Any, path: tuple[Any, ...], value: Any) -> bool:
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


def mangled(site: WeiboSite) -> Iterator[tuple[str, Any]]:
    live, mixed, long = (site.posts[k] for k in ("livephoto", "mixed", "longtext"))
    pid = live.desktop["pic_ids"][0]
    bases = {"desktop-livephoto": live.desktop, "mobile-livephoto": live.mobile["data"],
             "desktop-mixed": mixed.desktop, "mobile-mixed": mixed.mobile["data"], "desktop-long": long.desktop}
    wrong = [None, 0, True, "x", "", [], {}, [[]], 1.5, "javascript:alert(1)", "//evil"]
    paths = [("pic_infos", pid, "type"), ("pic_infos", pid, "video"), ("pic_infos", pid), ("pics", 0, "videoSrc"),
             ("pics", 0, "type"), ("pics", 1), ("live_photo",), ("live_photo", 0), ("pic_video",), ("mix_media_info",),
             ("mix_media_info", "items"), ("mix_media_info", "items", 0), ("mix_media_info", "items", 0, "type"),
             ("mix_media_info", "items", 1, "data"), ("mix_media_info", "items", 1, "data", "media_info"),
             ("mix_media_info", "items", 0, "data", "largest"), ("isLongText",), ("longText",)]
    for name, base in bases.items():
        for key in list(base):
            changed = copy.deepcopy(base)
            del changed[key]
            yield f"{name}-without-{key}", changed
        for path in paths:
            for value in wrong:
                changed = copy.deepcopy(base)
                if _set(changed, path, value):
                    yield f"{name}-{'.'.join(map(str, path))}={value!r}", changed


def test_mangled_new_shapes_raise_only_trawl_errors(verbatim: WeiboSite) -> None:
    resolver = WeiboResolver(WeiboSettings())
    cases = list(mangled(verbatim))
    assert len(cases) > 300
    resolved = 0
    for name, status in cases:
        try:
            item = resolver.from_status(status, "https://weibo.com/1/HyZVegYAP")
        except TrawlError as exc:
            assert exc.error_class in ("parse_error", "unsupported_url"), name
        except Exception as exc:  # noqa: BLE001 - the point of the test
            pytest.fail(f"{name}: {type(exc).__name__}: {exc}")
        else:
            resolved += 1
            assert all(u.startswith(("http://", "https://")) for a in item.assets for u in a.urls), name
            assert len({a.name for a in item.assets}) == len(item.assets), name
    assert resolved
