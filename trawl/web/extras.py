"""What the item page shows of an item's extras (trawl.extras): its subtitle tracks for the player,
its danmaku in time, its chapters, its comments in threads, and the second ``?t=`` starts at.

Pure: stored bytes in, views out (the page reads the blobs). Every text stays text: the views hold
strings that the templates escape and the script inserts as text, never markup. Bounded: a stored
file past :data:`MAX_SHOWN_BYTES` or not in its documented form is not shown (it still downloads
from the item's files), and a view holds at most what one page shows.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from trawl.danmaku import MODES, DanmakuParseError, parse_danmaku_xml
from trawl.export_extras import latest
from trawl.storage.records import CommittedAsset

# A stored extra larger than this is not read for the page (its file is still offered).
MAX_SHOWN_BYTES = 64 * 1024 * 1024
LISTED_DANMAKU = 3000  # danmaku listed beside the player (and flown over it), the earliest first
THREADS_PER_PAGE = 200  # top-level comments with their replies, a page
REPLIES_SHOWN = 20  # replies under a thread on the comments' pages; the thread's own page has them all
MAX_THREAD_REPLIES = 10_000  # replies on a thread's own page
MAX_COMMENTS = 1_000_000  # comments a document may hold to be shown
MAX_TEXT_CHARS = 10_000  # of one comment's text (longer: cut, with an ellipsis)
MAX_START = 10_000_000.0  # seconds a ?t= may ask for
# A language as BCP 47 writes one (the <track>'s srclang must be one): a platform's own code
# (``ai-zh``) is given to the player without its ``ai-`` and shown in the label.
LANGUAGE_TAG = re.compile(r"[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8}){0,6}")


def start_at(text: str | None) -> float | None:
    """The second ``?t=`` asks the player to start at (``90``, ``90.5``), or None when it names
    none (absent, not a number, negative, past :data:`MAX_START`): the page then starts as usual."""
    try:
        seconds = float((text or "").strip().removesuffix("s"))
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and 0 < seconds <= MAX_START else None


def seconds_param(seconds: float) -> str:
    """Seconds as a ``?t=`` value: ``162``, ``1.5``, to the millisecond."""
    return f"{seconds:.3f}".rstrip("0").rstrip(".")


def extras_of(assets: Sequence[CommittedAsset], kind: str) -> list[CommittedAsset]:
    """The item's extras of ``kind``, each its newest snapshot (``comments@20261205T130800Z`` over
    ``comments``), in the catalog's order."""
    return [asset for asset in latest(list(assets)) if asset.kind == kind]


def snapshot_time(asset: CommittedAsset) -> str | None:
    """When a refreshed extra's snapshot was taken (its name's ``@20261205T130800Z``), as ISO UTC;
    None for the one fetched with the item."""
    stamp = asset.name.partition("@")[2]
    try:
        return datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC).isoformat() if stamp else None
    except ValueError:
        return None


# -- subtitles -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Track:
    """A subtitle track as the player's ``<track>``: its asset's name, ``srclang`` and label."""

    name: str
    srclang: str
    label: str


def tracks(assets: Sequence[CommittedAsset]) -> list[Track]:
    """The item's subtitle tracks (each language's newest snapshot): the uploader's, then the
    automatic ones, each by language."""
    found = []
    for asset in extras_of(assets, "subtitles"):
        language = asset.language or ""
        automatic = language.startswith("ai-")
        plain = language.removeprefix("ai-")
        srclang = plain if LANGUAGE_TAG.fullmatch(plain) else "und"
        label = f"{plain or 'unknown'} (automatic)" if automatic else (language or "unknown")
        found.append(((automatic, language), Track(asset.name, srclang, label)))
    return [track for _, track in sorted(found, key=lambda pair: pair[0])]


# -- chapters --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Chapter:
    start: float
    title: str


def chapters(metadata: dict[str, Any]) -> list[Chapter]:
    """The item's chapters (yt-dlp's ``chapters`` in its metadata), in time; one without a start is
    left out."""
    given = metadata.get("chapters")
    if not isinstance(given, list):
        return []
    found = [Chapter(float(c["start_time"]), c.get("title") if isinstance(c.get("title"), str) else "")
             for c in given[:10_000] if isinstance(c, dict) and _number(c.get("start_time"))]
    return sorted(found, key=lambda chapter: chapter.start)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


