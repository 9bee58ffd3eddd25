"""What a platform declares: one :class:`Platform` object per platform module, and the settings
every platform has.

A platform module (``trawl/platforms/<name>/``) holds everything about its platform and exports
one :class:`Platform`; :data:`trawl.platforms.registry.PLATFORMS` lists them, generic last. The
rest of trawl reads platforms only through that list: the settings' ``[platforms.<name>]``
sections (:func:`platforms_model`), the resolvers, the source kinds, the error tables read on
answers of unknown origin, the cookie domains of ``--cookies``, the demo.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from trawl.errors import AnswerRules

if TYPE_CHECKING:
    from trawl.extras import Extra
    from trawl.platforms.base import ResolveContext, Resolver
    from trawl.simulator.demo import DemoCase
    from trawl.simulator.server import Simulator

BROWSER_UA = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
              "Chrome/130.0.0.0 Safari/537.36")


class PlatformSettings(BaseModel):
    """What every platform has: on/off, politeness, extra headers, an optional cookies file.

    A platform's own settings model adds its fields (base URLs default to the real sites; tests
    and the demo point them at the simulator).
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True  # false: its resolvers are not used (generic is always on)
    # Fetches per second for this platform, enforced by the server across all workers.
    requests_per_second: float = Field(default=2.0, gt=0)
    headers: dict[str, str] = {}  # extra request headers its resolver sends (generic's sends none)
    # A Netscape cookies.txt file; only its path travels, never its contents.
    cookies_file: str = ""
    # The cover image (a platform's cover picture, og:image) as a `thumbnail` asset beside the
    # media; a cover that cannot be downloaded never fails its item.
    thumbnails: bool = True
    # The platform's extras (danmaku, subtitles, comments: docs/extras.md) fetched after an item
    # is committed, by name; None: every extra it offers, []: none. A platform names its own.
    extras: list[str] | None = None


# A source kind's listing: (the platform's resolver in the registry, context, the source's id,
# max_pages, enough) -> item URLs, newest first; ``enough(page_urls)`` true stops after that page.
Listing = Callable[["Resolver", "ResolveContext", str, int, "Callable[[list[str]], bool] | None"], list[str]]


class Listed(list[str]):
    """What a listing may return instead of a plain list of URLs (it is one): the URLs to crawl,
    with what the listing said besides, which the catalog keeps (its page in the web UI): the
    listing's ``title``, each URL's ``titles`` as listed, and ``gone``, the entries it lists as
    dead (deleted or hidden upstream, never crawlable: not among the URLs), each as
    ``(url, title, the listing's words for it)``, in the listing's order with the others
    (``order``: every URL and dead entry's URL, as listed)."""

    def __init__(self, urls: list[str] = (), *, title: str | None = None,  # type: ignore[assignment]
                 titles: dict[str, str] | None = None, gone: list[tuple[str, str | None, str]] | None = None,
                 order: list[str] | None = None) -> None:
        super().__init__(urls)
        self.title = title
        self.titles = titles or {}
        self.gone = gone or []
        self.order = order or [*urls, *(url for url, _, _ in self.gone)]


def _id_group(match: re.Match[str]) -> str:
    return match.group("id")


@dataclass(frozen=True)
class ListingForm:
    """A listing URL form (a profile, an uploader's space, a collection, an album, a feed) that
    its platform claims offline, as yt-dlp's playlist extractors claim theirs.

    ``pattern`` is matched with ``re.match`` against the URL; ``listing_id(match)`` gives the id
    its ``kind`` of source lists (the ``id`` group by default; a composite id such as
    ``<mid>:<season id>`` when the listing needs two). A form only a logged-in account can list
    says why in ``login_required``: it is refused offline, as ``login_required``, never fetched.
    """

    kind: str  # a source kind of the platform's ``listings``
    pattern: re.Pattern[str]
    listing_id: Callable[[re.Match[str]], str] = _id_group
    login_required: str = ""
    # A form that is not a URL (yt-dlp's ``bilisearch:QUERY``): matched against the text as given,
    # before it is checked as a URL.
    pseudo: bool = False


def imported_when_called(target: str) -> Callable[..., Any]:
    """``"package.module:function"``, its module imported at the first call: a platform's simulated
    site (the demo's) loads only in the process that runs the demo, not in every command."""
    module, name = target.split(":")

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    return call


