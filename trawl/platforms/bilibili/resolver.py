"""Bilibili videos: ``/video/BV...``, ``/video/av...``, ``?p=N`` parts, ``m.`` pages, b23.tv links
(a link that leads to a live room is resolved by :mod:`.rooms`),
festival pages (``/festival/<name>?bvid=BV...``), the player embed
(``player.bilibili.com/player.html?aid=...&cid=...&page=N``, or ``bvid=``) and a list player
pinned to one of its videos (``/list/<id>?...&bvid=BV...``, ``/medialist/play/<id>?...&bvid=``).

A bare URL of a multi-part video is part 1 (key ``bilibili:<BV>``, as before parts were crawled)
and names parts 2..N (``?p=N``, key ``bilibili:<BV>_p<N>``) in ``Resolved.more``, so whoever
started it crawls every part as its own item; a URL naming a part (``?p=N``, ``?p=1``, the
player's ``page=``) is that part alone. Each part's streams come from its own ``cid``
(``pages[]`` of the view answer). A video in a collection (the view answer's ``ugc_season``) is
that video alone: the collection is a listing of its own (:mod:`.listings`).

Metadata comes from ``x/web-interface/view``; streams from ``x/player/wbi/playurl``, signed
with WBI keys from ``x/web-interface/nav``. A ``durl`` answer gives one asset per segment; a
``dash`` answer gives a video and an audio asset, merged at commit when ffmpeg exists. The video
stream is the quality asked (:func:`_pick_video`); the audio is chosen among ``dash.audio``,
``dash.dolby.audio`` and ``dash.flac.audio`` (:func:`_pick_audio`).

Any non-zero ``code`` in an answer is an error carrying the code, Bilibili's message and the
URL given (:mod:`trawl.platforms.bilibili.errors`, which says where the code table comes from).
"""

from __future__ import annotations

import hashlib
import re
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from trawl.errors import NotFound, ParseError, UnsupportedUrl
from trawl.models import Asset, MoreItem, Resolved, compact, count_or_none, upload_date
from trawl.platforms.base import (
    ResolveContext,
    Resolver,
    base_pattern,
    dig,
    float_or_none,
    get_json,
    int_or_none,
    load_cookies,
    require,
    str_or_none,
)
from trawl.platforms.bilibili.config import BilibiliSettings
from trawl.platforms.bilibili.errors import ANSWERS
from trawl.platforms.bilibili.audio import BilibiliAudioResolver
from trawl.platforms.bilibili.opus import BilibiliOpusResolver
from trawl.platforms.bilibili.pgc import BilibiliEpisodeResolver
from trawl.platforms.bilibili.rooms import BilibiliLiveResolver
from trawl.platforms.bilibili.visitor import VisitorSession, api_json

# av <-> BV: a fixed, documented permutation (XOR, base58, two swapped position pairs).
_ALPHABET = "FcwAPNKTMug3GV5Lj7EJnHpWsx4tb8haYeviqBz6rkCy12mUSDQX9RdoZf"
_XOR = 23442827791579
_MASK = (1 << 51) - 1
_MAX_AID = 1 << 51
BVID = r"BV1[1-9A-HJ-NP-Za-km-z]{9}"

# WBI: the characters of img_key + sub_key, reordered by this table, first 32 kept.
MIXIN_KEY_TABLE = (
    46, 47, 18, 2, 53, 8, 23, 32, 15, 50, 10, 31, 58, 3, 45, 35, 27, 43, 5, 49, 33, 9, 42, 19, 29, 28, 14, 39,
    12, 38, 41, 13, 37, 48, 7, 16, 24, 55, 40, 61, 26, 17, 0, 1, 60, 51, 30, 4, 22, 25, 54, 21, 56, 59, 6, 63,
    57, 62, 11, 36, 20, 34, 44, 52,
)
# fnval bits: 16 DASH, 64 HDR, 128 4K, 256 Dolby audio, 512 Dolby Vision, 1024 8K, 2048 AV1 -> ask
# for everything DASH (4048, as yt-dlp does); what is kept is chosen from the answer.
FNVAL_DASH = 16 | 64 | 128 | 256 | 512 | 1024 | 2048
# Why a 试看 answer fails the item: the preview stored as the video would make the video a duplicate.
PREVIEW_REASON = ("supporter-only video (充电专属): the play URL gives a preview (试看) only; give the "
                  "cookies of an account with access in platforms.bilibili.cookies_file")
