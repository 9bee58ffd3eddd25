"""The API's request and response bodies: what the OpenAPI schema declares, field by field."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from trawl.starter.client import MAX_CRAWL_CONCURRENCY, MAX_URLS_PER_REQUEST
from trawl.errors import TrawlError
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
class CrawlCreate(BaseModel):
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


class ItemPage(BaseModel):
    items: list[Item]
    limit: int
    offset: int


class Health(BaseModel):
    status: Literal["ok", "degraded"]
    temporal: str = Field(description='"ok", or why not')
    catalog: str = Field(description='"ok", or why not')
