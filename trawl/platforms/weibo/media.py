"""What a Weibo status carries: its video, its pictures (with the video behind a Live Photo) and
the items of a mixed-media post, as assets; no network.

Shapes, and how sure they are:

- Captured (``shared/reference/platforms/weibo_*.json``): ``page_info`` with
  ``media_info.playback_list`` and the older ``stream_url*`` / ``urls`` fields.
- Read by gallery-dl's code (its weibo extractor), not captured by trawl: the desktop
  ``pic_infos[<pid>]`` sizes (``largest``, ``original``, ``mw2000``, ``large``..., each
  ``{url, width, height}``), a Live Photo as ``pic_infos[<pid>].type == "livephoto"`` with its
  ``video`` URL beside the picture, and ``mix_media_info.items[]`` (``{"type": "pic", "data":
  <pic_info>}`` or ``{"type": "video", "data": <page_info>}``, in the post's order), which stands
  for ``pic_infos`` and ``page_info`` in a mixed-media post.
- Reported by third-party readers of m.weibo.cn, not captured: a Live Photo's ``pics[]`` entry
  with ``type`` ``livephoto``/``livephotos`` and ``videoSrc``, a video among a mixed post's
  pictures (``type: "video"`` with ``videoSrc``), a status-level ``live_photo`` list of the
  videos, and older statuses' ``pic_video`` (``"<n>:<id>,..."``, naming ``us.sinaimg.cn/<id>.mov``:
  weibo-crawler's reading). Live Photo video URLs may come wrapped as
  ``video.weibo.com/media/play?livephoto=<url>``, which redirects to the file: the inner URL is
  asked first, the wrapper is its backup.

Asset names: ``image-N`` for the N-th picture, ``livephoto-N`` for the video behind picture N,
``video`` for a post's one video, ``video-N`` for the N-th video of a mixed-media post.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from trawl.hls_playlists import is_hls_type, is_hls_url
from trawl.models import Asset
from trawl.platforms.base import dig, float_or_none, int_or_none, str_or_none

# Older API fields with a video URL, best quality first (the 720p field, then HD, then LD).
_LEGACY_VIDEO_FIELDS = (
    ("media_info", "mp4_720p_mp4"), ("urls", "mp4_720p_mp4"),
    ("media_info", "stream_url_hd"), ("media_info", "mp4_hd_url"), ("urls", "mp4_hd_mp4"),
    ("media_info", "stream_url"), ("media_info", "mp4_sd_url"), ("urls", "mp4_ld_mp4"),
)

def positive(value: Any) -> float | None:
    number = float_or_none(value)
    return number if number is not None and 0 < number < float("inf") else None


def media_url(value: Any) -> str | None:
    url = str_or_none(value)
    if url and url.startswith("//"):
        url = "https:" + url  # the video page API gives protocol-relative URLs
    return url if url and url.lower().startswith(("http://", "https://")) else None


def video_asset(page_info: Any, headers: dict[str, str]) -> tuple[Asset | None, float | None]:
    """The video of a ``page_info`` and the duration its chosen stream states."""
    if not isinstance(page_info, dict):
        return None, None
    best = best_playback(dig(page_info, "media_info", "playback_list"))
    if best is not None:
        size = int_or_none(best.get("size"))
        asset = Asset(name="video", kind="video", urls=[best["url"]], headers=dict(headers),
                      expected_size=size if size and size > 0 else None,
                      mime=str_or_none(best.get("mime")))
        return asset, positive(best.get("duration"))
    stream = best_playback(dig(page_info, "media_info", "playback_list"), hls=True)
    if stream is not None:  # only an HLS entry (video/mp2t, an _index.m3u8 playlist)
        return Asset(name="video", kind="video", urls=[stream["url"]], headers=dict(headers),
                     protocol="hls"), positive(stream.get("duration"))
    # Older answers name several qualities and no sizes; the lower ones are backups. Without an
    # expected size a backup's different length cannot fail verification, and the downloader
    # only resumes a partial file across URLs when the ETag still matches.
    urls = [media_url(dig(page_info, *path)) for path in _LEGACY_VIDEO_FIELDS]
    urls = list(dict.fromkeys(u for u in urls if u))
    # A live replay's stream_url (wblive-out's room/play, answering 302 to a playlist) and
    # replay_hd are HLS; a progressive file among the fields is preferred.
    playlists = [u for u in [*urls, media_url(dig(page_info, "media_info", "replay_hd"))] if u and _is_hls_source(u)]
    urls = [u for u in urls if u not in playlists]
    if not urls and playlists:
        return Asset(name="video", kind="video", urls=list(dict.fromkeys(playlists)), headers=dict(headers),
                     protocol="hls"), None
    if not urls:
        return None, None
    return Asset(name="video", kind="video", urls=urls, headers=dict(headers)), None


def _is_hls_source(url: str) -> bool:
    return is_hls_url(url) or path_of(url).endswith("/wblive/room/play")


def _is_hls_entry(info: dict[str, Any]) -> bool:
    mime = (str_or_none(info.get("mime")) or "").lower()
    return mime == "video/mp2t" or is_hls_type(mime) or is_hls_url(str(info.get("url")))


def best_playback(entries: Any, hls: bool = False) -> dict[str, Any] | None:
    """The ``play_info`` of the highest ``meta.quality_index`` that is a progressive video
    (with ``hls``: that is an HLS playlist).

    Image entries (``scrubber_*`` thumbnail sprites) and non-``general`` protocols (DASH, HLS
    manifests, which are not one file) are skipped.
    """
    best: tuple[tuple[int, int], dict[str, Any]] | None = None
    for entry in entries if isinstance(entries, list) else []:
        info = dig(entry, "play_info")
        if not isinstance(info, dict) or not media_url(info.get("url")) or _is_hls_entry(info) != hls:
            continue
        mime = str_or_none(info.get("mime"))
        if not hls and mime is not None and not mime.lower().startswith("video/"):
            continue
        if not hls and mime is None and not path_of(str(info["url"])).lower().endswith(".mp4"):
            continue
        if not hls and str_or_none(info.get("protocol")) not in (None, "general"):
            continue
        rank = (int_or_none(dig(entry, "meta", "quality_index")) or int_or_none(info.get("height")) or 0,
                int_or_none(info.get("bitrate")) or 0)
        if best is None or rank > best[0]:
            best = (rank, {**info, "url": media_url(info.get("url"))})
    return best[1] if best else None


def path_of(url: str) -> str:
    try:
        return urlsplit(url).path
    except ValueError:  # an unbalanced IPv6 bracket
        return ""


# Desktop picture sizes, largest first: ``largest`` is the upload as it was, ``mw2000`` at most
# 2000 pixels wide, ``original`` and ``large`` what the page shows.
PICTURE_SIZES = ("largest", "mw2000", "original", "large")
_LIVE_TYPES = frozenset({"livephoto", "livephotos"})
_LIVE_WRAPPER = "/media/play"
Picture = tuple[str | None, str | None]  # (the still at its largest size, the Live Photo's video)


def picture_assets(status: dict[str, Any], headers: dict[str, str]) -> list[Asset]:
    """Pictures, each at its largest size, each followed by the video behind it when it is a Live
    Photo: desktop ``pic_infos`` (in ``pic_ids`` order) or mobile ``pics[]`` (module docstring)."""
    infos = status.get("pic_infos")
    if isinstance(infos, dict) and infos:
        order = status.get("pic_ids") if isinstance(status.get("pic_ids"), list) else []
        keys = [k for k in order if isinstance(k, str) and k in infos] or list(infos)
        pictures = [_desktop_picture(infos.get(key)) for key in keys]
    else:
        pictures = _with_listed_live_photos(status, [_mobile_picture(pic) for pic in _mobile_pics(status)
                                                     if str_or_none(dig(pic, "type")) != "video"])
    return _assets(pictures, headers)


def mixed_assets(status: dict[str, Any], headers: dict[str, str]) -> tuple[list[Asset], float | None] | None:
    """The pictures and videos of a mixed-media post in the post's order, with the duration when
    it holds one video; None when the status is not one.

    Desktop: ``mix_media_info.items[]``. Mobile: ``pics[]`` holding ``type: "video"`` entries
    beside the pictures.
    """
    items = dig(status, "mix_media_info", "items")
    if isinstance(items, list) and items:
        entries = [(str_or_none(dig(e, "type")), dig(e, "data")) for e in items]
    elif any(str_or_none(dig(pic, "type")) == "video" for pic in _mobile_pics(status)):
        entries = [("mobile_" + (str_or_none(dig(pic, "type")) or "pic"), pic) for pic in _mobile_pics(status)]
    else:
        return None
    assets: list[Asset] = []
    durations: list[float | None] = []
    pictures = videos = 0
    for kind, data in entries:
        video: Asset | None = None
        if kind == "video":
            video, duration = video_asset(data, headers)
            duration = positive(dig(data, "media_info", "duration")) or duration
        elif kind == "mobile_video":
            url = media_url(dig(data, "videoSrc"))
            video = Asset(name="video", kind="video", urls=[url], headers=dict(headers)) if url else None
            duration = positive(dig(data, "duration"))
        elif kind in ("pic", "mobile_pic", "mobile_livephoto", "mobile_livephotos"):
            still, live = _desktop_picture(data) if kind == "pic" else _mobile_picture(data)
            if still:
                pictures += 1
                assets.extend(_picture(pictures, still, live, headers))
        # any other kind is one trawl does not know: left out, as gallery-dl does
        if video is not None:
            videos += 1
            video.name = f"video-{videos}"
            assets.append(video)
            durations.append(duration)
    return assets, durations[0] if len(durations) == 1 else None


def has_pictures_or_mix(status: dict[str, Any]) -> bool:
    """Whether the status carries pictures, Live Photos or mixed media of its own."""
    mixed = mixed_assets(status, {})
    return bool(mixed[0]) if mixed is not None else bool(picture_assets(status, {}))


def _mobile_pics(status: dict[str, Any]) -> list[Any]:
    pics = status.get("pics")
    return list(pics.values()) if isinstance(pics, dict) else pics if isinstance(pics, list) else []


def _desktop_picture(info: Any) -> Picture:
    url = next((u for u in (media_url(dig(info, size, "url")) for size in PICTURE_SIZES) if u), None)
    live = media_url(dig(info, "video")) if str_or_none(dig(info, "type")) in _LIVE_TYPES else None
    return url, live


def _mobile_picture(pic: Any) -> Picture:
    url = media_url(dig(pic, "large", "url")) or media_url(dig(pic, "url"))
    live = media_url(dig(pic, "videoSrc")) if str_or_none(dig(pic, "type")) in _LIVE_TYPES else None
    return url, live


def _with_listed_live_photos(status: dict[str, Any], pictures: list[Picture]) -> list[Picture]:
    """The status-level Live Photo videos (``live_photo``, older ``pic_video``) given, in order,
    to the pictures that have none yet; any left over follow as videos without a still."""
    listed = status.get("live_photo")
    videos = [media_url(u) for u in listed] if isinstance(listed, list) else []
    code = status.get("pic_video")
    if isinstance(code, str):
        for part in code.split(","):
            _, _, ident = part.partition(":")
            if ident.isascii() and ident.isalnum():
                videos.append(f"https://us.sinaimg.cn/{ident}.mov")
    have = {live for _, live in pictures if live}
    waiting = [v for v in dict.fromkeys(videos) if v and v not in have]
    out = list(pictures)
    for i, (still, live) in enumerate(out):
        if waiting and still and not live:
            out[i] = (still, waiting.pop(0))
    return out + [(None, video) for video in waiting]


def _assets(pictures: list[Picture], headers: dict[str, str]) -> list[Asset]:
    assets: list[Asset] = []
    seen: set[str] = set()
    number = 0
    for still, live in pictures:
        if still in seen:
            still = None
        if live in seen:
            live = None
        if still is None and live is None:
            continue
        number += 1
        seen.update(u for u in (still, live) if u)
        assets.extend(_picture(number, still, live, headers))
    return assets


def _picture(number: int, still: str | None, live: str | None, headers: dict[str, str]) -> list[Asset]:
    out = [Asset(name=f"image-{number}", kind="image", urls=[still], headers=dict(headers))] if still else []
    if live:
        out.append(Asset(name=f"livephoto-{number}", kind="video", urls=_unwrapped(live), headers=dict(headers)))
    return out


def _unwrapped(url: str) -> list[str]:
    """A Live Photo's video URL; for the ``video.weibo.com/media/play?livephoto=<url>`` wrapper
    (which redirects to the file), the file first and the wrapper as its backup."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    if not (parts.hostname or "").endswith("video.weibo.com") or parts.path != _LIVE_WRAPPER:
        return [url]
    inner = media_url((parse_qs(parts.query).get("livephoto") or [""])[0])
    return [inner, url] if inner and inner != url else [url]
