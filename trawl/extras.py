"""Extras: what belongs to an item besides its media (danmaku, subtitle tracks, comments), fetched
after the media is committed, each in an activity of its own with its own retries.

A platform package declares its extras (``Platform.extras``: name -> a factory of :class:`Extra`
from the platform's settings); a new kind of extra is one module of that package. An extra's
:meth:`Extra.fetch` returns the files it found (:class:`ExtraFile`): each is stored as a blob and
recorded in the catalog as an asset of the item with its kind and language; a file it knows it
cannot have (a subtitle track that needs a login) comes back *missing*, with the error class and
the reason, and is recorded so. An extra that raises is retried by its activity's policy
(``[retry.extras]``) and recorded missing with the failure's class when it keeps failing; the
item stays committed either way.

Nothing here imports Temporal: the activity (trawl.activities.extras) gives an extra its
:class:`ExtraContext`, whose ``heartbeat`` carries a paging cursor across a retried attempt.
"""

from __future__ import annotations

import json
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import httpx

from trawl.errors import NO_ANSWER_RULES, AnswerRules, ParseError, TrawlError, classify_exception, classify_response
from trawl.models import Resolved

# The kinds an extra's files are recorded under (the catalog's assets.kind); never the media's.
EXTRA_KINDS = ("danmaku", "subtitles", "chapters", "comments")
# An answer an extra reads (a danmaku segment, a comment page, a subtitle body) is refused past this.
MAX_ANSWER_BYTES = 32 * 1024 * 1024


@dataclass
class ExtraFile:
    """One file an extra found, or one it knows it cannot have.

    Attributes:
        name: unique within the item (``danmaku``, ``subtitles.zh-CN``, ``comments``): the asset's name.
        kind: one of :data:`EXTRA_KINDS`: ``danmaku`` (the XML danmaku format players read), ``subtitles``
            (a JSON body of ``{from, to, content}`` cues under ``body``),
            ``chapters`` (yt-dlp's ``chapters``: a JSON list of ``{start_time, end_time, title}``),
            ``comments`` (a JSON document: docs/extras.md).
        language: the language's code as the platform gives it (``zh-CN``, ``ai-zh``), or "".
        body: the bytes stored (text as the platform gave it, in the extra's documented format).
        mime: the body's media type.
        source_url: where it came from.
        missing: the error class (trawl.errors) when it could not be had; then ``body`` is empty.
        reason: why it is missing, in a few words.
    """

    name: str
    kind: str
    language: str = ""
    body: bytes = b""
    mime: str = "application/octet-stream"
    source_url: str = ""
    missing: str = ""
    reason: str = ""


@dataclass
class ExtraContext:
    """What an extra is given to fetch with.

    ``heartbeat(state)`` records a JSON-able paging state (a cursor) as the activity's heartbeat
    details; a retried attempt finds the last one in ``resumed`` and goes on from it.
    """

    client: httpx.Client
    max_bytes: int = MAX_ANSWER_BYTES
    heartbeat: Callable[[Any], None] = lambda state: None
    resumed: Any = None


class Extra(ABC):
    """One kind of extra a platform offers (its danmaku, its subtitles, its comments).

    One object serves every activity of its worker: its requests (:meth:`get`) are spaced
    ``interval_s`` apart across all of them (the platform's ``requests_per_second``: a comments
    extra reads hundreds of pages in one activity, which the fetch queue's rate does not pace).
    """

    name: ClassVar[str]  # the setting's and the activity's name for it (``danmaku``)
    kind: ClassVar[str]  # the kind of the files it finds (:data:`EXTRA_KINDS`)
    answers: ClassVar[AnswerRules] = NO_ANSWER_RULES  # what its platform's answers state besides statuses
    interval_s: float = 0.0  # the least time between two of its requests
    _next_at: float = 0.0
    _pacing: threading.Lock | None = None

    def paced(self, requests_per_second: float) -> None:
        """Space this extra's requests ``1 / requests_per_second`` apart (a subclass's __init__ calls it)."""
        self.interval_s = 1.0 / requests_per_second if requests_per_second > 0 else 0.0
        self._pacing = threading.Lock()

    def _wait_turn(self) -> None:
        if not self.interval_s or self._pacing is None:
            return
        with self._pacing:
            now = time.monotonic()
            wait = self._next_at - now
            self._next_at = max(now, self._next_at) + self.interval_s
        if wait > 0:
            time.sleep(wait)

    def applies(self, resolved: Resolved) -> bool:
        """Whether the item has this extra at all (a video has danmaku, a picture post has none)."""
        return True

    @abstractmethod
    def fetch(self, resolved: Resolved, ctx: ExtraContext) -> list[ExtraFile]:
        """The extra's files; raise a :class:`trawl.errors.TrawlError` on failure (retried by class)."""

    # -- helpers ---------------------------------------------------------------------------
    def get(self, ctx: ExtraContext, url: str, headers: dict[str, str] | None = None,
            platform_codes: bool = True) -> bytes:
        """GET ``url``'s body, bounded by ``ctx.max_bytes``, failures classified as the fetch stage's."""
        from trawl.http_client import read_limited  # reads the settings, built from the platforms' list

        self._wait_turn()
        try:
            with ctx.client.stream("GET", url, headers=headers) as resp:
                body = read_limited(resp, ctx.max_bytes, url)
        except httpx.HTTPError as exc:
            raise classify_exception(exc) from None
        error = classify_response(resp.status_code, resp.headers,
                                  body if platform_codes or resp.status_code >= 400 else None,
                                  url=url, answers=self.answers)
        if error is not None:
            raise error
        return body

    def missing_or_raise(self, err: TrawlError, name: str, language: str = "") -> ExtraFile:
        """One file of several that failed: recorded missing when its class is final (a 404, a parse
        error), re-raised when it is retryable (the activity tries the whole extra again)."""
        if err.retryable:
            raise err
        return ExtraFile(name, self.kind, language, missing=err.error_class, reason=str(err)[:2000])

    def get_json(self, ctx: ExtraContext, url: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
        """GET a JSON object (platform error codes classified), bounded in size and depth."""
        return json_object(self.get(ctx, url, headers), url)


def json_object(body: bytes, url: str) -> dict[str, Any]:
    """``body`` as a JSON object, or :class:`ParseError` saying what it was instead (nesting is
    bounded by the interpreter's recursion limit: a hostile answer is a ParseError, not a crash)."""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        raise ParseError(f"{url}: answer is not JSON (or nested too deep)") from None
    if not isinstance(doc, dict):
        raise ParseError(f"{url}: JSON answer is not an object")
    return doc


@dataclass
class ExtraSet:
    """The extras of the enabled platforms, by platform and name, built from their settings."""

    by_platform: dict[str, dict[str, Extra]] = field(default_factory=dict)

    def names(self, resolved: Resolved) -> list[str]:
        """The extras that apply to ``resolved``, in their platform's order."""
        extras = self.by_platform.get(resolved.platform, {})
        return [name for name, extra in extras.items() if extra.applies(resolved)]

    def get(self, platform: str, name: str) -> Extra | None:
        return self.by_platform.get(platform, {}).get(name)
