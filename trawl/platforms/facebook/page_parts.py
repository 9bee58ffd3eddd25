"""The simulated Facebook's page pieces that its video pages (:mod:`.site`) and its photos and
listings (:mod:`.listing_site`) both serve: the videos, the login wall, the unavailable page, and
the Relay blocks real pages carry their data in."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FbVideo:
    """A served video and what a resolver should find out about it.

    ``layout`` is how its page describes it: ``classic`` (``playable_url[_quality_hd]`` and
    ``browser_native_*_url``, title in a separate node), ``reel`` (``progressive_urls[]``,
    title only in ``og:title``) or ``og`` (OpenGraph only, no JSON node).
    """

    id: str
    page: str  # the page name in /<page>/videos/<id>
    title: str
    uploader: str | None
    duration: float | None
    hd_size: int | None
    sd_size: int | None
    layout: str


VIDEOS = (
    FbVideo("1029384756473829", "harbourcouncil", "Harbour lights at dusk", "Harbour Council", 42.5,
            700_000, 300_000, "classic"),
    FbVideo("2847561930284756", "tidepoolstudio", "Tidepool timelapse", "Tidepool Studio", 15.2,
            500_000, 200_000, "reel"),
    FbVideo("3958271046382910", "keepersdiary", "A lighthouse keeper's day", None, None, None, 250_000, "og"),
)

LOGIN_WALL = """<!DOCTYPE html><html lang="en"><head><title>Log in to Facebook</title>
<meta property="og:title" content="Log in or sign up to view" /></head>
<body><div class="_4-u2"><h2>You must log in to continue.</h2>
<form id="login_form" action="/login/device-based/regular/login/" method="post">
<input type="text" name="email" /><input type="password" name="pass" /></form></div></body></html>"""
UNAVAILABLE = """<!DOCTYPE html><html lang="en"><head><title>Facebook</title></head>
<body><h2>This content isn&#039;t available right now</h2>
<p>When this happens, it&#039;s usually because the owner only shared it with a small group of people,
changed who can see it or it&#039;s been deleted.</p></body></html>"""

def script(doc: Any) -> str:
    # Real pages escape "/" and "<" inside these blocks so "</script>" never appears in them.
    text = json.dumps(doc, separators=(",", ":")).replace("/", "\\/").replace("<", "\\u003c")
    return f'<script type="application/json" data-content-len="{len(text)}" data-sjs>{text}</script>'


def relay(name: str, data: dict[str, Any]) -> dict[str, Any]:
    """A Relay payload wrapped the way real pages wrap theirs: require -> __bbox -> require -> ..."""
    result = {"__bbox": {"complete": True, "result": {"data": data, "extensions": {"is_final": True}}}}
    inner = {"__bbox": {"require": [["RelayPrefetchedStreamCache", "next", [], [f"adp_{name}", result]]]}}
    return {"require": [["ScheduledServerJS", "handle", None, [inner]]]}
