"""The simulated m.weibo.cn search: ``api/container/getIndex?containerid=100103type=<T>&q=<text>``.

Not captured: the shape is the profile feed's card list (see :mod:`.site`), as the search's
readers take it (MediaCrawler's ``filter_search_result_card``: ``card_type`` 9 cards with ``mblog``,
some inside a ``card_type`` 11 card's ``card_group``; third-party scripts reading
``cards[].card_group[0].mblog``), with ``cardlistInfo.page`` the next page (null on the last).

It finds every post of the site whose mobile text holds every word of ``q`` (case ignored). Type 61
(real-time) lists them newest first; type 1 (relevance) in an invented order (by the mid's last
digits). The first page's first two posts come grouped in one ``card_type`` 11 card, as the real
search groups its "hot" posts. Pages of ``site.page_size``; past the end the feed's "no more"
answer.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote

if TYPE_CHECKING:
    from trawl.platforms.weibo.site import WeiboPost, WeiboSite

SEARCH_CONTAINER = re.compile(r"100103type=(?P<type>\d+)&(?P<rest>.*)", re.S)


def _text(post: WeiboPost) -> str:
    data = post.mobile.get("data") if isinstance(post.mobile.get("data"), dict) else {}
    return re.sub(r"<[^>]*>", "", str(data.get("text") or ""))


def search_page(site: WeiboSite, container: str, page: int) -> dict[str, Any] | None:
    """The search answer for ``container`` (None: not a search container)."""
    found = SEARCH_CONTAINER.fullmatch(container)
    if found is None:
        return None
    words = dict(parse_qsl(found["rest"], keep_blank_values=True)).get("q", "").lower().split()
    hits = [p for p in site.posts.values() if words and all(w in _text(p).lower() for w in words)]
    if found["type"] == "61":
        hits.sort(key=lambda p: int(p.mid), reverse=True)
    else:
        hits.sort(key=lambda p: (int(p.mid) % 1000, int(p.mid)))
    size = site.page_size
    chunk = hits[(page - 1) * size: page * size] if page >= 1 else []
    if not chunk:
        return {"ok": 0, "msg": "这里还没有内容", "data": {"cards": []}}
    lfid = quote(container, safe="")
    cards: list[dict[str, Any]] = [{
        "card_type": 9, "itemid": f"seqid:{p.mid}",
        "scheme": f"https://m.weibo.cn/status/{p.mblogid}?mblogid={p.mblogid}&luicode=10000011&lfid={lfid}",
        "mblog": p.mobile["data"]} for p in chunk]
    if page == 1 and len(cards) > 2:
        cards[:2] = [{"card_type": 11, "itemid": "", "show_type": 1, "card_group": cards[:2]}]
    more = len(hits) > page * size
    info = {"containerid": container, "v_p": 42, "show_style": 1, "total": len(hits), "page": page + 1 if more else None}
    return {"ok": 1, "data": {"cardlistInfo": info, "cards": cards, "scheme": ""}}
