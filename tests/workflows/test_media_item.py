"""MediaItemWorkflow against a real Temporal dev server, a real worker and the simulator."""

from __future__ import annotations

import asyncio
from collections import deque
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHandle

from trawl.starter.client import item_result, start_item
from tests.conftest import make_settings
from tests.polling import until
from trawl.download import load_state
from trawl.platforms.registry import default_registry
from trawl.settings import Settings
from trawl.simulator import FileBehaviour, MediaFile, Request, Response, Simulator
from trawl.simulator.demo import og_page
from trawl.storage.catalog import Catalog
from trawl.workflows.media_item import ItemResult, MediaItemWorkflow, Progress

FAST_RETRY = {stage: {"initial_interval": "100ms", "maximum_interval": "500ms"}
              for stage in ("fetch", "download", "verify", "commit")}


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str) -> Settings:
    return make_settings(tmp_path, temporal_address, retry=FAST_RETRY, download={"max_redownloads": 1})


async def crawl(client: Client, settings: Settings, url: str) -> ItemResult:
    started = await start_item(client, settings, default_registry(), url)
    return await asyncio.wait_for(item_result(started.handle, url), 60)


def blob_files(settings: Settings) -> list[Path]:
    return sorted(p for p in settings.blobs_dir.rglob("*") if p.is_file())


def part_files(settings: Settings) -> list[Path]:
    return sorted(p for p in settings.work_dir.rglob("*") if p.is_file())


async def test_commit_then_duplicate(temporal_client: Client, settings: Settings, sim: Simulator, worker) -> None:
    media = MediaFile("mp4", "item", 2_000_000)
    sim.add_file("/v/item.mp4", media)
    first = await crawl(temporal_client, settings, sim.url("/v/item.mp4"))
    assert first.outcome == "committed", first
    assert [(a.kind, a.sha256, a.size) for a in first.assets] == [("video", media.sha256(), 2_000_000)]
    assert (settings.blobs_dir / first.assets[0].key).read_bytes()[:12] == media.read(0, 12)
    again = await crawl(temporal_client, settings, sim.url("/v/item.mp4?utm_source=again"))
    assert again.outcome == "duplicate" and again.canonical_key == first.canonical_key
    # The first fetch probes one byte, the single download sends the file once; the second URL
    # form (tracking parameters dropped) is one the catalog remembers: no request at all.
    assert sim.stats["/v/item.mp4"].ranges == ["bytes=0-0", None]
    assert sim.bytes_sent("/v/item.mp4") == 2_000_000 + 1
    assert len(blob_files(settings)) == 1 and part_files(settings) == []
    catalog = Catalog(settings.catalog_url)
    assert catalog.count() == 1
    # Both runs share the workflow id; visibility tells them apart by Outcome.
    query = f"WorkflowId = '{first.workflow_id}' AND Platform = 'generic'"
    async def listed() -> list[str]:
        return sorted([w.search_attributes.get("Outcome", ["?"])[0]
                       async for w in temporal_client.list_workflows(query)])

    await until(listed, "both runs listed by their outcome", 10, every=0.2,
                holds=lambda outcomes: outcomes == ["committed", "duplicate"])


async def test_identical_bytes_under_two_keys_share_one_blob(temporal_client: Client, settings: Settings,
                                                             sim: Simulator, worker) -> None:
    media = MediaFile("mp4", "shared", 500_000)
    sim.add_file("/a.mp4", media)
    sim.add_file("/b.mp4", media)
    a = await crawl(temporal_client, settings, sim.url("/a.mp4"))
    b = await crawl(temporal_client, settings, sim.url("/b.mp4"))
    assert a.outcome == b.outcome == "committed" and a.canonical_key != b.canonical_key
    assert a.assets[0].key == b.assets[0].key
    assert len(blob_files(settings)) == 1
    assert Catalog(settings.catalog_url).count() == 2


async def test_missing_page_fails_not_found(temporal_client: Client, settings: Settings, sim: Simulator,
                                            worker) -> None:
    result = await crawl(temporal_client, settings, sim.url("/gone"))
    assert (result.outcome, result.error_class) == ("failed", "not_found")
    assert sim.stats["/gone"].requests == 1  # non-retryable: asked once
    assert Catalog(settings.catalog_url).count() == 0


async def test_transient_5xx_on_download_is_retried(temporal_client: Client, settings: Settings, sim: Simulator,
                                                    worker) -> None:
    media = MediaFile("mp4", "flaky", 300_000)
    how = sim.add_file("/flaky.mp4", media)
    sim.add_page("/p/flaky", og_page("Flaky", "/flaky.mp4"))
    how.statuses.extend([500, 503, 502])
    result = await crawl(temporal_client, settings, sim.url("/p/flaky"))
    assert result.outcome == "committed" and result.assets[0].sha256 == media.sha256()
    assert sim.stats["/flaky.mp4"].requests == 4


async def test_html_served_as_video_is_redownloaded_then_fails(temporal_client: Client, settings: Settings,
                                                               sim: Simulator, worker) -> None:
    page = b"<!DOCTYPE html><html><body>Please log in</body></html>"
    sim.add_exact("/fake.mp4", lambda req: Response(200, {"Content-Type": "video/mp4"}, page))
    sim.add_page("/p/fake", og_page("Fake", "/fake.mp4"))
    result = await crawl(temporal_client, settings, sim.url("/p/fake"))
    assert (result.outcome, result.error_class) == ("failed", "content_corrupt")
    assert "html" in (result.error or "")
    assert sim.stats["/fake.mp4"].requests == 2  # the download and one re-download (max_redownloads=1)
    assert part_files(settings) == [] and blob_files(settings) == []


