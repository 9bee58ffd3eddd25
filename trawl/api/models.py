"""The API's request and response bodies: what the OpenAPI schema declares, field by field."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from trawl.starter.client import MAX_CRAWL_CONCURRENCY, MAX_URLS_PER_REQUEST
from trawl.errors import TrawlError
from trawl.listing_filters import FilterError, ListingFilters
from trawl.urls import MAX_URL_LENGTH, validate_url
from trawl.contracts import CrawlStats
from trawl.starter.waiting import RunningItems

JobStatus = Literal["PENDING", "PROCESSING", "COMPLETED", "FAILED", "CANCELLED", "PAUSED"]
Action = Literal["pause", "resume", "cancel"]
CRAWL_URLS_LIMITS = (f"At most {MAX_URLS_PER_REQUEST} URLs per request, within api.max_body_bytes (413 beyond "
                     "either); a crawl holds any number: start it with the first part, then POST the rest to "
                     "/api/v1/crawls/{id}/urls in parts.")


# -- errors ----------------------------------------------------------------------------------------
class Error(BaseModel):
    """Every error but a validation error: one sentence saying what was wrong."""

    detail: str = Field(examples=["no such item: 'web:0123'"])


class InvalidInput(BaseModel):
    """One refused input: where it was (``["body", "urls", 2]``), why, and what it was."""

    loc: list[str | int]
    msg: str
    type: str
    input: Any = None
    ctx: dict[str, Any] | None = None


class RequestInvalid(BaseModel):
    """A request that does not fit the schema: one issue per refused input (a refusal the
    schema cannot express, such as an unknown source, is one sentence)."""

    detail: list[InvalidInput] | str


class Asset(BaseModel):
    """A committed file, named by its blob's ``key`` in the store (``sha256/ab/cd/<sha256>``);
    its bytes are at ``/api/v1/items/{canonical_key}/assets/{kind}``."""

    kind: str
    name: str
    sha256: str
    size: int
    key: str
    path: str | None = Field(description="always null here: the API names no file of the server's "
                                         "(`trawl items --json` shows the file or s3:// URL)")
    mime: str | None


# -- jobs ------------------------------------------------------------------------------------------
class JobCreate(BaseModel):
    url: str = Field(max_length=MAX_URL_LENGTH, examples=["https://example.com/watch/clip"])

    @field_validator("url")
    @classmethod
    def _valid_url(cls, value: str) -> str:
        try:
            return validate_url(value)
        except TrawlError as err:
            raise ValueError(err.message) from None


class Progress(BaseModel):
    bytes_done: int = 0
    bytes_total: int | None = None
    percent: float | None = None


class Job(BaseModel):
    """TaskCrawler's job fields, then trawl's own."""

    id: str
    url: str
    status: JobStatus
    retry_count: int
    scraped_title: str | None = None
    error_log: str | None = None
    canonical_key: str | None = None
    platform: str | None = None
    stage: str | None = None
    progress: Progress = Progress()
    outcome: str | None = None
    assets: list[Asset] = []


# -- crawls ----------------------------------------------------------------------------------------
class ListingFilterFields(BaseModel):
    """yt-dlp's selection options (trawl crawl --dateafter, ...), applied while each listing of the
    crawl (and its source) pages; a filter that does not parse is a 422 naming the mistake."""

    dateafter: str = Field(default="", max_length=100, description="YYYYMMDD, today, now-7days: published on or after")
    datebefore: str = Field(default="", max_length=100, description="published on or before")
    match_filter: str = Field(default="", max_length=1000, examples=["duration > 60 & view_count >= 1000"],
                              description="conditions joined by '&' on duration, view_count, title, is_live")
    max_downloads: int = Field(default=0, ge=0, description="at most this many entries of each listing (0: all)")
    playlist_items: str = Field(default="", max_length=1000, examples=["1-5,8,-3:"],
                                description="entries of each listing by position")

    @model_validator(mode="after")
    def _filters_parse(self) -> ListingFilterFields:
        try:
            self.filters()
        except FilterError as err:
            raise ValueError(str(err)) from None
        return self

    def filters(self) -> ListingFilters | None:
        """The filters set (parsed once: FilterError on a mistake), or None."""
        filters = ListingFilters(self.dateafter, self.datebefore, self.match_filter, self.max_downloads,
                                 self.playlist_items)
        filters.check()
        return filters or None


class CrawlCreate(ListingFilterFields):
    urls: list[str] = Field(default_factory=list, description=CRAWL_URLS_LIMITS)
    source: str | None = Field(default=None, max_length=200)
    concurrency: int = Field(default=8, ge=1, le=MAX_CRAWL_CONCURRENCY)

    @model_validator(mode="after")
    def _something_to_crawl(self) -> CrawlCreate:
        if not self.urls and not self.source:
            raise ValueError("give urls or source")
        return self


class UrlsAdd(BaseModel):
    urls: list[str] = Field(min_length=1, description=CRAWL_URLS_LIMITS)


class Crawl(BaseModel):
    """A crawl: Temporal's status (``RUNNING``, ``COMPLETED``, ``FAILED``, ...; ``CANCELLED`` for a
    cancelled one, as for jobs) and its counts,
    which are known while it runs and once it completed; ``refused`` lists the URLs this request
    gave that were refused."""

    id: str
    status: str
    stats: CrawlStats | None = None
    refused: list[str] = []
    # A running crawl's items (GET /crawls/{id} only): what stage they are in, and what those that
    # make no progress wait for (a failure they retry after, a host, a worker), since when.
    items: RunningItems | None = None


class CrawlPage(BaseModel):
    crawls: list[Crawl]
    limit: int
    offset: int


# -- the catalog -----------------------------------------------------------------------------------
class ExtraMatch(BaseModel):
    """Where a search found an item in its extras rather than its own text: the first line of a
    subtitle track, a danmaku or a comment that holds every word."""

    kind: Literal["subtitles", "danmaku", "comments"]
    text: str = Field(description="the line as indexed (spacing folded, cut to 300 characters)")
    seconds: float | None = Field(description="when it shows in the video; null for a comment")
    page: str = Field(description="the item's web page, at that moment when it has one (`/items/KEY?t=83`)")


class Item(BaseModel):
    """A catalog item, as ``trawl items --json`` prints it (``trawl.starter.views.item_dict``)."""

    id: str | None = Field(description="the item workflow that committed it")
    url: str = Field(description="the URL it was crawled from")
    canonical_key: str
    canonical_url: str
    platform: str
    outcome: str
    title: str | None
    uploader: str | None
    duration: float | None
    published_at: str | None
    created_at: str
    assets: list[Asset]
    preview: str | None = Field(default=None, description="why this is only the platform's preview of an item "
                                                          "(download.keep_previews): its key ends in :preview")
    gone_at: str | None = Field(default=None, description="a re-check found it gone upstream at this time "
                                                          "(ISO UTC); its archived copy is kept")
    gone_reason: str | None = Field(default=None, description="why, in the platform's words")


class Rechecked(BaseModel):
    """What a re-check found: ``there``, ``gone`` (upstream, for ``reason``: the platform's own) or
    ``unknown`` (it could not tell, ``reason`` says why; nothing recorded)."""

    canonical_key: str
    outcome: Literal["there", "gone", "unknown"]
    reason: str | None
    gone_at: str | None = Field(description="since when it is known gone upstream (ISO UTC); null: not gone")
    checked_at: str | None


class ItemPage(BaseModel):
    items: list[Item]
    limit: int
    offset: int
    total: int | None = Field(default=None, description="with a search or filter: how many items match, "
                                                        "counted up to 10,000")
    more_than_counted: bool = Field(default=False, description="more items match than `total` says")
    matched: dict[str, ExtraMatch] = Field(default_factory=dict, description=(
        "with `q`, by canonical key: the items found by a line of their extras (a subtitle cue, a danmaku, a "
        "comment) rather than their own text, and that line"))


class Health(BaseModel):
    status: Literal["ok", "degraded"]
    temporal: str = Field(description='"ok", or why not')
    catalog: str = Field(description='"ok", or why not')


class ExtrasRefreshCreate(BaseModel):
    """Which extras to fetch again (none named: every one the item's platform offers for it)."""

    extras: list[str] = Field(default_factory=list, max_length=20, description="extra names: comments, danmaku...")

    @field_validator("extras")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name or len(name) > 64:
                raise ValueError("an extra's name is 1 to 64 characters")
        return list(dict.fromkeys(value))


class RefreshedExtra(BaseModel):
    """One file a refresh stored (``name`` with its snapshot: ``comments@20261205T130800Z``), or
    recorded missing (``missing``: its error class, ``reason``)."""

    name: str
    kind: str
    language: str | None
    size: int
    sha256: str | None
    missing: str | None
    reason: str | None


class ExtrasRefresh(BaseModel):
    """An item's latest extras refresh: ``status`` Temporal's (``RUNNING``, ``COMPLETED``...);
    ``snapshot`` and ``extras`` once it has completed."""

    canonical_key: str
    id: str = Field(description="the refresh's workflow id, extras-<key>")
    status: str
    snapshot: str | None = None
    extras: list[RefreshedExtra] = Field(default_factory=list)
