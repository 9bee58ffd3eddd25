"""Facebook videos and reels, read from the JSON the video page embeds.

URL forms: ``/<page>/videos/[<slug>/]<id>``, ``/watch/?v=<id>``, ``/watch/live/?v=<id>``,
``/video.php?v=<id>``, ``/photo.php?v=<id>`` (the old viewer; with ``fbid=`` it is a photo, see
:mod:`.photo`), ``/video/embed?video_id=<id>``, ``/reel/<id>`` on ``www.``, ``m.``, ``web.``
and locale (``de-de.``) hosts; short links ``/share/v/<code>/``, ``/share/r/<code>/`` and
``https://fb.watch/<code>/`` are followed; the embed player ``/plugins/video.php?href=<URL>``
stands for the URL in its ``href``.

Posts hold videos too: ``/<page>/posts/<id or pfbid...>``, ``/groups/<group>/posts/<id>`` and
``/groups/<group>/permalink/<id>``, ``/permalink.php?story_fbid=...&id=...`` (and ``story.php``),
``/events/<id>`` (its cover video). A post's page is fetched and the videos attached to its story
(``attachments[]...media``, ``all_subattachments.nodes[].media``, an event's ``cover_video``; the
places public downloaders read) are its videos: the first is the item (``facebook:<video id>``,
the same item as the video's own URL), the others are named in ``Resolved.more`` and crawled as
their own items. Videos elsewhere on the page (suggestions) are not the post's.

The page carries ``<script type="application/json" data-sjs>`` blocks; somewhere inside them a
video node (``videoId`` or ``id`` equal to the wanted id) holds progressive MP4 URLs. Only
progressive URLs are used: DASH manifests (``dash_manifest``, ``manifest_xml``) split video and
audio into separate files, and every video that has one also has progressive URLs.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from trawl.errors import ParseError, UnsupportedUrl
from trawl.models import Asset, MoreItem, Resolved, compact, upload_date
from trawl.platforms.base import (
    Page,
    ResolveContext,
    Resolver,
    base_pattern,
    dig,
    float_or_none,
    str_or_none,
    unsupported,
)
from trawl.platforms.facebook.captions import Caption, caption_summary, find_captions, page_locale
from trawl.platforms.facebook.config import FacebookSettings
from trawl.platforms.facebook.errors import classify_page
from trawl.platforms.facebook.hosts import HOSTS, page_headers
from trawl.platforms.facebook.photo import FacebookPhotoResolver
from trawl.platforms.generic import parse_page_meta
from trawl.urls import validate_url

_END = r"/?(?:[?#].*)?$"
_STORY = r"(?:pfbid[A-Za-z0-9]+|\d+)"  # a post id: numeric, or the newer opaque pfbid form
# Where a post's own videos sit in its JSON; anything outside these keys (suggestions) is not its.
_ATTACHMENT_KEYS = frozenset({"attachments", "all_subattachments", "cover_video"})
_SCRIPT_OPEN = re.compile(r"<script\b", re.IGNORECASE)
_SCRIPT_CLOSE = re.compile(r"</script", re.IGNORECASE)
HD_FIELDS = ("playable_url_quality_hd", "browser_native_hd_url")
SD_FIELDS = ("playable_url", "browser_native_sd_url")


def canonical_url(video_id: str) -> str:
    """The one URL form every Facebook video has, whatever URL it was found under."""
    return f"https://www.facebook.com/watch/?v={video_id}"


@dataclass
class VideoInfo:
    """What the page's JSON says about one video; every field may be missing."""

    hd: list[str] = field(default_factory=list)
    sd: list[str] = field(default_factory=list)
    title: str | None = None
    uploader: str | None = None
    duration: float | None = None
    uploader_id: str | None = None
    timestamp: int | None = None
    description: str | None = None
    thumbnail: str | None = None
    captions: list[Caption] = field(default_factory=list)

    @property
    def urls(self) -> list[str]:
        """HD URLs first, then SD ones, each once."""
        return list(dict.fromkeys(self.hd + self.sd))


