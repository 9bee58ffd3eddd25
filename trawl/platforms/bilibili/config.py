"""``[platforms.bilibili]``: the real site's addresses, the browser it passes for, the streams asked."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from trawl.platforms.platform import BROWSER_UA, PlatformSettings

# Which DASH audio stream to keep (bilibili-API-collect docs/video/videostream_url.md):
# best: lossless (dash.flac, Hi-Res FLAC, id 30251) over lossy, then the highest bitrate among
#   AAC (dash.audio) and Dolby (dash.dolby.audio, E-AC-3, id 30250);
# lossless / dolby: that stream when offered, else as best; aac: the best AAC stream (plays
#   everywhere), else as best.
AudioChoice = Literal["best", "lossless", "dolby", "aac"]


class BilibiliSettings(PlatformSettings):
    # Base URLs default to the real sites (tests and the demo point them at the simulator).
    page_base: str = "https://www.bilibili.com"
    mobile_base: str = "https://m.bilibili.com"  # the mobile site
    space_base: str = "https://space.bilibili.com"  # uploader spaces: uploads, collections, series, favourites
    api_base: str = "https://api.bilibili.com"  # the API
    search_base: str = "https://search.bilibili.com"  # the search pages (search.bilibili.com/all?keyword=...)
    short_base: str = "https://b23.tv"  # short links
    dynamic_base: str = "https://t.bilibili.com"  # dynamics (动态): t.bilibili.com/<id>
    live_base: str = "https://live.bilibili.com"  # live rooms: live.bilibili.com/<room id>
    live_api_base: str = "https://api.live.bilibili.com"  # the live rooms' API (room_init, getRoomPlayInfo)
    referer: str = "https://www.bilibili.com/"  # the Referer of its requests
    user_agent: str = BROWSER_UA  # the browser it passes for
    # qn: 16=360P, 32=480P, 64=720P, 80=1080P (login), 112=1080P+, 116=1080P60, 120=4K,
    # 125=HDR, 126=Dolby Vision, 127=8K. A quality only one codec family plays (Dolby Vision,
    # a quality offered in HEVC alone such as HDR) is taken only when asked for exactly.
    quality: int = 80
    audio: AudioChoice = "best"  # which DASH audio stream to keep (AudioChoice above)
    # A live room's qn when the crawl names no height (-f): 10000 original (原画), 400 blu-ray
    # (蓝光), 250 super (超清), 150 high (高清), 80 smooth (流畅); the room may offer less.
    live_quality: int = Field(default=10000, gt=0)
    # Where a video's XML danmaku file lives (comment.bilibili.com/<cid>.xml; docs/extras.md).
    comment_base: str = "https://comment.bilibili.com"
    # Which danmaku is read: protobuf (x/v2/dm/web/seg.so, every 6-minute segment: all of them)
    # or xml (the one file, which Bilibili caps at the latest few thousand).
    danmaku_source: Literal["protobuf", "xml"] = "protobuf"
    # Comments (docs/extras.md): every top-level comment, up to this safety cap (reached: the
    # document says truncated); 0 turns comments off.
    max_comments: int = Field(default=20_000, ge=0)
    # Every reply of every thread, up to this safety cap (all threads together).
    max_replies: int = Field(default=100_000, ge=0)
    # A live room's comments (弹幕) recorded beside its video, as a visitor (docs/live.md).
    live_comments: bool = True
