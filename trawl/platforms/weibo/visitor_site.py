"""The simulated Sina Visitor System: ``/visitor/visitor`` (the page, and ``a=incarnate``) and
``POST /visitor/genvisitor``, at the simulator's root as the other Weibo paths.

With ``WeiboSite.visitor_flow`` the two calls give visitor cookies and the desktop API answers a
request that sends a ``SUB`` it gave, instead of redirecting it (``login_redirect``); without it,
genvisitor answers 404 and the page is only the page. Shapes: the JSONP answers yt-dlp's
``WeiboBaseIE._update_visitor_cookies`` reads (``gen_callback({"retcode": 20000000, "msg": "succ",
"data": {"tid", "new_tid", "confidence"}})``, ``cross_domain({"retcode": 20000000, "msg": "succ",
"data": {"sub", "subp"}})``); the values are invented, in the real cookies' alphabet.
"""

from __future__ import annotations

import json
import secrets
from typing import TYPE_CHECKING

from trawl.simulator.server import Request, Response

if TYPE_CHECKING:
    from trawl.platforms.weibo.site import WeiboSite


def _jsonp(callback: str, doc: dict) -> Response:
    body = f"window.{callback} && {callback}({json.dumps(doc)});".encode()
    return Response(200, {"Content-Type": "application/javascript; charset=utf-8"}, body)


def sub_of(req: Request) -> str:
    for part in (req.headers.get("cookie") or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == "SUB":
            return value
    return ""


def is_visitor(site: WeiboSite, req: Request) -> bool:
    """The request sends visitor cookies the simulated visitor system gave."""
    return site.visitor_flow and sub_of(req) in site.visitor_subs


def install_visitor_system(site: WeiboSite, page: bytes) -> None:
    tids: set[str] = set()

    def genvisitor(req: Request) -> Response:
        if not site.visitor_flow or req.method != "POST":
            return Response(404, {"Content-Type": "text/html"}, b"<html>404</html>")
        tid = secrets.token_urlsafe(32)
        tids.add(tid)
        return _jsonp("gen_callback", {"retcode": 20000000, "msg": "succ",
                                       "data": {"tid": tid, "new_tid": True, "confidence": 95}})

    def visitor(req: Request) -> Response:
        if req.arg("a") != "incarnate" or not site.visitor_flow:
            return Response(200, {"Content-Type": "text/html; charset=utf-8"}, page)
        if req.arg("t") not in tids:
            return _jsonp("cross_domain", {"retcode": 50111299, "msg": "tid error"})
        sub = "_2A" + secrets.token_urlsafe(60).replace("-", "A").replace("_", "B")
        site.visitor_subs.add(sub)
        return _jsonp("cross_domain", {"retcode": 20000000, "msg": "succ",
                                       "data": {"sub": sub, "subp": "0033WrSXqPxfM72-Ws9jqgMF55529P9D9W5"}})

    site.sim.add_exact("/visitor/genvisitor", genvisitor)
    site.sim.add_exact("/visitor/visitor", visitor)