class FacebookResolver(Resolver):
    """``facebook:video``: one progressive MP4 per video, HD first and SD as its backup."""

    name = "facebook:video"
    platform = "facebook"

    def __init__(self, config: FacebookSettings) -> None:
        self.config = config
        site = base_pattern(HOSTS, config.page_base)
        short = base_pattern(r"fb\.watch", config.short_base)
        self.video_patterns = (
            re.compile(rf"{site}/[^/?#]+/videos/(?:[^/?#]+/)?(?P<id>\d+){_END}", re.IGNORECASE),
            re.compile(rf"{site}/(?:watch(?:/live)?/?|(?:video/)?video\.php)\?(?:[^#]*&)?v=(?P<id>\d+)(?:[&#].*)?$",
                       re.IGNORECASE),
            # The old photo viewer named videos too (yt-dlp takes photo.php?v=); with fbid= it is a photo.
            re.compile(rf"{site}/photo\.php\?(?![^#]*\bfbid=)(?:[^#]*&)?v=(?P<id>\d+)(?:[&#].*)?$", re.IGNORECASE),
            re.compile(rf"{site}/video/embed/?\?(?:[^#]*&)?video_id=(?P<id>\d+)(?:[&#].*)?$", re.IGNORECASE),
            re.compile(rf"{site}/reel/(?P<id>\d+){_END}", re.IGNORECASE),
        )
        self.short_patterns = (
            re.compile(rf"{site}/share/[vr]/(?P<code>[\w-]+){_END}", re.IGNORECASE),
            re.compile(rf"{short}/(?P<code>[\w-]+){_END}", re.IGNORECASE),
        )
        self.post_patterns = (
            re.compile(rf"{site}/(?!groups/|events/|watch/|reel/|share/|plugins/)[^/?#]+/posts/(?P<id>{_STORY}){_END}",
                       re.IGNORECASE),
            re.compile(rf"{site}/groups/[^/?#]+/(?:permalink|posts)/(?:[\da-f]+/)?(?P<id>{_STORY}){_END}", re.IGNORECASE),
            re.compile(rf"{site}/(?:permalink|story)\.php\?(?:[^#]*&)?story_fbid=(?P<id>{_STORY})(?:[&#].*)?$",
                       re.IGNORECASE),
            re.compile(rf"{site}/events/(?:[^/?#]+/)?(?P<id>\d+){_END}", re.IGNORECASE),
        )
        self.plugin_pattern = re.compile(rf"{site}/plugins/video\.php\?(?:[^#]*&)?href=(?P<href>[^&#]+)", re.IGNORECASE)
        self.url_patterns = self.video_patterns + self.short_patterns + self.post_patterns + (self.plugin_pattern,)

    # -- URLs --------------------------------------------------------------------------------
    def video_id(self, url: str) -> str | None:
        """The numeric video id a long URL names; None for short links, posts and other URLs."""
        url = self.embedded(url) or url
        for pattern in self.video_patterns:
            found = pattern.match(url)
            if found:
                return found.group("id")
        return None

    def embedded(self, url: str) -> str | None:
        """The Facebook URL an embed player URL (``plugins/video.php?href=``) stands for."""
        found = self.plugin_pattern.match(url)
        if found is None:
            return None
        inner = unquote(found.group("href")).strip()
        # Only a Facebook video or post: the embed must not make trawl fetch any URL it is given.
        if self.plugin_pattern.match(inner) or not any(
                p.match(inner) for p in self.video_patterns + self.post_patterns):
            return None
        return inner

    def is_post(self, url: str) -> bool:
        """A post (or event) URL: its page names its videos."""
        url = self.embedded(url) or url
        return any(p.match(url) for p in self.post_patterns)

    def claims(self, url: str) -> bool:
        if self.plugin_pattern.match(url):
            return self.embedded(url) is not None
        return super().claims(url)

    def more_offline(self, url: str, metadata: dict[str, Any]) -> list[str] | None:
        """A post's other videos are known only from its page (None: ask); a video URL is one item."""
        return None if self.is_post(url) else []

    def offline_key(self, url: str) -> str | None:
        video_id = self.video_id(url)
        return f"facebook:{video_id}" if video_id else None

    def _headers(self) -> dict[str, str]:
        return page_headers(self.config)

    # -- resolving ---------------------------------------------------------------------------
    def resolve(self, url: str, ctx: ResolveContext) -> Resolved:
        url = validate_url(url)
        video_id = self.video_id(url)
        if self.is_post(url):
            return self.from_post(url, ctx)
        if video_id is not None:
            page_url = f"{self.config.page_base.rstrip('/')}/watch/?v={video_id}"
            return self.from_page(self.fetch_page(page_url, ctx, self._headers(), item_url=url), video_id, url)
        if not self.claims(url) or self.plugin_pattern.match(url):
            raise unsupported(url, "not a Facebook video URL")
        # A short link: the client follows the redirect and the page it lands on is the video's.
        page = self.fetch_page(url, ctx, self._headers(), item_url=url)
        video_id = self.video_id(page.url)
        if video_id is None:
            stated = classify_page(page.text(), f" for {url} (short link to {page.url})")
            if stated is not None:
                raise stated
            raise UnsupportedUrl(f"{url}: short link leads to {page.url}, not a Facebook video")
        return self.from_page(page, video_id, url)

    def from_post(self, url: str, ctx: ResolveContext) -> Resolved:
        """The videos of a post: the first as the item, the others in ``more``.

        The page is asked for on the configured site (``m.`` and locale hosts serve the same
        post), path and query as given.

        Raises:
            TrawlError: the error the page states (a login wall...).
            UnsupportedUrl: the post holds no video.
        """
        target = self.embedded(url) or url
        parts = urlsplit(target)
        page_url = f"{self.config.page_base.rstrip('/')}{parts.path}" + (f"?{parts.query}" if parts.query else "")
        page = self.fetch_page(page_url, ctx, self._headers(), item_url=url)
        ids = post_video_ids(json_blocks(page.text()), page.url)
        if not ids:
            stated = classify_page(page.text(), f" for {url}")
            if stated is not None:
                raise stated
            raise UnsupportedUrl(f"{url}: this Facebook post holds no video")
        item = self.from_page(page, ids[0], url)
        base = self.config.page_base.rstrip("/")
        item.more = [MoreItem(f"{base}/watch/?v={other}") for other in ids[1:]]
        if len(ids) > 1:
            item.metadata.update(playlist_id=parts.path.rstrip("/").rsplit("/", 1)[-1] or None, playlist_count=len(ids))
        return item

    def captions(self, page: Page, video_id: str) -> list[Caption]:
        """The captions tracks a fetched video page names for ``video_id``."""
        return find_video(json_blocks(page.text()), video_id, page.url).captions

    def from_page(self, page: Page, video_id: str, url: str = "") -> Resolved:
        """Build the item for ``video_id`` from its fetched video page (``url``: the user's URL).

        The page's JSON comes first, then OpenGraph. What the page says instead (a login wall,
        "content isn't available", a temporary block; see
        :func:`trawl.platforms.facebook.errors.classify_page`) counts only when neither has the video:
        pages for anonymous visitors carry a login form in their header even when the video
        plays.

        Raises:
            TrawlError: the error the page states, quoting it and naming the user's URL.
            ParseError: the page states nothing, and neither the JSON nor OpenGraph has a video URL.
        """
        text = page.text()
        info = find_video(json_blocks(text), video_id, page.url)
        meta = parse_page_meta(text)
        urls = info.urls
        if not urls:
            # An og:video typed as something else (a Flash or HTML player) is not the file.
            playable = [v for v in meta.videos if not v.type or v.type.startswith("video/")]
            og = [_absolute(page.url, u) for v in playable for u in (v.secure_url, v.url)]
            urls = list(dict.fromkeys(u for u in og if u))
        if not urls:
            stated = classify_page(text, _where(url or page.url, page.url, video_id))
            if stated is not None:
                raise stated
            raise ParseError(f"facebook: {page.url}: no video URL for {video_id} in the page JSON "
                             f"({', '.join(HD_FIELDS + SD_FIELDS)}, progressive_urls) nor in og:video")
        headers = {"User-Agent": self.config.user_agent}
        assets = [Asset(name="video", kind="video", urls=urls, mime="video/mp4", headers=headers)]
        cover = info.thumbnail or next((u for u in (_absolute(page.url, i.secure_url or i.url) for i in meta.images)
                                        if u), None)
        if cover and self.config.thumbnails:
            assets.append(Asset(name="thumbnail", kind="thumbnail", urls=[cover], headers=dict(headers)))
        title = info.title or meta.og.get("og:title")
        # The captions' URLs expire: the subtitles extra (.captions) reads the page again for them.
        captions = caption_summary(info.captions) or None
        return Resolved(
            canonical_key=f"facebook:{video_id}",
            canonical_url=canonical_url(video_id),
            platform=self.platform,
            title=title,
            uploader=info.uploader,
            duration=info.duration,
            assets=assets,
            metadata=compact({
                "id": video_id, "title": title, "description": info.description or meta.og.get("og:description"),
                "uploader": info.uploader, "uploader_id": info.uploader_id, "timestamp": info.timestamp,
                "upload_date": upload_date(info.timestamp), "duration": info.duration, "thumbnail": cover,
                "webpage_url": canonical_url(video_id), "captions": captions,
            }),
        )


