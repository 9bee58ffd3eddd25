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


# -- issue 12 item 9: permanent failures are failed items, "still failing" only for retryable ---------
PERMANENT_LOG = [
    line("2026-11-30T10:00:00Z", "failed", platform="generic", stage="fetch", error_class="not_found", task="gone"),
    line("2026-11-30T10:00:01Z", "failed", platform="generic", stage="fetch", error_class="not_found", task="gone2"),
    line("2026-11-30T10:00:02Z", "failed", platform="facebook", stage="fetch", error_class="login_required",
         task="wall"),
    line("2026-11-30T10:00:03Z", "retry", platform="generic", stage="fetch", error_class="http_5xx", task="flaky"),
    line("2026-11-30T10:00:04Z", "retry", platform="weibo", stage="fetch", error_class="rate_limited", task="busy"),
    line("2026-11-30T10:00:09Z", "ok", platform="generic", stage="fetch", task="flaky"),
]


def test_a_permanent_failure_is_not_recovered_by_another_items_success() -> None:
    report = triage(PERMANENT_LOG)
    groups = {(g.platform, g.error_class): g for g in report.groups}
    gone = groups[("generic", "not_found")]
    assert gone.retryable is False and gone.still_failing is False
    assert gone.failed_items == 2 and gone.failures == 2
    wall = groups[("facebook", "login_required")]
    assert wall.retryable is False and wall.still_failing is False and wall.failed_items == 1
    flaky = groups[("generic", "http_5xx")]
    assert flaky.retryable is True and flaky.still_failing is False and flaky.last_success == "2026-11-30T10:00:09Z"
    busy = groups[("weibo", "rate_limited")]
    assert busy.retryable is True and busy.still_failing is True
    # Still failing first, then the permanent failures (items to look at), then what recovered.
    assert [(g.platform, g.error_class) for g in report.groups] == [
        ("weibo", "rate_limited"), ("generic", "not_found"), ("facebook", "login_required"),
        ("generic", "http_5xx")]
    as_json = report.to_json()["groups"]
    assert as_json[1]["retryable"] is False and as_json[1]["failed_items"] == 2


def test_render_shows_permanent_failures_as_failed_items() -> None:
    rows = {tuple(r.split()[:3]): r for r in render(triage(PERMANENT_LOG)).splitlines()[1:-1]}
    gone = rows[("generic", "fetch", "not_found")]
    assert "ok at" not in gone and "YES" not in gone and "2 items failed" in gone
    assert "1 item failed" in rows[("facebook", "fetch", "login_required")]
    assert "no, ok at 10:00:09" in rows[("generic", "fetch", "http_5xx")]
    assert "YES" in rows[("weibo", "fetch", "rate_limited")]


def test_a_retryable_class_that_ran_out_of_attempts_counts_its_failed_items() -> None:
    log = [line("2026-11-30T10:00:00Z", "retry", error_class="network_timeout", task="a"),
           line("2026-11-30T10:00:05Z", "failed", error_class="network_timeout", task="a"),
           line("2026-11-30T10:00:06Z", "retry", error_class="network_timeout", task="b")]
    group = triage(log).groups[0]
    assert group.retryable is True and group.still_failing is True
    assert (group.count, group.retries, group.failures, group.failed_items) == (3, 2, 1, 1)
