"""What the ``trawl`` commands print: item and crawl lines, speed and ETA, the live status line on
a terminal, and the one-line error a person's mistake gets. Sizes, speeds, clocks and ETAs are
written by :mod:`trawl.formatting`, which the web page uses too.

The JSON forms of items, results and crawls come from :mod:`trawl.starter.views`, shared with the API.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from typing import TYPE_CHECKING, Any, TextIO

from wcwidth import wcswidth, wcwidth

from trawl.formatting import eta_seconds, format_eta, format_speed, human_size, recording_words
from trawl.text import escaped
from trawl.cli.exits import EXIT_FAILED_ITEMS, EXIT_INTERRUPTED, EXIT_USAGE  # noqa: F401 - the commands take them here

if TYPE_CHECKING:  # Temporal's client loads only in the commands that talk to it
    from trawl.contracts import ItemResult
    from trawl.storage.records import CatalogItem


class CommandError(Exception):
    """A mistake or a condition a person can fix: ``main`` prints ``trawl <command>: <message>``, no
    traceback, and exits with ``code``."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes: a CJK character or an emoji two, a combining mark none."""
    width = wcswidth(text)
    return width if width >= 0 else sum(max(0, wcwidth(ch)) for ch in text)


def printable(text: str | None) -> str:
    """``text`` on one line, without terminal codes (titles and errors are data); "-" for none."""
    return "".join(ch if ch.isprintable() else " " for ch in (text or "-"))


def clean(text: str | None, width: int) -> str:
    """:func:`printable` ``text`` cut to at most ``width`` terminal columns."""
    text = printable(text)
    if display_width(text) <= width:
        return text
    kept, used = [], 0
    for ch in text:
        used += max(0, wcwidth(ch))
        if used > width - 1:
            break
        kept.append(ch)
    return "".join(kept) + "~"


def pad(text: str, width: int) -> str:
    """``text`` filled with spaces to ``width`` terminal columns (``str.ljust`` counts characters)."""
    return text + " " * max(0, width - display_width(text))


# -- speed and ETA -------------------------------------------------------------------------------
class Rate:
    """Bytes per second of ``(time, bytes so far)`` samples, steady when the bytes move in steps.

    The bytes come from download heartbeats, whose details reach the server in steps a few
    seconds apart (the SDK throttles them; a ``--limit-rate`` download showed 1.9 MiB every 5 s).
    An average over the last :data:`WINDOW_S` seconds of samples then sank between steps (305,
    260, 228, 203, 183 KiB/s) and leapt at each (376), and the ETA rose and fell with it (0:20,
    0:23 ... 0:32, then 0:11). So a live line's rate (``steady``) is measured between the steps
    themselves (the samples where the bytes moved, and the first, the last one at or before the
    window's start to the newest), and :meth:`eta` counts down from the newest step. Steps that
    stop coming (nothing moved for a window) are a stall: the plain average over the window, which
    falls towards 0, is the speed. A one-off look of a few seconds (``trawl status --once``) sees
    one step at most, whose size per second is no speed: it keeps the plain average.
    """

    WINDOW_S = 10.0

    def __init__(self, window_s: float = WINDOW_S, *, steady: bool = False) -> None:
        self.window_s = window_s
        self.steady = steady
        self.samples: deque[tuple[float, float]] = deque()
        self.steps: deque[tuple[float, float]] = deque()  # the samples where the bytes moved (and the first)
        self.speed: float | None = None
        self.stepping = False  # the speed is the steps' (not a stall's average)
        self.now: float | None = None

    @property
    def last(self) -> tuple[float, float] | None:
        return self.samples[-1] if self.samples else None

    def update(self, now: float, value: float) -> float | None:
        if self.samples and value < self.samples[-1][1]:  # counted from the start again: what was, was another count
            self.samples.clear()
            self.steps.clear()
            self.speed = None
        if self.samples and now <= self.samples[-1][0]:
            return self.speed
        self.now = now
        self.samples.append((now, value))
        if not self.steps or value > self.steps[-1][1]:
            self.steps.append((now, value))
        # The oldest sample kept is the last one at or before the window's start, so the window is full.
        for kept in (self.samples, self.steps):
            while len(kept) > 2 and kept[1][0] <= now - self.window_s:
                kept.popleft()
        (first, before), (last, after) = self.steps[0], self.steps[-1]
        self.stepping = self.steady and len(self.steps) > 1 and now - last < self.window_s
        if self.stepping:
            self.speed = (after - before) / (last - first)
        else:
            then, before = self.samples[0]
            if now > then:
                self.speed = (value - before) / (now - then)
        return self.speed

    def eta(self, remaining: float | None, speed: float | None = None) -> float | None:
        """Seconds until ``remaining`` (counted at the newest sample) is done at this speed (or
        ``speed``), counting down since the newest step: the bytes between steps move unseen."""
        eta = eta_seconds(remaining, self.speed if speed is None else speed)
        if eta is None or not self.stepping or self.now is None:
            return eta
        return max(0.0, eta - (self.now - self.steps[-1][0]))


