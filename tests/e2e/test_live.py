"""Live HLS recordings end to end: the simulator's live stream over loopback, a real dev server,
real workers (one killed mid-recording), ffmpeg's remux and ffprobe's word on the result."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHandle

from tests.e2e.live_fixtures import NEEDS_FFMPEG, kill_the_recorder, live_settings, two_workers
from tests.e2e.test_cli import trawl_env
from tests.e2e.test_cli_progress import live_lines, on_a_terminal
from tests.polling import until as wait_until
from tests.trawl.test_live_download import probe
from tests.workflows.test_operator_view import current_details
from trawl.cli.output import progress_bar
from trawl.contracts import PAUSE, RESUME
from trawl.formatting import recording_words
from trawl.platforms.registry import default_registry
from trawl.settings import Settings
from trawl.simulator import Simulator
from trawl.simulator.live_site import LiveSite, LiveStream
from trawl.starter.client import item_progress, item_result, start_item
from trawl.storage.catalog import Catalog

pytestmark = NEEDS_FFMPEG


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str) -> Settings:
    return live_settings(tmp_path, temporal_address)


def committed(settings: Settings, key: str) -> tuple[dict, Path]:
    """The catalog's record of a recording (its metadata.live) and its blob."""
    item = Catalog(settings.catalog_url).get(key)
    assert item is not None and item.status == "committed"
    (asset,) = item.assets
    return item.metadata["live"], settings.blobs_dir / asset.key


async def test_a_live_stream_records_into_the_catalog(temporal_client: Client, settings: Settings, sim: Simulator,
                                                      worker: None) -> None:
    site = LiveSite(sim).install()
    url = site.add_stream("e2e", LiveStream(length=12.0, window=6).start())
    started = await start_item(temporal_client, settings, default_registry(), url)
    # While it records, where people look says so: its progress (trawl status, the API), the
    # details line of the broadcast's workflow (the Web UI) and a look at its crawl's running items.
    progress = await wait_until(lambda: live_progress(temporal_client, started.handle), "a recording's progress",
                                timeout=60)
    live = progress["live"]
    assert progress["stage"] == "recording" and progress["bytes_done"] == live["bytes"] > 0
    assert live["segments"] >= 3 and live["window"] and live["next"] == live["window"][1] + 1
    assert recording_words(live).startswith("recording 0:0") and "waits for" in recording_words(live)
    assert progress_bar(progress).startswith("recording ")
    details = await current_details(temporal_client, progress["recording"])
    assert details.startswith("recording ") and "of media" in details, details
    result = await asyncio.wait_for(item_result(started.handle, ""), 90)
    assert result.outcome == "committed", result
    assert result.canonical_key and "-live-" in result.canonical_key and "(live " in (result.title or "")
    assert site.segment_requests("e2e") == [1] * 12  # every media sequence, once
    record, blob = committed(settings, result.canonical_key)
    assert (record["ended"], record["first_sequence"], record["last_sequence"], record["gaps"]) == ("endlist", 0, 11, [])
    duration, packets = probe(blob)
    print(f"recorded 12 of 12 sequences: {duration:.3f} s, {packets} video packets")
    assert abs(duration - 12.0) <= 0.05 * 12.0 and packets == 120, (duration, packets)
    item = Catalog(settings.catalog_url).get(result.canonical_key)
    assert item is not None and item.metadata["live_status"] == "was_live" and item.duration == 12.0


async def live_progress(client: Client, handle: WorkflowHandle) -> dict | None:
    """The item's progress once it says it records three segments or more."""
    progress = await item_progress(client, handle)
    return progress if (progress.get("live") or {}).get("segments", 0) >= 3 else None


KILL_SECONDS = 20
PART_SECONDS = 4


