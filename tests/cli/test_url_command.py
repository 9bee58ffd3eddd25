"""``trawl URL`` is ``trawl crawl URL``, with yt-dlp's options before the URL (issue 43, point 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_cli import run, trawl_env
from trawl.cli import build_parser, yt_dlp_aliases
from trawl.simulator import MediaFile, Simulator
from trawl.simulator.demo import og_page


@pytest.mark.parametrize(("given", "meant"), [
    (["https://x.test/v"], ["crawl", "https://x.test/v"]),
    (["https://x.test/v", "-o", "%(id)s"], ["crawl", "https://x.test/v", "-o", "%(id)s"]),
    (["-o", "%(title)s.%(ext)s", "https://x.test/v"], ["crawl", "-o", "%(title)s.%(ext)s", "https://x.test/v"]),
    (["--log-level", "INFO", "-f", "720p", "http://a/1", "http://a/2"],
     ["--log-level", "INFO", "crawl", "-f", "720p", "http://a/1", "http://a/2"]),
    (["--log-level=DEBUG", "--json", "http://a/1"], ["--log-level=DEBUG", "crawl", "--json", "http://a/1"]),
    (["-a", "urls.txt", "http://a/1"], ["crawl", "-a", "urls.txt", "http://a/1"]),
    (["-j", "https://x.test/v"], ["resolve", "--json", "https://x.test/v"]),
    (["crawl", "http://a/1"], ["crawl", "http://a/1"]),  # a command stays itself
    (["resolve", "http://a/1"], ["resolve", "http://a/1"]),
    (["items"], ["items"]),
    (["--help"], ["--help"]),
    (["not-a-command"], ["not-a-command"]),  # still argparse's error
    ([], []),
])
def test_a_url_where_the_command_goes_means_crawl(given: list[str], meant: list[str]) -> None:
    assert yt_dlp_aliases(given) == meant
    assert yt_dlp_aliases(meant) == meant  # applied twice (the command, then its dispatch): the same
    if meant and meant[0] != "--help" and meant != ["not-a-command"]:
        build_parser().parse_args(meant)  # what it means parses


def test_trawl_url_crawls_and_o_alone_exports_here(tmp_path: Path, sim: Simulator, temporal_address: str) -> None:
    sim.add_file("/cdn/clip.mp4", MediaFile("mp4", "url-alone", 150_000))
    sim.add_page("/watch/clip", og_page("A clip", "/cdn/clip.mp4"))
    env = trawl_env(tmp_path, temporal_address)
    plain = run(["--json", sim.url("/watch/clip")], env, tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["outcome"] == "committed"
    here = tmp_path / "here"
    here.mkdir()
    named = run(["-o", "%(title)s.%(ext)s", sim.url("/watch/clip")], env, here)
    assert named.returncode == 0, named.stderr
    assert "invalid choice" not in named.stderr
    assert (here / "A clip.mp4").stat().st_size == 150_000
