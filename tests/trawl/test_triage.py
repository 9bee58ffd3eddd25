import json
from datetime import UTC, datetime, timedelta

from trawl.triage import render, triage


def line(ts: str, outcome: str, platform: str = "weibo", stage: str = "download", error_class: str | None = None,
         task: str = "url-1") -> str:
    return json.dumps({"ts": ts, "event": "activity", "outcome": outcome, "platform": platform, "stage": stage,
                       "error_class": error_class, "task_id": task, "canonical_url": f"https://x/{task}",
                       "error": "boom" if error_class else None})


LOG = [
    line("2026-11-30T10:00:00Z", "retry", error_class="http_5xx", task="a"),
    line("2026-11-30T10:00:05Z", "retry", error_class="http_5xx", task="b"),
    line("2026-11-30T10:00:09Z", "ok", task="a"),
    line("2026-11-30T10:00:20Z", "failed", platform="bilibili", stage="fetch", error_class="rate_limited", task="c"),
    line("2026-11-30T10:00:21Z", "retry", platform="bilibili", stage="fetch", error_class="rate_limited", task="d"),
    "not json at all",
    '{"event": "worker started", "ts": "2026-11-30T10:00:00Z", "outcome": null}',
    "",
]


def test_groups_counts_and_still_failing() -> None:
    report = triage(LOG)
    assert report.lines == 8 and report.unreadable == 1
    first, second = report.groups
    assert (first.platform, first.stage, first.error_class) == ("bilibili", "fetch", "rate_limited")
    assert (first.count, first.retries, first.failures, first.still_failing) == (2, 1, 1, True)
    assert first.first_seen == "2026-11-30T10:00:20Z" and first.last_seen == "2026-11-30T10:00:21Z"
    assert first.example_task_id == "d" and first.example_url == "https://x/d"
    assert (second.platform, second.error_class, second.count) == ("weibo", "http_5xx", 2)
    assert second.still_failing is False and second.last_success == "2026-11-30T10:00:09Z"


def test_old_failures_are_not_still_failing() -> None:
    log = [line("2026-11-30T10:00:00Z", "retry", error_class="http_5xx"),
           line("2026-11-30T11:00:00Z", "ok", platform="other")]
    assert triage(log).groups[0].still_failing is False
    assert triage(log, recent=timedelta(hours=2)).groups[0].still_failing is True


def test_since_filters_by_wall_clock() -> None:
    now = datetime(2026, 11, 30, 10, 0, 30, tzinfo=UTC)
    report = triage(LOG, since=timedelta(seconds=15), now=now)
    assert [(g.platform, g.count) for g in report.groups] == [("bilibili", 2)]


def test_render_names_the_failing_group_first() -> None:
    text = render(triage(LOG))
    rows = text.splitlines()
    assert rows[0].startswith("PLATFORM")
    assert rows[1].split()[:3] == ["bilibili", "fetch", "rate_limited"] and "YES" in rows[1]
    assert "no, ok at" in rows[2]
    assert render(triage([line("2026-11-30T10:00:00Z", "ok")])) == "no failures in 1 lines"