def parts_of(settings: Settings, key: str) -> tuple[dict, list[tuple[dict, Path]]]:
    """The catalog's record of a recording in parts, and each part's record and blob, in order."""
    item = Catalog(settings.catalog_url).get(key)
    assert item is not None and item.status == "committed"
    record = item.metadata["live"]
    blobs = {asset.name: settings.blobs_dir / asset.key for asset in item.assets}
    return record, [(part, blobs[part["asset"]]) for part in record["parts"] if part["asset"]]


async def test_a_worker_killed_mid_recording_loses_no_sequence(temporal_client: Client, settings: Settings,
                                                              sim: Simulator, tmp_path: Path) -> None:
    """The recording's download moves to another worker within its short heartbeat timeout, which
    goes on from the next media sequence while the playlist's window (9 one-second segments,
    Bilibili's) still names it; the parts committed before the kill stay, the one in progress goes on."""
    settings = settings.model_copy(update={"download": settings.download.model_copy(
        update={"live_part_duration": timedelta(seconds=PART_SECONDS)})})
    site = LiveSite(sim).install()
    stream = LiveStream(length=float(KILL_SECONDS), window=9)
    url = site.add_stream("kill", stream)
    # Both workers poll before the broadcast starts, so the kill comes a few segments in however
    # slowly a worker starts; the one that holds the recording is killed.
    async with two_workers(temporal_client, settings, tmp_path) as workers:
        started = await start_item(temporal_client, settings, default_registry(), url)
        await wait_until(lambda: sum(site.segment_requests("kill")) >= PART_SECONDS + 2, timeout=60)
        killed_at = await kill_the_recorder(temporal_client, started.handle, workers)
        held = sum(1 for n in site.segment_requests("kill") if n)
        result = await asyncio.wait_for(item_result(started.handle, ""), 90)
    assert result.outcome == "committed", result
    record, parts = parts_of(settings, result.canonical_key or "")
    requests = site.segment_requests("kill")
    assert len(requests) == KILL_SECONDS and min(requests) >= 1 and sum(requests) <= KILL_SECONDS + 1, (
        str(requests), json.dumps(record))  # the one in flight again
    resumed = min(t for s in range(KILL_SECONDS) for t in sim.stats[site.segment_path("kill", s)].times if t > killed_at)
    noticed = resumed - killed_at
    print(f"killed after {held} segments; the next segment was asked for {noticed:.1f} s later")
    assert noticed < 9.0  # within the window
    assert (record["segments"], record["gaps"], record["missing_segments"], record["ended"]) == (
        KILL_SECONDS, [], 0, "endlist"), record
    # The parts in order, each going on from the one before, PART_SECONDS each but the last.
    sequences = [(part["first_sequence"], part["last_sequence"]) for part, _ in parts]
    assert sequences == [(s, min(s + PART_SECONDS, KILL_SECONDS) - 1) for s in range(0, KILL_SECONDS, PART_SECONDS)]
    assert [part["start_seconds"] for part, _ in parts] == [float(s) for s in range(0, KILL_SECONDS, PART_SECONDS)]
    assert [part["part"] for part in record["parts"]] == sorted(part["part"] for part in record["parts"])
    probed = [probe(blob) for _, blob in parts]
    total = sum(duration for duration, _ in probed)
    print(f"recorded {record['segments']} of {KILL_SECONDS} sequences through the kill in {len(parts)} parts: "
          f"{total:.3f} s, {sum(p for _, p in probed)} video packets")
    assert [packets for _, packets in probed] == [10 * (last - first + 1) for first, last in sequences]
    assert abs(total - KILL_SECONDS) <= 0.05 * KILL_SECONDS, probed