def json_blocks(text: str) -> list[Any]:
    """The parsed ``<script type="application/json" data-sjs>`` blocks; broken ones are skipped."""
    # A forward scan rather than one regex: a lazy ``<script>(.*?)</script>`` turns quadratic on
    # a page full of unclosed script tags.
    blocks: list[Any] = []
    pos = 0
    while (start := _SCRIPT_OPEN.search(text, pos)) is not None:
        tag_end = text.find(">", start.end())
        close = _SCRIPT_CLOSE.search(text, tag_end) if tag_end >= 0 else None
        if close is None:
            break
        pos = close.end()
        attrs = text[start.end():tag_end].lower()
        if "data-sjs" not in attrs or not re.search(r"""type\s*=\s*["']?application/json""", attrs):
            continue
        try:
            blocks.append(json.loads(text[tag_end + 1:close.start()]))
        except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
            continue
    return blocks


def find_video(blocks: list[Any], video_id: str, base_url: str) -> VideoInfo:
    """Merge what every node about ``video_id`` says (URLs, title, owner and length may be split).

    Nodes about other videos (suggestions, the next reel) are ignored even when they carry URLs:
    downloading a neighbour under this id would be worse than failing.
    """
    info = VideoInfo()
    locale: list[str | None] = []  # the page's, read once, only when a node names captions
    stack: list[Any] = list(reversed(blocks))
    while stack:  # iterative: the nesting depth of the page's JSON is not ours to choose
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(reversed(node))
            continue
        if not isinstance(node, dict):
            continue
        stack.extend(reversed([v for v in node.values() if isinstance(v, (dict, list))]))
        if video_id not in (_id_str(node.get("videoId")), _id_str(node.get("id"))):
            continue
        hd, sd = _node_urls(node, base_url)
        info.hd += hd
        info.sd += sd
        info.title = info.title or str_or_none(node.get("name")) or _title(node.get("title"))
        info.uploader = info.uploader or str_or_none(dig(node, "owner", "name"))
        if info.duration is None:
            info.duration = _duration(node)
        info.uploader_id = info.uploader_id or _id_str(dig(node, "owner", "id"))
        info.timestamp = info.timestamp or _timestamp(node.get("publish_time") or node.get("creation_time"))
        info.description = info.description or str_or_none(dig(node, "savable_description", "text"))
        info.thumbnail = info.thumbnail or _absolute(base_url, dig(node, "preferred_thumbnail", "image", "uri")) \
            or _absolute(base_url, dig(node, "thumbnailImage", "uri"))
        if not info.captions and ("captions_url" in node or "video_available_captions_locales" in node):
            locale = locale or [page_locale(blocks)]
            info.captions = find_captions(node, locale[0], lambda url: _absolute(base_url, url))
    return info