@dataclass(frozen=True)
class PlatformDemo:
    """A platform's part of ``trawl demo``, installed on a simulator of its own."""

    settings: PlatformSettings | None  # the platform's settings pointing at the simulator (None: unchanged)
    cases: list[DemoCase]
    failures: str  # the failures its cases expect, in a few words ("a deleted ... video")


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one object per platform
class Platform:
    """Everything trawl needs to know about one platform.

    ``name`` is the settings section (``[platforms.<name>]``, ``TRAWL_PLATFORMS__<NAME>__...``),
    ``Resolved.platform``, the first part of canonical keys and the fetch task queue
    (``trawl-fetch-<name>``): it never changes once items are stored.
    """

    name: str
    title: str  # how people write it; the demo's header names it
    settings: type[PlatformSettings]
    # The resolvers built from the platform's settings, in the order they are tried.
    resolvers: Callable[[Any], list[Resolver]]
    # Defaults of the settings section that differ from the model's (the generic platform's rate).
    defaults: Mapping[str, Any] = field(default_factory=dict)
    # Source kinds (``[[sources]] kind = ...``) this platform lists: kind -> listing.
    listings: Mapping[str, Listing] = field(default_factory=dict)
    # The listing URL forms it claims, built from its settings like its resolvers (the hosts of
    # its configured base URLs count): a URL of one of these is expanded as a source of that kind.
    listing_forms: Callable[[Any], list[ListingForm]] | None = None
    # What its answers state besides HTTP statuses (error codes in JSON, a refusal header); read
    # on its own answers and on answers of unknown origin (:func:`trawl.errors.classify_response`).
    errors: AnswerRules | None = None
    # The real domains its cookies belong to (``trawl crawl --cookies`` splits a cookies.txt by
    # them; the hosts of the settings' ``*_base`` URLs count too).
    cookie_domains: tuple[str, ...] = ()
    # The cookie a logged-in session of it holds: a crawl given cookies says
    # when it has expired or is about to, once, instead of items failing one by one.
    login_cookie: str = ""
    # Its simulated site with the demo's cases, for ``trawl demo``.
    demo: Callable[[Simulator], PlatformDemo] | None = None
    # Its extras (trawl.extras), by name, each built from its settings; fetched in this order.
    extras: Mapping[str, Callable[[Any], Extra]] = field(default_factory=dict)
    # Its live recordings' comments (trawl.download.live_comments): (its settings, a recording's
    # canonical URL) -> the comment source a recording's download runs beside it, or None.
    live_comments: Callable[[Any, str], Any] | None = None

    def default_settings(self) -> PlatformSettings:
        return self.settings(**self.defaults)


class PlatformsSettingsBase(BaseModel):
    """``[platforms]``: one section per platform of the registry, read like a mapping
    (``platforms["generic"]``, ``platforms.items()``) or by attribute (``platforms.generic``)."""

    model_config = ConfigDict(extra="forbid")

    def __getitem__(self, name: str) -> PlatformSettings:
        if name not in type(self).model_fields:
            raise KeyError(name)
        return getattr(self, name)

    def __contains__(self, name: object) -> bool:
        return name in type(self).model_fields

    def __len__(self) -> int:
        return len(type(self).model_fields)

    def keys(self) -> list[str]:
        return list(type(self).model_fields)

    def values(self) -> list[PlatformSettings]:
        return [getattr(self, name) for name in type(self).model_fields]

    def items(self) -> Iterator[tuple[str, PlatformSettings]]:
        return ((name, getattr(self, name)) for name in type(self).model_fields)

    def get(self, name: str, default: PlatformSettings | None = None) -> PlatformSettings | None:
        return self[name] if name in self else default


@cache
def platforms_model(platforms: Sequence[Platform]) -> type[PlatformsSettingsBase]:
    """The ``[platforms]`` settings model of these platforms: a section each, in their order.

    Cached, so one list of platforms gives one class (``platforms`` must be a tuple).
    """
    fields: dict[str, Any] = {p.name: (p.settings, p.default_settings()) for p in platforms}
    offered = {p.name: tuple(p.extras) for p in platforms}

    def _known_extras(self: PlatformsSettingsBase) -> PlatformsSettingsBase:
        for name, section in self.items():
            unknown = [extra for extra in section.extras or () if extra not in offered[name]]
            if unknown:
                raise ValueError(f"{name}.extras: {', '.join(map(repr, unknown))} not among its extras "
                                 f"({', '.join(offered[name]) or 'none'})")
        return self

    return create_model("PlatformsSettings", __base__=PlatformsSettingsBase, __module__="trawl.settings",
                        __validators__={"_known_extras": model_validator(mode="after")(_known_extras)}, **fields)
