"""Weibo posts (statuses): their video or pictures, from the desktop JSON API with a mobile fallback.

URL forms (every one is listed in :mod:`trawl.platforms.weibo.forms`): ``weibo.com/<uid>/<mblogid|mid>``,
``m.weibo.cn/status|detail/<mblogid|mid>``, ``weibo.cn/detail/<mid>``, ``weibo.com/detail/<mid>``,
``weibo.com/u/<uid>?tabtype=newVideo&layerid=<mid>``, ``weibo.com/tv/show/1034:<oid>`` and
``video.weibo.com/show?fid=1034:<oid>``. The canonical key is
``weibo:<numeric mid>``; the canonical URL is always on the real host,
``https://weibo.com/<uid>/<mblogid>``, so an item keeps one URL whichever base URL fetched it.

What the code relies on, and how sure that is:

- Captured (``shared/reference/platforms/weibo_*.json``): the status fields (``mid``, ``bid``,
  ``text``, ``created_at``, ``user``), the mobile ``{"ok": 1, "data": {...}}`` envelope and both
  shapes of ``page_info`` (``media_info.playback_list`` and the older ``stream_url*`` / ``urls``).
- Captured: the repost shape on m.weibo.cn (``retweeted_status`` beside the placeholder text
  ``转发微博``), from the same capture.
- Documented, not captured: the desktop ``/ajax/statuses/show`` answer (the status itself with
  ``"ok": 1`` at its top level, ``mblogid``, ``text_raw``, ``pic_infos``), 403 without a Referer, a
  redirect to ``passport.weibo.com`` (the Sina Visitor System) when visitor cookies are missing
  or the client is throttled, ``ok: -100`` with a captcha page when rate limited, and the
  ``/api/container/getIndex`` card list used by :func:`user_post_urls`.
- Reported in public issue threads and trawl's issue 11, not captured: ``ok: -100`` with a
  ``passport.weibo.com/sso/signin`` (or ``login.php``) page as a login wall, HTTP 432 and 418
  when throttling, and the desktop API lifting a repost's ``page_info`` to the repost's top level
  while m.weibo.cn keeps it under ``retweeted_status``. How each answer is classified is in
  :mod:`trawl.platforms.weibo.errors`.
- Modelled on other open-source clients (yt-dlp and others), not captured: ``{"ok": 0, "msg": ...}``
  for an unknown or hidden status, and the video page API used for ``tv/show`` URLs (see
  :meth:`WeiboResolver.mid_for_video`). On the real site that API also wants visitor cookies
  (``SUB``); give them with ``cookies_file``.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import quote, unquote, urlencode, urlsplit

import httpx

from trawl.errors import (
    Forbidden,
    LoginRequired,
    NotFound,
    ParseError,
    PlatformError,
    RateLimited,
    TrawlError,
    UnsupportedUrl,
    classify_exception,
    classify_response,
)
from trawl.models import Asset, Resolved, compact, count_or_none, upload_date
from trawl.platforms.base import (
    ResolveContext,
    Resolver,
    dig,
    get_json,
    int_or_none,
    json_object,
    load_cookies,
    read_limited,
    require,
    str_or_none,
)
from trawl.platforms.weibo.config import WeiboSettings
from trawl.platforms.weibo.errors import ANSWERS, classify_answer, classify_redirect
from trawl.platforms.weibo.longtext import is_long, long_text
from trawl.platforms.weibo.media import has_pictures_or_mix, media_url, mixed_assets, picture_assets, positive, video_asset
from trawl.platforms.weibo.visitor import WeiboVisitor
from trawl.platforms.weibo.forms import MID, refusals, status_patterns

NAME = "weibo"
REAL_HOST = "https://weibo.com"
BASE62 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                                        "Nov", "Dec"), start=1)}
_CREATED_AT = re.compile(r"\w{3} (\w{3}) (\d{1,2}) (\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2}) (\d{4})")
_TAG = re.compile(r"<[^>]*>")
# The text Weibo gives a repost its user wrote nothing for ("Repost Weibo"), simplified and traditional.
REPOST_PLACEHOLDERS = frozenset({"转发微博", "轉發微博"})


# -- mid <-> mblogid -------------------------------------------------------------------------
def mid_to_mblogid(mid: str | int) -> str:
    """The base62 ``mblogid`` (``bid``) of a numeric mid.

    The decimal mid is cut into groups of 7 digits from the right; each group is written in
    base62 (alphabet ``0-9a-zA-Z``), every group but the leftmost padded to 4 characters.

    Raises:
        ValueError: ``mid`` is not a positive decimal number.
    """
    digits = str(mid)
    if not (digits.isascii() and digits.isdigit()) or int(digits) == 0:
        raise ValueError(f"not a Weibo mid: {mid!r}")
    digits = digits.lstrip("0")
    groups = [digits[max(0, end - 7):end] for end in range(len(digits), 0, -7)][::-1]
    codes = [_to_base62(int(group)) for group in groups]
    return codes[0] + "".join(code.rjust(4, "0") for code in codes[1:])


def mblogid_to_mid(mblogid: str) -> str:
    """The numeric mid of a base62 ``mblogid``; the inverse of :func:`mid_to_mblogid`.

    Raises:
        ValueError: ``mblogid`` has characters outside ``0-9a-zA-Z`` or a group too large for
            7 digits (so no mid encodes to it).
    """
    if not mblogid or not mblogid.isascii() or not mblogid.isalnum():
        raise ValueError(f"not a Weibo mblogid: {mblogid!r}")
    groups = [mblogid[max(0, end - 4):end] for end in range(len(mblogid), 0, -4)][::-1]
    numbers = [_from_base62(group) for group in groups]
    if any(n >= 10**7 for n in numbers):
        raise ValueError(f"not a Weibo mblogid: {mblogid!r}")
    mid = str(numbers[0]) + "".join(str(n).rjust(7, "0") for n in numbers[1:])
    if int(mid) == 0:
        raise ValueError(f"not a Weibo mblogid: {mblogid!r}")
    return mid.lstrip("0")


def _to_base62(number: int) -> str:
    out = ""
    while number:
        number, rest = divmod(number, 62)
        out = BASE62[rest] + out
    return out or "0"


def _from_base62(code: str) -> int:
    number = 0
    for char in code:
        number = number * 62 + BASE62.index(char)
    return number


def _mid_of(ident: str) -> str | None:
    """The mid named by a URL id (a 16-digit mid or an mblogid), or None when it is neither."""
    if re.fullmatch(MID, ident):
        return _digits(ident)  # drops leading zeros, as the API's answer will
    try:
        return mblogid_to_mid(ident)
    except ValueError:
        return None


# -- the resolver ----------------------------------------------------------------------------
class _Detour(Exception):
    """The desktop API refused in a way the mobile API may get around; never leaves the resolver."""

    def __init__(self, error: TrawlError) -> None:
        super().__init__(str(error))
        self.error = error


class WeiboResolver(Resolver):
    """A Weibo status: one video, or its pictures (``image-1``, ``image-2``...)."""

    name = "weibo:status"
    platform = NAME
    answers = ANSWERS

    def __init__(self, config: WeiboSettings) -> None:
        self.config = config
        self._refusals = refusals(config)
        # Instance attribute on purpose: the configured base URLs (the simulator's) are claimed
        # too. The refused pages come last: claimed only to say at once why they are not crawled.
        patterns = (*status_patterns(config), *(pattern for pattern, _ in self._refusals))
        self.url_patterns = patterns  # type: ignore[misc]
        self._cookies: dict[str, str] | None = None
        self.visitor = WeiboVisitor()  # the visitor cookies the platform's requests send (visitor.py)

    # -- routing -----------------------------------------------------------------------------
    def offline_key(self, url: str) -> str | None:
        """``weibo:<mid>`` for post URLs; None for video page URLs (their id is not the mid)."""
        found = self.match(url)
        if found is None or self._refusal(found) or _is_fid(found.group("id")):
            return None
        mid = _mid_of(found.group("id"))
        return f"weibo:{mid}" if mid else None

    def resolve(self, url: str, ctx: ResolveContext) -> Resolved:
        found = self.match(url)
        if found is None:
            raise UnsupportedUrl(f"{url}: not a Weibo post URL")
        why = self._refusal(found)
        if why:
            raise UnsupportedUrl(f"{url}: not a Weibo post: this page {why}")
        ident = found.group("id")
        if _is_fid(ident):
            ident = wanted = self.mid_for_video(unquote(ident), url, ctx)
        else:
            wanted = _mid_of(ident)
            if wanted is None:
                raise UnsupportedUrl(f"{url}: {ident!r} is neither a Weibo mid nor an mblogid")
        status = self.fetch_status(ident, url, ctx)
        mid = _status_mid(status) if isinstance(status, dict) else None
        full = long_text(self, status, mid, mid_to_mblogid(mid), url, ctx) if mid and is_long(status) else None
        item = self.from_status(status, url, full_text=full)
        # The offline key promised weibo:<wanted>; an answer about another status would file
        # the item under a key the workflow id does not match.
        got = item.metadata.get("mid")
        if got != wanted:
            raise ParseError(f"{NAME}: {url}: asked for status {wanted}, the answer is status {got}")
        return item

    def _refusal(self, found: re.Match[str]) -> str | None:
        """Why the page ``found`` matched is refused, when it is one of :func:`refusals`."""
        return next((why for pattern, why in self._refusals if found.re is pattern), None)

    # -- fetching ----------------------------------------------------------------------------
    def api_headers(self, referer: str, ctx: ResolveContext) -> dict[str, str]:
        """Headers for Weibo's JSON APIs: browser-like, the configured extras, the cookies."""
        if self._cookies is None:
            self._cookies = load_cookies(self.config.cookies_file)
        headers = {
            "Referer": referer,
            "User-Agent": self.config.user_agent,
            "Accept": "application/json, text/plain, */*",
            "X-Requested-With": "XMLHttpRequest",
            **self.config.headers,
        }
        if self._cookies:
            headers["Cookie"] = "; ".join(f"{name}={value}" for name, value in self._cookies.items())
        visitor = "" if (self._cookies or {}).get("SUB") else self.visitor.cookie(ctx)  # (visitor.py)
        if visitor:
            headers["Cookie"] = "; ".join(filter(None, (headers.get("Cookie"), visitor)))
        return headers

    def fetch_status(self, ident: str, url: str, ctx: ResolveContext) -> dict[str, Any]:
        """The status object for ``ident`` (mid or mblogid): desktop API first, then mobile.

        The desktop API refuses requests without Referer (403), may answer with the login wall,
        and sends clients it does not know, or throttles, to the Sina Visitor System; the mobile
        API often answers anyway, so all three are asked again there. Real rate limiting
        (``ok: -100`` with a captcha, HTTP 418/432), a missing status and network trouble are
        not: they would fail there too, and hammering a rate-limited site makes the ban longer.
        """
        try:
            return self._desktop_status(ident, url, ctx)
        except (Forbidden, ParseError, LoginRequired, PlatformError) as exc:
            desktop_error: TrawlError = exc
        except _Detour as detour:
            desktop_error = detour.error
        try:
            return self._mobile_status(ident, url, ctx)
        except TrawlError as exc:
            if isinstance(exc, ParseError) and isinstance(desktop_error, (LoginRequired, RateLimited)):
                raise desktop_error from None  # the mobile API said nothing; the desktop one did
            also = ("the desktop API answered the same" if type(exc) is type(desktop_error)
                    else f"desktop API: {desktop_error}")
            # The wait as the answer gave it: none said by the server stays trawl's own (spread).
            raise type(exc)(f"{exc} ({also})", retry_after=None if exc.own_wait else exc.retry_after) from None

    def _desktop_status(self, ident: str, url: str, ctx: ResolveContext) -> dict[str, Any]:
        api = f"{self.config.page_base.rstrip('/')}/ajax/statuses/show?{urlencode({'id': ident})}"
        sent = self.api_headers(self.config.referer, ctx)
        page = self.fetch_page(api, ctx, sent, item_url=url)
        if classify_redirect(page.url) is not None and self.visitor.incarnate(self, ctx, page.url, sent):
            page = self.fetch_page(api, ctx, self.api_headers(self.config.referer, ctx), item_url=url)  # as a visitor
        refusal = classify_redirect(page.url, f" for {url}")
        if refusal is not None:
            raise _Detour(refusal)  # the visitor system or a login page: the mobile API may answer
        doc = json_object(NAME, api, page)
        # The desktop answer is the status itself, with "ok": 1 among its fields.
        _check_ok(doc, url, allow_missing=True)
        return doc

    def _mobile_status(self, ident: str, url: str, ctx: ResolveContext) -> dict[str, Any]:
        base = self.config.mobile_base.rstrip("/")
        api = f"{base}/statuses/show?{urlencode({'id': ident})}"
        page = self.fetch_page(api, ctx, self.api_headers(base + "/", ctx), item_url=url)
        refusal = classify_redirect(page.url, f" for {url}")
        if refusal is not None:
            raise refusal
        doc = json_object(NAME, api, page)
        _check_ok(doc, url, allow_missing=False)
        data = doc.get("data")
        if not isinstance(data, dict):
            raise ParseError(f"{NAME}: {url}: response has no data")
        return data

    def mid_for_video(self, fid: str, url: str, ctx: ResolveContext) -> str:
        """The mid of the post that carries the video ``fid`` (``1034:<object id>``).

        The real ``tv/show`` page is a JavaScript shell; its data comes from
        ``POST {page_base}/tv/api/component?page=/tv/show/<fid>`` with the form field
        ``data={"Component_Play_Playinfo":{"oid":"<fid>"}}``, answering
        ``{"code": "100000", "data": {"Component_Play_Playinfo": {"mid": ..., "urls": ...}}}``.
        This shape is taken from other open-source clients, not from a capture. Only the mid is
        used: the post then resolves like any other, so both URL forms give the same item.
        """
        base = self.config.page_base.rstrip("/")
        page_path = f"/tv/show/{fid}"
        api = f"{base}/tv/api/component?{urlencode({'page': page_path})}"
        form = {"data": json.dumps({"Component_Play_Playinfo": {"oid": fid}}, separators=(",", ":"))}
        doc = self._post_json(api, form, ctx, self.api_headers(base + quote(page_path, safe="/:"), ctx), url)
        code = str(doc.get("code", ""))
        info = dig(doc, "data", "Component_Play_Playinfo")
        mid = str(int_or_none(dig(info, "mid")) or "")
        if not re.fullmatch(r"\d+", mid):
            if code and code != "100000":
                message = str_or_none(doc.get("msg")) or "no post for this video"
                raise NotFound(f"{NAME}: {url}: video page API says {code}: {message}")
            require(None, NAME, url, "data.Component_Play_Playinfo.mid")
        return mid

    def post_page(self, url: str, form: dict[str, str], ctx: ResolveContext, headers: dict[str, str],
                  item_url: str = "") -> bytes:
        """POST a form; the answer's body (bounded), or its classified error."""
        try:
            with ctx.client.stream("POST", url, data=form, headers=headers) as resp:
                body = read_limited(resp, ctx.max_page_bytes, url)
        except httpx.HTTPError as exc:
            raise classify_exception(exc) from None
        error = classify_response(resp.status_code, resp.headers, body, url=url, item_url=item_url or url,
                                  answers=self.answers)
        if error is not None:
            raise error
        return body

    def _post_json(self, url: str, form: dict[str, str], ctx: ResolveContext, headers: dict[str, str],
                   item_url: str) -> dict:
        body = self.post_page(url, form, ctx, headers, item_url)
        try:
            doc = json.loads(body)
        except ValueError:
            raise ParseError(f"{NAME}: {url}: answer is not JSON") from None
        if not isinstance(doc, dict):
            raise ParseError(f"{NAME}: {url}: JSON answer is not an object")
        return doc

    # -- parsing -----------------------------------------------------------------------------
    def from_status(self, status: Any, url: str, full_text: str | None = None) -> Resolved:
        """Build the item from a status object (desktop or mobile shape); no network.

        ``full_text`` is a long post's whole text (:mod:`.longtext`), its description; a post
        marked ``isLongText`` without it keeps its cut text, and ``metadata.text_truncated`` says so.

        A repost is its own item (its own key, its author) with the reposted status's media:
        m.weibo.cn keeps them under ``retweeted_status``, the desktop API also lifts the
        ``page_info`` to the top level; both give the same item.

        Raises:
            ParseError: the status has no usable mid.
            UnsupportedUrl: the status has neither a video nor pictures.
        """
        status = status if isinstance(status, dict) else {}
        mid: str = require(_status_mid(status), NAME, url, "mid (or id, idstr, mblogid, bid)")
        mblogid = mid_to_mblogid(mid)  # derived, not read: a stated bid could disagree with the mid
        user = status.get("user") if isinstance(status.get("user"), dict) else {}
        uid = _digits(user.get("idstr")) or _digits(user.get("id"))
        media_headers = {"Referer": self.config.referer, "User-Agent": self.config.user_agent}
        carrier = _media_carrier(status)
        mixed = mixed_assets(carrier, media_headers)
        if mixed is not None:  # a mixed-media post: its pictures and videos stand for page_info and pic_infos
            assets, duration = mixed
            video = None
        else:
            video, play_duration = video_asset(carrier.get("page_info"), media_headers)
            assets = [video] if video else []
            assets += picture_assets(carrier, media_headers)
            duration = positive(dig(carrier, "page_info", "media_info", "duration")) or play_duration
        if sum(a.kind == "video" for a in assets) != 1:
            duration = None  # verify checks every video against it: one post duration fits one video only
        if not assets:
            hint = _repost_hint(status)
            raise UnsupportedUrl(f"{url}: Weibo status {mid} has no media (no video, no pictures){hint}")
        cover = _cover(carrier.get("page_info")) if video else None
        if cover and self.config.thumbnails:
            assets.append(Asset(name="thumbnail", kind="thumbnail", urls=[cover], headers=dict(media_headers)))
        canonical_url = f"{REAL_HOST}/{uid}/{mblogid}" if uid else f"https://m.weibo.cn/detail/{mid}"
        title = _title(status, carrier)
        published = parse_created_at(status.get("created_at"))
        timestamp = int(datetime.fromisoformat(published).timestamp()) if published else None
        metadata = compact({
            "mid": mid, "mblogid": mblogid, "uid": uid,
            # yt-dlp's info fields
            "id": mid, "display_id": mblogid, "title": title, "description": full_text or _own_text(status),
            "text_truncated": True if is_long(status) and not full_text else None,
            "uploader": str_or_none(user.get("screen_name")), "uploader_id": uid,
            "timestamp": timestamp, "upload_date": upload_date(timestamp), "duration": duration,
            "view_count": count_or_none(dig(carrier, "page_info", "media_info", "online_users_number")),
            "like_count": count_or_none(status.get("attitudes_count")),
            "repost_count": count_or_none(status.get("reposts_count")),
            "comment_count": count_or_none(status.get("comments_count")),
            "tags": [t for t in (str_or_none(dig(topic, "topic_title")) for topic in _as_list(status.get("topic_struct")))
                     if t],
            "thumbnail": cover, "webpage_url": canonical_url,
        })
        return Resolved(
            canonical_key=f"weibo:{mid}",
            canonical_url=canonical_url,
            platform=NAME,
            assets=assets,
            title=title,
            uploader=str_or_none(user.get("screen_name")),
            duration=duration,
            published_at=published,
            metadata=metadata,
        )


