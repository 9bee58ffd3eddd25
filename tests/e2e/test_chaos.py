"""Chaos: 200 items across the simulated platforms with 20 % injected 5xx, a 10 s outage of one
platform, worker processes SIGKILLed every few seconds (the supervisor restarts them) and the
Temporal dev server stopped and restarted once mid-crawl. The catalog must converge: every item
committed once, every blob matching its name and used by an item once the reclaim of orphan blobs
has run (none may be left), no partial file, no workflow still running."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import TEMPORAL_BIN, test_catalog_url
from tests.e2e.test_platforms import platform_env
from tests.worker.test_supervisor import restartable_ports, started_pids
from trawl.download import file_sha256
from trawl.simulator import MediaFile, Simulator
from trawl.platforms.bilibili.site import install_bilibili_site
from trawl.platforms.facebook.site import VIDEOS, install_facebook_site
from trawl.platforms.weibo.site import install_weibo_site
from trawl.storage.catalog import Catalog

TRAWL = str(Path(sys.executable).parent / "trawl")
GENERIC_ITEMS = 193


def start_server(db: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    cmd = [TEMPORAL_BIN, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port),
           "--http-port", str(port + 1), "--db-filename", str(db), "--log-level", "error",
           "--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal"]
    for name in ("Platform", "CanonicalKey", "Stage", "Outcome", "CrawlId"):
        cmd += ["--search-attribute", f"{name}=Keyword"]
    with open(log, "ab") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)


def trawl(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TRAWL, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def cluster_env(tmp_path: Path, port: int, catalog_url: str, **settings: str) -> dict[str, str]:
    """The environment of workers and commands sharing one data dir, one catalog and the dev server
    at ``port``, plus ``settings`` (``TRAWL_...`` names); nothing else of the caller's trawl settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
    env.update(
        TRAWL_DATA_DIR=str(tmp_path / "data"), TRAWL_CATALOG__URL=catalog_url,
        TRAWL_TEMPORAL__ADDRESS=f"127.0.0.1:{port}", TRAWL_TEMPORAL__EMBEDDED="false",
        TRAWL_NET__ALLOW_PRIVATE="true", TRAWL_WORKER__METRICS_PORT="0",
        TRAWL_WORKER__GRACEFUL_SHUTDOWN_TIMEOUT="2s", **settings)
    return env


def start_workers(env: dict[str, str], tmp_path: Path, processes: int = 2) -> tuple[subprocess.Popen[bytes], Path]:
    """``trawl worker --processes N`` (a supervisor), logging to a file; returns it and its log."""
    log = tmp_path / "supervisor.log"
    with open(log, "wb") as out:
        return subprocess.Popen([TRAWL, "worker", "--processes", str(processes)], env=env, cwd=tmp_path, stdout=out,
                                stderr=subprocess.STDOUT), log