# Bilibili's qn for the tallest height wanted: (at least this many lines, qn).
QN_BY_HEIGHT = ((4320, 127), (2160, 120), (1080, 80), (720, 64), (480, 32), (0, 16))


def qn_for_height(height: int) -> int:
    """Bilibili's ``qn`` for "at most ``height`` lines" (yt-dlp's ``-f "bv*[height<=720]"``)."""
    return next(qn for floor, qn in QN_BY_HEIGHT if height >= floor)


# Codec preference among streams of one quality: AVC plays everywhere, then HEVC, then AV1.
CODEC_RANK = {7: 0, 12: 1, 13: 2}
# Qualities only one codec family plays: Dolby Vision (its streams need a Dolby Vision decoder).
# A quality offered in HEVC alone (HDR 125 in the captured support_formats) counts too.
DOLBY_VISION = 126
HEVC = 12
# DASH audio ids (bilibili-API-collect docs/video/videostream_url.md): Dolby Atmos, Hi-Res lossless.
AUDIO_DOLBY, AUDIO_LOSSLESS = 30250, 30251


def av_to_bv(aid: int) -> str:
    chars = list("BV1000000000")
    value = (_MAX_AID | aid) ^ _XOR
    pos = len(chars) - 1
    while value > 0:
        chars[pos] = _ALPHABET[value % 58]
        value //= 58
        pos -= 1
    chars[3], chars[9] = chars[9], chars[3]
    chars[4], chars[7] = chars[7], chars[4]
    return "".join(chars)


def bv_to_av(bvid: str) -> int:
    chars = list(bvid)
    chars[3], chars[9] = chars[9], chars[3]
    chars[4], chars[7] = chars[7], chars[4]
    value = 0
    for char in chars[3:]:
        value = value * 58 + _ALPHABET.index(char)
    return (value & _MASK) ^ _XOR


def mixin_key(img_key: str, sub_key: str) -> str:
    combined = img_key + sub_key
    return "".join(combined[i] for i in MIXIN_KEY_TABLE if i < len(combined))[:32]


def wbi_sign(params: dict[str, Any], img_key: str, sub_key: str, now: int | None = None) -> dict[str, str]:
    """Add ``wts`` and ``w_rid`` to ``params`` (sorted, ``!'()*`` removed, md5 with the mixin key)."""
    signed = {**params, "wts": int(time.time()) if now is None else now}
    cleaned = {k: "".join(c for c in str(v) if c not in "!'()*") for k, v in sorted(signed.items())}
    query = urllib.parse.urlencode(cleaned)
    cleaned["w_rid"] = hashlib.md5((query + mixin_key(img_key, sub_key)).encode(), usedforsecurity=False).hexdigest()
    return cleaned


def _key_from_url(url: Any) -> str | None:
    if not isinstance(url, str) or not url:
        return None
    return url.rsplit("/", 1)[-1].split(".", 1)[0] or None


@dataclass(frozen=True)
class VideoRef:
    bvid: str
    page: int  # 1-based part number
    explicit: bool = False  # the URL names the part (?p=N, the player's page=): no other parts

    @property
    def key(self) -> str:
        return f"bilibili:{self.bvid}" + (f"_p{self.page}" if self.page > 1 else "")