async def test_a_paused_recording_goes_on_after_a_recorded_gap(temporal_client: Client, settings: Settings,
                                                              sim: Simulator, worker: None) -> None:
    """A pause stops the recording and keeps its file; once resumed it goes on from the last
    sequence held, and what the window lost meanwhile is a gap in the catalog, never spliced."""
    site = LiveSite(sim).install()
    url = site.add_stream("pause", LiveStream(length=16.0, window=3).start())
    started = await start_item(temporal_client, settings, default_registry(), url)
    await wait_until(lambda: sum(site.segment_requests("pause")) >= 3, timeout=60)
    await started.handle.signal(PAUSE)
    paused_at = sum(1 for n in site.segment_requests("pause") if n)
    await asyncio.sleep(6)  # twice the window
    await started.handle.signal(RESUME)
    result = await asyncio.wait_for(item_result(started.handle, ""), 90)
    assert result.outcome == "committed", result
    record, blob = committed(settings, result.canonical_key or "")
    (found,) = record["gaps"]
    missed = set(range(found["first_sequence"], found["last_sequence"] + 1))
    requests = site.segment_requests("pause", 16)
    fetched = {s for s, n in enumerate(requests) if n}
    assert max(requests) == 1 and fetched | missed == set(range(16)) and not fetched & missed, (requests, found)
    assert found["first_sequence"] >= paused_at - 1 and found["segments"] >= 2 and found["reason"] == "window slid past"
    assert record["segments"] == len(fetched) and record["missing_segments"] == len(missed)
    duration, packets = probe(blob)
    assert packets == 10 * len(fetched) and abs(duration - 16.0) <= 0.05 * 16.0, (duration, packets)  # a jump, not a splice


async def test_a_stream_whose_source_is_gone_ends_cleanly_with_what_it_recorded(
        temporal_client: Client, settings: Settings, sim: Simulator, worker: None) -> None:
    """The playlist answers 404 mid-broadcast (no ENDLIST): the item resolves it again, which says
    it is gone (not_found), and the recording ends as source_ended with what it held, committed."""
    site = LiveSite(sim).install()
    url = site.add_stream("vanish", LiveStream(length=None, window=6).start())
    started = await start_item(temporal_client, settings, default_registry(), url)
    await wait_until(lambda: sum(site.segment_requests("vanish")) >= 4, timeout=60)
    fetched = sum(1 for n in site.segment_requests("vanish") if n)
    del site.streams["vanish"]
    result = await asyncio.wait_for(item_result(started.handle, ""), 60)
    assert result.outcome == "committed", result
    record, blob = committed(settings, result.canonical_key or "")
    assert record["ended"] == "source_ended" and record["segments"] >= fetched and record["gaps"] == [], record
    duration, packets = probe(blob)
    assert packets == 10 * record["segments"] and abs(duration - record["segments"]) <= 0.05 * record["segments"]


def test_ctrl_c_on_an_attached_crawl_ends_the_recording_and_keeps_what_it_recorded(
        sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    """`trawl crawl LIVE_URL` on a terminal shows the recording on its live line (media recorded,
    size, speed, the window it waits in); Ctrl-C ends it: what it holds is committed, said in one
    line, and the broadcast (which goes on) is not fetched any further."""
    site = LiveSite(sim).install()
    url = site.add_stream("attached", LiveStream(length=None, window=6).start())
    env = trawl_env(tmp_path, temporal_address)

    def records(output: str) -> bool:
        return any("recording 0:0" in line and "waits for" in line and "/s" in line for line in live_lines(output))

    output, code = on_a_terminal(["crawl", url], env, tmp_path, records)
    assert code == 130, output
    said = [line for line in output.splitlines() if "ended the recording" in line]
    assert len(said) == 1 and url in said[0] and "what it recorded is committed" in said[0], output
    assert "Traceback" not in output and "keep their progress" not in output, output
    key = said[0].rsplit(", ", 1)[1].rstrip(")\r")
    held = sum(1 for n in site.segment_requests("attached") if n)
    time.sleep(2)
    assert sum(1 for n in site.segment_requests("attached") if n) == held  # ended: nothing more is fetched
    item = Catalog(env.get("TRAWL_CATALOG__URL") or f"sqlite:///{tmp_path / 'data' / 'catalog.db'}").get(key)
    assert item is not None and item.metadata["live"]["ended"] == "stopped", item
    assert item.metadata["live"]["segments"] >= 1 and item.metadata["live_status"] == "was_live"