def resolvers(config: WeiboSettings) -> list[Resolver]:
    """The Weibo resolvers built from the platform's settings (the registry calls this)."""
    return [WeiboResolver(config)]


def user_post_urls(config: WeiboSettings, ctx: ResolveContext, uid: str, max_pages: int = 5,
                   enough: Callable[[list[str]], bool] | None = None) -> list[str]:
    """The post URLs of user ``uid``, newest first, from the mobile profile feed.

    Reads ``GET {mobile_base}/api/container/getIndex?containerid=107603<uid>&page=N`` for
    N = 1..max_pages, stopping at the first page without posts (the real API answers
    ``{"ok": 0, "msg": "这里还没有内容", "data": {"cards": []}}`` past the end), or after the
    first page for which ``enough(page_urls)`` is true (its items are known).

    Raises:
        TrawlError: classified (rate limited, network, a page that is not JSON...).
    """
    resolver = WeiboResolver(config)
    base = config.mobile_base.rstrip("/")
    urls: list[str] = []
    for page in range(1, max_pages + 1):
        query = urlencode({"containerid": f"107603{uid}", "page": page})
        doc = get_json(resolver, f"{base}/api/container/getIndex?{query}", ctx, resolver.api_headers(base + "/", ctx))
        found = [u for u in (_post_url(card, uid) for card in _cards(dig(doc, "data", "cards"))) if u]
        if not found:
            break
        urls.extend(found)
        if enough is not None and enough(found):
            break
    return list(dict.fromkeys(urls))  # a post can move to the next page while we page