# -- danmaku ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Bullet:
    """One danmaku as the page lists it: when, what, its colour (``#rrggbb``) and how it moves."""

    seconds: float
    text: str
    color: str
    mode: str


@dataclass
class DanmakuView:
    bullets: list[Bullet] = field(default_factory=list)  # the earliest :data:`LISTED_DANMAKU`
    total: int = 0  # in the files
    errors: list[str] = field(default_factory=list)  # a file that could not be read, and why


def danmaku_view(bodies: Sequence[bytes], limit: int = LISTED_DANMAKU) -> DanmakuView:
    """The danmaku of the item's files (the video's, a recording's live comments), merged in time."""
    view = DanmakuView()
    every = []
    for body in bodies:
        try:
            every += parse_danmaku_xml(body)[1]
        except DanmakuParseError as err:
            view.errors.append(str(err))
    every.sort(key=lambda comment: comment.seconds)
    view.total = len(every)
    view.bullets = [Bullet(max(0.0, c.seconds) if math.isfinite(c.seconds) else 0.0, c.text,
                           f"#{c.color & 0xFFFFFF:06x}", MODES.get(c.mode, "scroll")) for c in every[:limit]]
    return view


# -- comments --------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Comment:
    """One comment as the page shows it."""

    id: str
    text: str
    author: str
    when: str | None  # ISO UTC
    likes: int | None
    pinned: bool
    reply_to: str | None = None  # whom it answers: a reply's author inside its thread, or "a comment not archived"


@dataclass(frozen=True, slots=True)
class Thread:
    comment: Comment
    replies: list[Comment]  # those shown (in :class:`CommentThreads`: every one archived)
    reply_count: int  # archived


@dataclass
class CommentThreads:
    """A comments document read once into threads (what a page of it is cut from)."""

    threads: list[Thread] = field(default_factory=list)
    count: int = 0  # comments archived, replies included
    stated: int | None = None  # the count the platform stated
    truncated: bool = False  # a safety cap stopped the paging
    error: str = ""  # why the document could not be read


@dataclass
class CommentsView:
    threads: list[Thread] = field(default_factory=list)  # this page's
    thread_count: int = 0  # threads in the document
    count: int = 0
    stated: int | None = None
    truncated: bool = False
    page: int = 1
    pages: int = 1
    first: int = 0  # this page's first thread, from 0
    single: str | None = None  # the thread shown alone, with every reply
    error: str = ""


def comment_threads(body: bytes) -> CommentThreads:
    """The comments document (trawl.comments) in threads: each top-level comment in the stored order
    (the pinned ones first) with its replies in theirs, a reply to a reply saying whom it answers.
    A comment whose parent is not archived stands as a thread of its own."""
    if len(body) > MAX_SHOWN_BYTES:
        return CommentThreads(error=f"the comments document is {len(body):,} bytes, over the {MAX_SHOWN_BYTES:,} shown here")
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return CommentThreads(error="the comments document is not JSON")
    listed = doc.get("comments") if isinstance(doc, dict) else None
    if not isinstance(listed, list) or len(listed) > MAX_COMMENTS:
        return CommentThreads(error=f"the comments document has no comments[] of at most {MAX_COMMENTS:,}")
    by_id: dict[str, dict[str, Any]] = {}
    for entry in listed:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str) and entry["id"] not in by_id:
            by_id[entry["id"]] = entry
    root_of = _roots(by_id)
    replies: dict[str, list[Comment]] = {}
    for ident, root in root_of.items():
        if root != ident:
            replies.setdefault(root, []).append(_shown(by_id[ident], by_id, root))
    stated = doc.get("total")
    return CommentThreads(
        [Thread(_shown(by_id[ident], by_id, ident), replies.get(ident, []), len(replies.get(ident, [])))
         for ident, root in root_of.items() if root == ident],
        count=len(by_id), truncated=doc.get("truncated") is True,
        stated=stated if isinstance(stated, int) and not isinstance(stated, bool) else None)