def stop(process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """SIGTERM, then SIGKILL if it has not left within ``timeout``."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.mark.slow
@pytest.mark.timeout(540)
def test_chaos_converges(tmp_path: Path) -> None:
    rng = random.Random(20261130)
    port = restartable_ports(2)
    db = tmp_path / "temporal.db"
    server = start_server(db, port, tmp_path / "temporal.log")
    sims = [Simulator().start() for _ in range(4)]
    generic, bili_sim, fb_sim, weibo_sim = sims
    supervisor = None
    try:
        urls = []
        for i in range(GENERIC_ITEMS):
            generic.add_file(f"/m/{i}.mp4", MediaFile("mp4", f"chaos-{i}", 20_000 + 37 * i))
            urls.append(generic.url(f"/m/{i}.mp4"))
        bili = install_bilibili_site(bili_sim)
        urls += [bili.url("BV117411r7R1"), bili_sim.url("/video/av85440373"), bili.url("BV1GJ411x7h7"),
                 bili.url("BV1GJ411x7h7", page=2)]
        fb = install_facebook_site(fb_sim)
        urls += [fb_sim.url(f"/watch/?v={VIDEOS[0].id}"), fb.short_url("aBc12XyZ9"), fb_sim.url(f"/reel/{VIDEOS[1].id}")]
        weibo = install_weibo_site(weibo_sim)
        video, pictures = weibo.posts["playback"], weibo.posts["pictures"]
        urls += [weibo_sim.url(f"/{video.uid}/{video.mblogid}"), weibo_sim.url(f"/detail/{video.mid}"),
                 weibo_sim.url(f"/{pictures.uid}/{pictures.mblogid}")]
        unique_items = GENERIC_ITEMS + 3 + 2 + 2
        for sim in sims:
            sim.faults.rule(r"/.*").failure_rate = 0.2

        catalog_url = test_catalog_url()
        # Timeouts stay at their defaults: a killed worker's task must move on by heartbeat
        # timeout at every stage, not because a test shortened start-to-close.
        env = cluster_env(
            tmp_path, port, catalog_url,
            TRAWL_RETRY__FETCH__MAXIMUM_ATTEMPTS="30",
            TRAWL_RETRY__FETCH__MAXIMUM_INTERVAL="3s", TRAWL_RETRY__DOWNLOAD__MAXIMUM_INTERVAL="3s",
            **platform_env("bilibili", bili.settings()),
            **platform_env("facebook", fb.settings(requests_per_second=100)),
            **platform_env("weibo", weibo.settings(requests_per_second=100)),
        )
        url_file = tmp_path / "urls.txt"
        url_file.write_text("\n".join(urls) + "\n")
        supervisor, supervisor_log = start_workers(env, tmp_path)
        started = trawl(["crawl", "--detach", "--file", str(url_file), "--concurrency", "16"], env, tmp_path)
        assert started.returncode == 0, started.stderr
        crawl_id = started.stdout.strip()

        began = time.monotonic()
        outage_done = restarted = False
        kills = 0
        status = None
        while time.monotonic() - began < 420:
            time.sleep(3)
            alive = [pid for pid in started_pids(supervisor_log) if Path(f"/proc/{pid}").exists()
                     and "zombie" not in Path(f"/proc/{pid}/status").read_text()]
            if alive:
                os.kill(rng.choice(alive), signal.SIGKILL)
                kills += 1
            elapsed = time.monotonic() - began
            if not outage_done and elapsed > 6:
                bili_sim.faults.outage(r"/.*", 10, status_code=503)
                outage_done = True
            if not restarted and elapsed > 15:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=30)
                time.sleep(2)
                server = start_server(db, port, tmp_path / "temporal.log")
                restarted = True
            shown = trawl(["crawl-status", crawl_id, "--json"], env, tmp_path)
            if shown.returncode == 1 and "is unreachable" in shown.stderr:
                # The server went away mid-command (it restarts): exit 1, "try again when it is
                # back", and still an object, its status unknown. (A command that cannot connect at
                # all says "no Temporal server answers" and exits 2: not a sample either.)
                assert "try again" in shown.stderr, shown.stderr
                gone = json.loads(shown.stdout)
                assert gone["status"] is None and gone["unreachable"] and gone["id"] == crawl_id, gone
                continue
            if shown.returncode in (0, 1):  # 1: items failed (asserted below)
                status = json.loads(shown.stdout)
                if status["status"] != "RUNNING" and restarted:
                    break
        assert restarted and kills >= 5, (restarted, kills)
        assert status is not None and status["status"] == "COMPLETED", status
        outcomes = status["stats"]["outcomes"]
        assert set(outcomes) <= {"committed", "duplicate"}, outcomes

        supervisor.send_signal(signal.SIGTERM)
        supervisor.wait(timeout=60)
        running = trawl(["crawls"], env, tmp_path)
        assert running.returncode == 0
        listed = subprocess.run([TEMPORAL_BIN, "workflow", "count", "--address", f"127.0.0.1:{port}",
                                 "--query", "ExecutionStatus='Running'"], capture_output=True, text=True, timeout=30)
        assert listed.stdout.strip().endswith("0"), listed.stdout

        # Orphans: blobs an attempt stored and was killed before recording. No run is open any
        # more, so none can still record one: the reclaim (fsck --repair, here with a bound of 1 s
        # on storage.abandon_uploads_after instead of a day) removes them, and nothing else.
        time.sleep(1.5)
        repaired = trawl(["fsck", "--repair", "--json"], {**env, "TRAWL_STORAGE__ABANDON_UPLOADS_AFTER": "1s"},
                         tmp_path, timeout=120)
        assert repaired.returncode == 0, repaired.stdout + repaired.stderr
        checked = json.loads(repaired.stdout)
        assert {p["kind"] for p in checked["problems"]} <= {"orphan_blob"}, checked["problems"]
        removed = checked.get("repair", {}).get("removed_orphans", [])
        print(f"chaos: {kills} worker kills; fsck --repair removed {len(removed)} orphan blob(s)")

        catalog = Catalog(catalog_url or f"sqlite:///{tmp_path / 'data' / 'catalog.db'}")
        items = catalog.list(limit=10_000)
        assert len(items) == unique_items == len({i.canonical_key for i in items})
        blobs = [p for p in (tmp_path / "data" / "blobs").rglob("*") if p.is_file()]
        assert blobs and all(file_sha256(p) == p.name for p in blobs)
        referenced = {a.sha256 for i in items for a in i.assets}
        orphans = sorted(p.name for p in blobs if p.name not in referenced)
        assert orphans == [], f"{len(orphans)} orphan blob(s) left after the reclaim: {orphans}"
        assert referenced == {p.name for p in blobs}
        assert not [p for p in (tmp_path / "data" / "work").rglob("*.part")]
        catalog.close()
    finally:
        if supervisor is not None and supervisor.poll() is None:
            supervisor.kill()
        for sim in sims:
            sim.stop()
        stop(server)
