"""``[platforms.facebook]``: the real site's addresses, the browser it passes for, a gentler rate."""

from __future__ import annotations

from pydantic import Field

from trawl.platforms.platform import BROWSER_UA, PlatformSettings


class FacebookSettings(PlatformSettings):
    # Base URLs default to the real sites (tests and the demo point them at the simulator).
    page_base: str = "https://www.facebook.com"
    short_base: str = "https://fb.watch"  # short links
    user_agent: str = BROWSER_UA  # the browser it passes for
    requests_per_second: float = Field(default=0.5, gt=0)  # anonymous access is soft-banned after a few dozen pages
