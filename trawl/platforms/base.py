"""What every resolver shares: the interface, page fetching with limits, coercion helpers."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx

from trawl.errors import ParseError, TooLarge, UnsupportedUrl, classify_exception, classify_response
from trawl.models import Resolved


@dataclass
class ResolveContext:
    client: httpx.Client
    max_page_bytes: int


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

    Subclasses declare ``name`` (``platform:kind``), ``platform`` and ``url_patterns`` (regular
    expressions with a named ``id`` group, matched against the whole URL).
    """

    name: ClassVar[str]
    platform: ClassVar[str]
    url_patterns: ClassVar[tuple[re.Pattern[str], ...]] = ()

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

    @abstractmethod
    def resolve(self, url: str, ctx: ResolveContext) -> Resolved:
        """Resolve ``url``; raise a :class:`trawl.errors.TrawlError` on failure."""

    # -- helpers ---------------------------------------------------------------------------
    def fetch_page(self, url: str, ctx: ResolveContext, headers: dict[str, str] | None = None) -> Page:
        """GET a page, refusing bodies over the page limit and classifying failures."""
        try:
            with ctx.client.stream("GET", url, headers=headers) as resp:
                body = _read_limited(resp, ctx.max_page_bytes, url)
        except httpx.HTTPError as exc:
            raise classify_exception(exc) from None
        error = classify_response(resp.status_code, resp.headers, body, url=url)
        if error is not None:
            raise error
        return Page(str(resp.url), resp.status_code, resp.headers, body)


def _read_limited(resp: httpx.Response, limit: int, url: str) -> bytes:
    declared = resp.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit and resp.status_code < 400:
        raise TooLarge(f"page {url} announces {declared} bytes, over the {limit}-byte page limit")
    buf = bytearray()
    for chunk in resp.iter_bytes():
        buf += chunk
        if len(buf) > limit:
            if resp.status_code >= 400:
                break
            raise TooLarge(f"page {url} is larger than the {limit}-byte page limit")
    return bytes(buf)


def int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def float_or_none(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


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
