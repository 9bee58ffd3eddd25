"""The ``trawl`` command end to end, as a user runs it: subprocesses, real server, real files."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.conftest import new_postgres_database, postgres_mode
from tests.polling import until
from tests.s3server import BUCKET, SeaweedFS, s3_url
from tests.ports import restartable_ports
from trawl.download import file_sha256
from trawl.simulator import MediaFile, Simulator
from trawl.simulator.demo import og_page

TRAWL = str(Path(sys.executable).parent / "trawl")


def trawl_env(tmp_path: Path, temporal_address: str | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
    env.update(TRAWL_DATA_DIR=str(tmp_path / "data"), TRAWL_NET__ALLOW_PRIVATE="true",
               TRAWL_TEMPORAL__TASK_QUEUE_PREFIX=f"cli-{uuid.uuid4().hex[:8]}")
    if temporal_address:
        env.update(TRAWL_TEMPORAL__ADDRESS=temporal_address, TRAWL_TEMPORAL__EMBEDDED="false")
    if postgres_mode():
        env["TRAWL_CATALOG__URL"] = new_postgres_database()
    env.update(extra)
    return env


def run(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TRAWL, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def records(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def blob_count(tmp_path: Path) -> int:
    return sum(1 for p in (tmp_path / "data" / "blobs").rglob("*") if p.is_file())


@pytest.fixture
def site(sim: Simulator) -> Simulator:
    sim.add_file("/media/a.mp4", MediaFile("mp4", "cli-a", 1_500_000))
    sim.add_file("/media/b.jpg", MediaFile("jpeg", "cli-b", 40_000))
    sim.add_file("/cdn/c.webm", MediaFile("webm", "cli-c", 700_000))
    sim.add_page("/watch/c", og_page("Clip C", "/cdn/c.webm", video_type="video/webm",
                                     description="The third clip, filmed at low tide."))
    return sim


def test_crawl_then_crawl_again_is_all_duplicates(site: Simulator, tmp_path: Path, temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address)
    urls = [site.url("/media/a.mp4"), site.url("/media/b.jpg"), site.url("/watch/c")]
    first = run(["crawl", "--json", *urls], env, tmp_path)
    assert first.returncode == 0, first.stderr
    got = {r["url"]: r for r in records(first.stdout)}
    assert {r["outcome"] for r in got.values()} == {"committed"}
    clip = got[site.url("/watch/c")]
    assert clip["title"] == "Clip C" and clip["platform"] == "generic" and clip["id"].startswith("url-")
    asset = clip["assets"][0]
    assert asset["kind"] == "video" and asset["size"] == 700_000
    assert file_sha256(Path(asset["path"])) == asset["sha256"] == Path(asset["path"]).name
    blobs = blob_count(tmp_path)
    assert blobs == 3

    second = run(["crawl", "--json", *urls], env, tmp_path)
    assert second.returncode == 0, second.stderr
    again = {r["url"]: r for r in records(second.stdout)}
    assert {r["outcome"] for r in again.values()} == {"duplicate"}
    assert again[site.url("/watch/c")]["assets"] == clip["assets"]  # a duplicate names the stored files
    assert blob_count(tmp_path) == blobs
    items = run(["items", "--json"], env, tmp_path)
    assert items.returncode == 0, items.stderr
    listed = records(items.stdout)
    assert len(listed) == 3
    assert {a["sha256"] for i in listed for a in i["assets"]} == {
        a["sha256"] for r in got.values() for a in r["assets"]}


def test_two_concurrent_crawls_of_one_url_make_one_workflow_and_one_row(
        site: Simulator, tmp_path: Path, temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address)
    url = site.url("/media/a.mp4")
    procs = [subprocess.Popen([TRAWL, "crawl", "--json", url], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    results = [records(o[0])[0] for o in outs]
    assert results[0]["id"] == results[1]["id"]
    assert {r["outcome"] for r in results} <= {"committed", "duplicate"}
    assert site.stats["/media/a.mp4"].ranges.count(None) == 1  # downloaded once
    listed = records(run(["items", "--json"], env, tmp_path).stdout)
    assert len(listed) == 1 and blob_count(tmp_path) == 1


def test_failures_set_the_exit_code_and_say_why(site: Simulator, tmp_path: Path, temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address)
    good = site.url("/media/b.jpg")
    result = run(["crawl", good, site.url("/missing"), "notaurl", "ftp://x.example/y"], env, tmp_path)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert any(line.startswith("committed") and good in line for line in lines)
    assert any("not_found" in line and "/missing" in line for line in lines)
    assert any("unsupported_url" in line and "notaurl" in line for line in lines)
    assert any("unsupported scheme 'ftp'" in line for line in lines)


def test_crawl_reads_a_url_file(site: Simulator, tmp_path: Path, temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address)
    url_file = tmp_path / "urls.txt"
    url_file.write_text(f"# my list\n{site.url('/media/b.jpg')}\n\n{site.url('/watch/c')}\n")
    result = run(["crawl", "--json", "--file", str(url_file)], env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(records(result.stdout)) == 2


def test_bad_configuration_is_reported_before_anything_runs(tmp_path: Path) -> None:
    env = trawl_env(tmp_path, TRAWL_RETRY__FETCH__INITIAL_INTERVAL="later")
    result = run(["items"], env, tmp_path)
    assert result.returncode == 2
    assert "retry.fetch.initial_interval" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def playable(path: Path) -> bool:
    """ffprobe reads a stream and a duration from ``path``."""
    done = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_type:format=duration", "-of",
                           "default=nw=1:nk=1", str(path)], capture_output=True, text=True)
    *kinds, duration = done.stdout.split() or ["N/A"]
    return done.returncode == 0 and bool(kinds) and duration.replace(".", "", 1).isdigit() and float(duration) > 0


def test_demo_on_the_embedded_server_twice(tmp_path: Path) -> None:
    """`trawl demo` starts its own dev server, crawls, stops the server; twice gives the same store."""
    # Both runs start their servers on the same ports: below the ephemeral range, so nothing that
    # starts meanwhile (the first run's dev server picks ports of its own) can take one.
    port = restartable_ports(6)
    env = trawl_env(tmp_path, TRAWL_TEMPORAL__ADDRESS=f"127.0.0.1:{port}", TRAWL_TEMPORAL__UI_PORT=str(port + 1))
    sim_port = str(port + 2)
    first = run(["demo", "--sim-port", sim_port], env, tmp_path, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "demo OK" in first.stdout
    outcomes = next(line for line in first.stdout.splitlines() if line.startswith("outcomes:"))
    assert "committed" in outcomes and "4 failed" in outcomes
    assert (tmp_path / "data" / "temporal.db").exists()
    exported = sorted(p.relative_to(tmp_path / "data" / "export").as_posix()
                      for p in (tmp_path / "data" / "export").rglob("*.mp4"))
    assert "data/export/" in first.stdout and exported and all(e.rsplit("/", 1)[1] in first.stdout for e in exported)
    media = [p for p in (tmp_path / "data" / "export").rglob("*") if p.suffix in (".mp4", ".webm", ".mp3", ".flv", ".m4a")]
    if shutil.which("ffprobe"):  # every file the demo stored is real media, as long as its platform says
        assert media and [p.name for p in media if not playable(p)] == []
    if shutil.which("ffmpeg"):  # the DASH streams merged, the segments joined: one MP4 a browser plays
        assert [p.name for p in media if p.suffix in (".flv", ".m4a")] == []
    with pytest.raises(OSError):  # the server it started is stopped
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    catalog_before = records(run(["items", "--json"], env, tmp_path).stdout)
    blobs_before = sorted(p.name for p in (tmp_path / "data" / "blobs").rglob("*") if p.is_file())

    second = run(["demo", "--sim-port", sim_port], env, tmp_path, timeout=300)
    assert second.returncode == 0, second.stdout + second.stderr
    again = next(line for line in second.stdout.splitlines() if line.startswith("outcomes:"))
    assert "committed" not in again and "duplicate" in again and "4 failed" in again
    assert "(0 new file(s)," in second.stdout  # the export adds nothing either
    assert records(run(["items", "--json"], env, tmp_path).stdout) == catalog_before
    assert sorted(p.name for p in (tmp_path / "data" / "blobs").rglob("*") if p.is_file()) == blobs_before
    assert not any(p.is_file() for p in (tmp_path / "data" / "work").rglob("*"))


def test_setup_registers_search_attributes_and_tables(tmp_path: Path, temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address)
    done = run(["setup"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "search attributes registered" in done.stdout
    assert postgres_mode() or (tmp_path / "data" / "catalog.db").exists()


def test_setup_with_an_object_store_sets_its_lifecycle_rule(tmp_path: Path, temporal_address: str,
                                                             s3_server: SeaweedFS) -> None:
    url = s3_url()
    env = trawl_env(tmp_path, temporal_address, TRAWL_STORAGE__URL=url,
                    TRAWL_STORAGE__S3_ENDPOINT_URL=s3_server.endpoint, TRAWL_STORAGE__ABANDON_UPLOADS_AFTER="2d",
                    **s3_server.env())
    done = run(["setup"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    prefix = url.removeprefix(f"s3://{BUCKET}/")
    assert f"lifecycle rule trawl-abort-incomplete-uploads-{prefix} of s3://{BUCKET} aborts uploads after 2 day(s)" \
        in done.stdout
    rules = s3_server.client().get_bucket_lifecycle_configuration(Bucket=BUCKET)["Rules"]
    assert {"DaysAfterInitiation": 2} in [r.get("AbortIncompleteMultipartUpload") for r in rules]


def test_fsck_finds_an_altered_blob_and_repairs_it(site: Simulator, tmp_path: Path, temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address)
    url = site.url("/media/a.mp4")
    assert run(["crawl", url], env, tmp_path).returncode == 0
    assert run(["fsck"], env, tmp_path).returncode == 0
    blob = next(p for p in (tmp_path / "data" / "blobs").rglob("*") if p.is_file())
    with open(blob, "r+b") as handle:  # one flipped byte, size unchanged
        handle.seek(1000)
        byte = handle.read(1)
        handle.seek(1000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    found = run(["fsck", "--json"], env, tmp_path)
    assert found.returncode == 1
    problems = json.loads(found.stdout)["problems"]
    assert [(p["kind"], p["path"]) for p in problems] == [("corrupt_blob", str(blob))]
    assert problems[0]["source_url"] == url
    repaired = run(["fsck", "--repair", "--json"], env, tmp_path)
    assert repaired.returncode == 0, repaired.stderr
    report = json.loads(repaired.stdout)  # --json: stdout is one JSON object and nothing else
    assert [r["outcome"] for r in report["repair"]["recrawled"]] == ["committed"]
    assert report["repair"]["recrawled"][0]["url"] == url
    assert (tmp_path / "data" / "quarantine" / blob.name).exists()
    assert run(["fsck"], env, tmp_path).returncode == 0
    assert file_sha256(blob) == blob.name


@pytest.mark.parametrize("command", [["resolve", "URL"], ["crawl", "URL"], ["worker"],
                                     ["worker", "--processes", "2"]], ids=lambda c: " ".join(c))
def test_a_refused_proxy_is_one_line_from_every_command(sim: Simulator, tmp_path: Path, temporal_address: str,
                                                        command: list[str]) -> None:
    env = trawl_env(tmp_path, temporal_address, TRAWL_NET__ALLOW_PRIVATE="false", HTTP_PROXY="http://127.0.0.1:9")
    for var in ("HTTPS_PROXY", "https_proxy", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        env.pop(var, None)
    args = [sim.url("/media/a.mp4") if a == "URL" else a for a in command]
    done = run(args, env, tmp_path, timeout=60)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "proxy 127.0.0.1:9 is refused" in lines[0], lines
    assert "net.allowed_networks" in lines[0]


# -- issue 24: what people read -------------------------------------------------------------------
def test_a_failed_items_status_exits_as_crawl_does_and_its_line_keeps_the_fix(
        site: Simulator, tmp_path: Path, temporal_address: str) -> None:
    env = trawl_env(tmp_path, temporal_address, TRAWL_NET__ALLOW_PRIVATE="false")
    url = site.url("/media/b.jpg")
    crawled = run(["crawl", url], env, tmp_path)
    assert crawled.returncode == 1 and "blocked_address" in crawled.stdout, crawled.stdout + crawled.stderr
    assert "(set net.allow_private or net.allowed_networks to allow)" in crawled.stdout, crawled.stdout
    shown = run(["status", url], env, tmp_path)
    assert shown.returncode == crawled.returncode, shown.stdout + shown.stderr
    assert "failed" in shown.stdout and "to allow)" in shown.stdout
    assert run(["status", url, "--json"], env, tmp_path).returncode == crawled.returncode


async def test_a_cancelled_crawl_items_status_names_its_url_and_one_spelling(
        temporal_client, settings, sim: Simulator, tmp_path: Path) -> None:
    import asyncio

    from tests.e2e.test_steering import cli_env
    from trawl.platforms.registry import default_registry
    from trawl.simulator import FileBehaviour
    from trawl.worker.main import running_worker

    sim.add_file("/slow/cancel.mp4", MediaFile("mp4", "cli-cancel", 5_000_000), FileBehaviour(throttle_bps=200_000))
    url = sim.url("/slow/cancel.mp4")
    env = cli_env(settings, tmp_path)
    async with running_worker(temporal_client, settings):
        started = await asyncio.to_thread(run, ["crawl", "--detach", url], env, tmp_path)
        crawl_id = started.stdout.strip()
        await until(lambda: sim.bytes_sent("/slow/cancel.mp4") >= 100_000, "100 KB of the download served")
        assert (await asyncio.to_thread(run, ["cancel", crawl_id], env, tmp_path)).returncode == 0
        handle = temporal_client.get_workflow_handle(default_registry().route(url).workflow_id)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(handle.result(), 60)
        shown = await asyncio.to_thread(run, ["status", url], env, tmp_path)
        crawl = await asyncio.to_thread(run, ["crawl-status", crawl_id], env, tmp_path)
        crawls = await asyncio.to_thread(run, ["crawls"], env, tmp_path)
    assert shown.returncode == 0, shown.stderr
    first, row = shown.stdout.splitlines()[:2]
    assert first.endswith(": cancelled") and row.startswith("cancelled") and url in row, shown.stdout
    for output in (shown.stdout, crawl.stdout, crawls.stdout):
        assert "canceled" not in output.lower(), output
    assert f"{crawl_id}: cancelled" in crawl.stdout


def test_items_has_a_header_and_refuses_an_unknown_platform(tmp_path: Path) -> None:
    from trawl.storage.catalog import Catalog

    env = trawl_env(tmp_path)
    # An empty catalog (a directory with none is a mistake of its own: tests/e2e/test_readonly*).
    (tmp_path / "data").mkdir()
    Catalog(env.get("TRAWL_CATALOG__URL") or f"sqlite:///{tmp_path / 'data' / 'catalog.db'}").create_schema()
    listed = run(["items"], env, tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["PLATFORM", "TITLE", "SIZE", "SHA256", "KEY"]
    assert run(["items", "--json"], env, tmp_path).stdout == ""  # no header in JSON lines
    unknown = run(["items", "--platform", "youtube"], env, tmp_path)
    assert unknown.returncode == 2 and unknown.stdout == "", unknown.stdout
    assert unknown.stderr.strip() == ("trawl items: unknown platform 'youtube'; give one of bilibili, weibo, "
                                      "facebook, generic"), unknown.stderr
    assert run(["items", "--platform", "generic"], env, tmp_path).returncode == 0
