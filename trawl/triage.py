"""``trawl logs triage``: what is failing, where, and since when, from trawl's JSON log lines.

Groups failed activity attempts (``outcome`` retry or failed) by platform x stage x
error_class, with counts, first and last seen, an example, and what became of it:

- a *retryable* class (``http_5xx``, ``rate_limited``, ``network_timeout``, ...) is still failing
  when it was seen within ``recent`` of the newest line with no later success on the same
  platform and stage; otherwise it recovered ("ok at ...") or went quiet;
- a *permanent* class (``not_found``, ``forbidden``, ``login_required``, ... : the taxonomy's
  non-retryable classes) is never retried, so another item's later success says nothing about
  it: it is reported as the items it failed, never as recovered or still failing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta

import orjson

from trawl.errors import NON_RETRYABLE

FAILURE_OUTCOMES = frozenset({"retry", "failed"})


@dataclass
class Group:
    platform: str
    stage: str
    error_class: str
    count: int = 0
    retries: int = 0
    failures: int = 0
    first_seen: str = ""
    last_seen: str = ""
    example_task_id: str | None = None
    example_url: str | None = None
    example_error: str | None = None
    last_success: str | None = None
    still_failing: bool = False
    retryable: bool = True
    failed_items: int = 0  # distinct items (task ids) whose last attempt in this group failed for good
    _failed_tasks: set[str | None] = field(default_factory=set, repr=False)


@dataclass
class Report:
    groups: list[Group] = field(default_factory=list)
    lines: int = 0
    unreadable: int = 0
    newest: str | None = None

    def to_json(self) -> dict:
        return {"lines": self.lines, "unreadable": self.unreadable, "newest": self.newest,
                "groups": [{k: v for k, v in asdict(g).items() if not k.startswith("_")} for g in self.groups]}


def parse_ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def triage(lines: Iterable[str], *, since: timedelta | None = None, recent: timedelta = timedelta(minutes=5),
           now: datetime | None = None) -> Report:
    """Read log lines and group the failures.

    Args:
        lines: log lines; lines that are not trawl JSON events are counted and skipped.
        since: only consider lines newer than ``now - since``.
        recent: how close to the newest line a failure must be to count as still failing.
        now: the reference for ``since`` (default: the wall clock).
    """
    report = Report()
    cutoff = ((now or datetime.now(UTC)) - since).isoformat().replace("+00:00", "Z") if since else None
    groups: dict[tuple[str, str, str], Group] = {}
    last_ok: dict[tuple[str, str], str] = {}
    newest = ""
    for line in lines:
        report.lines += 1
        # Most lines are successes or other events; skip the JSON parse when the text alone
        # shows the line cannot matter.
        if '"outcome"' not in line:
            if line.strip():
                report.unreadable += not line.lstrip().startswith("{")
            continue
        try:
            event = orjson.loads(line)
        except ValueError:
            report.unreadable += 1
            continue
        ts = event.get("ts")
        if not isinstance(ts, str):
            report.unreadable += 1
            continue
        if cutoff and ts < cutoff:
            continue
        newest = max(newest, ts)
        outcome = event.get("outcome")
        stage = event.get("stage") or "-"
        platform = event.get("platform") or "-"
        if event.get("event") != "activity":
            continue
        if outcome == "ok":
            key2 = (platform, stage)
            if ts > last_ok.get(key2, ""):
                last_ok[key2] = ts
            continue
        if outcome not in FAILURE_OUTCOMES:
            continue
        key = (platform, stage, event.get("error_class") or "unknown")
        group = groups.get(key)
        if group is None:
            group = groups[key] = Group(*key, first_seen=ts, last_seen=ts, retryable=key[2] not in NON_RETRYABLE)
        group.count += 1
        if outcome == "failed":
            group.failures += 1
            group._failed_tasks.add(event.get("task_id"))
        else:
            group.retries += 1
        if ts < group.first_seen:
            group.first_seen = ts
        if ts >= group.last_seen:
            group.last_seen = ts
            group.example_task_id = event.get("task_id")
            group.example_url = event.get("canonical_url")
            group.example_error = (event.get("error") or "")[:300] or None
    report.newest = newest or None
    horizon = (parse_ts(newest) - recent).isoformat().replace("+00:00", "Z") if newest else ""
    for group in groups.values():
        group.failed_items = len(group._failed_tasks)
        if not group.retryable:
            continue  # permanent: neither recovered by nor still failing after other items' successes
        group.last_success = last_ok.get((group.platform, group.stage))
        recovered = group.last_success is not None and group.last_success > group.last_seen
        group.still_failing = group.last_seen >= horizon and not recovered
    # Still failing first, then the permanent failures (items someone has to look at), then the rest.
    report.groups = sorted(groups.values(), key=lambda g: (not g.still_failing, g.retryable, -g.count, g.platform,
                                                           g.stage))
    return report


def _short(ts: str | None) -> str:
    return (ts or "-")[:19].replace("T", " ")


def _status(g: Group) -> str:
    if not g.retryable:
        return f"permanent, {g.failed_items} item{'' if g.failed_items == 1 else 's'} failed"
    if g.still_failing:
        return "YES"
    return f"no, ok at {_short(g.last_success)[11:]}" if g.last_success else "no (quiet)"


def render(report: Report) -> str:
    """A table for people: the still-failing groups first."""
    if not report.groups:
        return f"no failures in {report.lines} lines"
    header = f"{'PLATFORM':<10} {'STAGE':<9} {'ERROR_CLASS':<16} {'COUNT':>6} {'RETRY':>6} {'FAILED':>6}  " \
             f"{'FIRST SEEN':<19}  {'LAST SEEN':<19}  {'STILL FAILING':<28}  EXAMPLE"
    rows = [header]
    for g in report.groups:
        status = _status(g)
        example = f"{g.example_task_id or '-'} {g.example_url or ''}".strip()
        rows.append(f"{g.platform:<10} {g.stage:<9} {g.error_class:<16} {g.count:>6} {g.retries:>6} {g.failures:>6}  "
                    f"{_short(g.first_seen):<19}  {_short(g.last_seen):<19}  {status:<28}  {example[:120]}")
    rows.append(f"{report.lines} lines read, newest {_short(report.newest)} UTC"
                + (f", {report.unreadable} not JSON" if report.unreadable else ""))
    return "\n".join(rows)
