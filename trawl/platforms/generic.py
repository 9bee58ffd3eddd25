"""Direct media files and HTML pages that describe their media with OpenGraph or JSON-LD."""

from __future__ import annotations

import dataclasses
import json
import posixpath
from datetime import UTC, datetime
import re
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

import httpx

from trawl.errors import TrawlError, UnsupportedUrl, classify_exception, classify_response
from trawl.hls_playlists import (
    MasterPlaylist,
    MediaPlaylist,
    choose_variant,
    is_hls_type,
    is_hls_url,
    parse_playlist,
)
from trawl.models import LIVE_PROTOCOL, Asset, Resolved
from trawl.ranges import parse_content_range
from trawl.platforms.base import Page, ResolveContext, Resolver, float_or_none, int_or_none, read_limited
from trawl.platforms.platform import ListingForm, Platform, PlatformDemo, PlatformSettings
from trawl.urls import canonicalize, validate_url, web_key

if TYPE_CHECKING:
    from trawl.simulator.server import Simulator

# The height a master playlist's variant is picked by when the crawl names none (the download's
# own default, download.hls_quality, is a worker setting the resolver does not see).
DEFAULT_HLS_QUALITY = 1080
VIDEO_EXTS = frozenset({".mp4", ".m4v", ".webm", ".mkv", ".mov", ".flv", ".ts", ".ogv"})
AUDIO_EXTS = frozenset({".mp3", ".m4a", ".aac", ".ogg", ".opus", ".flac", ".wav"})
IMAGE_EXTS = frozenset({".jpg", ".jpeg", ".png", ".gif", ".webp"})


def kind_from_content_type(content_type: str) -> str | None:
    if content_type.startswith("video/") or content_type == "application/ogg":
        return "video"
    if content_type.startswith("audio/") and not is_hls_type(content_type):
        return "audio"
    if content_type.startswith("image/"):
        return "image"
    return None


def kind_from_extension(url: str) -> str | None:
    try:
        ext = posixpath.splitext(urlsplit(url).path)[1].lower()
    except ValueError:  # not splittable (an unbalanced IPv6 bracket): no kind to read
        return None
    if ext in VIDEO_EXTS:
        return "video"
    if ext in AUDIO_EXTS:
        return "audio"
    if ext in IMAGE_EXTS:
        return "image"
    return None


@dataclass
class OgMedia:
    url: str
    secure_url: str | None = None
    type: str | None = None
    width: int | None = None
    height: int | None = None


@dataclass
class PageMeta:
    """What a page says about its media, before any policy is applied."""

    title: str | None = None
    og: dict[str, str] = field(default_factory=dict)  # first value of each simple og:/twitter: property
    videos: list[OgMedia] = field(default_factory=list)
    images: list[OgMedia] = field(default_factory=list)
    canonical: str | None = None
    json_ld_content_urls: list[str] = field(default_factory=list)


class _MetaParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.meta = PageMeta()
        self._in_title = False
        self._title_parts: list[str] = []
        self._in_json_ld = False
        self._json_ld_parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {k.lower(): (v or "") for k, v in attrs}
        if tag == "meta":
            prop = (attr.get("property") or attr.get("name") or "").strip().lower()
            content = attr.get("content", "").strip()
            if prop and content:
                self._meta(prop, content)
        elif tag == "link" and "canonical" in attr.get("rel", "").lower().split():
            if attr.get("href") and self.meta.canonical is None:
                self.meta.canonical = attr["href"].strip()
        elif tag == "title" and self.meta.title is None:
            self._in_title = True
        elif tag == "script" and attr.get("type", "").lower() == "application/ld+json":
            self._in_json_ld = True
            self._json_ld_parts = []

    def _meta(self, prop: str, content: str) -> None:
        structured = {"og:video": self.meta.videos, "og:image": self.meta.images}
        for root, items in structured.items():
            if prop in (root, root + ":url"):
                if prop == root or not items or items[-1].url != content:
                    items.append(OgMedia(url=content))
                return
            if prop.startswith(root + ":") and items:
                field_name = prop[len(root) + 1:]
                current = items[-1]
                if field_name == "secure_url":
                    current.secure_url = content
                elif field_name == "type":
                    current.type = content.lower()
                elif field_name in ("width", "height"):
                    setattr(current, field_name, int_or_none(content))
                else:  # og:video:duration and the like are simple properties
                    self.meta.og.setdefault(prop, content)
                return
        self.meta.og.setdefault(prop, content)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self._in_title:
            self._in_title = False
            self.meta.title = " ".join("".join(self._title_parts).split()) or None
        elif tag == "script" and self._in_json_ld:
            self._in_json_ld = False
            self._json_ld("".join(self._json_ld_parts))

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title_parts.append(data)
        elif self._in_json_ld:
            self._json_ld_parts.append(data)

    def _json_ld(self, text: str) -> None:
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            return
        stack = [doc]
        while stack:
            node = stack.pop()
            if isinstance(node, list):
                stack.extend(node)
            elif isinstance(node, dict):
                url = node.get("contentUrl")
                if isinstance(url, str) and url.strip():
                    self.meta.json_ld_content_urls.append(url.strip())
                stack.extend(v for v in node.values() if isinstance(v, (dict, list)))


