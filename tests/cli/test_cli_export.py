"""yt-dlp's habits in the CLI as pure logic: -f specs, cookies split by domain, -j, batch files."""

from __future__ import annotations

import argparse
import http.cookiejar
from pathlib import Path

import pytest

from trawl.cli import build_parser, yt_dlp_aliases
from trawl.cli.crawl import read_urls
from trawl.cli.choices import crawl_choices, crawl_settings, quality_audio, quality_height
from trawl.cli.cookies import split_cookies
from trawl.starter.client import CrawlChoices, item_options
from trawl.cli.output import CommandError
from trawl.platforms.bilibili.resolver import qn_for_height
from trawl.settings import Settings

COOKIES = """# Netscape HTTP Cookie File
.bilibili.com\tTRUE\t/\tFALSE\t0\tSESSDATA\tbili-secret
.weibo.com\tTRUE\t/\tTRUE\t0\tSUB\tweibo-secret
www.facebook.com\tFALSE\t/\tTRUE\t0\tc_user\t1234
.example.org\tTRUE\t/\tFALSE\t0\tother\tnobody-gets-this
"""


@pytest.mark.parametrize("spec, qn, height", [
    ("best", 127, 100_000), ("worst", 16, 1), ("720p", 64, 720), ("1080", 80, 1080), ("480p", 32, 480),
    ("bestvideo[height<=720]", 64, 720), ("bv*[height<=1080]+ba/b", 80, 1080), ("2160p", 120, 2160),
])
def test_quality_specs(spec: str, qn: int, height: int) -> None:
    assert quality_height(spec) == height and qn_for_height(height) == qn


@pytest.mark.parametrize("spec, audio, height", [
    ("bv*+ba[acodec=flac]", "lossless", 100_000), ("bestvideo[height<=720]+ba[acodec=ec-3]", "dolby", 720),
    ("ba[acodec^=mp4a]", "aac", 100_000), ("720p", "", 720),
])
def test_an_audio_selector_picks_the_audio_and_leaves_the_height(spec: str, audio: str, height: int) -> None:
    wanted, video = quality_audio(spec)
    assert (wanted, quality_height(video)) == (audio, height)
    with pytest.raises(CommandError, match="the audio codec is one of flac"):
        quality_audio("bv*+ba[acodec=opus]")


def test_a_spec_not_understood_says_what_is(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="give best, worst, a height such as 720p"):
        quality_height("137+140")


def _jar(path: Path) -> dict[str, str]:
    jar = http.cookiejar.MozillaCookieJar(str(path))
    jar.load(ignore_discard=True, ignore_expires=True)
    return {c.name: c.value or "" for c in jar}


def test_each_platform_gets_only_its_own_cookies(tmp_path: Path) -> None:
    source = tmp_path / "cookies.txt"
    source.write_text(COOKIES)
    written = split_cookies(str(source), Settings(data_dir=tmp_path / "data"), tmp_path / "split")
    assert set(written) == {"bilibili", "weibo", "facebook"}
    assert _jar(Path(written["bilibili"])) == {"SESSDATA": "bili-secret"}
    assert _jar(Path(written["weibo"])) == {"SUB": "weibo-secret"}
    assert _jar(Path(written["facebook"])) == {"c_user": "1234"}
    assert oct(Path(written["weibo"]).stat().st_mode & 0o777) == "0o600"


def test_crawl_flags_ride_in_the_items_options_and_cookies_stay_in_the_worker(tmp_path: Path) -> None:
    source = tmp_path / "cookies.txt"
    source.write_text(COOKIES)
    args = build_parser().parse_args(["crawl", "--cookies", str(source), "--limit-rate", "500K", "-f", "720p", "u"])
    base = Settings(data_dir=tmp_path / "data")
    choices = crawl_choices(args)
    assert choices == CrawlChoices(quality=720, limit_rate=500 << 10)
    options = item_options(base, choices)  # what every worker running the crawl's items reads
    assert (options.quality, options.limit_rate) == (720, 500 << 10)
    assert (item_options(base).quality, item_options(base).limit_rate) == (0, 0)  # 0: the worker's settings
    settings = crawl_settings(args, base)
    assert settings.download == base.download and settings.platforms.bilibili.quality == base.platforms.bilibili.quality
    assert _jar(Path(settings.platforms.bilibili.cookies_file)) == {"SESSDATA": "bili-secret"}
    assert settings.platforms.generic.cookies_file == ""  # no cookies for every other site
    bad = argparse.Namespace(limit_rate="fast", quality=None, cookies=None)
    with pytest.raises(CommandError, match="--limit-rate: not a size: 'fast'"):
        crawl_choices(bad)
    missing = argparse.Namespace(limit_rate=None, quality=None, cookies=str(tmp_path / "absent.txt"))
    with pytest.raises(CommandError, match="no such file; export a cookies.txt"):
        crawl_settings(missing, Settings(data_dir=tmp_path / "data"))


