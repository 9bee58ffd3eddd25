"""``[platforms.bilibili]``: the real site's addresses, the browser it passes for, the streams asked."""

from __future__ import annotations

from typing import Literal

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
    short_base: str = "https://b23.tv"  # short links
    referer: str = "https://www.bilibili.com/"  # the Referer of its requests
    user_agent: str = BROWSER_UA  # the browser it passes for
    # qn: 16=360P, 32=480P, 64=720P, 80=1080P (login), 112=1080P+, 116=1080P60, 120=4K,
    # 125=HDR, 126=Dolby Vision, 127=8K. A quality only one codec family plays (Dolby Vision,
    # a quality offered in HEVC alone such as HDR) is taken only when asked for exactly.
    quality: int = 80
    audio: AudioChoice = "best"  # which DASH audio stream to keep (AudioChoice above)