def post_video_ids(blocks: list[Any], base_url: str) -> list[str]:
    """The ids of the videos a post's story holds, in page order, each once.

    Only ``Video`` nodes inside an attachment (see :data:`_ATTACHMENT_KEYS`) count, and only
    those whose page JSON carries a playable URL somewhere.
    """
    found: list[str] = []
    stack: list[tuple[Any, bool]] = [(block, False) for block in reversed(blocks)]
    while stack:
        node, attached = stack.pop()
        if isinstance(node, list):
            stack.extend((child, attached) for child in reversed(node))
            continue
        if not isinstance(node, dict):
            continue
        stack.extend((value, attached or key in _ATTACHMENT_KEYS) for key, value in reversed(node.items())
                     if isinstance(value, (dict, list)))
        video_id = _id_str(node.get("videoId")) or _id_str(node.get("id"))
        if attached and node.get("__typename") == "Video" and video_id and video_id.isdigit() \
                and video_id not in found:
            found.append(video_id)
    return [v for v in found if find_video(blocks, v, base_url).urls]


def _timestamp(value: Any) -> int | None:
    number = float_or_none(value)
    return int(number) if number is not None and 0 < number < 253402300800 else None


def _node_urls(node: dict[str, Any], base_url: str) -> tuple[list[str], list[str]]:
    hd = [u for u in (_absolute(base_url, node.get(f)) for f in HD_FIELDS) if u]
    sd = [u for u in (_absolute(base_url, node.get(f)) for f in SD_FIELDS) if u]
    progressive = node.get("progressive_urls")
    for entry in progressive if isinstance(progressive, list) else []:
        if not isinstance(entry, dict):
            continue
        url = _absolute(base_url, entry.get("progressive_url"))
        quality = str_or_none(dig(entry, "metadata", "quality"))
        if url:
            (hd if quality and quality.upper() == "HD" else sd).append(url)
    return hd, sd