def _speed_eta(speed: float | None, eta: float | None) -> list[str]:
    return [part for part in (format_speed(speed), format_eta(eta)) if part]


# -- lines ---------------------------------------------------------------------------------------
def result_line(result: ItemResult) -> str:
    """An item's result in columns: outcome, title, size, hash, URL. A failure's error class takes
    the title's column and its message, whole, follows the URL: the end of it says what to do."""
    size = sum(a.size for a in result.assets)
    sha = result.assets[0].sha256[:12] if result.assets else "-"
    failed = result.outcome == "failed"
    detail = clean(result.error_class if failed else result.title, TITLE_COLUMNS)
    line = (f"{result.outcome:<10} {pad(detail, TITLE_COLUMNS)} {(human_size(size) if size else '-'):>10}  "
            f"{sha:<12}  {escaped(result.url)}")
    return line + (f"  {printable(result.error)}" if failed and result.error else "")


TITLE_COLUMNS = 32
ITEMS_HEADER = f"{'PLATFORM':<10} {pad('TITLE', TITLE_COLUMNS)} {'SIZE':>10}  {'SHA256':<12}  KEY"


def item_line(item: CatalogItem) -> str:
    """A catalog item under :data:`ITEMS_HEADER` (``trawl items``)."""
    size = sum(a.size for a in item.assets)
    sha = item.assets[0].sha256[:12] if item.assets else "-"
    title = ("[preview] " if item.metadata.get("preview") else "") + (item.title or "")
    return (f"{item.platform:<10} {pad(clean(title, TITLE_COLUMNS), TITLE_COLUMNS)} {human_size(size):>10}  "
            f"{sha:<12}  {item.canonical_key}")


