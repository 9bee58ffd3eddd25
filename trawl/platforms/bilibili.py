"""Bilibili videos: ``/video/BV...``, ``/video/av...``, ``?p=N`` parts, ``m.`` pages, b23.tv links.

Metadata comes from ``x/web-interface/view``; streams from ``x/player/wbi/playurl``, signed
with WBI keys from ``x/web-interface/nav``. A ``durl`` answer gives one asset per segment; a
``dash`` answer gives a video and an audio asset, merged at commit when ffmpeg exists.

Any non-zero ``code`` in an answer is an error carrying the code, Bilibili's message and the
URL given (:func:`trawl.errors.classify_bilibili_code`); the code table comes from the public
API documentation, and only the -412/-352 bodies are real captures.
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
from trawl.models import Asset, Resolved
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
from trawl.settings import BilibiliSettings

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
# fnval bits: 16 DASH, 64 HDR, 128 4K, 256 Dolby audio, 1024 8K, 2048 AV1 -> ask for everything DASH.
FNVAL_DASH = 16 | 64 | 128 | 256 | 1024 | 2048
# Codec preference among streams of one quality: AVC plays everywhere, then HEVC, then AV1.
CODEC_RANK = {7: 0, 12: 1, 13: 2}


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

    @property
    def key(self) -> str:
        return f"bilibili:{self.bvid}" + (f"_p{self.page}" if self.page > 1 else "")


class BilibiliResolver(Resolver):
    name = "bilibili:video"
    platform = "bilibili"

    def __init__(self, config: BilibiliSettings) -> None:
        self.config = config
        video = base_pattern(r"(?:www\.|m\.)?bilibili\.com", config.page_base, config.mobile_base)
        short = base_pattern(r"b23\.tv", config.short_base)
        self.url_patterns = (
            re.compile(rf"{video}/video/(?P<id>[Bb][Vv]{BVID[2:]}|[Aa][Vv]\d+)/?(?:[?#].*)?$"),
            re.compile(rf"{short}/(?P<code>[A-Za-z0-9]+)/?(?:[?#].*)?$"),
        )
        self._wbi: tuple[str, str, float] | None = None  # img_key, sub_key, fetched at

    # -- URLs --------------------------------------------------------------------------------
    def ref(self, url: str) -> VideoRef | None:
        """The video and part a long URL names; None for short links."""
        match = self.url_patterns[0].match(url)
        if not match:
            return None
        raw = match.group("id")
        if raw.lower().startswith("av"):
            bvid = av_to_bv(int(raw[2:]))
        else:
            bvid = "BV" + raw[2:]  # the "BV" prefix is case-insensitive in URLs, the rest is not
        page = int_or_none(parse_qs(urlsplit(url).query).get("p", ["1"])[0]) or 1
        return VideoRef(bvid, max(page, 1))

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
        if ref is None:  # a b23.tv short link: follow it, then it must be a video URL
            page = self.fetch_page(url, ctx, self._headers(), item_url=url)
            ref = self.ref(page.url)
            if ref is None:
                raise UnsupportedUrl(f"{url}: short link leads to {page.url}, not a Bilibili video")
        headers = self._headers()
        api = self.config.api_base.rstrip("/")
        view = get_json(self, f"{api}/x/web-interface/view?bvid={ref.bvid}", ctx, headers, item_url=url)
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
        key = VideoRef(bvid, ref.page).key
        published = int_or_none(data.get("pubdate"))
        return Resolved(
            canonical_key=key,
            canonical_url=f"https://www.bilibili.com/video/{bvid}" + (f"?p={ref.page}" if ref.page > 1 else ""),
            platform=self.platform,
            title=title,
            uploader=str_or_none(dig(data, "owner", "name")),
            duration=float_or_none((part or {}).get("duration")) or float_or_none(data.get("duration")),
            published_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(published)) if published else None,
            assets=assets,
            metadata={k: str(v) for k, v in (("aid", data.get("aid")), ("cid", cid),
                                              ("merge", "dash" if len(assets) == 2 and assets[1].kind == "audio"
                                               else "")) if v},
        )

    def _wbi_keys(self, ctx: ResolveContext, headers: dict[str, str]) -> tuple[str, str]:
        # The keys change daily; an hour of caching keeps nav requests rare.
        if self._wbi is None or time.monotonic() - self._wbi[2] > 3600:
            # nav answers -101 "not logged in" to anonymous visitors and still carries the keys.
            nav = get_json(self, f"{self.config.api_base.rstrip('/')}/x/web-interface/nav", ctx, headers,
                           platform_codes=False)
            img = _key_from_url(dig(nav, "data", "wbi_img", "img_url"))
            sub = _key_from_url(dig(nav, "data", "wbi_img", "sub_url"))
            img = require(img, self.platform, "nav", "data.wbi_img.img_url")
            sub = require(sub, self.platform, "nav", "data.wbi_img.sub_url")
            self._wbi = (img, sub, time.monotonic())
        return self._wbi[0], self._wbi[1]

    def _streams(self, url: str, bvid: str, cid: int, ctx: ResolveContext, headers: dict[str, str]) -> list[Asset]:
        img, sub = self._wbi_keys(ctx, headers)
        params = wbi_sign({"bvid": bvid, "cid": cid, "qn": self.config.quality, "fnval": FNVAL_DASH, "fnver": 0,
                           "fourk": 1}, img, sub)
        api = self.config.api_base.rstrip("/")
        play = get_json(self, f"{api}/x/player/wbi/playurl?{urllib.parse.urlencode(params)}", ctx, headers,
                        item_url=url)
        data = play.get("data")
        if not isinstance(data, dict):
            raise ParseError(f"bilibili: {url}: playurl answer has no data")
        media_headers = {"Referer": self.config.referer, "User-Agent": self.config.user_agent}
        if isinstance(data.get("dash"), dict):
            return self._dash(url, data["dash"], media_headers)
        segments = [s for s in _list(data.get("durl")) if isinstance(s, dict)]
        if segments:
            return self._durl(url, segments, media_headers)
        raise ParseError(f"bilibili: {url}: playurl answer has neither data.dash nor data.durl")

    def _durl(self, url: str, segments: list[dict], headers: dict[str, str]) -> list[Asset]:
        assets = []
        ordered = sorted(segments, key=lambda s: int_or_none(s.get("order")) or 0)
        for index, segment in enumerate(ordered, 1):
            urls = _urls(segment.get("url"), segment.get("backup_url"))
            require(urls, self.platform, url, f"data.durl[{index - 1}].url")
            name = "video" if len(ordered) == 1 else f"video-{index}"
            assets.append(Asset(name=name, kind="video", urls=urls, headers=dict(headers),
                                expected_size=int_or_none(segment.get("size")), mime="video/x-flv"))
        return assets

    def _dash(self, url: str, dash: dict, headers: dict[str, str]) -> list[Asset]:
        videos = [v for v in _list(dash.get("video")) if isinstance(v, dict) and int_or_none(v.get("id"))]
        require(videos, self.platform, url, "data.dash.video")
        best = _pick_video(videos, self.config.quality)
        video_urls = _urls(best.get("baseUrl") or best.get("base_url"), best.get("backupUrl") or best.get("backup_url"))
        require(video_urls, self.platform, url, "data.dash.video[].baseUrl")
        assets = [Asset(name="video", kind="video", urls=video_urls, headers=dict(headers),
                        mime=str_or_none(best.get("mimeType") or best.get("mime_type")))]
        audios = [a for a in _list(dash.get("audio")) if isinstance(a, dict)]
        if audios:
            audio = max(audios, key=lambda a: (int_or_none(a.get("bandwidth")) or 0, int_or_none(a.get("id")) or 0))
            audio_urls = _urls(audio.get("baseUrl") or audio.get("base_url"),
                               audio.get("backupUrl") or audio.get("backup_url"))
            if audio_urls:
                assets.append(Asset(name="audio", kind="audio", urls=audio_urls, headers=dict(headers),
                                    mime=str_or_none(audio.get("mimeType") or audio.get("mime_type"))))
        return assets

    # -- sources -----------------------------------------------------------------------------
    def uploader_video_urls(self, ctx: ResolveContext, mid: str, max_pages: int = 5) -> list[str]:
        """Video URLs of an uploader, newest first, from ``x/space/wbi/arc/search`` pages."""
        headers = self._headers()
        img, sub = self._wbi_keys(ctx, headers)
        urls: list[str] = []
        api = self.config.api_base.rstrip("/")
        for page in range(1, max_pages + 1):
            params = wbi_sign({"mid": mid, "pn": page, "ps": 30, "order": "pubdate"}, img, sub)
            doc = get_json(self, f"{api}/x/space/wbi/arc/search?{urllib.parse.urlencode(params)}", ctx, headers)
            vlist = _list(dig(doc, "data", "list", "vlist"))
            found = [v.get("bvid") for v in vlist if isinstance(v, dict) and isinstance(v.get("bvid"), str)]
            if not found:
                break
            urls += [f"{self.config.page_base.rstrip('/')}/video/{bvid}" for bvid in found]
            count = int_or_none(dig(doc, "data", "page", "count"))
            if count is not None and page * 30 >= count:
                break
        return urls


def _pick_video(videos: list[dict], wanted: int) -> dict:
    """The stream closest to ``wanted`` (a ``qn``): the best at or below it, else the lowest above.

    Asking for less than anything offered means "as small as possible", so it never picks the
    best stream. Among streams of the chosen quality, AVC is preferred (see CODEC_RANK).
    """
    ids = {int_or_none(v.get("id")) or 0 for v in videos}
    at_or_below = [i for i in ids if i <= wanted]
    chosen = max(at_or_below) if at_or_below else min(ids)
    return min((v for v in videos if (int_or_none(v.get("id")) or 0) == chosen),
               key=lambda v: CODEC_RANK.get(int_or_none(v.get("codecid")) or 0, 9))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _urls(primary: Any, backups: Any) -> list[str]:
    found = [primary] if isinstance(primary, str) and primary else []
    if isinstance(backups, list):
        found += [b for b in backups if isinstance(b, str) and b]
    return list(dict.fromkeys(found))


def resolvers(config: BilibiliSettings) -> list[Resolver]:
    return [BilibiliResolver(config)]