# -- helpers ---------------------------------------------------------------------------------
def parse_created_at(value: Any) -> str | None:
    """``Sat Jun 15 11:44:46 +0800 2019`` -> ``2019-06-15T11:44:46+08:00``; None otherwise.

    Parsed by hand rather than with ``strptime`` so the result does not depend on the locale.
    """
    found = _CREATED_AT.fullmatch(value.strip()) if isinstance(value, str) else None
    if not found or found.group(1) not in _MONTHS:
        return None
    _, day, hour, minute, second, sign, off_h, off_m, year = found.groups()
    offset = timedelta(hours=int(off_h), minutes=int(off_m)) * (-1 if sign == "-" else 1)
    try:
        moment = datetime(int(year), _MONTHS[found.group(1)], int(day), int(hour), int(minute), int(second),
                          tzinfo=timezone(offset))
    except ValueError:
        return None
    return moment.isoformat()


def _cover(page_info: Any) -> str | None:
    """The video's page picture: ``page_pic`` (a URL on the desktop API, ``{url}`` on the mobile
    one), else ``pic_info.pic_big.url``."""
    for candidate in (dig(page_info, "page_pic"), dig(page_info, "page_pic", "url"),
                      dig(page_info, "pic_info", "pic_big", "url")):
        url = media_url(candidate)
        if url:
            return url
    return None


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _is_fid(ident: str) -> bool:
    return ":" in ident or "%3a" in ident.lower()