def test_dash_j_is_resolve_json_and_batch_files_skip_comments(tmp_path: Path) -> None:
    assert yt_dlp_aliases(["-j", "https://x.test/v"]) == ["resolve", "--json", "https://x.test/v"]
    args = build_parser().parse_args(yt_dlp_aliases(["-j", "https://x.test/v"]))
    assert args.command == "resolve" and args.json
    assert build_parser().parse_args(["resolve", "-j", "u"]).json
    batch = tmp_path / "urls.txt"
    batch.write_text("# a comment\n; another\nhttps://a.test/1\n\n  ;indented\nhttps://a.test/2\n")
    args = build_parser().parse_args(["crawl", "-a", str(batch)])
    urls = read_urls(["https://a.test/0"], args.file)
    assert len(urls) == 3 and list(urls) == ["https://a.test/0", "https://a.test/1", "https://a.test/2"]
    assert list(urls) == list(urls)  # the file is read again, line by line, each time
    broken = tmp_path / "broken.txt"
    broken.write_bytes(b"https://a.test/1\n" * 1000 + b"https://a.test/\xff\n")
    with pytest.raises(CommandError, match="cannot read .*broken.txt.*give a text file of URLs"):
        read_urls([], str(broken))  # before anything starts, not after a thousand items
    assert build_parser().parse_args(["crawl", "--batch-file", "x"]).file == "x"


def test_a_cookie_goes_only_to_the_platform_whose_domain_it_is_for(tmp_path: Path) -> None:
    """Domains are matched whole and from the platform's own domain down: a cookie for a public suffix
    (``.com.cn``, ``.com``, ``cn``) or a look-alike domain goes to no platform."""
    source = tmp_path / "cookies.txt"
    rows = [(".com.cn", "suffix_dot"), ("com.cn", "suffix"), (".com", "com"), (".cn", "cn"),
            ("notweibo.com", "lookalike"), (".notweibo.cn", "lookalike_cn"), ("weibo.com.evil.test", "prefix"),
            (".weibo.com", "SUB"), ("passport.weibo.com", "passport"), (".weibo.cn", "cn_sub"),
            (".sina.com.cn", "sina"), (".bilibili.com", "SESSDATA")]
    source.write_text("# Netscape HTTP Cookie File\n" + "".join(
        f"{domain}\t{'TRUE' if domain.startswith('.') else 'FALSE'}\t/\tFALSE\t0\t{name}\tv\n"
        for domain, name in rows))
    written = split_cookies(str(source), Settings(data_dir=tmp_path / "data"), tmp_path / "split")
    assert set(written) == {"weibo", "bilibili"}
    assert set(_jar(Path(written["weibo"]))) == {"SUB", "passport", "cn_sub", "sina"}
    assert set(_jar(Path(written["bilibili"]))) == {"SESSDATA"}


def test_export_help_says_a_hard_link_is_the_blob_itself(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["export", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "same file as the stored blob" in text and "copies unless --link" in text  # copies by default
    assert "trawl fsck" in text


@pytest.mark.parametrize("command", [["export", "out"], ["crawl", "u"]])
def test_dash_o_takes_yt_dlp_templates(tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from trawl.cli.export import exporter_for

    args = build_parser().parse_args([*command, "-o", "%(title)s [%(id)s].%(ext)s"])
    template = args.template if command[0] == "export" else args.output
    exporter = exporter_for(Settings(data_dir=tmp_path / "data"), str(tmp_path / "out"), template=template)
    try:
        assert exporter.template.render({"title": "Clip", "id": "x1", "ext": "mp4"}) == ["Clip [x1].mp4"]
    finally:
        exporter.close()
    with pytest.raises(CommandError, match=r"unknown field %\(nope\)s"):
        exporter_for(Settings(data_dir=tmp_path / "data"), str(tmp_path / "out"), template="%(nope)s.%(ext)s")
    with pytest.raises(SystemExit):
        build_parser().parse_args([command[0], "--help"])
    assert "%(title)s" in " ".join(capsys.readouterr().out.split())  # the help names the yt-dlp form
