"""The simulated site's visitors: ``x/frontend/finger/spi`` gives visitor ids, and with
``BilibiliSite.visitor_required`` the WBI APIs refuse a request whose ``buvid3`` cookie is not one
it gave (or one given before :func:`expire_visitors`).

Shapes: spi's answer ``{"code": 0, "data": {"b_3": ..., "b_4": ...}, "message": "ok"}`` is the one
bilibili-API-collect documents (``docs/misc/buvid3_4.md``), ids invented in the real format
(``<uuid>infoc``; buvid4 ``<uuid>-<digits>-<base64>``). A refused playurl or uploads request is the
captured -352 answer (``bilibili_error_-352_vvoucher.json``, with its ``Bili-Status-Code`` header);
a refused search the -412 "请求被拦截" bilibili-API-collect's search page describes ("Cookie 不足
会返回 -412", the envelope of ``bilibili_error_-412.json``).
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING

from trawl.simulator.server import Request, Response

if TYPE_CHECKING:
    from trawl.platforms.bilibili.site import BilibiliSite

SPI_PATH = "/x/frontend/finger/spi"
REFUSED_SEARCH = {"code": -412, "message": "请求被拦截", "ttl": 1}


def buvid3(req: Request) -> str:
    """The ``buvid3`` cookie a request sends ("" without)."""
    for part in (req.headers.get("cookie") or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == "buvid3":
            return value
    return ""


def visitor_ok(site: BilibiliSite, req: Request) -> bool:
    """Whether a request may be answered: visitors are not required, or it sends a valid buvid3.
    With ``site.expire_at_check`` N, the N-th request checked finds the visitors expired first."""
    if not site.visitor_required:
        return True
    with site._lock:
        site.visitor_checks += 1
        if site.visitor_checks == site.expire_at_check:
            site.visitors.clear()
        return buvid3(req) in site.visitors


def expire_visitors(site: BilibiliSite) -> int:
    """Forget every visitor id given so far (their requests get -352 until renewed)."""
    count = len(site.visitors)
    site.visitors.clear()
    return count


def rotate_wbi(site: BilibiliSite) -> None:
    """New WBI keys: signatures made with the old ones fail (-403) until nav is asked again."""
    img, sub = site.wbi_keys
    site.wbi_keys = (sub[::-1], img[::-1])


def install_visitors(site: BilibiliSite) -> None:
    def spi(req: Request) -> Response:
        b3 = f"{str(uuid.uuid4()).upper()}{uuid.uuid4().int % 100000:05d}infoc"
        b4 = f"{str(uuid.uuid4()).upper()}-{uuid.uuid4().int % 10**12:012d}-0fMgT0XkTGKA1Tg6BVkXOA=="
        with site._lock:
            site.visitors.add(b3)
        body = {"code": 0, "data": {"b_3": b3, "b_4": b4}, "message": "ok"}
        return Response(200, {"Content-Type": "application/json; charset=utf-8"}, json.dumps(body).encode())

    site.sim.add_exact(SPI_PATH, spi)