def progress_bar(progress: dict[str, Any], width: int = 30, speed: float | None = None,
                 eta: float | None = None) -> str:
    """A running item: bar, bytes, stage, then speed and ETA when known, a retry's attempt number and
    the last error."""
    done, total = progress["bytes_done"], progress["bytes_total"]
    if progress.get("live"):  # a recording has no end to measure against: what it holds and waits for
        state = "paused" if progress["paused"] else ""
        rate = "".join(f"  {part}" for part in _speed_eta(None if progress["paused"] else speed, None))
        error = f"  last error {clean(progress['last_error'], 50)}" if progress["last_error"] else ""
        return f"{recording_words(progress['live'])}{'  ' + state if state else ''}{rate}{error}"
    if total:
        filled = min(width, width * done // total)
        bar = f"[{'#' * filled}{'.' * (width - filled)}] {100 * done // total:3d}%"
    else:
        bar = f"[{'?' * width}]  ..."
    size = f"{human_size(done)}" + (f" / {human_size(total)}" if total else "")
    state = "paused" if progress["paused"] else progress["stage"]
    rate = "".join(f"  {part}" for part in _speed_eta(None if progress["paused"] else speed,
                                                      None if progress["paused"] else eta))
    attempt = f"  attempt {progress['attempt']}" if progress["attempt"] > 1 else ""
    error = f"  last error {clean(progress['last_error'], 50)}" if progress["last_error"] else ""
    return f"{bar} {size:>19}  {state:<8}{rate}{attempt}{error}"


def fitted_progress_bar(progress: dict[str, Any], columns: int, speed: float | None = None,
                        eta: float | None = None) -> str:
    """:func:`progress_bar` with the bar as wide as ``columns`` allows (10 to 30 characters)."""
    narrow = progress_bar(progress, 10, speed, eta)
    return progress_bar(progress, max(10, min(30, columns - (len(narrow) - 10))), speed, eta)


def crawl_progress_line(done: int, total: int, bytes_done: int, speed: float | None, eta: float | None) -> str:
    """The live line of ``trawl crawl``: items finished of all, bytes downloaded, speed, ETA."""
    return "  ".join([f"{done}/{total} items", human_size(bytes_done), *_speed_eta(speed, eta)])


def retry_line(retry: dict[str, Any], now: float, limit: int | None = None) -> str:
    """What an item waits for: ``retrying: network_error (connection refused), attempt 7/10, next in 32 s``
    (``retry`` as :func:`trawl.starter.client.item_progress` gives it; ``limit``: its stage's attempts)."""
    message = retry["message"].rsplit(": ", 1)[-1] if retry.get("message") else ""
    attempts = f"{retry['attempt']}/{limit}" if limit else str(retry["attempt"])
    wait = max(0, round(retry["next_at"] - now))
    return (f"retrying: {retry['error_class']}" + (f" ({clean(message, 40)})" if message else "")
            + f", attempt {attempts}, next in {wait} s")


def outcomes_line(outcomes: dict[str, int], failures: dict[str, int]) -> str:
    """A crawl's end: ``3 items: 2 committed, 1 failed (not_found)``."""
    total = sum(outcomes.values())
    order = ("committed", "duplicate", "failed", "cancelled")
    parts = []
    for outcome in sorted(outcomes, key=lambda o: (order.index(o) if o in order else len(order), o)):
        why = ""
        if outcome == "failed" and failures:
            why = " (" + ", ".join(f"{n} {kind}" if n > 1 else kind
                                   for kind, n in sorted(failures.items(), key=lambda kv: -kv[1])) + ")"
        parts.append(f"{outcomes[outcome]} {outcome}{why}")
    return f"{total} item{'s' if total != 1 else ''}: " + ", ".join(parts)


def stats_line(stats: Any, speed: float | None = None, eta: float | None = None) -> str:
    """A crawl's counts (``CrawlStats``), with speed and ETA while it runs."""
    done = ", ".join(f"{n} {outcome}" for outcome, n in sorted(stats.outcomes.items())) or "nothing finished"
    error = getattr(stats, "error", None)  # why a failed crawl failed (its source could not be expanded)
    state = "failed" if error else "cancelled" if stats.cancelled else (
        "paused" if stats.paused else ("finished" if stats.finished_at else "running"))
    rate = ", ".join(_speed_eta(speed, eta)) if state == "running" else ""
    return (f"{state:<9} {stats.queued} queued, {stats.running} running, {done}; "
            f"{human_size(stats.bytes)}" + (f"; {stats.refused} refused" if stats.refused else "")
            + (f"; {rate}" if rate else "") + (f"; {' '.join(error.split())}" if error else ""))


# -- the live status line ----------------------------------------------------------------------------
def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class StatusLine:
    """One line redrawn in place on a terminal; on anything else (a pipe, a file) it writes nothing.

    Lines printed while it shows go through :meth:`print`, which clears it, prints, and draws it
    again; log lines on the same terminal do the same through :class:`AroundStatusLine`.
    """

    shown: StatusLine | None = None  # the one drawn now, if any

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = is_terminal(self.stream)
        self.text = ""

    def columns(self) -> int:
        """How much of a line it can use: the terminal's width less one (80 when unknown)."""
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError):
            columns = 0
        return (columns or 80) - 1

    def show(self, text: str) -> None:
        if not self.enabled:
            return
        self.text = text[: self.columns()]  # a wrapped line could not be redrawn in place
        StatusLine.shown = self
        self.stream.write("\r\033[K" + self.text)
        self.stream.flush()

    def redraw(self) -> None:
        if self.enabled and self.text:
            self.stream.write(self.text)
            self.stream.flush()

    def clear(self) -> None:
        if self.enabled and self.text:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def print(self, line: str, file: TextIO | None = None) -> None:
        self.clear()
        print(line, file=file or sys.stdout, flush=True)
        self.redraw()

    def close(self) -> None:
        self.clear()
        self.text = ""
        if StatusLine.shown is self:
            StatusLine.shown = None


class AroundStatusLine:
    """A terminal stream for log lines that clears the status line before a line and draws it again
    after, so the two do not run into each other."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        line = StatusLine.shown
        if line is None or not line.text:
            return self._stream.write(text)
        line.clear()
        written = self._stream.write(text)
        if text.endswith("\n"):
            self._stream.flush()
            line.redraw()
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def say(command: str, message: str) -> None:
    """``trawl <command>: <message>`` on stderr."""
    print(f"trawl {command}: {message}", file=sys.stderr, flush=True)
