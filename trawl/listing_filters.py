"""Filters applied while a listing pages, so a listing stops as soon as nothing more can pass.

yt-dlp's selection options, a bounded subset of their syntax:

- ``dateafter`` / ``datebefore``: a day, ``YYYYMMDD``, or ``(now|today|yesterday)[+-]N(day|week|month|year)[s]``
  (``now-7days``; ``today`` alone). Both bounds are inclusive, on the entry's publication day (UTC).
  Relative dates are resolved when the listing is walked: a watch's ``now-7days`` moves with each run.
- ``match_filter``: conditions joined by ``&``, each ``FIELD OP VALUE`` (``<``, ``<=``, ``>``, ``>=``,
  ``=``, ``!=`` on numbers; ``=``, ``!=``, ``*=`` (contains), ``^=``, ``$=``, ``~=`` (regex) on text),
  ``FIELD`` (has a true value) or ``!FIELD``. ``?`` after an operator keeps entries without the field
  (``duration >? 60``; while a listing is walked every condition keeps them). Fields: ``duration`` (seconds), ``view_count``, ``title``, ``timestamp``,
  ``upload_date`` (``YYYYMMDD``), ``is_live``. Numbers take ``k``, ``m`` and ``b`` suffixes
  (``view_count >= 10k``).
- ``playlist_items``: ``1-5,8,-3:``: 1-based positions in the listing's order, ``A-B`` and ``A:B[:STEP]``
  ranges inclusive of both ends, negative positions from the end.
- ``max_downloads``: at most this many entries of the listing are queued.

An entry whose listing does not state a field passes a condition on it, as yt-dlp passes an
incomplete playlist entry (the listing is all trawl reads before queueing). Each parser raises
:class:`FilterError` with one line naming the mistake.
"""

from __future__ import annotations

import calendar
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any

MAX_FILTER_LENGTH = 1000  # characters of a match filter, of a playlist-items spec
MAX_CONDITIONS = 20
MAX_REGEX_LENGTH = 200


class FilterError(ValueError):
    """A filter that does not parse; the message is one line naming the mistake."""


@dataclass(frozen=True)
class PageEntry:
    """One entry as a listing's page gives it while it is walked, with what the page already says
    of it (None: not said), which the filters read. (What the catalog keeps of a listing's entries
    is trawl.storage.records.ListingEntry.)"""

    url: str
    timestamp: int | None = None  # publication, Unix seconds
    duration: float | None = None  # seconds
    view_count: int | None = None
    title: str | None = None
    is_live: bool | None = None

    def field(self, name: str) -> Any:
        if name == "upload_date":
            return None if self.timestamp is None else _utc_day(self.timestamp).strftime("%Y%m%d")
        return getattr(self, name)


# -- dates ----------------------------------------------------------------------------------------
_RELATIVE = re.compile(r"(?P<base>now|today|yesterday)(?:(?P<sign>[+-])(?P<n>\d{1,4})"
                       r"(?P<unit>day|week|month|year)s?)?")


def parse_date(text: str, today: date | None = None) -> date:
    """A yt-dlp date (``20260101``, ``today``, ``now-7days``, ``yesterday``) as a day (UTC).

    Raises:
        FilterError: not one of these forms, or no such day.
    """
    value = text.strip().lower()
    today = today or datetime.now(timezone.utc).date()
    if re.fullmatch(r"\d{8}", value):
        try:
            return datetime.strptime(value, "%Y%m%d").date()
        except ValueError:
            raise FilterError(f"date {text!r}: no such day (give YYYYMMDD)") from None
    found = _RELATIVE.fullmatch(value)
    if found is None:
        raise FilterError(f"date {text!r}: give YYYYMMDD, today, yesterday or now-7days (now|today[+-]N"
                          "day|week|month|year)")
    day = today - timedelta(days=1) if found["base"] == "yesterday" else today
    if found["n"] is None:
        return day
    n = int(found["n"]) * (-1 if found["sign"] == "-" else 1)
    unit = found["unit"]
    if unit in ("day", "week"):
        return day + timedelta(days=n * (7 if unit == "week" else 1))
    months = day.month - 1 + n * (12 if unit == "year" else 1)
    year, month = day.year + months // 12, months % 12 + 1
    if not 1 <= year <= 9999:
        raise FilterError(f"date {text!r}: out of range")
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _utc_day(timestamp: int) -> date:
    return datetime.fromtimestamp(timestamp, timezone.utc).date()