class BilibiliResolver(Resolver):
    name = "bilibili:video"
    platform = "bilibili"
    answers = ANSWERS

    def __init__(self, config: BilibiliSettings, rooms: BilibiliLiveResolver | None = None) -> None:
        self.config = config
        self.rooms = rooms  # where a short link that leads to a live room goes
        video = base_pattern(r"(?:www\.|m\.)?bilibili\.com", config.page_base, config.mobile_base)
        short = base_pattern(r"b23\.tv", config.short_base)
        player = base_pattern(r"player\.bilibili\.com")
        self.url_patterns = (
            re.compile(rf"{video}/video/(?P<id>[Bb][Vv]{BVID[2:]}|[Aa][Vv]\d+)/?(?:[?#].*)?$"),
            re.compile(rf"{short}/(?P<code>[A-Za-z0-9]+)/?(?:[?#].*)?$"),
            re.compile(rf"{video}/festival/[^/?#]+/?\?(?:[^#]*&)?bvid=(?P<id>{BVID})(?:[&#].*)?$"),
            re.compile(rf"{player}/player\.html\?(?:[^#]*&)?(?:aid=(?P<aid>\d+)|bvid=(?P<id>{BVID}))(?:[&#].*)?$"),
            # a list (series, favourites, watch later) playing one of its videos: that video
            re.compile(rf"{video}/(?:list|medialist/play)/[^/?#]+/?\?(?:[^#]*&)?bvid=(?P<id>{BVID})(?:[&#].*)?$"),
        )
        # The visitor ids and WBI keys every API request sends, shared by the platform's workers (visitor.py).
        self.visitor = VisitorSession()

    # -- URLs --------------------------------------------------------------------------------
    def ref(self, url: str) -> VideoRef | None:
        """The video and part a long URL names; None for short links."""
        query = parse_qs(urlsplit(url).query)
        match = self.url_patterns[0].match(url) or self.url_patterns[2].match(url) or self.url_patterns[4].match(url)
        if match:
            raw = match.group("id")
            if raw.lower().startswith("av"):
                if len(raw) > 20 or int(raw[2:]) >= _MAX_AID:
                    return None
                bvid = av_to_bv(int(raw[2:]))
            else:
                bvid = "BV" + raw[2:]  # the "BV" prefix is case-insensitive in URLs, the rest is not
            wanted = query.get("p", [None])[0]
        else:
            match = self.url_patterns[3].match(url)
            if not match:
                return None
            if "bvid" in query:
                bvid = query["bvid"][0]
            else:
                aid = int_or_none(query.get("aid", [""])[0])
                if aid is None or not 0 < aid < _MAX_AID:
                    return None
                bvid = av_to_bv(aid)
            if not re.fullmatch(BVID, bvid):
                return None
            wanted = query.get("page", query.get("p", ["1"]))[0]  # the embed always shows one part
        page = int_or_none(wanted) if wanted is not None else None
        return VideoRef(bvid, max(page or 1, 1), explicit=wanted is not None)

    def watch_target(self, url: str, ctx: ResolveContext) -> str | None:
        """Where a b23.tv short link leads (followed through the client, so its address guard
        checks every hop), when that is a live room: a watch of the link watches the room."""
        if not self.url_patterns[1].match(url) or self.rooms is None:
            return None
        page = self.fetch_page(url, ctx, self._headers(), item_url=url)
        return page.url if self.rooms.claims(page.url) else None

    def part_url(self, bvid: str, page: int) -> str:
        """The URL of one part, on the configured page base (the real site by default)."""
        return f"{self.config.page_base.rstrip('/')}/video/{bvid}?p={page}"

    def more_offline(self, url: str, metadata: dict[str, Any]) -> list[str] | None:
        """The other parts a URL stands for, from a committed item's stored metadata.

        Returns:
            The URLs of parts 2..N for a bare URL, [] for a URL naming a part, and None when
            the metadata cannot tell (an item committed before parts were recorded, a short
            link): then the platform must be asked.
        """
        ref = self.ref(url)
        if ref is None:
            return None
        if ref.explicit:
            return []
        parts = metadata.get("parts")
        if not isinstance(parts, list):
            return None
        pages = sorted({n for n in (int_or_none(dig(p, "page")) for p in parts) if n and n > 1})
        return [self.part_url(ref.bvid, n) for n in pages]

    def offline_key(self, url: str) -> str | None:
        ref = self.ref(url)
        return ref.key if ref else None

    # -- resolving ---------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"Referer": self.config.referer, "User-Agent": self.config.user_agent, **self.config.headers}
        cookies = load_cookies(self.config.cookies_file)
        if cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        return headers

    def resolve(self, url: str, ctx: ResolveContext) -> Resolved:
        ref = self.ref(url)
        if ref is None and not self.url_patterns[1].match(url):
            raise UnsupportedUrl(f"{url}: not a Bilibili video URL (an av number beyond the BV range?)")
        if ref is None:  # a b23.tv short link: follow it, then it must be a video URL or a live room
            page = self.fetch_page(url, ctx, self._headers(), item_url=url)
            ref = self.ref(page.url)
            if ref is None and self.rooms is not None and self.rooms.claims(page.url):
                return self.rooms.resolve(page.url, ctx)
            if ref is None:
                raise UnsupportedUrl(f"{url}: short link leads to {page.url}, not a Bilibili video or live room")
        headers = self._headers()
        api = self.config.api_base.rstrip("/")
        view = api_json(self, ctx, lambda: f"{api}/x/web-interface/view?bvid={ref.bvid}", headers, item_url=url)
        data = view.get("data") if isinstance(view.get("data"), dict) else {}
        bvid = str_or_none(data.get("bvid")) or ref.bvid
        pages = [p for p in _list(data.get("pages")) if isinstance(p, dict)]
        part = next((p for p in pages if int_or_none(p.get("page")) == ref.page), None)
        if ref.page > 1 and part is None:
            raise NotFound(f"bilibili: {url}: video {bvid} has no part {ref.page}")
        cid = int_or_none((part or {}).get("cid")) or int_or_none(data.get("cid"))
        require(cid, self.platform, url, "data.cid")
        title = str_or_none(data.get("title"))
        if part and len(pages) > 1:
            title = f"{title or bvid} (P{ref.page} {str_or_none(part.get('part')) or ''})".replace(" )", ")")
        assets = self._streams(url, bvid, cid, ctx, headers)
        # DASH: a video and an audio stream to merge; durl in several segments: pieces to join.
        merge = ("dash" if len(assets) == 2 and assets[1].kind == "audio"
                 else "join" if len(assets) > 1 else None)
        cover = _cover(data.get("pic"))
        if cover and self.config.thumbnails:
            assets.append(Asset(name="thumbnail", kind="thumbnail", urls=[cover],
                                headers={"Referer": self.config.referer, "User-Agent": self.config.user_agent}))
        key = VideoRef(bvid, ref.page).key
        published = int_or_none(data.get("pubdate"))
        canonical = f"https://www.bilibili.com/video/{bvid}" + (f"?p={ref.page}" if ref.page > 1 else "")
        duration = float_or_none((part or {}).get("duration")) or float_or_none(data.get("duration"))
        more = []
        if not ref.explicit and len(pages) > 1:
            numbers = sorted({n for n in (int_or_none(p.get("page")) for p in pages) if n and n > 1})
            more = [MoreItem(self.part_url(bvid, n)) for n in numbers]
        return Resolved(
            canonical_key=key,
            canonical_url=canonical,
            platform=self.platform,
            title=title,
            uploader=str_or_none(dig(data, "owner", "name")),
            duration=duration,
            published_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(published)) if published else None,
            assets=assets,
            metadata=_metadata(data, key, canonical, title, duration, ref.page, part, pages, cid, cover, merge),
            more=more,
        )

    def _wbi_keys(self, ctx: ResolveContext, headers: dict[str, str]) -> tuple[str, str]:
        def nav() -> tuple[str, str]:
            # nav answers -101 "not logged in" to anonymous visitors and still carries the keys.
            nav = get_json(self, f"{self.config.api_base.rstrip('/')}/x/web-interface/nav", ctx, headers,
                           platform_codes=False)
            img = _key_from_url(dig(nav, "data", "wbi_img", "img_url"))
            sub = _key_from_url(dig(nav, "data", "wbi_img", "sub_url"))
            return (require(img, self.platform, "nav", "data.wbi_img.img_url"),
                    require(sub, self.platform, "nav", "data.wbi_img.sub_url"))

        return self.visitor.wbi_keys(ctx, nav)

    def _streams(self, url: str, bvid: str, cid: int, ctx: ResolveContext, headers: dict[str, str]) -> list[Asset]:
        qn = qn_for_height(ctx.quality) if ctx.quality else self.config.quality
        api = self.config.api_base.rstrip("/")

        def signed() -> str:  # signed again with the new keys after a renewal
            params = wbi_sign({"bvid": bvid, "cid": cid, "qn": qn, "fnval": FNVAL_DASH, "fnver": 0,
                               "fourk": 1}, *self._wbi_keys(ctx, headers))
            return f"{api}/x/player/wbi/playurl?{urllib.parse.urlencode(params)}"

        play = api_json(self, ctx, signed, headers, signed=True, item_url=url)
        data = play.get("data")
        if not isinstance(data, dict):
            raise ParseError(f"bilibili: {url}: playurl answer has no data")
        return self.play_streams(url, data, ctx, qn, PREVIEW_REASON)

    def play_streams(self, url: str, data: dict[str, Any], ctx: ResolveContext, qn: int, preview_reason: str,
                     where: str = "data") -> list[Asset]:
        """The assets of a play URL answer's ``dash`` or ``durl`` (a video's, an episode's, a
        course's: they share the shape), each marked a preview with ``preview_reason`` when the
        answer offers one only."""
        media_headers = {"Referer": self.config.referer, "User-Agent": self.config.user_agent}
        if isinstance(data.get("dash"), dict):
            # The crawl's audio choice, once the crawl carries one (ResolveContext.audio), else the setting.
            streams = self._dash(url, data["dash"], media_headers, qn, ctx.audio)
        elif segments := [s for s in _list(data.get("durl")) if isinstance(s, dict)]:
            streams = self._durl(url, segments, media_headers)
        else:
            raise ParseError(f"bilibili: {url}: playurl answer has neither {where}.dash nor {where}.durl")
        if _is_preview(data):
            for asset in streams:
                asset.preview = preview_reason
        return streams

    def quality(self, ctx: ResolveContext) -> int:
        """The ``qn`` asked: the crawl's height (``-f``), else ``platforms.bilibili.quality``."""
        return qn_for_height(ctx.quality) if ctx.quality else self.config.quality

    def headers(self) -> dict[str, str]:
        """The headers of its API requests: Referer, User-Agent, the configured ones, the cookies."""
        return self._headers()

    def _durl(self, url: str, segments: list[dict], headers: dict[str, str]) -> list[Asset]:
        assets = []
        ordered = sorted(segments, key=lambda s: int_or_none(s.get("order")) or 0)
        for index, segment in enumerate(ordered, 1):
            urls = _urls(segment.get("url"), segment.get("backup_url"))
            require(urls, self.platform, url, f"data.durl[{index - 1}].url")
            name = "video" if len(ordered) == 1 else f"video-{index}"
            # Each of several segments lasts its own `length` (ms), which verify checks instead of the item's.
            length = (float_or_none(segment.get("length")) or 0) / 1000 if len(ordered) > 1 else None
            assets.append(Asset(name=name, kind="video", urls=urls, headers=dict(headers),
                                expected_size=int_or_none(segment.get("size")), mime="video/x-flv",
                                duration=length))
        return assets

    def _dash(self, url: str, dash: dict, headers: dict[str, str], qn: int | None = None,
              audio_choice: str = "") -> list[Asset]:
        videos = [v for v in _list(dash.get("video")) if isinstance(v, dict) and int_or_none(v.get("id"))]
        require(videos, self.platform, url, "data.dash.video")
        best = _pick_video(videos, self.config.quality if qn is None else qn)
        video_urls = _urls(best.get("baseUrl") or best.get("base_url"), best.get("backupUrl") or best.get("backup_url"))
        require(video_urls, self.platform, url, "data.dash.video[].baseUrl")
        assets = [Asset(name="video", kind="video", urls=video_urls, headers=dict(headers),
                        mime=str_or_none(best.get("mimeType") or best.get("mime_type")))]
        audio = _pick_audio(dash, audio_choice or self.config.audio)
        if audio is not None:
            audio_urls = _urls(audio.get("baseUrl") or audio.get("base_url"),
                               audio.get("backupUrl") or audio.get("backup_url"))
            if audio_urls:
                assets.append(Asset(name="audio", kind="audio", urls=audio_urls, headers=dict(headers),
                                    mime=str_or_none(audio.get("mimeType") or audio.get("mime_type"))))
        return assets


