"""What every resolver shares: the interface, page fetching with limits, coercion helpers."""

from __future__ import annotations

import http.cookiejar
import json
import math
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx

from trawl.errors import NO_ANSWER_RULES, AnswerRules, ParseError, UnsupportedUrl, classify_exception, classify_response
from trawl.models import Resolved
from trawl.shared_state import SharedState


@dataclass
class ResolveContext:
    client: httpx.Client
    max_page_bytes: int
    quality: int = 0  # the tallest video wanted, in lines (a crawl's -f); 0: the platform's setting
    audio: str = ""  # lossless, dolby or aac (a crawl's -f ...+ba[acodec=...]); "": the platform's setting
    # What the platform's workers share across processes (a visitor session: trawl.shared_state);
    # None: the resolver keeps its own in this process.
    shared: SharedState | None = None


@dataclass
class Page:
    url: str  # after redirects
    status: int
    headers: httpx.Headers
    body: bytes

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    def text(self) -> str:
        return self.body.decode(_charset(self.headers.get("content-type", "")), "replace")


def _charset(content_type: str) -> str:
    match = re.search(r"charset=([\w.-]+)", content_type, re.IGNORECASE)
    return match.group(1) if match else "utf-8"


class Resolver(ABC):
    """Turns a page URL into a :class:`Resolved` item.

    Subclasses declare ``name`` (``platform:kind``), ``platform``, ``url_patterns`` (regular
    expressions with a named ``id`` group, matched against the whole URL) and, when their
    platform states errors inside its answers, ``answers`` (its :class:`AnswerRules`).
    """

    name: ClassVar[str]
    platform: ClassVar[str]
    url_patterns: ClassVar[tuple[re.Pattern[str], ...]] = ()
    answers: ClassVar[AnswerRules] = NO_ANSWER_RULES

    def match(self, url: str) -> re.Match[str] | None:
        for pattern in self.url_patterns:
            found = pattern.match(url)
            if found:
                return found
        return None

    def claims(self, url: str) -> bool:
        return self.match(url) is not None

    def offline_key(self, url: str) -> str | None:
        """The canonical key when it follows from the URL alone, else None."""
        return None

    def watch_source(self, url: str) -> dict[str, Any] | None:
        """The source a watch of ``url`` polls instead of crawling it (a live room: a listing that
        names the room while it is live, nothing while it is off air); None: crawled as it is."""
        return None

    def watch_target(self, url: str, ctx: ResolveContext) -> str | None:
        """The URL ``url`` leads to when only a request tells (a short link, followed once, when
        a watch of it is added), for :meth:`watch_source` of that URL's resolver; None: ``url``
        stands for itself. Most URLs do."""
        return None

    def more_offline(self, url: str, metadata: dict[str, Any]) -> list[str] | None:
        """The other items ``url`` stands for besides the committed one whose stored ``metadata``
        is given (parts 2..N of a video); None when only the platform can tell. Most URLs stand
        for one item: []."""
        return []

    @abstractmethod
    def resolve(self, url: str, ctx: ResolveContext) -> Resolved:
        """Resolve ``url``; raise a :class:`trawl.errors.TrawlError` on failure."""

    # -- helpers ---------------------------------------------------------------------------
    def fetch_page(self, url: str, ctx: ResolveContext, headers: dict[str, str] | None = None,
                   platform_codes: bool = True, item_url: str = "") -> Page:
        """GET a page, refusing bodies over the page limit and classifying failures.

        ``platform_codes=False`` ignores JSON error codes in a 200 answer (for an API that
        says "not logged in" and still carries what we need).
        ``item_url`` is the URL the user gave, named in the error when ``url`` is an API call.
        """
        try:
            with ctx.client.stream("GET", url, headers=headers) as resp:
                body = read_limited(resp, ctx.max_page_bytes, url)
        except httpx.HTTPError as exc:
            raise classify_exception(exc) from None
        checked = body if platform_codes or resp.status_code >= 400 else None
        error = classify_response(resp.status_code, resp.headers, checked, url=url, item_url=item_url,
                                  answers=self.answers)
        if error is not None:
            raise error
        return Page(str(resp.url), resp.status_code, resp.headers, body)


def read_limited(resp: httpx.Response, limit: int, url: str) -> bytes:
    """:func:`trawl.http_client.read_limited`: the body of ``resp``, refused past ``limit`` bytes."""
    # Imported here: trawl.http_client reads the settings, which are built from the platforms' list.
    from trawl.http_client import read_limited as read

    return read(resp, limit, url)


def int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):  # json reads 1e400 and Infinity as inf
        return None


def float_or_none(value: Any) -> float | None:
    """A finite float, or None (a 400-digit JSON integer, inf and NaN are not durations)."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def str_or_none(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def require(value: Any, platform: str, url: str, path: str) -> Any:
    """Return ``value`` or raise ParseError naming the missing ``path``."""
    if value is None or value == "" or value == []:
        raise ParseError(f"{platform}: {url}: response has no {path}")
    return value


def unsupported(url: str, why: str) -> UnsupportedUrl:
    return UnsupportedUrl(f"{url}: {why}")


def dig(obj: Any, *path: str | int) -> Any:
    """``obj[path[0]][path[1]]...`` or None when any step is missing or of the wrong type."""
    for key in path:
        if isinstance(key, int):
            if not isinstance(obj, list) or not -len(obj) <= key < len(obj):
                return None
        elif not isinstance(obj, dict):
            return None
        obj = obj[key] if isinstance(key, int) else obj.get(key)
    return obj


def base_pattern(real_hosts: str, *configured: str) -> str:
    """A regex for the scheme and host part of a platform's URLs.

    ``real_hosts`` is a regex of the real host names (e.g. ``(?:www\\.|m\\.)?example\\.com``);
    ``configured`` are base URLs from the settings (the simulator's, in tests), matched exactly.
    """
    alternatives = [rf"https?://{real_hosts}"]
    for base in configured:
        if base:
            alternatives.append(re.escape(base.rstrip("/")))
    return "(?:" + "|".join(alternatives) + ")"


def load_cookies(path: str) -> dict[str, str]:
    """Cookies from a Netscape ``cookies.txt`` file (as browsers' export extensions write it)."""
    if not path:
        return {}
    jar = http.cookiejar.MozillaCookieJar(path)
    try:
        jar.load(ignore_discard=True, ignore_expires=True)
    except (OSError, http.cookiejar.LoadError) as exc:
        raise ParseError(f"cannot read cookies file {path}: {exc}") from None
    return {cookie.name: cookie.value or "" for cookie in jar}


def get_json(resolver: Resolver, url: str, ctx: ResolveContext, headers: dict[str, str] | None = None,
             platform_codes: bool = True, item_url: str = "") -> dict:
    """GET a JSON API; platform error codes are classified (see ``trawl.errors``), naming ``item_url``."""
    return json_object(resolver.platform, url, resolver.fetch_page(url, ctx, headers, platform_codes, item_url))


def json_object(platform: str, url: str, page: Page) -> dict:
    """The page's body as a JSON object, or ParseError saying what it was instead."""
    try:
        doc = json.loads(page.body)
    except ValueError:
        raise ParseError(f"{platform}: {url}: answer is not JSON ({page.content_type})") from None
    if not isinstance(doc, dict):
        raise ParseError(f"{platform}: {url}: JSON answer is not an object")
    return doc