def _digits(value: Any) -> str | None:
    """A positive decimal id from an int or a string, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value) if value > 0 else None
    text = value.strip() if isinstance(value, str) else ""
    if text.isascii() and text.isdigit() and int(text) > 0:
        return text.lstrip("0")
    return None


def _status_mid(status: dict[str, Any]) -> str | None:
    for key in ("mid", "idstr", "id"):
        mid = _digits(status.get(key))
        if mid:
            return mid
    for key in ("mblogid", "bid"):
        code = status.get(key)
        if isinstance(code, str):
            try:
                return mblogid_to_mid(code)
            except ValueError:
                continue
    return None


def _check_ok(doc: dict[str, Any], url: str, *, allow_missing: bool) -> None:
    """Raise the error an API answer states when it is not ``ok: 1`` (see classify_answer)."""
    ok = int_or_none(doc.get("ok"))
    if ok == 1 or (ok is None and allow_missing and _status_mid(doc)):
        return
    if ok is None:
        raise ParseError(f"{NAME}: {url}: response has no ok")
    message = str_or_none(doc.get("msg")) or str_or_none(doc.get("message"))
    error = classify_answer(ok, message, str_or_none(doc.get("url")), f" for {url}")
    if error is not None:
        raise error


def _clean_text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    text = html.unescape(_TAG.sub("", re.sub(r"<br\s*/?>", "\n", value, flags=re.IGNORECASE)))
    return " ".join(text.split()) or None


def _media_carrier(status: dict[str, Any]) -> dict[str, Any]:
    """The status whose media an item takes: the status itself, or for a repost without media
    of its own (m.weibo.cn's shape) the reposted status."""
    if _has_media(status):
        return status
    original = status.get("retweeted_status")
    return original if isinstance(original, dict) and _has_media(original) else status


def _has_media(status: dict[str, Any]) -> bool:
    return video_asset(status.get("page_info"), {})[0] is not None or has_pictures_or_mix(status)


def _title(status: dict[str, Any], carrier: dict[str, Any]) -> str | None:
    """The status's text; for a repost whose text is Weibo's placeholder, the video's own title."""
    own = _own_text(status)
    if own and own not in REPOST_PLACEHOLDERS:
        return own
    page_info = carrier.get("page_info")
    # page_info.title and media_info.kol_title are the video's title; content2 is its post's text.
    for candidate in (dig(page_info, "title"), dig(page_info, "media_info", "kol_title"),
                      dig(page_info, "content2"), _own_text(status.get("retweeted_status"))):
        text = _clean_text(candidate)
        if text and text not in REPOST_PLACEHOLDERS:
            return text
    return None  # never the placeholder alone


def _own_text(status: Any) -> str | None:
    """What the status's author wrote (desktop ``text_raw``, mobile ``raw_text``, or ``text``)."""
    for candidate in (dig(status, "text_raw"), dig(status, "raw_text"), dig(status, "text")):
        text = _clean_text(candidate)
        if text:
            return text
    return None


def _repost_hint(status: dict[str, Any]) -> str:
    original = status.get("retweeted_status")
    if not isinstance(original, dict):
        return ""
    mid = _status_mid(original)
    return f"; it reposts status {mid}, which has none either" if mid else "; it is a repost"


def _cards(cards: Any) -> list[dict[str, Any]]:
    """Post cards (``card_type`` 9), including those nested in ``card_group``s."""
    out: list[dict[str, Any]] = []
    for card in cards if isinstance(cards, list) else []:
        if not isinstance(card, dict):
            continue
        if int_or_none(card.get("card_type")) == 9:
            out.append(card)
        out.extend(_cards(card.get("card_group")))
    return out


def _post_url(card: dict[str, Any], uid: str) -> str | None:
    mblog = card.get("mblog") if isinstance(card.get("mblog"), dict) else {}
    mid = _status_mid(mblog)
    if not mid:
        return None
    author = _digits(dig(mblog, "user", "id")) or _digits(uid) or uid
    return f"{REAL_HOST}/{author}/{mid_to_mblogid(mid)}"