def _restricted(videos: list[dict], quality: int) -> bool:
    """Whether only one codec family plays the streams of ``quality``: Dolby Vision, or a quality
    offered in HEVC alone (no AVC, no AV1 stream of it)."""
    codecs = {int_or_none(v.get("codecid")) for v in videos if int_or_none(v.get("id")) == quality}
    return quality == DOLBY_VISION or codecs == {HEVC}


def _pick_video(videos: list[dict], wanted: int) -> dict:
    """The stream closest to ``wanted`` (a ``qn``): the best at or below it, else the lowest above.

    Asking for less than anything offered means "as small as possible", so it never picks the
    best stream. A quality only one codec family plays (:func:`_restricted`: Dolby Vision, an
    HEVC-only HDR) is a candidate only when ``wanted`` names it exactly, unless nothing else is
    offered. Among streams of the chosen quality, AVC is preferred (see CODEC_RANK).
    """
    offered = {int_or_none(v.get("id")) or 0 for v in videos}
    ids = {i for i in offered if i == wanted or not _restricted(videos, i)} or offered
    at_or_below = [i for i in ids if i <= wanted]
    chosen = max(at_or_below) if at_or_below else min(ids)
    return min((v for v in videos if (int_or_none(v.get("id")) or 0) == chosen),
               key=lambda v: CODEC_RANK.get(int_or_none(v.get("codecid")) or 0, 9))


