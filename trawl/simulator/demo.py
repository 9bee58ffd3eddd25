"""The demo site: a handful of media items in the shapes trawl meets on the web.

Each platform's simulated site brings its own demo cases (its module's ``install_demo``).
"""

from __future__ import annotations

from dataclasses import dataclass

from trawl.simulator.media import MediaFile
from trawl.simulator.server import Response, Simulator

MiB = 1024 * 1024


@dataclass(frozen=True)
class DemoCase:
    url: str
    expect: str  # committed, or the error class the item must fail with
    note: str
    # Cases sharing a group are one item under several URL forms: one catalog row between them.
    group: str | None = None


def og_page(title: str, video: str | None, image: str | None = None, canonical: str | None = None,
            video_type: str = "video/mp4", description: str | None = None) -> str:
    tags = [f'<meta property="og:title" content="{title}" />', '<meta property="og:type" content="video.other" />']
    if description:
        tags.append(f'<meta property="og:description" content="{description}" />')
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
        "/media/harbour-timelapse.mp4": MediaFile("mp4", "harbour", 6 * MiB + 123, playable=True),
        "/media/night-train.webm": MediaFile("webm", "night-train", 3 * MiB + 7, playable=True),
        "/media/field-recording.mp3": MediaFile("mp3", "field-recording", 2 * MiB, playable=True),
        "/media/poster.jpg": MediaFile("jpeg", "poster", 300 * 1024),
        "/cdn/v/sunrise-1080.mp4": MediaFile("mp4", "sunrise", 8 * MiB + 1, playable=True),
        "/cdn/v/gull-720.mp4": MediaFile("mp4", "gull", 4 * MiB + 99, playable=True),
        "/cdn/v/tide-480.mp4": MediaFile("mp4", "tide", 2 * MiB + 5, playable=True),
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
    # A listing: the site's RSS 2.0 feed (channel/item, an enclosure or else the link, as yt-dlp's
    # generic extractor reads feeds), newest first. Not a demo case: `trawl resolve` or `trawl
    # crawl` it by its URL (the README's "Listings").
    feed = FEED.replace("{base}", sim.base_url).encode()
    sim.add_exact("/feeds/harbour.xml", lambda req: Response(200, {"Content-Type": "application/rss+xml"}, feed))
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


FEED = """<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel><title>Harbour clips</title><link>{base}/</link>
  <description>What the harbour cameras saw this week</description>
  <item><title>Low tide</title><link>{base}/watch/tide</link><pubDate>Tue, 24 Nov 2026 07:10:00 GMT</pubDate></item>
  <item><title>A gull, up close</title><link>{base}/watch/gull</link><pubDate>Mon, 23 Nov 2026 16:45:00 GMT</pubDate></item>
  <item><title>Field recording</title><link>{base}/listen/field</link><pubDate>Sun, 22 Nov 2026 05:30:00 GMT</pubDate>
    <enclosure url="{base}/media/field-recording.mp3" type="audio/mpeg" length="2097152"/></item>
</channel></rss>
"""
