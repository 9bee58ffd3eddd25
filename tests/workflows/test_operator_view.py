"""What an operator sees of items and crawls: through the queries the Web UI uses (visibility
list, describe, workflow status, the metadata query behind "Current Details") and the CLI's data."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.failure.v1 import Failure
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.common import SearchAttributeKey
from temporalio.exceptions import ApplicationError

from trawl.activities import download as download_activity
from trawl.starter.client import cancel_crawl, item_progress, item_result, start_crawl, start_item
from tests.conftest import make_settings
from tests.polling import until
from trawl.models import Resolved
from trawl.platforms.base import ResolveContext
from trawl.platforms.generic import GenericResolver
from trawl.platforms.registry import Registry, default_registry
from trawl.settings import Settings
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.simulator.demo import og_page
from trawl.worker.main import running_worker
from trawl.workflows.crawl import CrawlWorkflow
from trawl.workflows.media_item import MediaItemWorkflow

MiB = 1024 * 1024


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str) -> Settings:
    return make_settings(tmp_path, temporal_address, retry={
        stage: {"initial_interval": "100ms", "maximum_interval": "300ms", "maximum_attempts": 2}
        for stage in ("fetch", "download", "verify", "commit")})


async def current_details(client: Client, workflow_id: str) -> str:
    """What the Web UI shows as "Current Details" (the SDK's built-in metadata query)."""
    metadata = await client.get_workflow_handle(workflow_id).query("__temporal_workflow_metadata")
    return metadata.get("currentDetails", "") if isinstance(metadata, dict) else metadata.current_details


async def test_a_failed_item_is_a_failed_execution_with_its_result(temporal_client: Client, settings: Settings,
                                                                   sim: Simulator, worker) -> None:
    url = sim.url("/watch/gone")  # the simulator answers 404
    started = await start_item(temporal_client, settings, default_registry(), url)
    result = await asyncio.wait_for(item_result(started.handle, url), 60)
    assert (result.outcome, result.error_class, result.url) == ("failed", "not_found", url)
    desc = await started.handle.describe()
    assert desc.status == WorkflowExecutionStatus.FAILED
    with pytest.raises(WorkflowFailureError) as raised:
        await started.handle.result()
    failure = raised.value.cause
    assert isinstance(failure, ApplicationError) and failure.type == "not_found"
    assert "\n" not in failure.message and failure.message.startswith("not_found: ")
    assert failure.details[0]["url"] == url and failure.details[0]["outcome"] == "failed"
    query = f"WorkflowId='{started.workflow_id}' AND ExecutionStatus='Failed'"
    async def failed_runs() -> list[str]:
        return [w.id async for w in temporal_client.list_workflows(query)]

    listed = await until(failed_runs, "the failed run listed", 30, every=0.2)  # visibility is eventually consistent
    assert listed == [started.workflow_id]
    assert (await current_details(temporal_client, started.workflow_id)).startswith("failed not_found")
    again = await start_item(temporal_client, settings, default_registry(), url)  # a later crawl: a new run
    assert (await asyncio.wait_for(item_result(again.handle, url), 60)).outcome == "failed"
    runs = [w async for w in temporal_client.list_workflows(f"WorkflowId='{started.workflow_id}'")]
    assert len(runs) in (1, 2)  # the new run exists (visibility may lag for the first)
    assert (await again.handle.describe()).run_id != desc.run_id


async def test_details_and_progress_of_a_running_then_paused_item(temporal_client: Client, settings: Settings,
                                                                  sim: Simulator, worker,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Reports from half a second in (5 s by default: tests/activities/test_download_activity.py).
    monkeypatch.setattr(download_activity, "REPORT_AFTER_S", 0.5)
    size = 6 * MiB
    sim.add_file("/v/slow.mp4", MediaFile("mp4", "details", size), FileBehaviour(throttle_bps=1_500_000))
    sim.add_page("/watch/slow", og_page("Slow clip", "/v/slow.mp4"))
    started = await start_item(temporal_client, settings, default_registry(), sim.url("/watch/slow"))
    wid = started.workflow_id

    async def reported() -> bool:
        return "MiB - Slow clip" in await current_details(temporal_client, wid)
    await until(reported)
    details = await current_details(temporal_client, wid)
    assert details.startswith("download ") and "%" in details, details
    # The filter docs/web-ui.md gives for items stuck in download finds it (and the one for items
    # not past fetch does not).
    for query, expected in ((f"Stage = 'download' AND ExecutionStatus = 'Running' AND WorkflowId = '{wid}'", [wid]),
                            (f"Stage IS NULL AND ExecutionStatus = 'Running' AND WorkflowId = '{wid}'", [])):
        assert await listed_ids(temporal_client, query, len(expected)) == expected, query

    await started.handle.signal(MediaItemWorkflow.pause)

    async def paused() -> bool:
        return (await current_details(temporal_client, wid)).startswith("paused ")
    await until(paused)
    await asyncio.sleep(1.5)  # let the download stop at its next heartbeat and report what it kept
    progress = await item_progress(temporal_client, started.handle)
    assert progress["paused"] and progress["bytes_done"] > 0 and progress["last_error"] is None, progress
    assert "kept" in await current_details(temporal_client, wid)
    await started.handle.signal(MediaItemWorkflow.resume)
    result = await asyncio.wait_for(item_result(started.handle, ""), 60)
    assert result.outcome == "committed"
    assert (await started.handle.query(MediaItemWorkflow.progress)).last_error is None
    assert (await current_details(temporal_client, wid)).startswith("committed - Slow clip")


async def test_a_cover_of_no_given_size_counts_in_the_percent_once_downloaded(
        temporal_client: Client, settings: Settings, sim: Simulator, worker) -> None:
    """The page gives the video's size (the probe), not the cover's, and the cover ends before it
    would report: its download's end gives the item its size, and the details line its percent."""
    size = 6 * MiB
    sim.add_file("/v/covered.mp4", MediaFile("mp4", "covered", size), FileBehaviour(throttle_bps=1_000_000))
    sim.add_file("/v/covered.jpg", MediaFile("jpeg", "covered-cover", 300_000))
    sim.add_page("/watch/covered", og_page("Covered clip", "/v/covered.mp4", image="/v/covered.jpg"))
    started = await start_item(temporal_client, settings, default_registry(), sim.url("/watch/covered"))

    async def with_percent() -> str | None:
        details = await current_details(temporal_client, started.workflow_id)
        return details if "%" in details else None
    details = await until(with_percent, "a percent in the details line", 30, every=0.1)
    assert f"/{(size + 300_000) / MiB:.1f} MiB - Covered clip" in details, details  # 6.3, not 6.0
    assert (await asyncio.wait_for(item_result(started.handle, ""), 60)).outcome == "committed"


@pytest.mark.parametrize(("size", "activity_name", "stage"), [(3_000_000, "small_item", "download"),
                                                            (900_000, "fetch_and_store_tiny", "fetch")])
async def test_a_small_or_tiny_item_s_bytes_are_read_from_its_heartbeats(
        temporal_client: Client, settings: Settings, sim: Simulator, worker, size: int, activity_name: str,
        stage: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Downloads shorter than REPORT_AFTER_S tell their item nothing: the status command and the
    API read the bytes from the heartbeats of the activity doing the download."""
    monkeypatch.setattr(download_activity, "REPORT_AFTER_S", 60.0)  # none, however loaded the machine
    name = f"/s/{activity_name}.mp4"
    sim.add_file(name, MediaFile("mp4", activity_name, size), FileBehaviour(throttle_bps=size // 3))  # 3 s
    started = await start_item(temporal_client, settings, default_registry(), sim.url(name))

    async def read_from_a_heartbeat() -> dict | None:
        progress = await item_progress(temporal_client, started.handle)
        return progress if progress["bytes_done"] > 0 else None
    progress = await until(read_from_a_heartbeat, "bytes from a heartbeat", 30, every=0.1)
    assert progress["stage"] == stage and progress["bytes_total"] == size, progress
    own = await started.handle.query(MediaItemWorkflow.progress)
    pending = (await started.handle.describe()).raw_description.pending_activities
    if any(a.activity_type.name == activity_name for a in pending):  # still downloading: no report yet
        assert own.bytes_done == 0, own
    assert (await asyncio.wait_for(item_result(started.handle, ""), 60)).outcome == "committed"


async def test_a_cancelled_item_keeps_its_identity(temporal_client: Client, settings: Settings, sim: Simulator,
                                                   worker) -> None:
    sim.add_file("/v/c.mp4", MediaFile("mp4", "identity", 8 * MiB), FileBehaviour(throttle_bps=1_000_000))
    sim.add_page("/watch/c", og_page("Kept identity", "/v/c.mp4"))
    url = sim.url("/watch/c")
    started = await start_item(temporal_client, settings, default_registry(), url)
    async def downloading() -> bool:
        return sim.bytes_sent("/v/c.mp4") > 200_000
    await until(downloading)
    await started.handle.cancel()
    result = await asyncio.wait_for(item_result(started.handle, ""), 60)
    assert result.outcome == "cancelled"
    assert (result.url, result.title, result.platform) == (url, "Kept identity", "generic")
    assert result.canonical_key and result.canonical_key.startswith("web:")


async def test_crawl_accounting_and_cancel(temporal_client: Client, settings: Settings, sim: Simulator,
                                           worker) -> None:
    """Six URLs, one at a time: one committed, one duplicate of it, one cancelled on its own, then the
    crawl is cancelled: every URL is counted once, the crawl ends Canceled, bytes count downloads."""
    sim.add_file("/f/a.mp4", MediaFile("mp4", "acct-a", 200_000))
    for name in ("b", "c", "d", "e"):
        sim.add_file(f"/f/{name}.mp4", MediaFile("mp4", f"acct-{name}", 4 * MiB), FileBehaviour(throttle_bps=500_000))
    urls = [sim.url("/f/a.mp4"), sim.url("/f/a.mp4") + "?utm_source=x"] + [sim.url(f"/f/{n}.mp4") for n in "bcde"]
    handle, refused = await start_crawl(temporal_client, settings, default_registry(), urls, concurrency=1)
    assert refused == []

    async def running_b() -> bool:
        return sim.bytes_sent("/f/b.mp4") > 100_000
    await until(running_b)
    await temporal_client.get_workflow_handle(default_registry().route(urls[2]).workflow_id).cancel()

    async def running_c() -> bool:
        return sim.bytes_sent("/f/c.mp4") > 100_000
    await until(running_c)
    details = await current_details(temporal_client, handle.id)
    assert "queued" in details and "running" in details and "committed" in details, details
    await cancel_crawl(handle)
    with pytest.raises(WorkflowFailureError):
        await asyncio.wait_for(handle.result(), 60)
    assert (await handle.describe()).status == WorkflowExecutionStatus.CANCELED
    stats = await handle.query(CrawlWorkflow.stats)
    assert stats.outcomes == {"committed": 1, "duplicate": 1, "cancelled": 2, "not_started": 2}, stats.outcomes
    assert sum(stats.outcomes.values()) == len(urls)
    assert stats.bytes == 200_000  # the duplicate's size is not downloaded bytes


# The Web UI's list columns (custom search attributes an operator adds to the list).
TITLE = SearchAttributeKey.for_keyword("Title")
ERROR_CLASS = SearchAttributeKey.for_keyword("ErrorClass")
PLATFORM = SearchAttributeKey.for_keyword("Platform")
OUTCOME = SearchAttributeKey.for_keyword("Outcome")
STAGE = SearchAttributeKey.for_keyword("Stage")


async def upserts(handle: WorkflowHandle) -> list[set[str]]:
    """The search attributes of each upsert in a run's history (each one a billable action and a
    visibility write), but the SDK's own TemporalChangeVersion upsert of each workflow.patched."""
    changed = [set(e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields)
               async for e in handle.fetch_history_events()
               if e.event_type == EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES]
    return [names for names in changed if names != {"TemporalChangeVersion"}]


async def test_the_list_reads_title_platform_outcome_and_error_class(temporal_client: Client, settings: Settings,
                                                                     sim: Simulator, worker) -> None:
    """A url-<sha1> item is readable from the list: its summary is the platform and URL from the
    start, and Title, Platform, Outcome and ErrorClass are columns, set with no extra upsert."""
    sim.add_file("/v/columns.mp4", MediaFile("mp4", "columns", 300_000))
    sim.add_page("/watch/columns", og_page("Columns\n  clip", "/v/columns.mp4"))
    sim.add_page("/watch/half", og_page("Half clip", "/v/absent.mp4"))  # fetch finds it, download 404s
    registry = default_registry()
    committed_url, failed_url = sim.url("/watch/columns"), sim.url("/watch/half")
    committed = await start_item(temporal_client, settings, registry, committed_url)
    failed = await start_item(temporal_client, settings, registry, failed_url)
    assert committed.workflow_id.startswith("url-") and failed.workflow_id.startswith("url-")
    assert (await asyncio.wait_for(item_result(committed.handle, committed_url), 60)).outcome == "committed"
    result = await asyncio.wait_for(item_result(failed.handle, failed_url), 60)
    assert (result.outcome, result.error_class, result.title) == ("failed", "not_found", "Half clip")

    desc = await committed.handle.describe()
    assert await desc.static_summary() == f"generic: {committed_url}"
    attrs = desc.typed_search_attributes
    assert (attrs.get(TITLE), attrs.get(PLATFORM), attrs.get(OUTCOME), attrs.get(STAGE), attrs.get(ERROR_CLASS)) == (
        "Columns clip", "generic", "committed", "done", None)
    desc = await failed.handle.describe()
    assert await desc.static_summary() == f"generic: {failed_url}"
    attrs = desc.typed_search_attributes
    assert (attrs.get(TITLE), attrs.get(PLATFORM), attrs.get(OUTCOME), attrs.get(ERROR_CLASS)) == (
        "Half clip", "generic", "failed", "not_found")

    query = f"Title = 'Half clip' AND ErrorClass = 'not_found' AND WorkflowId = '{failed.workflow_id}'"
    async def found() -> list[tuple[str, str | None]]:
        return [(w.id, w.typed_search_attributes.get(OUTCOME)) async for w in temporal_client.list_workflows(query)]

    listed = await until(found, "the failed item listed by its title and error", 30, every=0.2)  # eventually consistent
    assert listed == [(failed.workflow_id, "failed")]
    # Platform is set at start; the identity and Stage=download ride on the one upsert after fetch,
    # ErrorClass and Outcome on the one that ends the run (lean-history: no Stage upsert per step,
    # which paid for the SDK's upsert of the patch's id). (A tiny item's identity comes with its
    # outcome: tests/workflows/test_small_items.py.)
    assert await upserts(failed.handle) == [
        {"Platform", "CanonicalKey", "Title", "Stage"}, {"Stage", "Outcome", "ErrorClass"}]
    assert await upserts(committed.handle) == [{"Platform", "CanonicalKey", "Title", "Stage"}, {"Stage", "Outcome"}]


async def listed_ids(client: Client, query: str, expected: int) -> list[str]:
    """The workflow ids a visibility query lists, once it lists ``expected`` of them or after 10 s
    (visibility follows the histories by a moment; an absence is read after one)."""
    deadline = time.monotonic() + 10
    if not expected:
        await asyncio.sleep(1)
    while True:
        found = [w.id async for w in client.list_workflows(query)]
        if len(found) >= expected or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.2)


def _failures(failure: Failure) -> list[Failure]:
    chain = [failure]
    while chain[-1].HasField("cause"):
        chain.append(chain[-1].cause)
    return chain


async def _failure_events(handle: WorkflowHandle) -> tuple[list[Failure], Failure]:
    """The activity failures of a run's history and the run's own failure."""
    activities: list[Failure] = []
    run: Failure | None = None
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
            activities.append(event.activity_task_failed_event_attributes.failure)
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
            run = event.workflow_execution_failed_event_attributes.failure
    assert run is not None
    return activities, run


async def test_a_classified_failure_carries_its_class_and_message_without_a_stack_trace(
        temporal_client: Client, settings: Settings, sim: Simulator, worker) -> None:
    url = sim.url("/watch/gone")  # the simulator answers 404: expected, classified, final
    started = await start_item(temporal_client, settings, default_registry(), url)
    with pytest.raises(WorkflowFailureError) as raised:
        await asyncio.wait_for(started.handle.result(), 60)
    error = raised.value.cause
    assert isinstance(error, ApplicationError) and error.type == "not_found"
    assert error.message == f"not_found: HTTP 404 for {url}"
    assert error.failure is not None and error.failure.stack_trace == ""
    assert error.__cause__ is None and not error.failure.HasField("cause")
    activities, run = await _failure_events(started.handle)
    assert [(f.application_failure_info.type, f.message, f.stack_trace) for f in activities] == [
        ("not_found", f"HTTP 404 for {url}", "")]
    assert (run.application_failure_info.type, run.stack_trace, run.HasField("cause")) == ("not_found", "", False)


class BuggyResolver(GenericResolver):
    """A resolver with a bug for URLs under /bug/: an unexpected exception, i.e. internal_error."""

    def resolve(self, url: str, ctx: ResolveContext) -> Resolved:
        if "/bug/" in url:
            raise ZeroDivisionError("a resolver bug")
        return super().resolve(url, ctx)


async def test_an_internal_error_keeps_its_stack_trace(temporal_client: Client, settings: Settings,
                                                       sim: Simulator) -> None:
    registry = Registry([BuggyResolver()])
    url = sim.url("/bug/page")
    async with running_worker(temporal_client, settings, registry):
        started = await start_item(temporal_client, settings, registry, url)
        with pytest.raises(WorkflowFailureError) as raised:
            await asyncio.wait_for(started.handle.result(), 60)
    error = raised.value.cause
    assert isinstance(error, ApplicationError) and error.type == "internal_error"
    assert error.failure is not None and "media_item.py" in error.failure.stack_trace
    activities, run = await _failure_events(started.handle)
    assert activities and all(f.application_failure_info.type == "internal_error" and f.stack_trace
                              for f in activities)
    # The run's failure leads to the activity's, stack included: where the bug is looked for first.
    chain = _failures(run)
    assert run.application_failure_info.type == "internal_error" and run.stack_trace and len(chain) > 1
    assert chain[-1].application_failure_info.type == "internal_error" and chain[-1].stack_trace


def test_the_failure_converter_drops_only_expected_stack_traces() -> None:
    """Pure logic: which failures lose their stack trace (the ones above, end to end)."""
    from temporalio.converter import DataConverter

    from trawl.worker.interceptors import DATA_CONVERTER

    def encoded(error: BaseException) -> Failure:
        try:
            raise error
        except BaseException as raised:  # noqa: BLE001 - a traceback to convert
            failure = Failure()
            DATA_CONVERTER.failure_converter.to_failure(raised, DATA_CONVERTER.payload_converter, failure)
            return failure

    assert encoded(ApplicationError("HTTP 404", type="not_found")).stack_trace == ""
    assert encoded(ApplicationError("lost", type="host_lost")).stack_trace == ""
    assert encoded(ApplicationError("bug", type="internal_error")).stack_trace
    assert encoded(ApplicationError("untyped")).stack_trace
    assert encoded(ZeroDivisionError("bug")).stack_trace
    # Decoding is the SDK's own: a default client reads what trawl's workers write.
    back = DataConverter.default.failure_converter.from_failure(
        encoded(ApplicationError("HTTP 404", type="not_found")), DataConverter.default.payload_converter)
    assert isinstance(back, ApplicationError) and (back.type, back.message) == ("not_found", "HTTP 404")
