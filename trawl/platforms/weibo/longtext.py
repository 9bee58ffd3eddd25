"""A long post's full text: Weibo cuts a status's ``text`` at about 140 characters and marks it
``isLongText``; the rest comes from an API of its own.

- Desktop: ``GET {page_base}/ajax/statuses/longtext?id=<mblogid>`` (with the Referer) answers
  ``{"ok": 1, "http_code": 200, "data": {"longTextContent": "<plain text>", "url_struct": [...],
  "topic_struct": [...]}}``; ``data`` is empty for a post without more text.
- Mobile: ``GET {mobile_base}/statuses/extend?id=<mid>`` answers ``{"ok": 1, "data": {"ok": 1,
  "longTextContent": "<HTML, <br /> between lines>", "reposts_count": ..., ...}}``.
- A list answer may carry the text already (``longText.longTextContent``): taken as it is.

Both shapes come from open-source readers of the two APIs (weibo-crawler, RSS bots and
archivers found by the search tool), not from a capture. The desktop API is asked first, the
mobile one when the desktop refuses; the full text is the item's description, never a reason to
fail it: a refusal with no retry to wait for (the text is gone, a login wall) leaves the cut text,
and the item says so (``metadata.text_truncated``). Rate limiting and network trouble are raised,
so the fetch is retried later, as for the status itself.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from trawl.errors import TrawlError
from trawl.platforms.base import ResolveContext, dig, json_object, str_or_none
from trawl.platforms.weibo.errors import classify_redirect

if TYPE_CHECKING:
    from trawl.platforms.weibo.resolver import WeiboResolver

_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>")


def is_long(status: dict[str, Any]) -> bool:
    """Whether Weibo says the status's text is cut (``isLongText``)."""
    return status.get("isLongText") is True or status.get("isLongText") == 1


def long_text(resolver: WeiboResolver, status: dict[str, Any], mid: str, mblogid: str, url: str,
              ctx: ResolveContext) -> str | None:
    """The full text of a status marked ``isLongText``; None when it is not marked, or when
    neither API gives the text and asking again cannot help.

    Raises:
        TrawlError: a retryable failure of the last API asked (rate limited, network, 5xx).
    """
    if not is_long(status):
        return None
    embedded = clean_long_text(dig(status, "longText", "longTextContent"), markup=True)
    if embedded:
        return embedded
    config = resolver.config
    desktop = f"{config.page_base.rstrip('/')}/ajax/statuses/longtext?{urlencode({'id': mblogid})}"
    mobile_base = config.mobile_base.rstrip("/")
    mobile = f"{mobile_base}/statuses/extend?{urlencode({'id': mid})}"
    waited: TrawlError | None = None  # a retryable refusal: the fetch is tried again later
    for api, referer, markup in ((desktop, config.referer, False), (mobile, mobile_base + "/", True)):
        try:
            page = resolver.fetch_page(api, ctx, resolver.api_headers(referer, ctx), item_url=url)
            if classify_redirect(page.url) is not None:
                continue  # the visitor system or a login page instead of an answer: try the other API
            doc = json_object("weibo", api, page)
        except TrawlError as error:
            waited = error if error.retryable else waited
            continue
        text = clean_long_text(dig(doc, "data", "longTextContent"), markup=markup) if doc.get("ok") in (1, "1") else None
        if text:
            return text
    if waited is not None:
        raise waited
    return None


def clean_long_text(value: Any, *, markup: bool) -> str | None:
    """The text as a reader sees it, its line breaks kept: HTML (``markup``) loses its tags and
    entities; plain text only its trailing spaces."""
    text = str_or_none(value)
    if text is None:
        return None
    if markup:
        text = html.unescape(_TAG.sub("", _BREAK.sub("\n", text)))
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() or None
