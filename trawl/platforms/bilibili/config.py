"""``[platforms.bilibili]``: the real site's addresses, the browser it passes for, the quality asked."""

from __future__ import annotations

from trawl.platforms.platform import BROWSER_UA, PlatformSettings


class BilibiliSettings(PlatformSettings):
    page_base: str = "https://www.bilibili.com"
    mobile_base: str = "https://m.bilibili.com"
    api_base: str = "https://api.bilibili.com"
    short_base: str = "https://b23.tv"
    referer: str = "https://www.bilibili.com/"
    user_agent: str = BROWSER_UA
    # qn: 16=360P, 32=480P, 64=720P, 80=1080P (login), 112=1080P+, 116=1080P60, 120=4K
    quality: int = 80
