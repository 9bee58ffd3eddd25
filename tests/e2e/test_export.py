"""Named files and yt-dlp's habits as a user meets them: ``trawl crawl --export -o``, ``trawl export``
(run twice), ``trawl -j``, ``-a`` batch files, ``--version`` and the one-line mistakes. Subprocesses,
a real Temporal server, the simulator over loopback, real files."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_cli import records, run, site, trawl_env  # noqa: F401 - site is a fixture
from tests.trawl.test_export import fill
from trawl.download import file_sha256
from trawl.settings import Settings
from trawl.simulator import Simulator


def files_under(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): file_sha256(p) for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith(".")}


def test_crawl_exports_as_it_commits_and_export_adds_only_what_is_new(
        site: Simulator, tmp_path: Path, temporal_address: str) -> None:  # noqa: F811
    env = trawl_env(tmp_path, temporal_address)
    batch = tmp_path / "urls.txt"
    batch.write_text(f"# yt-dlp style batch file\n; a comment too\n{site.url('/media/a.mp4')}\n"
                     f"{site.url('/watch/c')}\n")
    out = tmp_path / "named"
    crawled = run(["crawl", "--json", "-a", str(batch), "--export", str(out), "-o", "{platform}/{title} [{id}].{ext}",
                   "--write-info-json", "--limit-rate", "100M"], env, tmp_path)
    assert crawled.returncode == 0, crawled.stderr
    results = {r["url"]: r for r in records(crawled.stdout)}
    assert set(results) == {site.url("/media/a.mp4"), site.url("/watch/c")}
    assert "exported 4 new file(s) into" in crawled.stderr
    clip = results[site.url("/watch/c")]
    got = files_under(out)
    # A page or file no platform claims is named by its URL's file name, not the hash its key holds.
    assert got["generic/Clip C [c].webm"] == clip["assets"][0]["sha256"]
    direct = results[site.url("/media/a.mp4")]
    assert got["generic/a [a].mp4"] == direct["assets"][0]["sha256"]  # not "a.mp4 [...].mp4"
    info = json.loads((out / "generic/Clip C [c].info.json").read_text())
    assert info["title"] == "Clip C" and info["assets"][0]["sha256"] == clip["assets"][0]["sha256"]
    assert info["description"] == "The third clip, filmed at low tide."  # the page's own words, kept
    # Copies unless links are asked for: a file to edit freely, not the stored blob.
    assert (out / "generic/Clip C [c].webm").stat().st_nlink == 1

    linked = tmp_path / "linked"
    first = run(["export", str(linked), "--link", "hardlink"], env, tmp_path)
    assert first.returncode == 0, first.stderr
    # No uploader: the page's host stands in for it.
    assert sorted(first.stdout.split("\n")[:-1]) == ["generic/127.0.0.1/Clip C [c].webm", "generic/127.0.0.1/a [a].mp4"]
    assert "2 item(s): 2 new file(s), 0 already there" in first.stderr and "[hardlink]" in first.stderr
    before = {p: p.stat().st_mtime_ns for p in linked.rglob("*") if p.is_file()}
    again = run(["export", str(linked), "--link", "hardlink"], env, tmp_path)
    assert again.returncode == 0 and again.stdout == ""
    assert "2 item(s): 0 new file(s), 2 already there" in again.stderr
    assert {p: p.stat().st_mtime_ns for p in linked.rglob("*") if p.is_file()} == before
    # Hard links to the blobs: no second copy of the bytes.
    assert (linked / "generic/127.0.0.1/Clip C [c].webm").stat().st_nlink == 2

    resolved = run(["-j", site.url("/watch/c")], env, tmp_path)
    assert resolved.returncode == 0, resolved.stderr
    assert json.loads(resolved.stdout)["title"] == "Clip C"


def test_version_and_mistakes_get_one_line(tmp_path: Path) -> None:
    env = trawl_env(tmp_path)
    version = run(["--version"], env, tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("trawl 0.")
    for args, says in [
        (["export", str(tmp_path / "x"), "-o", "/abs/{title}.{ext}"], "trawl export: bad template: "),
        (["export", str(tmp_path / "x"), "-o", "{titel}.{ext}"], "unknown field {titel}"),
        (["export", str(tmp_path / "x"), "--platform", "youtube"],
         "--platform 'youtube': unknown platform; known: bilibili, weibo, facebook, generic"),
        (["crawl", "--limit-rate", "fast", "https://example.org/v.mp4"], "--limit-rate: not a size: 'fast'"),
        (["crawl", "--cookies", str(tmp_path / "none.txt"), "https://example.org/v.mp4"], "no such file"),
        (["crawl", "-f", "137+140", "https://example.org/v.mp4"], "give best, worst, a height"),
        (["crawl", "--detach", "--export", "x", "https://example.org/v.mp4"], "leave them out with --detach"),
    ]:
        done = run(args, env, tmp_path)
        assert done.returncode == 2, (args, done.stderr)
        assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "Traceback" not in done.stderr


def test_export_writes_nothing_through_a_link_in_dir_and_sweeps_a_killed_exports_staging(tmp_path: Path) -> None:
    env = trawl_env(tmp_path)
    # The catalog on SQLite whatever the run: fill() stores a title with a NUL, which PostgreSQL's
    # text refuses (that refusal is the catalog's test, not the export's).
    env.pop("TRAWL_CATALOG__URL", None)
    settings = Settings(data_dir=tmp_path / "data")
    fill(settings, tmp_path)
    out, elsewhere = tmp_path / "named", tmp_path / "elsewhere"
    (out / "weibo").mkdir(parents=True)
    elsewhere.mkdir()
    (out / "generic").symlink_to(elsewhere)
    stale = out / "weibo" / ".two pictures [5000].jpg.0123456789ab.trawl-tmp"  # what a killed copy leaves
    stale.write_bytes(b"half")

    done = run(["export", str(out), "--link", "copy", "--write-info-json"], env, tmp_path)
    assert done.returncode == 1, done.stderr
    assert not any(elsewhere.iterdir())
    lines = done.stderr.strip().splitlines()
    refused = [line for line in lines if line.startswith("trawl export: not exported: generic/")]
    assert len(refused) == 9 and all("generic is a symbolic link" in line for line in refused)
    assert any("removed 1 staging file(s) an interrupted export left" in line for line in lines)
    assert "Traceback" not in done.stderr and not stale.exists()
    assert "10 item(s): 4 new file(s), 0 already there, 9 refused (see above)" in lines[-1]
    assert sorted(done.stdout.splitlines()) == sorted(
        [f"weibo/someone/two pictures [5000] - {name}" for name in ("image-1.jpg", "image-2.jpg", "thumbnail.jpg")]
        + ["weibo/someone/two pictures [5000] - image-1.info.json"])