def comments_view(read: CommentThreads, page: int = 1, thread: str | None = None, per_page: int = THREADS_PER_PAGE,
                  replies_shown: int = REPLIES_SHOWN) -> CommentsView:
    """A page of the threads, each with its first ``replies_shown`` replies; or with ``thread`` (a
    top-level comment's id) that thread alone with up to :data:`MAX_THREAD_REPLIES` replies."""
    view = CommentsView(thread_count=len(read.threads), count=read.count, stated=read.stated,
                        truncated=read.truncated, error=read.error)
    if thread is not None:
        chosen, view.single, limit = [t for t in read.threads if t.comment.id == thread], thread, MAX_THREAD_REPLIES
    else:
        view.pages = max(1, -(-len(read.threads) // per_page))
        view.page = min(max(1, page), view.pages)
        view.first = (view.page - 1) * per_page
        chosen, limit = read.threads[view.first:view.first + per_page], replies_shown
    view.threads = [Thread(t.comment, t.replies[:limit], t.reply_count) for t in chosen]
    return view


def _roots(by_id: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Each comment's thread: the top-level comment its chain of parents leads to, in the stored
    order. A comment whose parent is not archived, or whose chain comes back to itself, is the
    root of its own thread. Linear in the comments, however long a chain of replies."""
    root_of: dict[str, str] = {}
    for ident in by_id:
        path: list[str] = []
        on_path: set[str] = set()
        current = ident
        while current not in root_of:
            path.append(current)
            on_path.add(current)
            parent = by_id[current].get("parent")
            if not isinstance(parent, str) or parent not in by_id or parent in on_path:
                root_of[current] = current
                break
            current = parent
        for step in path:
            root_of[step] = root_of[current]
    return {ident: root_of[ident] for ident in by_id}


def _shown(entry: dict[str, Any], by_id: dict[str, dict[str, Any]], root: str) -> Comment:
    text = entry.get("text") if isinstance(entry.get("text"), str) else ""
    if len(text) > MAX_TEXT_CHARS:
        text = text[:MAX_TEXT_CHARS] + "…"
    author = entry.get("author") if isinstance(entry.get("author"), str) else ""
    likes = entry.get("like_count")
    parent = entry.get("parent")
    reply_to = None
    if entry["id"] == root and isinstance(parent, str) and parent != "root" and parent not in by_id:
        reply_to = "a comment not archived"
    elif entry["id"] != root and isinstance(parent, str) and parent != root and parent in by_id:
        answered = by_id[parent].get("author")  # a reply to a reply, inside the thread
        reply_to = answered if isinstance(answered, str) and answered else "(no name)"
    return Comment(entry["id"], text, author or "(no name)", _when(entry.get("timestamp")),
                   likes if isinstance(likes, int) and not isinstance(likes, bool) else None,
                   entry.get("is_pinned") is True, reply_to)


def _when(timestamp: Any) -> str | None:
    if not isinstance(timestamp, (int, float)) or isinstance(timestamp, bool):
        return None
    try:
        return datetime.fromtimestamp(timestamp, UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


# -- what was read lately ------------------------------------------------------------------------
T = TypeVar("T")


class Recent(Generic[T]):
    """The views of the documents read lately, by their blobs' sha256 (a blob never changes under
    its hash), the least recently used dropped past ``budget`` (in the views' weights: comments,
    danmaku listed). Paging through a large comments document reads and threads it once. Safe to
    share between threads: two that miss at once both build, and one view is kept."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._views: OrderedDict[Hashable, tuple[T, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable, build: Callable[[], tuple[T, int | None]]) -> T:
        """The view under ``key``, or ``build()``'s (a view and its weight), kept when it fits (a
        weight of None: not kept, as a view of a blob missing from the store)."""
        with self._lock:
            if key in self._views:
                self._views.move_to_end(key)
                return self._views[key][0]
        view, weight = build()
        with self._lock:
            if weight is not None and key not in self._views and weight <= self.budget:
                self._views[key] = (view, weight)
                self._weight += weight
                while self._weight > self.budget:
                    _, (_, dropped) = self._views.popitem(last=False)
                    self._weight -= dropped
        return view