def day_start(day: date) -> int:
    """The first second of ``day`` (UTC), in Unix seconds."""
    return calendar.timegm(day.timetuple())


# -- match filters --------------------------------------------------------------------------------
NUMERIC_FIELDS = ("duration", "view_count", "timestamp")
TEXT_FIELDS = ("title", "upload_date")
BOOL_FIELDS = ("is_live",)
_NUMBER_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "=": operator.eq, "!=": operator.ne}
_TEXT_OPS: dict[str, Callable[[str, str], bool]] = {
    "=": operator.eq, "!=": operator.ne, "*=": operator.contains, "^=": str.startswith, "$=": str.endswith}
_CONDITION = re.compile(r"\s*(?P<field>[a-z_]+)\s*(?P<op><=|>=|!=|\*=|\^=|\$=|~=|<|>|=)(?P<none>\?)?\s*(?P<value>.*?)\s*")
_UNARY = re.compile(r"\s*(?P<neg>!)?\s*(?P<field>[a-z_]+)\s*")
_SUFFIXES = {"": 1, "k": 1_000, "m": 1_000_000, "b": 1_000_000_000}


@dataclass(frozen=True)
class Condition:
    field: str
    test: Callable[[Any], bool]
    keep_missing: bool

    def passes(self, entry: PageEntry) -> bool:
        value = entry.field(self.field)
        # Not stated by the listing: kept, as yt-dlp keeps an incomplete entry (``?`` or not).
        return True if value is None else self.test(value)


def _number(text: str, where: str) -> float:
    found = re.fullmatch(r"(-?\d+(?:\.\d+)?)\s*([kmb]?)", text.strip().lower())
    if found is None:
        raise FilterError(f"match filter {where!r}: {text!r} is not a number")
    return float(found[1]) * _SUFFIXES[found[2]]


