"""HLS end to end: real workers, a real dev server, the simulator's streams over loopback."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import signal
from pathlib import Path

import pytest
from temporalio.client import Client

from trawl.starter.client import item_result, start_item
from tests.e2e.test_cli import blob_count, records, run, trawl_env
from tests.e2e.test_worker_kill import settings, start_worker, wait_until  # noqa: F401 - fixture
from tests.trawl.test_hls_download import FFMPEG, real_stream, secret_file
from trawl.platforms.registry import default_registry
from trawl.settings import Settings
from trawl.simulator import Simulator
from trawl.simulator.demo import og_page
from trawl.simulator.faults import status
from trawl.simulator.hls_site import HlsStream, id3_playlist_segment, install_hls_site, ts_segment
from trawl.storage.catalog import Catalog
from trawl.worker.main import running_worker

SEGMENTS = 30


@pytest.mark.slow
async def test_a_worker_killed_mid_stream_costs_at_most_one_segment(temporal_client: Client,
                                                                    settings: Settings,  # noqa: F811
                                                                    sim: Simulator, tmp_path: Path) -> None:
    site = install_hls_site(sim)
    stream = HlsStream([ts_segment(f"kill-{i}", 200) for i in range(SEGMENTS)], throttle_bps=300_000)
    url = site.add_stream("kill", stream)
    first = start_worker(settings, tmp_path)
    second = None
    try:
        started = await start_item(temporal_client, settings, default_registry(), url)
        await wait_until(lambda: site.segment_requests("kill")[SEGMENTS // 3] > 0)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        killed_at = site.segment_requests("kill")
        assert 0 in killed_at  # the stream was cut short
        second = start_worker(settings, tmp_path)
        result = await asyncio.wait_for(item_result(started.handle, ""), 120)
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    assert result.outcome == "committed", result
    (asset,) = result.assets
    # Synthetic packets: ffmpeg (when installed) cannot remux them, so the concatenation is kept.
    assert (asset.kind, asset.mime, asset.sha256) == ("video", "video/mp2t", hashlib.sha256(stream.plain()).hexdigest())
    counts = site.segment_requests("kill")
    assert max(counts) <= 2 and sum(counts) <= SEGMENTS + 1, counts  # at most the segment in flight again
    assert Catalog(settings.catalog_url).count() == 1
    assert list(settings.work_dir.rglob("*.part")) == []


@pytest.mark.slow
async def test_og_video_stream_commits_and_a_missing_segment_fails_with_its_class(
        temporal_client: Client, settings: Settings, sim: Simulator, tmp_path: Path) -> None:  # noqa: F811
    site = install_hls_site(sim)
    stream = real_stream(tmp_path / "made") if FFMPEG else HlsStream([ts_segment(f"og-{i}") for i in range(4)])
    sim.add_page("/watch/replay", og_page("The replay", site.add_stream("og", stream),
                                          video_type="application/vnd.apple.mpegurl"))
    sim.faults.add(r"/hls/disc/seg-1\.ts", status(404, times=100))
    # (A live playlist is recorded now: tests/e2e/test_live.py.)
    urls = [sim.url("/watch/replay"), site.url("disc")]
    async with running_worker(temporal_client, settings):
        handles = [(await start_item(temporal_client, settings, default_registry(), u)).handle for u in urls]
        replay, missing = await asyncio.wait_for(asyncio.gather(*(item_result(h, "") for h in handles)), 120)
    assert replay.outcome == "committed" and replay.title == "The replay", replay
    (asset,) = replay.assets
    blob = settings.data_dir / "blobs" / asset.key
    if FFMPEG:  # remuxed to one MP4 file
        assert asset.mime == "video/mp4" and blob.read_bytes()[4:8] == b"ftyp"
    else:
        assert asset.sha256 == hashlib.sha256(stream.plain()).hexdigest()
    assert (missing.outcome, missing.error_class) == ("failed", "segment_missing"), missing
    assert "segment 2 of 4" in (missing.error or "") and "3 attempts" in (missing.error or "")
    assert site.segment_requests("disc")[:2] == [1, 3]  # the segment before it was never fetched again


async def test_a_crawls_quality_choice_reaches_every_worker(temporal_client: Client, settings: Settings,  # noqa: F811
                                                            sim: Simulator) -> None:
    """`trawl crawl -f 720p` rides in the items' options: a worker whose own setting says 1080p
    takes the 720p variant for that crawl, and 1080p for a crawl that chose nothing."""
    from trawl.cli.crawl import crawl_urls
    from trawl.starter.client import CrawlChoices

    site = install_hls_site(sim)
    master = sim.url("/hls/vod/master.m3u8")
    assert settings.download.hls_quality == 1080
    async with running_worker(temporal_client, settings):
        [chosen] = await asyncio.wait_for(crawl_urls(temporal_client, settings, default_registry(),
                                                     [master + "?crawl=720"], choices=CrawlChoices(quality=720)), 120)
        [default] = await asyncio.wait_for(crawl_urls(temporal_client, settings, default_registry(),
                                                      [master + "?crawl=default"]), 120)
    # Synthetic packets: ffmpeg (when installed) cannot remux them, so the concatenation is kept.
    assert chosen.assets[0].sha256 == hashlib.sha256(site.streams["vod-720"].plain()).hexdigest(), chosen
    assert default.assets[0].sha256 == hashlib.sha256(site.streams["vod-1080"].plain()).hexdigest(), default
    assert sum(site.segment_requests("vod-720")) == 6 and sum(site.segment_requests("vod-1080")) == 6


@pytest.mark.skipif(FFMPEG is None, reason="ffmpeg is not installed (.ci/run installs it)")
def test_a_segment_naming_local_files_never_brings_them_into_the_store(sim: Simulator, tmp_path: Path,
                                                                       temporal_address: str) -> None:
    """Issue 23, through `trawl crawl`: a "segment" that is an ID3 tag and a playlist naming a
    file of the worker's (or a ``data:`` URL) once passed as MP3, and the remux, left to probe
    it, committed that file."""
    site = install_hls_site(sim)
    secret = secret_file(tmp_path / "host")
    local = site.add_stream("local", HlsStream([id3_playlist_segment([str(secret)])]))
    inline = "data:video/mp2t;base64," + base64.b64encode(secret.read_bytes()).decode()
    data = site.add_stream("data-url", HlsStream([id3_playlist_segment([inline])]))
    env = trawl_env(tmp_path, temporal_address, TRAWL_RETRY__DOWNLOAD__INITIAL_INTERVAL="100ms")
    done = run(["crawl", "--json", local, data], env, tmp_path, timeout=180)
    assert done.returncode == 1, done.stderr  # failed items
    results = records(done.stdout)
    assert len(results) == 2
    for result in results:
        assert (result["outcome"], result["error_class"]) == ("failed", "content_corrupt"), result
        assert "ID3" in (result["error"] or "")
    assert site.segment_requests("local")[0] > 0 and site.segment_requests("data-url")[0] > 0
    assert blob_count(tmp_path) == 0
    assert records(run(["items", "--json"], env, tmp_path).stdout) == []