async def test_corrupt_once_then_good_is_committed(temporal_client: Client, settings: Settings, sim: Simulator,
                                                   worker) -> None:
    media = MediaFile("mp4", "second-time", 100_000)
    answers = deque([Response(200, {"Content-Type": "video/mp4"}, b"<html>error</html>")])
    sim.add_exact("/v.mp4", lambda req: answers.popleft() if answers else sim.serve_media(req, media))
    sim.add_page("/p/v", og_page("V", "/v.mp4"))
    result = await crawl(temporal_client, settings, sim.url("/p/v"))
    assert result.outcome == "committed" and result.assets[0].sha256 == media.sha256()


async def test_expired_url_is_refetched_and_resumed(temporal_client: Client, settings: Settings, sim: Simulator,
                                                    worker) -> None:
    size, cut = 3_000_000, 1_000_000
    media = MediaFile("mp4", "signed", size)
    issued: list[int] = []
    how = FileBehaviour(cut_at=cut)

    def page(req: Request) -> Response:
        issued.append(len(issued) + 1)
        html = og_page("Signed", f"/signed/{issued[-1]}.mp4")
        return Response(200, {"Content-Type": "text/html"}, html.encode())

    def signed(req: Request) -> Response:
        token = int(req.match.group("token"))  # type: ignore[union-attr]
        if token < issued[-1] or (token == 1 and how.cut_times == 0):
            return Response(403, {"Content-Type": "text/plain"}, b"URL signature expired")
        return sim.serve_media(req, media, how)

    sim.add_exact("/p/signed", page)
    sim.add_route(r"/signed/(?P<token>\d+)\.mp4", signed)
    result = await crawl(temporal_client, settings, sim.url("/p/signed"))
    assert result.outcome == "committed", result
    assert result.assets[0].sha256 == media.sha256()
    assert len(issued) == 2  # fetched again for a fresh URL
    served = sum(s.bytes_sent for p, s in sim.stats.items() if p.startswith("/signed/"))
    assert size <= served < size + 200  # resumed from the cut (plus two short 403 bodies)
    assert sim.stats["/signed/2.mp4"].ranges == [f"bytes={cut}-"]


async def _download_stopped(handle: WorkflowHandle) -> bool:
    """The item is paused and its download activity has finished stopping (its bytes are on disk)."""
    progress = await handle.query(MediaItemWorkflow.progress, result_type=Progress)
    pending = (await handle.describe()).raw_description.pending_activities
    # A small item downloads inside its one small_item activity.
    return progress.paused and not any(a.activity_type.name in ("download", "small_item") for a in pending)


async def test_pause_keeps_bytes_and_resume_continues(temporal_client: Client, settings: Settings, sim: Simulator,
                                                      worker) -> None:
    size = 4_000_000
    media = MediaFile("mp4", "pausable", size)
    sim.add_file("/slow.mp4", media, FileBehaviour(throttle_bps=1_000_000))
    started = await start_item(temporal_client, settings, default_registry(), sim.url("/slow.mp4"))
    await until(lambda: sim.bytes_sent("/slow.mp4") > 500_000, "500 KB of the download served", 30)
    await started.handle.signal(MediaItemWorkflow.pause)
    # The download stops at its next heartbeat; once it has, its bytes are on disk and recorded.
    await until(lambda: _download_stopped(started.handle), "the paused download to stop", 30)
    [part] = [p for p in part_files(settings) if p.suffix == ".part"]
    kept, requests = part.stat().st_size, sim.stats["/slow.mp4"].requests
    assert 0 < kept == load_state(part).offset < size
    progress = await started.handle.query(MediaItemWorkflow.progress, result_type=Progress)
    assert progress.paused and progress.stage == "download"
    # Nothing moves while paused: no new request, the kept file untouched.
    assert sim.stats["/slow.mp4"].requests == requests and part.stat().st_size == kept
    assert sim.bytes_sent("/slow.mp4") < size
    await started.handle.signal(MediaItemWorkflow.resume)
    result = await asyncio.wait_for(item_result(started.handle, ""), 60)
    assert result.outcome == "committed" and result.assets[0].sha256 == media.sha256()
    assert sim.stats["/slow.mp4"].ranges[-1] == f"bytes={kept}-"  # resumed from the kept bytes
    assert sim.bytes_sent("/slow.mp4") < size * 1.2  # resumed, not restarted
    assert part_files(settings) == []


async def test_cancel_removes_partial_files(temporal_client: Client, settings: Settings, sim: Simulator,
                                            worker) -> None:
    sim.add_file("/slow.mp4", MediaFile("mp4", "cancel", 8_000_000), FileBehaviour(throttle_bps=1_000_000))
    started = await start_item(temporal_client, settings, default_registry(), sim.url("/slow.mp4"))
    await until(lambda: sim.bytes_sent("/slow.mp4") > 300_000, "300 KB of the download served", 30)
    await started.handle.cancel()
    result = await asyncio.wait_for(item_result(started.handle, ""), 60)
    assert result.outcome == "cancelled", result
    assert part_files(settings) == []
    assert Catalog(settings.catalog_url).count() == 0