def parse_page_meta(html: str) -> PageMeta:
    """Extract title, OpenGraph media, canonical link and JSON-LD content URLs from HTML."""
    parser = _MetaParser()
    try:
        parser.feed(html)
        parser.close()
    except AssertionError:  # html.parser asserts on some malformed marked sections ("<![x[")
        pass
    return parser.meta


def _absolute(base: str, candidate: str | None) -> str | None:
    if not candidate:
        return None
    try:
        return validate_url(urljoin(base, candidate))
    except (UnsupportedUrl, ValueError):  # urljoin refuses e.g. an unbalanced IPv6 bracket
        return None


def _hls_asset(urls: list[str]) -> Asset:
    return Asset(name="video", kind="video", urls=urls, protocol="hls")


def _is_video(media: OgMedia) -> bool:
    if media.type:
        return media.type.startswith("video/") and not is_hls_type(media.type)
    return kind_from_extension(media.secure_url or media.url) == "video"


class GenericResolver(Resolver):
    """Any http(s) URL: a direct media file, or a page with OpenGraph/JSON-LD media."""

    name = "generic"
    platform = "generic"
    url_patterns = (re.compile(r"https?://", re.IGNORECASE),)

    def __init__(self, config: PlatformSettings | None = None) -> None:
        # og:image beside a video is its cover, a thumbnail asset unless platforms.generic says not.
        self.thumbnails = config.thumbnails if config is not None else True

    def resolve(self, url: str, ctx: ResolveContext) -> Resolved:
        url = validate_url(url)
        # A URL that looks like a media file is probed for one byte, so resolving it does not
        # start a transfer that the download would repeat; a page is fetched whole.
        probe = {"Range": "bytes=0-0", "Accept-Encoding": "identity"} if kind_from_extension(url) else None
        try:
            with ctx.client.stream("GET", url, headers=probe) as resp:
                if resp.status_code == 416:  # an empty file answers a one-byte probe with 416
                    raise UnsupportedUrl(f"{url}: empty file")
                content_type = resp.headers.get("content-type", "").split(";", 1)[0].strip().lower()
                final_url = str(resp.url)
                if resp.status_code >= 400:
                    body = read_limited(resp, 4096, url)
                    raise classify_response(resp.status_code, resp.headers, body, url=url,
                                            answers=self.answers) or UnsupportedUrl(url)
                kind = kind_from_content_type(content_type)
                if kind is None and content_type in ("", "application/octet-stream", "binary/octet-stream"):
                    kind = kind_from_extension(final_url)
                if kind is not None:
                    _drain_probe(resp)
                    return self._direct(final_url, kind, content_type, resp.headers)
                if is_hls_type(content_type) or (is_hls_url(final_url) and "html" not in content_type):
                    return self._hls(final_url, read_limited(resp, ctx.max_page_bytes, url).decode("utf-8", "replace"),
                                     ctx)
                if content_type not in ("text/html", "application/xhtml+xml"):
                    raise UnsupportedUrl(f"{url}: no media here (Content-Type {content_type or 'missing'})")
                page = Page(final_url, resp.status_code, resp.headers, read_limited(resp, ctx.max_page_bytes, url))
        except httpx.HTTPError as exc:
            raise classify_exception(exc) from None
        return self._recording_if_live(self.from_page(page), ctx)

    def _recording_if_live(self, item: Resolved, ctx: ResolveContext) -> Resolved:
        """A page whose video is an HLS playlist that is live: a recording of it, keyed and titled
        by when it began as a live playlist's own URL is (one request more, for the playlist)."""
        video = next((a for a in item.assets if a.protocol == "hls"), None)
        if video is None:
            return item
        try:
            with ctx.client.stream("GET", video.urls[0], headers={"Accept-Encoding": "identity"}) as resp:
                if resp.status_code >= 400:
                    return item  # the download meets the same answer and says what it is
                playlist = parse_playlist(read_limited(resp, ctx.max_page_bytes, video.urls[0]).decode(
                    "utf-8", "replace"), str(resp.url))
            live = self._live(playlist, ctx)
        except (httpx.HTTPError, TrawlError):
            return item
        if not live:
            return item
        began = datetime.now(UTC)
        recording = dataclasses.replace(video, protocol=LIVE_PROTOCOL)
        return dataclasses.replace(
            item, canonical_key=f"{item.canonical_key}-live-{began:%Y%m%dT%H%M%SZ}",
            title=f"{item.title or 'live'} (live {began:%Y-%m-%d %H:%M} UTC)",
            published_at=item.published_at or began.isoformat(timespec="seconds"),
            metadata={**item.metadata, "live_status": "is_live"},
            assets=[recording if a is video else a for a in item.assets])

    def _direct(self, final_url: str, kind: str, content_type: str, headers: httpx.Headers) -> Resolved:
        canonical_url = canonicalize(final_url)
        content_range = parse_content_range(headers.get("content-range"))
        if content_range is not None:
            size = content_range.total
        else:
            size = int_or_none(headers.get("content-length")) if not headers.get("content-encoding") else None
        name = posixpath.basename(urlsplit(final_url).path) or None
        return Resolved(
            canonical_key=web_key(canonical_url),
            canonical_url=canonical_url,
            platform=self.platform,
            title=name,
            assets=[Asset(name=kind, kind=kind, urls=[final_url], expected_size=size, mime=content_type or None)],
        )

    def _hls(self, final_url: str, text: str, ctx: ResolveContext) -> Resolved:
        """A direct HLS playlist: one video asset whose segments are the file (a master's variant
        is chosen by the download).

        A live one (no ``EXT-X-ENDLIST``; for a master, in the variant the crawl's quality picks)
        is a recording (:data:`~trawl.models.LIVE_PROTOCOL`): its key and title name when it
        began, so each broadcast at the address is an item of its own (docs/live.md)."""
        playlist = parse_playlist(text, final_url)
        canonical_url = canonicalize(final_url)
        name = posixpath.basename(urlsplit(final_url).path) or None
        if not self._live(playlist, ctx):
            return Resolved(canonical_key=web_key(canonical_url), canonical_url=canonical_url,
                            platform=self.platform, title=name, assets=[_hls_asset([final_url])])
        began = datetime.now(UTC)
        return Resolved(canonical_key=f"{web_key(canonical_url)}-live-{began:%Y%m%dT%H%M%SZ}",
                        canonical_url=canonical_url, platform=self.platform,
                        title=f"{name or 'live'} (live {began:%Y-%m-%d %H:%M} UTC)",
                        published_at=began.isoformat(timespec="seconds"),
                        metadata={"live_status": "is_live"},
                        assets=[Asset(name="video", kind="video", urls=[final_url], protocol=LIVE_PROTOCOL)])

    @staticmethod
    def _live(playlist: MasterPlaylist | MediaPlaylist, ctx: ResolveContext) -> bool:
        """Whether the stream is live: the media playlist's word, or for a master that of the
        variant the download would take (one more request)."""
        if isinstance(playlist, MediaPlaylist):
            if not playlist.endlist and playlist.target_duration is None:  # RFC 8216 requires it
                raise UnsupportedUrl(f"{playlist.url}: an HLS playlist with neither #EXT-X-ENDLIST nor "
                                     "#EXT-X-TARGETDURATION: not a stream to download or to record")
            return not playlist.endlist
        variant = choose_variant(playlist.variants, ctx.quality or DEFAULT_HLS_QUALITY)
        try:
            with ctx.client.stream("GET", variant.url) as resp:
                if resp.status_code >= 400:
                    return False  # the download meets the same answer and says what it is
                text = read_limited(resp, ctx.max_page_bytes, variant.url).decode("utf-8", "replace")
        except httpx.HTTPError:
            return False
        try:
            media = parse_playlist(text, str(resp.url))
        except TrawlError:
            return False
        return isinstance(media, MediaPlaylist) and not media.endlist

    def from_page(self, page: Page) -> Resolved:
        """Build the item from a fetched HTML page."""
        meta = parse_page_meta(page.text())
        base = page.url
        assets: list[Asset] = []
        for media in meta.videos:
            if _is_video(media):
                urls = [u for u in (_absolute(base, media.secure_url), _absolute(base, media.url)) if u]
                if urls:
                    assets.append(Asset(name="video", kind="video", urls=list(dict.fromkeys(urls)), mime=media.type))
                    break
        # An og:video that is an HLS playlist, when the page offers no progressive file.
        for media in meta.videos if not assets else []:
            urls = [u for u in (_absolute(base, media.secure_url), _absolute(base, media.url)) if u]
            if urls and (is_hls_type(media.type) or is_hls_url(urls[0])):
                assets.append(_hls_asset(list(dict.fromkeys(urls))))
                break
        if not assets:
            stream = _absolute(base, meta.og.get("twitter:player:stream"))
            ld = next((u for u in (_absolute(base, c) for c in meta.json_ld_content_urls) if u), None)
            for candidate in (stream, ld):
                if candidate:
                    assets.append(_hls_asset([candidate]) if is_hls_url(candidate) else
                                  Asset(name="video", kind=kind_from_extension(candidate) or "video", urls=[candidate]))
                    break
        if meta.images:
            image = meta.images[0]
            urls = [u for u in (_absolute(base, image.secure_url), _absolute(base, image.url)) if u]
            if urls and (self.thumbnails or not assets):
                kind = "thumbnail" if assets else "image"
                assets.append(Asset(name=kind, kind=kind, urls=list(dict.fromkeys(urls)), mime=image.type))
        if not assets:
            raise UnsupportedUrl(f"{page.url}: no video, audio or image found on the page")
        canonical_url = self._canonical_url(page.url, meta)
        duration = float_or_none(meta.og.get("og:video:duration") or meta.og.get("video:duration"))
        return Resolved(
            canonical_key=web_key(canonical_url),
            canonical_url=canonical_url,
            platform=self.platform,
            title=meta.og.get("og:title") or meta.title,
            uploader=meta.og.get("og:site_name"),
            duration=duration,
            # The page's own words, kept for the info JSON (yt-dlp's "description") and the item's page.
            metadata={"description": description} if (description := self._description(meta)) else {},
            assets=assets,
        )

    @staticmethod
    def _description(meta: PageMeta) -> str | None:
        text = meta.og.get("og:description") or meta.og.get("description") or meta.og.get("twitter:description")
        return " ".join(text.split()) or None if text else None

    @staticmethod
    def _canonical_url(page_url: str, meta: PageMeta) -> str:
        # A page may only name a canonical URL on its own host: otherwise any page could claim
        # to be another site's item and shadow it in the catalog.
        page_host = urlsplit(page_url).hostname
        for candidate in (meta.canonical, meta.og.get("og:url")):
            absolute = _absolute(page_url, candidate)
            if absolute and urlsplit(absolute).hostname == page_host:
                try:
                    return canonicalize(absolute)
                except UnsupportedUrl:  # e.g. credentials in the link: use the page's own URL
                    continue
        return canonicalize(page_url)


