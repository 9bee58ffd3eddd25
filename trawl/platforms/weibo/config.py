"""``[platforms.weibo]``: the real site's addresses and the browser it passes for."""

from __future__ import annotations

from pydantic import Field

from trawl.platforms.platform import BROWSER_UA, PlatformSettings


class WeiboSettings(PlatformSettings):
    # Base URLs default to the real sites (tests and the demo point them at the simulator).
    page_base: str = "https://weibo.com"
    mobile_base: str = "https://m.weibo.cn"  # the mobile site
    video_base: str = "https://video.weibo.com"  # the video site
    referer: str = "https://weibo.com/"  # the Referer of its requests
    user_agent: str = BROWSER_UA  # the browser it passes for
    # Comments (docs/extras.md): every top-level comment of a post, up to this safety cap (reached:
    # the document says truncated); 0 turns comments off.
    max_comments: int = Field(default=20_000, ge=0)
    # Every reply of every comment, up to this safety cap (all of them together).
    max_replies: int = Field(default=100_000, ge=0)