def _duration(node: dict[str, Any]) -> float | None:
    ms = float_or_none(node.get("playable_duration_in_ms"))
    if ms is not None and math.isfinite(ms) and ms > 0:
        return ms / 1000
    seconds = float_or_none(node.get("length_in_second"))  # older pages: whole seconds
    return seconds if seconds is not None and math.isfinite(seconds) and seconds > 0 else None


def _id_str(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return str_or_none(value)


def _title(value: Any) -> str | None:
    return str_or_none(dig(value, "text")) if isinstance(value, dict) else str_or_none(value)


def _absolute(base: str, value: Any) -> str | None:
    url = str_or_none(value)
    if url is None:
        return None
    try:
        return validate_url(urljoin(base, url))
    except (UnsupportedUrl, ValueError):
        return None


def _where(url: str, page_url: str, video_id: str) -> str:
    """What an error is about: the user's URL, the video and, when it differs, the page read."""
    page = f", page {page_url}" if page_url != url else ""
    return f" for {url} (video {video_id}{page})"


def resolvers(config: FacebookSettings) -> list[Resolver]:
    """The Facebook resolvers built from the platform's settings: videos (and posts), then photos.

    The video resolver comes first: the registry hands the first resolver of a platform to its
    listings (:mod:`.listings`).
    """
    return [FacebookResolver(config), FacebookPhotoResolver(config)]
