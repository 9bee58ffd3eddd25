"""The cookies a crawl is given: the login reminders, and a browser's cookies beside a cookies.txt."""

from __future__ import annotations

import http.cookiejar
import time
from pathlib import Path

import pytest

from tests.browser_profiles import chromium_profile
from trawl.cli.cookies import cookie_settings, login_reminders
from trawl.platforms.registry import PLATFORMS
from trawl.settings import Settings

NOW = 1_800_000_000.0
DAY = 86400


def _settings(tmp_path: Path, **files: str) -> Settings:
    return Settings(data_dir=tmp_path / "data", platforms={name: {"cookies_file": path} for name, path in files.items()})


def _cookies(path: Path, rows: list[tuple[str, str, int]]) -> str:
    path.write_text("# Netscape HTTP Cookie File\n" + "".join(
        f"{domain}\tTRUE\t/\tFALSE\t{expires}\t{name}\tv\n" for domain, name, expires in rows))
    return str(path)


def test_a_login_cookie_expired_or_expiring_soon_is_said_once_per_platform(tmp_path: Path) -> None:
    assert {p.name: p.login_cookie for p in PLATFORMS if p.login_cookie} == {
        "bilibili": "SESSDATA", "weibo": "SUB", "facebook": "c_user"}
    bili = _cookies(tmp_path / "b.txt", [(".bilibili.com", "SESSDATA", int(NOW - DAY)),
                                         (".bilibili.com", "buvid3", int(NOW - 9 * DAY))])
    weibo = _cookies(tmp_path / "w.txt", [(".weibo.com", "SUB", int(NOW + 3 * DAY + 60))])
    facebook = _cookies(tmp_path / "f.txt", [(".facebook.com", "c_user", int(NOW + 30 * DAY))])
    lines = login_reminders(_settings(tmp_path, bilibili=bili, weibo=weibo, facebook=facebook), now=NOW)
    assert lines == [
        "bilibili: the login cookie SESSDATA expired on 2027-01-14 08:00 UTC: what needs a login will fail as "
        "login_required; log in again in the browser and give its cookies again",
        "weibo: the login cookie SUB expires on 2027-01-18 08:01 UTC (in 3 day(s)): log in again in the browser "
        "before then and give its cookies again"]
    session = _cookies(tmp_path / "s.txt", [(".bilibili.com", "SESSDATA", 0)])  # no expiry: nothing to say
    assert login_reminders(_settings(tmp_path, bilibili=session, weibo=str(tmp_path / "absent.txt")), now=NOW) == []
    soon = _cookies(tmp_path / "h.txt", [(".bilibili.com", "SESSDATA", int(NOW + 600))])
    assert "(within the hour)" in login_reminders(_settings(tmp_path, bilibili=soon), now=NOW)[0]


def test_a_browsers_cookies_join_a_cookies_txts_and_win_where_both_name_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    later = int(time.time()) + 60 * DAY
    txt = _cookies(tmp_path / "c.txt", [(".bilibili.com", "SESSDATA", later), (".bilibili.com", "bili_jct", later)])
    profile = chromium_profile(tmp_path / "chromium", [(".bilibili.com", "SESSDATA", "fresh", later)],
                               v11=[(".weibo.com", "SUB", "", later)])
    settings = cookie_settings(txt, f"chromium:{profile}", Settings(data_dir=tmp_path / "data"))
    jar = http.cookiejar.MozillaCookieJar(settings.platforms.bilibili.cookies_file)
    jar.load(ignore_discard=True, ignore_expires=True)
    assert {c.name: c.value for c in jar} == {"SESSDATA": "fresh", "bili_jct": "v"}
    assert settings.platforms.weibo.cookies_file == ""
    said = capsys.readouterr().err.splitlines()
    assert said == [f"trawl crawl: --cookies-from-browser chromium:{profile}: 1 cookie(s) are encrypted with the "
                    "desktop keyring's key (v11), which trawl does not read: they are left out (export a cookies.txt "
                    "from the browser for them)"]
    untouched = Settings(data_dir=tmp_path / "data")
    assert cookie_settings(None, None, untouched) is untouched
