"""The simulated site's video search: ``x/web-interface/wbi/search/type`` at its real path.

Answer shape: the ``search_type=video`` example of bilibili-API-collect (commit 0183d88,
``search/search_request.md``, "分类搜索"), cited ``BAC``: ``data{seid, page, pagesize, numResults,
numPages, suggest_keyword, rqt_type, cost_time, exp_list, egg_hit, result[], show_column}``, each
result :data:`RESULT` with its values replaced; the words found wrapped in ``<em class="keyword">``
as there. The cap is the real one: ``numResults`` at most 1,000, ``numPages`` at most 50, pages of
20; a page past the last answers an empty ``result`` (modelled: BAC shows none).

What it finds: every video of the site whose title holds every word of ``keyword`` (case
ignored), plus :data:`MANY_KEYWORD`'s :data:`MANY` search-only results (videos the search lists
and the site does not serve, to go past the cap: four a day from :data:`MANY_FIRST`). Ordered by
``order`` (``pubdate`` newest first; ``click`` by plays; ``dm`` by danmaku; ``stow`` by
favourites; ``totalrank`` by an invented score), narrowed by ``duration`` (0-4, BAC's buckets) and
``pubtime_begin_s``/``pubtime_end_s`` (both inclusive). WBI-checked, as ``arc/search``.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trawl.platforms.bilibili.resolver import av_to_bv
from trawl.platforms.bilibili.search import PAGE_CAP, PAGE_SIZE, RESULT_CAP
from trawl.simulator.server import Request, Response

if TYPE_CHECKING:
    from trawl.platforms.bilibili.site import BilibiliSite

MANY_KEYWORD = "长列表"
MANY = 1300  # past the 1,000-result cap
MANY_FIRST = 1750000000  # the oldest search-only result's pubdate; then one every 6 hours
SEARCH_PATH = "/x/web-interface/wbi/search/type"

# BAC, the example's first result (values replaced per video).
RESULT: dict[str, Any] = {
    "type": "video", "id": 0, "author": "", "mid": 0, "typeid": "193", "typename": "MV", "arcurl": "", "aid": 0,
    "bvid": "", "title": "", "description": "", "arcrank": "0",
    "pic": "//i0.hdslb.com/bfs/archive/e25120857a6298d1d4b9e64a805c023b5143c8ff.jpg", "play": 0, "video_review": 0,
    "favorites": 0, "tag": "", "review": 1265, "pubdate": 0, "senddate": 0, "duration": "4:18", "badgepay": False,
    "hit_columns": ["title"], "view_type": "", "is_pay": 0, "is_union_video": 0, "rec_tags": None,
    "new_rec_tags": [], "rank_score": 0,
}
COST_TIME = {"params_check": "0.000300", "illegal_handler": "0.000077", "as_response_format": "0.003071",
             "as_request": "0.072525", "save_cache": "0.001115", "deserialize_response": "0.000310",
             "as_request_format": "0.000319", "total": "0.077996", "main_handler": "0.076419"}


@dataclass(frozen=True)
class Found:
    """A video as the search sees it."""

    aid: int
    bvid: str
    title: str
    author: str
    mid: int
    pubdate: int
    duration: int  # seconds
    play: int
    danmaku: int
    favorites: int


def _clock(seconds: int) -> str:
    minutes, second = divmod(seconds, 60)
    return f"{minutes}:{second}"  # BAC's form: "58:6", minutes past the hour kept


def _many() -> list[Found]:
    return [Found(31000000 + n, av_to_bv(31000000 + n), f"{MANY_KEYWORD} 第{n}条", "搜索UP主", 20261400,
                  MANY_FIRST + n * 6 * 3600, 30 + (n * 37) % 5400, (n * 7919) % 100000, n % 97, (n * 13) % 1000)
            for n in range(1, MANY + 1)]


def _in_bucket(seconds: int, bucket: int) -> bool:
    return {0: True, 1: seconds < 600, 2: 600 <= seconds < 1800, 3: 1800 <= seconds < 3600,
            4: seconds >= 3600}.get(bucket, True)


def _highlight(title: str, words: list[str]) -> str:
    for word in words:
        index = title.lower().find(word.lower())
        if index >= 0:
            found = title[index:index + len(word)]
            title = title[:index] + f'<em class="keyword">{found}</em>' + title[index + len(word):]
    return title


class SearchAnswers:
    """The search over ``site.videos`` and the search-only results."""

    def __init__(self, site: BilibiliSite) -> None:
        self.site = site
        self.many = _many()

    def _corpus(self) -> list[Found]:
        found = []
        for video in self.site.videos.values():
            data = video.view["data"]
            stat = data.get("stat") or {}
            found.append(Found(int(data["aid"]), data["bvid"], data.get("title") or "", data["owner"]["name"],
                               int(data["owner"]["mid"]), int(data.get("pubdate") or 0), int(data.get("duration") or 0),
                               int(stat.get("view") or 0), int(stat.get("danmaku") or 0), int(stat.get("favorite") or 0)))
        return found + self.many

    def answer(self, req: Request) -> dict[str, Any]:
        words = (req.arg("keyword") or "").split()
        order = req.arg("order") or "totalrank"
        bucket = int(req.arg("duration") or 0) if (req.arg("duration") or "0").isdigit() else 0
        begin = int(req.arg("pubtime_begin_s") or 0) if (req.arg("pubtime_begin_s") or "").isdigit() else 0
        end = int(req.arg("pubtime_end_s") or 0) if (req.arg("pubtime_end_s") or "").isdigit() else 0
        page = int(req.arg("page") or 1) if (req.arg("page") or "1").isdigit() else 1
        hits = [f for f in self._corpus()
                if words and all(w.lower() in f.title.lower() for w in words) and _in_bucket(f.duration, bucket)
                and (not begin or f.pubdate >= begin) and (not end or f.pubdate <= end)]
        key = {"pubdate": lambda f: -f.pubdate, "click": lambda f: -f.play, "dm": lambda f: -f.danmaku,
               "stow": lambda f: -f.favorites}.get(order, lambda f: -(f.play + f.favorites * 50))
        hits.sort(key=lambda f: (key(f), f.aid))
        capped = hits[:RESULT_CAP]
        pages = min(math.ceil(len(capped) / PAGE_SIZE), PAGE_CAP)
        chunk = capped[(page - 1) * PAGE_SIZE: page * PAGE_SIZE] if 1 <= page <= pages else []
        results = []
        for f in chunk:
            result = copy.deepcopy(RESULT)
            result.update(id=f.aid, author=f.author, mid=f.mid, arcurl=f"http://www.bilibili.com/video/av{f.aid}",
                          aid=f.aid, bvid=f.bvid, title=_highlight(f.title, words), play=f.play,
                          video_review=f.danmaku, favorites=f.favorites, pubdate=f.pubdate, senddate=f.pubdate,
                          duration=_clock(f.duration), rank_score=f.play + f.favorites * 50)
            results.append(result)
        return {"code": 0, "message": "0", "ttl": 1, "data": {
            "seid": "9339963973663795027", "page": page, "pagesize": PAGE_SIZE, "numResults": len(capped),
            "numPages": pages, "suggest_keyword": "", "rqt_type": "search", "cost_time": COST_TIME,
            "exp_list": {"5520": True}, "egg_hit": 0, "result": results, "show_column": 0}}


def install_search(site: BilibiliSite) -> SearchAnswers:
    """Serve the search at its real path on ``site``'s simulator."""
    answers = SearchAnswers(site)

    def search(req: Request) -> Response:
        from trawl.platforms.bilibili.visitor_site import REFUSED_SEARCH, visitor_ok

        if not visitor_ok(site, req):  # without a visitor's cookies the search answers -412 (BAC)
            doc = REFUSED_SEARCH
        elif site._signed_ok(req):
            doc = answers.answer(req)
        else:
            doc = {"code": -403, "message": "访问权限不足", "ttl": 1}
        return Response(200, {"Content-Type": "application/json; charset=utf-8"},
                        json.dumps(doc, ensure_ascii=False).encode())

    site.sim.add_exact(SEARCH_PATH, search)
    return answers