def _demo(sim: Simulator) -> PlatformDemo:
    from trawl.simulator.demo import install_demo_site  # the demo's process only

    return PlatformDemo(settings=None, cases=install_demo_site(sim), failures="a 404")


# Every site no other platform claims, so last in the registry; its settings are
# [platforms.generic], whose shared rate is higher because it covers every other site at once.
# An RSS or Atom feed, told by its address alone (yt-dlp tells feeds by their content; trawl must
# decide offline whether a URL is one item or a listing): a path ending in .rss, .atom or .xml, or
# in /rss, /rss2, /atom, /feed or /feeds (optionally .xml, .php, .asp, .aspx), /podcast/rss. A feed
# at any other address is a named source of kind feed. The shapes it reads: trawl.feeds.
FEED_URL = re.compile(r"(?i)https?://[^?#]+?(?:\.(?:rss|atom|xml)|/(?:rss2?|atom|feeds?)(?:\.(?:xml|php|aspx?))?"
                      r"|/podcast/rss)/?(?:[?#]|$)")


def _feed_forms(config: PlatformSettings) -> list[ListingForm]:
    return [ListingForm("feed", FEED_URL, listing_id=lambda match: match.string)]


PLATFORM = Platform(
    name="generic",
    title="generic pages and files",
    settings=PlatformSettings,
    defaults={"requests_per_second": 20},
    resolvers=lambda config: [GenericResolver(config)],
    listing_forms=_feed_forms,
    demo=_demo,
)


# A probe's answer is one byte (a media URL's GET without a Range: the file, when it is this
# short); one this short is read to its end so that its connection goes
# back to the pool for the download that follows, instead of closing with its body unread (a new
# TCP connection, and a TLS handshake on HTTPS, for every item). Its bytes are read raw, neither
# decoded (a small compressed answer could expand to gigabytes) nor kept, and no more once
# PROBE_DRAIN_S have passed between its pieces (a server that stalls mid-body holds it for the
# read timeout, as any read); a server that ignored the Range and sends the whole file is not read: that
# connection closes.
PROBE_DRAIN_BYTES = 64 * 1024
PROBE_DRAIN_S = 1.0


def _drain_probe(resp: httpx.Response) -> None:
    length = resp.headers.get("content-length", "")
    if not (length.isdigit() and int(length) <= PROBE_DRAIN_BYTES):
        return
    deadline = time.monotonic() + PROBE_DRAIN_S
    try:
        for _ in resp.iter_raw():
            if time.monotonic() > deadline:
                return  # the rest unread: the connection closes with the response
    except httpx.HTTPError:
        pass  # the headers said what the probe needed; the connection closes
