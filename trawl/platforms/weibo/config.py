"""``[platforms.weibo]``: the real site's addresses and the browser it passes for."""

from __future__ import annotations

from trawl.platforms.platform import BROWSER_UA, PlatformSettings


class WeiboSettings(PlatformSettings):
    page_base: str = "https://weibo.com"
    mobile_base: str = "https://m.weibo.cn"
    video_base: str = "https://video.weibo.com"
    referer: str = "https://weibo.com/"
    user_agent: str = BROWSER_UA
