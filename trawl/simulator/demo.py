"""The demo site: a handful of media items in the shapes trawl meets on the web."""

from __future__ import annotations

from dataclasses import dataclass

from trawl.settings import BilibiliSettings, FacebookSettings, WeiboSettings
from trawl.simulator.bilibili import SHORT_LINK as BILI_SHORT
from trawl.simulator.bilibili import install_bilibili_site
from trawl.simulator.facebook import LOGIN_WALL_ID as FB_LOGIN_WALL
from trawl.simulator.facebook import VIDEOS as FB_VIDEOS
from trawl.simulator.facebook import install_facebook_site
from trawl.simulator.media import MediaFile
from trawl.simulator.weibo import install_weibo_site
from trawl.simulator.server import Simulator

MiB = 1024 * 1024


@dataclass(frozen=True)
class DemoCase:
    url: str
    expect: str  # committed, or the error class the item must fail with
    note: str
    # Cases sharing a group are one item under several URL forms: one catalog row between them.
    group: str | None = None


def og_page(title: str, video: str | None, image: str | None = None, canonical: str | None = None,
            video_type: str = "video/mp4") -> str:
    tags = [f'<meta property="og:title" content="{title}" />', '<meta property="og:type" content="video.other" />']
    if video:
        tags += [f'<meta property="og:video" content="{video}" />',
                 f'<meta property="og:video:secure_url" content="{video}" />',
                 f'<meta property="og:video:type" content="{video_type}" />']
    if image:
        tags.append(f'<meta property="og:image" content="{image}" />')
    if canonical:
        tags.append(f'<link rel="canonical" href="{canonical}" />')
    head = "\n    ".join(tags)
    return f"""<!doctype html>
<html>
  <head>
    <title>{title} - trawl demo</title>
    {head}
  </head>
  <body><h1>{title}</h1><video src="{video or ''}"></video></body>
</html>
"""


def install_demo_site(sim: Simulator) -> list[DemoCase]:
    """Register the demo's files and pages; return the URLs to crawl with their expected outcome."""
    files = {
        "/media/harbour-timelapse.mp4": MediaFile("mp4", "harbour", 6 * MiB + 123),
        "/media/night-train.webm": MediaFile("webm", "night-train", 3 * MiB + 7),
        "/media/field-recording.mp3": MediaFile("mp3", "field-recording", 2 * MiB),
        "/media/poster.jpg": MediaFile("jpeg", "poster", 300 * 1024),
        "/cdn/v/sunrise-1080.mp4": MediaFile("mp4", "sunrise", 8 * MiB + 1),
        "/cdn/v/gull-720.mp4": MediaFile("mp4", "gull", 4 * MiB + 99),
        "/cdn/v/tide-480.mp4": MediaFile("mp4", "tide", 2 * MiB + 5),
        "/cdn/img/tide.jpg": MediaFile("jpeg", "tide-thumb", 64 * 1024),
        "/cdn/img/lighthouse.png": MediaFile("png", "lighthouse", 128 * 1024),
    }
    for path, media in files.items():
        sim.add_file(path, media)
    sim.add_page("/watch/sunrise", og_page("Sunrise over the bay", "/cdn/v/sunrise-1080.mp4",
                                           canonical="/watch/sunrise"))
    sim.add_page("/m/watch/sunrise", og_page("Sunrise over the bay", "/cdn/v/sunrise-1080.mp4",
                                             canonical="/watch/sunrise"))
    sim.add_page("/watch/gull", og_page("A gull, up close", "/cdn/v/gull-720.mp4"))
    sim.add_page("/watch/tide", og_page("Low tide", "/cdn/v/tide-480.mp4", image="/cdn/img/tide.jpg"))
    sim.add_page("/photo/lighthouse", og_page("The lighthouse", None, image="/cdn/img/lighthouse.png"))
    return [
        DemoCase(sim.url(path), expect, note, group) for path, expect, note, group in (
            ("/media/harbour-timelapse.mp4", "committed", "direct mp4", None),
            ("/media/night-train.webm", "committed", "direct webm", None),
            ("/media/field-recording.mp3?utm_source=newsletter", "committed", "direct mp3, tracking param", None),
            ("/media/poster.jpg", "committed", "direct image", None),
            ("/watch/sunrise", "committed", "OpenGraph page", "sunrise"),
            ("/m/watch/sunrise?utm_medium=share", "committed", "same item, mobile URL form", "sunrise"),
            ("/watch/gull", "committed", "OpenGraph page", None),
            ("/watch/tide", "committed", "OpenGraph video + thumbnail", None),
            ("/photo/lighthouse", "committed", "OpenGraph image only", None),
            ("/watch/deleted-clip", "not_found", "a page that is gone (404)", None),
        )
    ]


def install_bilibili_demo(sim: Simulator) -> tuple[BilibiliSettings, list[DemoCase]]:
    site = install_bilibili_site(sim)
    return site.settings(requests_per_second=20), [
        DemoCase(site.url("BV117411r7R1"), "committed", "Bilibili DASH: video + audio", "bili"),
        DemoCase(sim.url("/video/av85440373"), "committed", "same video by av number", "bili"),
        DemoCase(sim.url(f"/b23/{BILI_SHORT}"), "committed", "same video by b23.tv short link", "bili"),
        DemoCase(site.url("BV1GJ411x7h7", page=2), "committed", "Bilibili part 2, two durl segments"),
        DemoCase(site.url("BV17x411w7KC"), "not_found", "Bilibili code -404"),
    ]


def install_facebook_demo(sim: Simulator) -> tuple[FacebookSettings, list[DemoCase]]:
    site = install_facebook_site(sim)
    classic, reel = FB_VIDEOS[0], FB_VIDEOS[1]
    return site.settings(requests_per_second=20), [
        DemoCase(sim.url(f"/watch/?v={classic.id}"), "committed", "Facebook video, HD + SD", "fb"),
        DemoCase(site.short_url("aBc12XyZ9"), "committed", "same video by fb.watch link", "fb"),
        DemoCase(sim.url(f"/reel/{reel.id}"), "committed", "Facebook reel"),
        DemoCase(sim.url(f"/watch/?v={FB_LOGIN_WALL}"), "login_required", "Facebook login wall"),
    ]


def install_weibo_demo(sim: Simulator) -> tuple[WeiboSettings, list[DemoCase]]:
    site = install_weibo_site(sim)
    video, pictures, text_only = site.posts["playback"], site.posts["pictures"], site.posts["novideo"]
    return site.settings(requests_per_second=20), [
        DemoCase(sim.url(f"/{video.uid}/{video.mblogid}"), "committed", "Weibo video post", "weibo"),
        DemoCase(sim.url(f"/detail/{video.mid}"), "committed", "same post, m.weibo.cn form by mid", "weibo"),
        DemoCase(sim.url(f"/{pictures.uid}/{pictures.mblogid}"), "committed", "Weibo post with two pictures"),
        DemoCase(sim.url(f"/{text_only.uid}/{text_only.mblogid}"), "unsupported_url", "Weibo post without media"),
    ]
