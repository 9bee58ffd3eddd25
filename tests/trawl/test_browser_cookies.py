"""Cookies read from Firefox and Chromium profiles made here with the browsers' own schemas."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from tests.browser_profiles import chromium_profile, firefox_profile
from trawl.browser_cookies import (
    BrowserCookieError,
    BrowserSpec,
    decrypt_v10,
    encrypt_v10,
    parse_spec,
    read_browser_cookies,
)

LATER = int(time.time()) + 30 * 86400
COOKIES = [(".bilibili.com", "SESSDATA", "bili%2Csecret", LATER), (".weibo.com", "SUB", "_2A25weibo", 0),
           ("www.example.org", "other", "x" * 40, LATER)]


def _values(jar) -> dict[str, tuple[str, int | None]]:  # noqa: ANN001 - a CookieJar
    return {c.name: (c.value, c.expires) for c in jar}


def test_the_spec_is_yt_dlps() -> None:
    assert parse_spec("firefox") == BrowserSpec("firefox")
    assert parse_spec("Chromium:Profile 1") == BrowserSpec("chromium", "Profile 1")
    assert parse_spec("chrome:/home/me/.config/google-chrome/Default") == BrowserSpec(
        "chrome", "/home/me/.config/google-chrome/Default")
    for text, says in [("safari", "the browser is one of firefox, chromium"), ("chromium+gnomekeyring", r"\+KEYRING"),
                       ("firefox:default::Personal", "containers")]:
        with pytest.raises(BrowserCookieError, match=says):
            parse_spec(text)


def test_v10_is_chromiums_peanuts_key_with_the_host_hash() -> None:
    # A value Chromium 130 on Linux wrote without a keyring (database version 24), by the recipe in
    # os_crypt_linux.cc: AES-128-CBC, PBKDF2-SHA1("peanuts", "saltysalt", 1), IV of 16 spaces.
    sealed = encrypt_v10("abc", ".bilibili.com")
    assert sealed[:3] == b"v10" and len(sealed) == 3 + 48
    assert decrypt_v10(sealed, ".bilibili.com", hashed=True) == "abc"
    assert decrypt_v10(encrypt_v10("abc", "", hashed=False), "x", hashed=False) == "abc"
    assert decrypt_v10(b"v11" + bytes(32), "h", hashed=True) is None  # the keyring's: not readable here
    with pytest.raises(BrowserCookieError, match="encrypted for another host"):
        decrypt_v10(sealed, ".weibo.com", hashed=True)
    with pytest.raises(BrowserCookieError, match="damaged database"):
        decrypt_v10(sealed[:-5], ".bilibili.com", hashed=True)


def test_firefox_is_read_while_the_browser_holds_its_database(tmp_path: Path) -> None:
    profile = tmp_path / "ff" / "abcd1234.default-release"
    held = firefox_profile(profile, COOKIES, keep_open=True)
    assert held is not None and (profile / "cookies.sqlite-wal").stat().st_size > 0
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):  # what reading it in place meets
            sqlite3.connect(profile / "cookies.sqlite", timeout=0).execute("SELECT * FROM moz_cookies").fetchall()
        read = read_browser_cookies(parse_spec(f"firefox:{profile}"))
    finally:
        held.close()
    assert _values(read.jar) == {"SESSDATA": ("bili%2Csecret", LATER), "SUB": ("_2A25weibo", None),
                                 "other": ("x" * 40, LATER)}
    assert {c.domain for c in read.jar} == {".bilibili.com", ".weibo.com", "www.example.org"}


def test_firefox_millisecond_expiries_are_read_as_seconds(tmp_path: Path) -> None:
    firefox_profile(tmp_path / "p", [(".bilibili.com", "SESSDATA", "v", LATER * 1000)])
    assert _values(read_browser_cookies(parse_spec(f"firefox:{tmp_path / 'p'}")).jar) == {"SESSDATA": ("v", LATER)}


def test_profiles_by_name_and_the_newest_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    firefox_profile(tmp_path / ".mozilla/firefox/old.default", [(".weibo.com", "SUB", "old", 0)])
    firefox_profile(tmp_path / ".mozilla/firefox/new.default-release", [(".weibo.com", "SUB", "new", 0)])
    assert _values(read_browser_cookies(parse_spec("firefox")).jar) == {"SUB": ("new", None)}
    assert _values(read_browser_cookies(parse_spec("firefox:old.default")).jar) == {"SUB": ("old", None)}
    chromium_profile(tmp_path / ".config/chromium", COOKIES[:1], profile="Profile 1")
    read = read_browser_cookies(parse_spec("chromium:Profile 1"))
    assert _values(read.jar) == {"SESSDATA": ("bili%2Csecret", LATER)} and read.keyring_only == 0
    assert _values(read_browser_cookies(parse_spec("chromium")).jar) == _values(read.jar)
    with pytest.raises(BrowserCookieError, match=r"chromium:Nope: no profile at .*/\.config/chromium/Nope"):
        read_browser_cookies(parse_spec("chromium:Nope"))
    with pytest.raises(BrowserCookieError, match="brave: no profile at"):
        read_browser_cookies(parse_spec("brave"))


def test_chromium_v11_cookies_are_left_out_and_counted_or_refused_when_all_are(tmp_path: Path) -> None:
    some = chromium_profile(tmp_path / "a", COOKIES[:1], v11=COOKIES[1:])
    read = read_browser_cookies(parse_spec(f"chromium:{some}"))
    assert set(_values(read.jar)) == {"SESSDATA"} and read.keyring_only == 2
    only = chromium_profile(tmp_path / "b", [], v11=COOKIES)
    with pytest.raises(BrowserCookieError, match=r"its 3 cookies are encrypted with the desktop keyring's key \(v11\)"):
        read_browser_cookies(parse_spec(f"chromium:{only}"))


def test_a_file_that_is_not_a_cookie_database_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "cookies.sqlite").write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(BrowserCookieError, match=r"cannot read .*cookies.sqlite \(file is not a database\)") as err:
        read_browser_cookies(parse_spec(f"firefox:{tmp_path / 'p'}"))
    assert "\n" not in str(err.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(BrowserCookieError, match="no cookies.sqlite in .*empty; is it a firefox profile"):
        read_browser_cookies(parse_spec(f"firefox:{tmp_path}/empty"))