def _text(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def parse_match_filter(text: str) -> list[Condition]:
    """``duration > 60 & title ~= (?i)keyword & !is_live`` as conditions, all of which must hold.

    Raises:
        FilterError: one line naming the condition that does not parse and why.
    """
    if len(text) > MAX_FILTER_LENGTH:
        raise FilterError(f"match filter longer than {MAX_FILTER_LENGTH} characters")
    parts = [p for p in text.split("&")]
    if len(parts) > MAX_CONDITIONS:
        raise FilterError(f"match filter: more than {MAX_CONDITIONS} conditions")
    conditions: list[Condition] = []
    for part in parts:
        if not part.strip():
            raise FilterError(f"match filter {text!r}: an empty condition (two '&' in a row, or one at an end)")
        conditions.append(_condition(part))
    return conditions


def _condition(part: str) -> Condition:
    where = part.strip()
    fields = (*NUMERIC_FIELDS, *TEXT_FIELDS, *BOOL_FIELDS)
    unary = _UNARY.fullmatch(part)
    if unary is not None:
        name = unary["field"]
        if name not in fields:
            raise FilterError(f"match filter {where!r}: unknown field {name!r} (known: {', '.join(fields)})")
        negated = bool(unary["neg"])
        return Condition(name, lambda v: (not v) if negated else bool(v), keep_missing=True)
    found = _CONDITION.fullmatch(part)
    if found is None:
        raise FilterError(f"match filter {where!r}: give FIELD OP VALUE, FIELD or !FIELD "
                          "(e.g. duration > 60, title ~= (?i)news, !is_live)")
    name, op, value = found["field"], found["op"], found["value"]
    if name not in fields or name in BOOL_FIELDS:
        raise FilterError(f"match filter {where!r}: unknown field {name!r} for {op} "
                          f"(numbers: {', '.join(NUMERIC_FIELDS)}; text: {', '.join(TEXT_FIELDS)})")
    if not value:
        raise FilterError(f"match filter {where!r}: no value after {op}")
    keep_missing = bool(found["none"])
    if name in NUMERIC_FIELDS:
        if op not in _NUMBER_OPS:
            raise FilterError(f"match filter {where!r}: {op} compares text; {name} is a number (use <, <=, >, >=, =, !=)")
        bound, compare = _number(value, where), _NUMBER_OPS[op]
        return Condition(name, lambda v: compare(float(v), bound), keep_missing)
    if op == "~=":
        pattern_text = _text(value)
        if len(pattern_text) > MAX_REGEX_LENGTH:
            raise FilterError(f"match filter {where!r}: a regex longer than {MAX_REGEX_LENGTH} characters")
        try:
            pattern = re.compile(pattern_text)
        except re.error as err:
            raise FilterError(f"match filter {where!r}: not a regex ({err})") from None
        return Condition(name, lambda v: pattern.search(str(v)) is not None, keep_missing)
    if name == "upload_date" and op in ("<", "<=", ">", ">="):
        day = _text(value)
        if not re.fullmatch(r"\d{8}", day):
            raise FilterError(f"match filter {where!r}: upload_date compares with a day, YYYYMMDD")
        compare_day = _NUMBER_OPS[op]
        return Condition(name, lambda v: compare_day(str(v), day), keep_missing)
    if op not in _TEXT_OPS:
        raise FilterError(f"match filter {where!r}: {op} compares numbers; {name} is text "
                          "(use =, !=, *=, ^=, $=, ~=)")
    wanted, compare_text = _text(value), _TEXT_OPS[op]
    return Condition(name, lambda v: compare_text(str(v), wanted), keep_missing)


# -- playlist items -------------------------------------------------------------------------------
_ITEMS = re.compile(r"(?P<start>[+-]?\d+)?(?P<range>[:-](?P<end>[+-]?\d+|inf(?:inite)?)?(?::(?P<step>[+-]?\d+))?)?")


@dataclass(frozen=True)
class Items:
    """Positions of ``playlist_items``: integers and inclusive slices (1-based)."""

    parts: tuple[int | tuple[int | None, int | None, int], ...]

    @property
    def needs_total(self) -> bool:
        """A negative position counts from the end: the whole listing must be read first."""
        for part in self.parts:
            values = (part,) if isinstance(part, int) else (part[0], part[1])
            if any(v is not None and v < 0 for v in values) or (not isinstance(part, int) and part[2] < 0):
                return True
        return False

    @property
    def last(self) -> int | None:
        """The highest position wanted (None: no end, or counted from the end)."""
        if self.needs_total:
            return None
        highest = 0
        for part in self.parts:
            if isinstance(part, int):
                highest = max(highest, part)
            elif part[1] is None:
                return None
            else:
                highest = max(highest, part[1])
        return highest

    def wanted(self, position: int, total: int | None) -> bool:
        """Whether 1-based ``position`` is selected (``total`` known when :attr:`needs_total`)."""
        for part in self.parts:
            if isinstance(part, int):
                index = part if part > 0 else (total or 0) + part + 1
                if index == position:
                    return True
                continue
            start, end, step = part
            size = total if total is not None else position
            first = 1 if start is None else (start if start > 0 else size + start + 1)
            last = size if end is None else (end if end > 0 else size + end + 1)
            if step < 0:
                first, last = (size if start is None else first), (1 if end is None else last)
                if last <= position <= first and (first - position) % -step == 0:
                    return True
            elif first <= position <= last and (position - first) % step == 0:
                return True
        return False


def parse_playlist_items(text: str) -> Items:
    """``1-5,8,-3:`` (yt-dlp's ``--playlist-items``) as positions.

    Raises:
        FilterError: a part that is not a position or a range, or a zero step.
    """
    if len(text) > MAX_FILTER_LENGTH:
        raise FilterError(f"playlist items longer than {MAX_FILTER_LENGTH} characters")
    parts: list[int | tuple[int | None, int | None, int]] = []
    for segment in text.split(","):
        segment = segment.strip()
        found = _ITEMS.fullmatch(segment) if segment else None
        if found is None or not (found["start"] or found["range"]):
            raise FilterError(f"playlist items {text!r}: {segment!r} is not a position or a range "
                              "(give e.g. 1-5,8,-3:)")
        start = int(found["start"]) if found["start"] else None
        if not found["range"]:
            if start == 0:
                raise FilterError(f"playlist items {text!r}: positions start at 1")
            parts.append(start)  # type: ignore[arg-type]
            continue
        end_text = found["end"]
        end = None if end_text is None or end_text.startswith("inf") else int(end_text)
        step = int(found["step"]) if found["step"] else 1
        if step == 0:
            raise FilterError(f"playlist items {text!r}: the step in {segment!r} cannot be zero")
        parts.append((start, end, step))
    return Items(tuple(parts))


# -- the filters a listing is walked with ---------------------------------------------------------
@dataclass(frozen=True)
class ListingFilters:
    """The selection of a source or a crawl, as given (strings, resolved when walked)."""

    dateafter: str = ""
    datebefore: str = ""
    match_filter: str = ""
    max_downloads: int = 0  # 0: no limit
    playlist_items: str = ""

    FIELDS = ("dateafter", "datebefore", "match_filter", "max_downloads", "playlist_items")

    def __bool__(self) -> bool:
        return any(getattr(self, name) for name in self.FIELDS)

    def check(self) -> None:
        """Parse every filter once, so a mistake is said before anything runs.

        Raises:
            FilterError: one line naming the mistake.
        """
        for bound in (self.dateafter, self.datebefore):
            if bound:
                parse_date(bound)
        if self.match_filter:
            parse_match_filter(self.match_filter)
        if self.playlist_items:
            parse_playlist_items(self.playlist_items)
        if self.max_downloads < 0:
            raise FilterError(f"max downloads {self.max_downloads}: give 1 or more (0: no limit)")

    def as_dict(self) -> dict[str, Any]:
        """The filters that are set, as a source's fields."""
        return {name: getattr(self, name) for name in self.FIELDS if getattr(self, name)}

    @classmethod
    def of(cls, values: Any) -> ListingFilters:
        """The filters among ``values``' fields (a source's settings, a dict)."""
        get = values.get if isinstance(values, dict) else (lambda name, default=None: getattr(values, name, default))
        return cls(**{name: get(name) for name in cls.FIELDS if get(name)})


Known = Callable[[list[str]], bool]


@dataclass
class Walk:
    """How a listing is walked: where it stops and which of its entries are kept.

    A listing calls :meth:`page` with each page's entries (in its order) and stops once
    :attr:`done`. It stops after a page whose kept entries the catalog holds already (``known``),
    once ``max_downloads`` entries are kept, past the last position of ``playlist_items``, and, on
    a listing ordered newest first by publication (``dated``), at the first entry published before
    ``dateafter`` (every later one is older). Called with a page's URLs (``walk(urls)``) it answers
    whether the catalog holds them all, as the listings that take no filters ask.
    """

    known: Known | None = None
    filters: ListingFilters = field(default_factory=ListingFilters)
    today: date | None = None  # the day relative dates count from; None: today (UTC)
    done: bool = False
    paged: bool = False  # the listing handed its entries to page(): nothing is left to filter after
    seen: int = 0  # entries listed so far (positions of playlist_items)
    kept: int = 0
    stopped_by: str = ""  # why the walk stopped early: known, date, max_downloads, playlist_items

    def __post_init__(self) -> None:
        f = self.filters
        self._after = day_start(parse_date(f.dateafter, self.today)) if f.dateafter else None
        self._before = (day_start(parse_date(f.datebefore, self.today) + timedelta(days=1))
                        if f.datebefore else None)  # exclusive: the day after
        self._conditions = parse_match_filter(f.match_filter) if f.match_filter else []
        self._items = parse_playlist_items(f.playlist_items) if f.playlist_items else None

    def __call__(self, urls: list[str]) -> bool:
        return self.known is not None and bool(urls) and self.known(urls)

    @property
    def window(self) -> tuple[int | None, int | None]:
        """The publication window, Unix seconds: ``[after, before)`` (None: open)."""
        return self._after, self._before

    @property
    def needs_total(self) -> bool:
        return self._items is not None and self._items.needs_total

    def page(self, entries: Sequence[PageEntry | str], *, dated: bool = False, known_stops: bool = True
             ) -> list[str]:
        """The URLs of one page's entries that pass, in order; sets :attr:`done` when nothing
        after this page can (or needs to) be read.

        Args:
            dated: the listing is ordered newest first by publication date.
            known_stops: a page of known entries ends the walk (false for a listing in an order
                where a new entry can come after known ones: a search by relevance).
        """
        self.paged = True
        kept: list[str] = []
        for raw in entries:
            entry = raw if isinstance(raw, PageEntry) else PageEntry(raw)
            if self.done:
                break
            self.seen += 1
            if self._items is not None and not self._items.needs_total:
                last = self._items.last
                if last is not None and self.seen > last:
                    self._stop("playlist_items")
                    break
                if not self._items.wanted(self.seen, None):
                    continue
            if dated and self._after is not None and entry.timestamp is not None and entry.timestamp < self._after:
                self._stop("date")
                break
            if not self._passes(entry):
                continue
            kept.append(entry.url)
            self.kept += 1
            if self.filters.max_downloads and self.kept >= self.filters.max_downloads and not self.needs_total:
                self._stop("max_downloads")
                break
        if known_stops and not self.done and kept and self(kept):
            self._stop("known")
        return kept

    def stop_if_known(self, urls: list[str]) -> bool:
        """End the walk when the catalog holds every one of ``urls`` (a page's kept URLs, for a
        listing that hands its page to :meth:`page` in parts); returns :attr:`done`."""
        if not self.done and urls and self(urls):
            self._stop("known")
        return self.done

    def go_on_after_known(self) -> None:
        """A listing nested in another (a collection among uploads) ended at known entries: that
        ends it, not the walk of the listing around it."""
        if self.stopped_by == "known":
            self.done, self.stopped_by = False, ""

    def _stop(self, why: str) -> None:
        self.done, self.stopped_by = True, why

    def _passes(self, entry: PageEntry) -> bool:
        if entry.timestamp is not None:
            if self._after is not None and entry.timestamp < self._after:
                return False
            if self._before is not None and entry.timestamp >= self._before:
                return False
        return all(c.passes(entry) for c in self._conditions)

    def select(self, urls: list[str]) -> list[str]:
        """Of a whole listing (a listing that does not page through :meth:`page`, or one whose
        ``playlist_items`` count from the end): the URLs kept, in order."""
        if not self.filters:
            return urls
        if not self.paged:
            urls = self.page(urls, known_stops=False)
        if self._items is None or not self._items.needs_total:
            return urls
        total = len(urls)
        chosen = [u for i, u in enumerate(urls, start=1) if self._items.wanted(i, total)]
        return chosen[:self.filters.max_downloads] if self.filters.max_downloads else chosen


def as_walk(enough: Walk | Known | None) -> Walk:
    """The walk of a listing called with a walk, a plain ``enough`` callable or None."""
    if isinstance(enough, Walk):
        return enough
    return Walk(known=enough)
