"""Facebook photos: one image item per photo, read from the photo page the way gallery-dl reads it.

URL forms (gallery-dl's ``FacebookPhotoExtractor``, and the paths Facebook links to):
``/photo.php?fbid=<id>``, ``/photo.php/?fbid=``, ``/photo?fbid=``, ``/photo/?fbid=<id>`` with any
``set=``/``type=``/``fbs=`` parameters, ``/<page>/photos/<set>/<id>/`` (``a.<album>``,
``pb.<uid>.-2207520000``, ``pcb.<post>``...) and ``/<page>/photos/<id>``, on ``www.``, ``m.``,
``web.`` and locale hosts. A photo URL with ``&setextract`` is the whole set from that photo on: a
listing (:mod:`.listings`), not this item.

**The key is ``facebook:photo:<id>``, not ``facebook:<id>``.** Facebook's ids are one namespace
(a photo and a video never share an id), but one object can be reached as both: videos sit in
albums and photo sets, and Facebook's photo viewer (``photo.php?v=``, ``/photo/?fbid=``) has
always shown videos too. Under ``facebook:<id>``, a photo URL that turned out to name a video would
store its still image under the video's key, and the video would then be a duplicate for ever; a
key of its own lets the worst case be one object stored twice, never a video lost.

The page is ``/photo/?fbid=<id>&set=<set>`` (gallery-dl asks ``&set=`` empty for one photo). What
is read is cut out of the page's text at the markers gallery-dl cuts at (``parse_photo_page``):
the photo's id after ``"__isNode":"Photo","id":"``, the full-size image after
``,"image":{"uri":"``, the next photo of the set after ``"nextMediaAfterNodeId":{"__typename":"Photo","id":"``
(or ``"nextMedia":{"edges":[{"node":{"__typename":"Photo","id":"``), the set from the photo's own
``"url":"https:\\/\\/www.facebook.com\\/photo\\/?fbid=...&set=<set>"``, the owner after
``"owner":{"__typename":"User","name":"`` / ``"id":"``, the caption from ``"message":{"delight_ranges"``
... ``],"text":"``, the date after ``\\"publish_time\\":`` or ``"created_time":``. A redirect to
``/login`` is Facebook's wall for anonymous photo views (``login_required``), ``{"__dr":"CometErrorRoot.react"}``
its block (``rate_limited``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from trawl.errors import LoginRequired, ParseError, RateLimited, UnsupportedUrl, cookies_advice
from trawl.models import Asset, Resolved, compact, upload_date
from trawl.platforms.base import Page, ResolveContext, Resolver, base_pattern, int_or_none, unsupported
from trawl.platforms.facebook.config import FacebookSettings
from trawl.platforms.facebook.errors import classify_page
from trawl.platforms.facebook.hosts import HOSTS, page_headers
from trawl.urls import validate_url

_SET = r"[A-Za-z0-9._-]+"  # a set id: a.<album>, pb.<uid>.-2207520000, pcb.<post id or pfbid...>, t.<uid>
BLOCKED_MARKER = '{"__dr":"CometErrorRoot.react"}'


def photo_key(photo_id: str) -> str:
    return f"facebook:photo:{photo_id}"


def photo_url(photo_id: str) -> str:
    """The one URL form every Facebook photo has."""
    return f"https://www.facebook.com/photo/?fbid={photo_id}"


def extr(text: str, begin: str, end: str, start: int = 0) -> str:
    """The text between the first ``begin`` (from ``start``) and the next ``end``; "" when either
    is missing (gallery-dl's ``text.extr``)."""
    at = text.find(begin, start)
    if at < 0:
        return ""
    at += len(begin)
    stop = text.find(end, at)
    return text[at:stop] if stop >= 0 else ""


def json_string(raw: str) -> str:
    """A JSON string's contents as cut out of the page (``\\/``, ``\\u00e9``, surrogate pairs)."""
    if not raw:
        return ""
    try:
        value = json.loads(f'"{raw}"')
    except ValueError:
        return raw.replace("\\/", "/")
    return value if isinstance(value, str) else ""


@dataclass
class PhotoPage:
    """What a photo page says (every field may be empty)."""

    id: str
    url: str  # the full-size image
    next_id: str
    set_id: str
    owner: str
    owner_id: str
    caption: str
    timestamp: int | None


def parse_photo_page(text: str) -> PhotoPage:
    """A photo page read at gallery-dl's markers (``FacebookExtractor.parse_photo_page``)."""
    caption_raw = extr(text, '"message":{"delight_ranges"', '"},"message_preferred_body"')
    caption = caption_raw.rsplit('],"text":"', 1)[-1] if '],"text":"' in caption_raw else ""
    date = extr(text, '\\"publish_time\\":', ",") or extr(text, '"created_time":', ",")
    set_id = extr(text, '"url":"https:\\/\\/www.facebook.com\\/photo\\/?fbid=', '"')
    return PhotoPage(
        id=extr(text, '"__isNode":"Photo","id":"', '"'),
        url=json_string(extr(text, ',"image":{"uri":"', '","')),
        next_id=extr(text, '"nextMediaAfterNodeId":{"__typename":"Photo","id":"', '"')
        or extr(text, '"nextMedia":{"edges":[{"node":{"__typename":"Photo","id":"', '"'),
        set_id=set_id.rsplit("&set=", 1)[-1] if "&set=" in set_id else "",
        owner=json_string(extr(text, '"owner":{"__typename":"User","name":"', '"')),
        owner_id=extr(text, '"owner":{"__typename":"User","id":"', '"'),
        caption=json_string(caption),
        timestamp=_timestamp(date),
    )


def _timestamp(value: str) -> int | None:
    number = int_or_none(value.strip().strip('"'))
    return number if number is not None and 0 < number < 253402300800 else None


def check_photo_answer(page: Page, where: str) -> None:
    """Raise what a photo page answer states instead of a photo: the ``/login`` redirect Facebook
    sends anonymous visitors after a few photos, or its block (gallery-dl's
    ``photo_page_request_wrapper``)."""
    if urlsplit(page.url).path.startswith("/login"):
        raise LoginRequired(f"facebook: photo pages answer with the login page ({page.url}){where}; "
                            f"{cookies_advice('facebook')}")
    if BLOCKED_MARKER in page.text():
        raise RateLimited(f"facebook: the page says it is an error page (CometErrorRoot): Facebook blocks photo "
                          f"views for a while{where}")


class FacebookPhotoResolver(Resolver):
    """``facebook:photo``: one image, the full-size one the photo page names."""

    name = "facebook:photo"
    platform = "facebook"

    def __init__(self, config: FacebookSettings) -> None:
        self.config = config
        site = base_pattern(HOSTS, config.page_base)
        no_setextract = r"(?![^#]*&setextract(?:[=&#]|$))"
        self.url_patterns = (
            re.compile(rf"{site}/photo(?:\.php)?/?\?{no_setextract}(?:[^#]*&)?fbid=(?P<id>\d+)(?:[&#].*)?$",
                       re.IGNORECASE),
            re.compile(rf"{site}/(?!photo\.php/|groups/|events/|media/)[^/?#]+/photos/(?:(?P<set>{_SET})/)?"
                       rf"(?P<id>\d+)/?(?:[?#].*)?$", re.IGNORECASE),
        )

    def photo_id(self, url: str) -> str | None:
        found = self.match(url)
        return found.group("id") if found else None

    def offline_key(self, url: str) -> str | None:
        photo_id = self.photo_id(url)
        return photo_key(photo_id) if photo_id else None

    def page_url(self, photo_id: str, set_id: str = "") -> str:
        return f"{self.config.page_base.rstrip('/')}/photo/?fbid={photo_id}&set={set_id}"

    def resolve(self, url: str, ctx: ResolveContext) -> Resolved:
        url = validate_url(url)
        photo_id = self.photo_id(url)
        if photo_id is None:
            raise unsupported(url, "not a Facebook photo URL")
        page = self.fetch_page(self.page_url(photo_id), ctx, page_headers(self.config), item_url=url)
        return self.from_page(page, photo_id, url)

    def from_page(self, page: Page, photo_id: str, url: str) -> Resolved:
        """The item of photo ``photo_id`` from its page.

        Raises:
            TrawlError: what the page states instead (a login redirect, a block, "not available").
            ParseError: the page names no image, or is about another photo.
        """
        where = f" for {url} (photo {photo_id})"
        check_photo_answer(page, where)
        text = page.text()
        photo = parse_photo_page(text)
        if photo.id and photo.id != photo_id:
            raise ParseError(f"facebook: {page.url}: the page is about photo {photo.id}, not {photo_id}")
        image = _image_url(page.url, photo.url)
        if not image:
            stated = classify_page(text, where, "the photo")
            if stated is not None:
                raise stated
            raise ParseError(f"facebook: {page.url}: no image of photo {photo_id} in the page "
                             f'(,"image":{{"uri":"...)')
        title = (photo.caption.splitlines() or [""])[0].strip() or None
        headers = {"User-Agent": self.config.user_agent}
        return Resolved(
            canonical_key=photo_key(photo_id),
            canonical_url=photo_url(photo_id),
            platform=self.platform,
            title=title,
            uploader=photo.owner or None,
            assets=[Asset(name="image", kind="image", urls=[image], headers=headers)],
            metadata=compact({
                "id": photo_id, "title": title, "description": photo.caption or None,
                "uploader": photo.owner or None, "uploader_id": photo.owner_id or None,
                "timestamp": photo.timestamp, "upload_date": upload_date(photo.timestamp),
                "set_id": photo.set_id or None, "webpage_url": photo_url(photo_id),
            }),
        )


def _image_url(base: str, value: str) -> str | None:
    if not value:
        return None
    try:
        return validate_url(urljoin(base, value))
    except (UnsupportedUrl, ValueError):
        return None
