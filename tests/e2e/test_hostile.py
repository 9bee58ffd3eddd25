"""Hostile input through the whole pipeline, over real sockets, with the address guard ON.

The "allowed test host" is a simulator on 127.0.0.2, allowed through net.allowed_networks;
everything else on loopback stays refused, and no traffic goes anywhere but 127.0.0.0/8.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.client import Client

from trawl.starter.client import item_result, start_item
from tests.conftest import test_catalog_url
from trawl.errors import TrawlError
from trawl.logs import configure_logging
from trawl.platforms.registry import default_registry
from trawl.settings import CatalogSettings, DownloadSettings, NetSettings, Settings, TemporalSettings
from trawl.simulator import MediaFile, Response, Simulator
from trawl.simulator.demo import og_page
from trawl.storage.catalog import Catalog
from trawl.workdirs import OWNER_FILE
from trawl.worker.main import running_worker

ANSI_TITLE = "Line one\nLine two \x1b[31mRED\x1b[0m \r\u202eevil\x07"


@pytest.fixture
def allowed() -> Iterator[Simulator]:
    with Simulator(host="127.0.0.2") as simulator:
        yield simulator


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        temporal=TemporalSettings(address=temporal_address, embedded=False,
                                  task_queue_prefix=f"h-{uuid.uuid4().hex[:8]}"),
        catalog=CatalogSettings(url=test_catalog_url()),
        net=NetSettings(allow_private=False, allowed_networks=["127.0.0.2/32"], read_timeout="5s"),
        download=DownloadSettings(max_file_size=5 * 1024 * 1024),
        retry={stage: {"initial_interval": "100ms", "maximum_interval": "200ms", "maximum_attempts": 2}
               for stage in ("fetch", "download", "verify", "commit")},
    )


def endless(chunk: bytes = b"\0" * 65536) -> Iterator[bytes]:
    while True:
        yield chunk


def gzip_bomb() -> bytes:
    raw = b"<html>" + b" " * (100 * 1024 * 1024)
    return gzip.compress(raw, compresslevel=9)


def build_site(sim: Simulator, loopback: Simulator) -> None:
    sim.add_exact("/to-loopback", lambda r: Response(302, {"Location": loopback.url("/secret")}, b""))
    sim.add_exact("/loop-a", lambda r: Response(302, {"Location": sim.url("/loop-b")}, b""))
    sim.add_exact("/loop-b", lambda r: Response(302, {"Location": sim.url("/loop-a")}, b""))
    sim.add_exact("/huge.html", lambda r: Response(200, {"Content-Type": "text/html", "Content-Length": str(50 << 20)},
                                                   (b"<p>" + b"a" * 65533 for _ in range(800))))
    bomb = gzip_bomb()
    sim.add_exact("/bomb.html", lambda r: Response(200, {"Content-Type": "text/html", "Content-Encoding": "gzip"}, bomb))
    sim.add_file("/gigabyte.mp4", MediaFile("mp4", "gig", 1 << 30))
    sim.add_exact("/forever.mp4", lambda r: Response(200, {"Content-Type": "video/mp4", "Connection": "close"},
                                                     endless()))
    sim.add_exact("/big-header", lambda r: Response(200, {"Content-Type": "text/html", "X-Pad": "a" * 1_000_000},
                                                    b"<html></html>"))
    sim.add_file("/clip.mp4", MediaFile("mp4", "hostile-title", 40_000))
    sim.add_page("/titled", og_page(ANSI_TITLE.replace("<", ""), "/clip.mp4"))
    loopback.add_page("/secret", "<html><head><title>internal admin</title></head></html>")


@pytest.fixture
def loopback() -> Iterator[Simulator]:
    with Simulator(host="127.0.0.1") as simulator:  # stands for a service on the crawler's machine
        yield simulator


CASES = [
    # (path or absolute URL template, expected error class)
    ("LOOPBACK/secret", "blocked_address"),
    ("http://[::1]:9/anything", "blocked_address"),
    ("http://localhost:9/anything", "blocked_address"),
    ("/to-loopback", "blocked_address"),
    ("/loop-a", "forbidden"),
    ("/huge.html", "too_large"),
    ("/bomb.html", "too_large"),
    ("/gigabyte.mp4", "too_large"),
    ("/forever.mp4", "too_large"),
    ("/big-header", "too_large"),
]


@pytest.mark.parametrize(("target", "error_class"), CASES, ids=[c[0] for c in CASES])
async def test_hostile_case_fails_cleanly(temporal_client: Client, settings: Settings, allowed: Simulator,
                                          loopback: Simulator, worker, target: str, error_class: str) -> None:
    build_site(allowed, loopback)
    url = target.replace("LOOPBACK", loopback.base_url) if not target.startswith("/") else allowed.url(target)
    started = await start_item(temporal_client, settings, default_registry(), url)
    result = await asyncio.wait_for(item_result(started.handle, url), 60)
    assert (result.outcome, result.error_class) == ("failed", error_class), result
    assert loopback.stats["/secret"].requests == 0  # nothing ever reached the machine's own services
    assert Catalog(settings.catalog_url).count() == 0
    assert not [p for p in settings.blobs_dir.rglob("*") if p.is_file()]
    # No data left on disk (the owner note of a work directory is bookkeeping the clean-up removes).
    assert not [p for p in settings.work_dir.rglob("*") if p.is_file() and p.name != OWNER_FILE]


@pytest.mark.parametrize(("url", "message"), [("gopher://127.0.0.2/x", "unsupported scheme"),
                                             ("http://127.0.0.2/" + "a" * 100_000, "longer than")])
def test_bad_urls_are_refused_before_anything_starts(url: str, message: str) -> None:
    with pytest.raises(TrawlError, match=message):
        default_registry().route(url)


async def test_hostile_title_is_data_only(temporal_client: Client, settings: Settings, allowed: Simulator,
                                          loopback: Simulator, worker, capsys: pytest.CaptureFixture[str]) -> None:
    build_site(allowed, loopback)
    configure_logging(json=True)
    try:
        started = await start_item(temporal_client, settings, default_registry(), allowed.url("/titled"))
        result = await asyncio.wait_for(item_result(started.handle, ""), 60)
    finally:
        logging.getLogger().handlers.clear()
    assert result.outcome == "committed"
    assert "\x1b[31m" in (result.title or "") and "\n" in (result.title or "")  # stored as it came
    blob = settings.blobs_dir / result.assets[0].key
    assert blob.is_file() and blob.name == result.assets[0].sha256  # the file name is the hash, never the title
    for line in capsys.readouterr().out.splitlines():
        assert "\x1b" not in line and "\r" not in line
        json.loads(line)  # each line is still exactly one JSON object
    from trawl.cli import result_line

    shown = result_line(result)
    assert "\x1b" not in shown and "\n" not in shown and "\r" not in shown


async def test_no_proxy_hosts_are_guarded_through_the_pipeline(temporal_client: Client, settings: Settings,
                                                               allowed: Simulator, loopback: Simulator,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP_PROXY on an allowed host, NO_PROXY listing the machine's own names: the item that
    names a loopback service fails as blocked_address and the service sees no request."""
    build_site(allowed, loopback)
    for var in ("HTTPS_PROXY", "https_proxy", "http_proxy", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.2:9")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    async with running_worker(temporal_client, settings):
        for url in (loopback.url("/secret"), loopback.url("/secret").replace("127.0.0.1", "localhost")):
            started = await start_item(temporal_client, settings, default_registry(), url)
            result = await asyncio.wait_for(item_result(started.handle, url), 60)
            assert (result.outcome, result.error_class) == ("failed", "blocked_address"), result
    assert loopback.stats["/secret"].requests == 0
    assert Catalog(settings.catalog_url).count() == 0