def _pick_audio(dash: dict[str, Any], choice: str) -> dict | None:
    """The audio stream to keep among ``dash.audio[]`` (AAC), ``dash.dolby.audio[]`` (Dolby,
    E-AC-3) and ``dash.flac.audio`` (one Hi-Res FLAC stream, not a list); None when the video has
    no audio (``dash.audio`` null and nothing else) or no stream has a URL.

    ``choice`` (``platforms.bilibili.audio``): ``best`` takes lossless over lossy, then the
    highest bitrate; ``lossless``, ``dolby`` and ``aac`` take the best of that kind when offered,
    else fall back to ``best``.
    """
    def streams(value: Any) -> list[dict]:
        found = value if isinstance(value, list) else [value]
        return [a for a in found if isinstance(a, dict) and (a.get("baseUrl") or a.get("base_url"))]

    aac = streams(dash.get("audio"))
    dolby = streams(dig(dash, "dolby", "audio"))
    lossless = streams(dig(dash, "flac", "audio"))
    kinds = {"aac": aac, "dolby": dolby, "lossless": lossless}

    def bitrate(a: dict) -> tuple[int, int]:
        return int_or_none(a.get("bandwidth")) or 0, int_or_none(a.get("id")) or 0

    if kinds.get(choice):
        return max(kinds[choice], key=bitrate)
    if lossless:
        return max(lossless, key=bitrate)
    return max(aac + dolby, key=bitrate, default=None)


