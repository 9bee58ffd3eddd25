"""Every recorded history replays on today's workflow code (the versioning policy's guard).

A workflow change that alters the commands a recorded run produced fails here, in CI, before it
can fail running items. The histories come from tests/workflows/record_histories.py.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from tests.workflows.careless_change import TimerBeforeFetch
from trawl.workflows.crawl import CrawlWorkflow
from trawl.workflows.extras import ExtrasRefreshWorkflow
from trawl.workflows.media_item import MediaItemWorkflow

HISTORIES = sorted((Path(__file__).resolve().parent / "histories").glob("*.json"))
EXPECTED = {"item_committed", "item_small_committed", "item_duplicate", "item_failed_not_found",
            "item_failed_after_retries", "item_url_expired_refetched", "item_paused_resumed", "item_cancelled",
            "item_dash_two_assets", "item_thumbnail_left_out", "item_hls_committed",
            "crawl_pause_resume_add_urls", "crawl_cancelled", "crawl_continue_as_new_run1", "crawl_continue_as_new_run2",
            "crawl_multipart", "crawl_source_failed", "crawl_joined_items_left_alone",
            "crawl_frontier_run1", "crawl_frontier_run2", "crawl_frontier_run3", "crawl_part_already_done",
            "crawl_followed_run1", "crawl_followed_run2", "item_tiny_stored_by_fetch_and_store_tiny",
            "item_tiny_fetch_and_store_tiny_left_to_small_item",
            "item_on_host_committed", "item_on_host_paused_resumed", "item_on_host_cancelled",
            "item_on_fetch_s_host_committed", "item_on_fetch_s_host_paused_resumed", "item_on_fetch_s_host_cancelled"}


def history(path: Path) -> WorkflowHistory:
    return WorkflowHistory.from_json(path.stem, json.loads(path.read_text()))


def test_every_scenario_has_a_recorded_history() -> None:
    assert EXPECTED <= {p.stem for p in HISTORIES}


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_history_replays_on_current_code(path: Path) -> None:
    replayer = Replayer(workflows=[MediaItemWorkflow, CrawlWorkflow, ExtrasRefreshWorkflow])
    await replayer.replay_workflow(history(path))


ITEM_HISTORIES = [p for p in HISTORIES if p.stem.startswith("item_")]


@pytest.mark.parametrize("path", ITEM_HISTORIES, ids=[p.stem for p in ITEM_HISTORIES])
async def test_replay_catches_a_non_deterministic_change(path: Path) -> None:
    replayer = Replayer(workflows=[TimerBeforeFetch, CrawlWorkflow])
    with pytest.raises(NondeterminismError):
        await replayer.replay_workflow(history(path))


async def test_a_run_that_asked_for_one_activity_on_host_but_took_the_stages_replays() -> None:
    """A rolling upgrade: the starter of the new version asks for one activity on the host, a worker
    of the version before drops the field it does not know and records the stages; a worker of the
    new version replays that run (patch ONE_ACTIVITY_ON_HOST: no marker, so the stages)."""
    recorded = json.loads((HISTORIES[0].parent / "item_lean_committed.json").read_text())  # 2 MB, the stages
    started = recorded["events"][0]["workflowExecutionStartedEventAttributes"]["input"]["payloads"][0]
    item_input = json.loads(base64.b64decode(started["data"]))
    assert item_input["options"]["small_item_size"] < 2_000_000  # the item would qualify
    item_input["options"]["one_activity_on_host"] = True
    started["data"] = base64.b64encode(json.dumps(item_input).encode()).decode()
    scheduled = [e["activityTaskScheduledEventAttributes"]["activityType"]["name"] for e in recorded["events"]
                 if "activityTaskScheduledEventAttributes" in e]
    assert scheduled[-3:] == ["download", "verify", "commit"]
    replayer = Replayer(workflows=[MediaItemWorkflow])
    await replayer.replay_workflow(WorkflowHistory.from_json("asked-took-the-stages", recorded))


async def test_a_run_whose_fetch_claimed_a_host_but_took_claim_host_replays() -> None:
    """A rolling upgrade: a fetch of the new version claimed its host (FetchResult.host_queue), a
    worker of the version before took the next workflow task, dropped the field and claimed a host
    through the shared queue; a worker of the new version replays that run (patch
    FETCH_CLAIMS_HOST: no marker, so claim_host). Without the patch the replay would skip it."""
    recorded = json.loads((HISTORIES[0].parent / "item_on_host_committed.json").read_text())
    scheduled = {e["eventId"]: e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
                 for e in recorded["events"] if "activityTaskScheduledEventAttributes" in e}
    assert list(scheduled.values()) == ["fetch_and_store_tiny", "claim_host", "small_item"]
    completed = [e["activityTaskCompletedEventAttributes"] for e in recorded["events"]
                 if "activityTaskCompletedEventAttributes" in e]
    fetched = next(c["result"]["payloads"][0] for c in completed
                   if scheduled[c["scheduledEventId"]] == "fetch_and_store_tiny")
    result = json.loads(base64.b64decode(fetched["data"]))
    result["host_queue"] = "rec-host-elsewhere"
    fetched["data"] = base64.b64encode(json.dumps(result).encode()).decode()
    replayer = Replayer(workflows=[MediaItemWorkflow])
    await replayer.replay_workflow(WorkflowHistory.from_json("claimed-by-fetch-took-claim-host", recorded))