def _is_preview(play: dict[str, Any]) -> bool:
    """The playurl answer offers a preview only: its one quality is described as 试看 ("trial
    viewing", what a supporter-only video gives an account without access), or it says so."""
    return _list(play.get("accept_description")) == ["试看"] or play.get("is_preview") in (True, 1)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _cover(value: Any) -> str | None:
    url = str_or_none(value)
    if url and url.startswith("//"):
        url = "https:" + url
    return url if url and url.lower().startswith(("http://", "https://")) else None


# Topics in the uploader's ``dynamic`` text: ``#tag#`` runs, as the view answer carries them.
_TOPIC = re.compile(r"#([^#\n]{1,64})#")


def _metadata(data: dict[str, Any], key: str, canonical_url: str, title: str | None, duration: float | None,
              page: int, part: dict[str, Any] | None, pages: list[dict[str, Any]], cid: int, cover: str | None,
              merge: str | None) -> dict[str, Any]:
    """yt-dlp's info fields from the view answer, for one part; absent fields are left out."""
    published = int_or_none(data.get("pubdate"))
    dynamic = data.get("dynamic") if isinstance(data.get("dynamic"), str) else ""
    dimension = (part or {}).get("dimension") if isinstance((part or {}).get("dimension"), dict) else data.get("dimension")
    parts = [compact({"page": int_or_none(p.get("page")), "cid": int_or_none(p.get("cid")),
                      "title": str_or_none(p.get("part")), "duration": float_or_none(p.get("duration"))})
             for p in pages]
    return compact({
        "id": key.split(":", 1)[1],
        "bvid": str_or_none(data.get("bvid")),
        "aid": int_or_none(data.get("aid")),
        "cid": cid,
        "title": title,
        "description": str_or_none(data.get("desc")),
        "uploader": str_or_none(dig(data, "owner", "name")),
        "uploader_id": str(int_or_none(dig(data, "owner", "mid")) or "") or None,
        "timestamp": published,
        "upload_date": upload_date(published),
        "duration": duration,
        "view_count": count_or_none(dig(data, "stat", "view")),
        "like_count": count_or_none(dig(data, "stat", "like")),
        "comment_count": count_or_none(dig(data, "stat", "reply")),
        "tags": list(dict.fromkeys(t.strip() for t in _TOPIC.findall(dynamic) if t.strip())),
        "categories": [c for c in (str_or_none(data.get("tname")),) if c],
        "thumbnail": cover,
        "webpage_url": canonical_url,
        "width": int_or_none(dig(dimension, "width")),
        "height": int_or_none(dig(dimension, "height")),
        "part": page if len(pages) > 1 else None,
        "part_title": str_or_none((part or {}).get("part")) if len(pages) > 1 else None,
        "parts": parts or [{"page": 1, "cid": cid}],
        "merge": merge,
    })


def _urls(primary: Any, backups: Any) -> list[str]:
    found = [primary] if isinstance(primary, str) and primary else []
    if isinstance(backups, list):
        found += [b for b in backups if isinstance(b, str) and b]
    return list(dict.fromkeys(found))


def resolvers(config: BilibiliSettings) -> list[Resolver]:
    """Videos, live rooms (:mod:`.rooms`), then episodes and courses (:mod:`.pgc`), dynamics
    (:mod:`.opus`) and audio (:mod:`.audio`), which share the video resolver's session."""
    rooms = BilibiliLiveResolver(config)
    video = BilibiliResolver(config, rooms)
    episodes = BilibiliEpisodeResolver(config, video)
    return [video, rooms, episodes, BilibiliOpusResolver(config, video, episodes), BilibiliAudioResolver(config, video)]

