"""Cookies read from a browser profile on Linux, as yt-dlp's ``--cookies-from-browser`` reads them.

``BROWSER[:PROFILE]``: ``firefox`` or a Chromium-family browser (``chromium``, ``chrome``,
``brave``, ``edge``, ``vivaldi``); the profile is a name under the browser's own directory
(``Default``, ``Profile 1``, ``abcd1234.default-release``) or a path (anything with a ``/``).
Without one, the most recently used profile's database is read, as yt-dlp does.

- Firefox keeps its cookies in clear in ``cookies.sqlite`` (table ``moz_cookies``); those of a
  container (another identity in the same profile) are left out, as yt-dlp leaves them.
- Chromium keeps them in ``Cookies`` (table ``cookies``, in ``Network/`` in recent versions), the
  values encrypted with AES-128-CBC: ``v10`` under a key derived from the fixed password
  ``peanuts`` (what Chromium uses where no desktop keyring answers), ``v11`` under a key held in
  the desktop keyring (GNOME's Secret Service, KWallet). trawl reads ``v10``; a profile whose
  cookies for the platforms are all ``v11`` is refused with a line saying so (export a
  cookies.txt from the browser instead), rather than crawling as if logged out. Since database
  version 24 a plaintext starts with the SHA-256 of the cookie's host, which is checked and cut.

A running browser keeps its database open (and writes recent changes into a ``-wal`` file beside
it), so the files are copied together into a private temporary directory and the copy is read.

Written by hand (about a hundred lines over ``sqlite3`` and ``cryptography``, already a
dependency): the libraries that do this either bring a whole downloader (``yt_dlp.cookies``, an
internal module) or raise one generic error for every failure and pull in keyring bindings this
never uses.
"""

from __future__ import annotations

import hashlib
import http.cookiejar
import os
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

# Chromium's Linux cookie encryption (components/os_crypt/sync/os_crypt_linux.cc): PBKDF2-SHA1
# of the password, salt "saltysalt", one iteration, 16 bytes; the IV is 16 spaces.
V10_KEY = hashlib.pbkdf2_hmac("sha1", b"peanuts", b"saltysalt", 1, 16)
IV = b" " * 16
# Chromium counts time in microseconds since 1601-01-01; Unix time starts 11644473600 s later.
WINDOWS_EPOCH_OFFSET_S = 11_644_473_600
# Firefox 134+ writes moz_cookies.expiry in milliseconds; seconds never reach this (year 5138).
MILLISECONDS_FROM = 10**11

CHROMIUM_DIRS = {"chromium": "chromium", "chrome": "google-chrome", "brave": "BraveSoftware/Brave-Browser",
                 "edge": "microsoft-edge", "vivaldi": "vivaldi"}
BROWSERS = ("firefox", *CHROMIUM_DIRS)


class BrowserCookieError(ValueError):
    """A browser profile that cannot be read: missing, locked, of another shape, or encrypted with
    a key trawl does not hold. Its message is one line for the person who named the profile."""


@dataclass(frozen=True)
class BrowserCookies:
    jar: http.cookiejar.CookieJar  # every cookie read, of every domain
    keyring_only: int = 0  # cookies left out: encrypted with the desktop keyring's key (v11)


@dataclass(frozen=True)
class BrowserSpec:
    browser: str
    profile: str = ""

    def __str__(self) -> str:
        return self.browser + (f":{self.profile}" if self.profile else "")


def parse_spec(text: str) -> BrowserSpec:
    """``BROWSER[:PROFILE]`` as yt-dlp spells it.

    Raises:
        BrowserCookieError: an unknown browser, or a keyring or container this does not read.
    """
    browser, _, profile = text.strip().partition(":")
    if profile.startswith(":") or "::" in profile:
        raise BrowserCookieError(f"{text}: containers (::CONTAINER) are not read; give BROWSER[:PROFILE]")
    browser = browser.lower()
    if "+" in browser:
        raise BrowserCookieError(f"{text}: trawl reads Chromium's cookies without a desktop keyring (v10); "
                                 "leave out +KEYRING")
    if browser not in BROWSERS:
        raise BrowserCookieError(f"{text}: the browser is one of {', '.join(BROWSERS)}")
    return BrowserSpec(browser, profile)


def _config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def browser_roots(browser: str) -> list[Path]:
    """Where a browser keeps its profiles on Linux (Firefox: also its snap's and flatpak's)."""
    home = Path.home()
    if browser == "firefox":
        return [home / ".mozilla/firefox", home / "snap/firefox/common/.mozilla/firefox",
                home / ".var/app/org.mozilla.firefox/.mozilla/firefox", _config_home() / "mozilla/firefox"]
    return [_config_home() / CHROMIUM_DIRS[browser]]


def find_database(spec: BrowserSpec) -> Path:
    """The cookie database of the profile named (the newest one found when none is named).

    Raises:
        BrowserCookieError: no such profile, or no cookie database in it.
    """
    name = "cookies.sqlite" if spec.browser == "firefox" else "Cookies"
    if "/" in spec.profile:
        roots = [Path(spec.profile).expanduser()]
    elif spec.profile:
        roots = [root / spec.profile for root in browser_roots(spec.browser)]
    else:
        roots = browser_roots(spec.browser)
    existing = [root for root in roots if root.is_dir()]
    if not existing:
        where = roots[0] if len(roots) == 1 else f"{roots[0]} (nor in the snap's or flatpak's)"
        raise BrowserCookieError(f"{spec}: no profile at {where}; give BROWSER:PROFILE with the profile's name "
                                 "or directory")
    found = [path for root in existing for path in root.rglob(name) if path.is_file()]
    if not found:
        raise BrowserCookieError(f"{spec}: no {name} in {existing[0]}; is it a {spec.browser} profile?")
    return max(found, key=lambda path: path.stat().st_mtime)


def read_browser_cookies(spec: BrowserSpec) -> BrowserCookies:
    """The profile's cookies, every domain's (the caller hands each platform its own).

    Raises:
        BrowserCookieError: the profile is missing, cannot be read (locked, not a cookie
            database), or holds only cookies encrypted with the desktop keyring's key.
    """
    database = find_database(spec)
    with tempfile.TemporaryDirectory(prefix="trawl-cookies-") as tmp:
        copy = Path(tmp) / database.name
        try:
            for suffix in ("", "-wal", "-journal"):  # the recent changes a running browser keeps beside it
                if Path(f"{database}{suffix}").exists():
                    shutil.copyfile(f"{database}{suffix}", f"{copy}{suffix}")
        except OSError as err:
            raise BrowserCookieError(f"{spec}: cannot copy {database}: {err.strerror or err}") from None
        try:
            connection = sqlite3.connect(copy, timeout=0)
            try:
                connection.text_factory = bytes
                rows = _firefox_rows(connection) if spec.browser == "firefox" else _chromium_rows(connection)
            finally:
                connection.close()
        except sqlite3.DatabaseError as err:
            raise BrowserCookieError(f"{spec}: cannot read {database} ({err}): close the browser if it is "
                                     "writing it, or check it is the profile's cookie database") from None
    jar = http.cookiejar.CookieJar()
    v11 = 0
    for host, name, value, path, expires, secure in rows:
        if value is None:
            v11 += 1
            continue
        jar.set_cookie(http.cookiejar.Cookie(
            version=0, name=name, value=value, port=None, port_specified=False, domain=host,
            domain_specified=bool(host), domain_initial_dot=host.startswith("."), path=path or "/",
            path_specified=bool(path), secure=bool(secure), expires=expires, discard=expires is None,
            comment=None, comment_url=None, rest={}))
    if v11 and not len(jar):
        raise BrowserCookieError(f"{spec}: its {v11} cookies are encrypted with the desktop keyring's key (v11), "
                                 "which trawl does not read; export a cookies.txt from the browser and give "
                                 "--cookies FILE")
    return BrowserCookies(jar, v11)


Row = tuple[str, str, str | None, str, int | None, int]


def _text(value: bytes | str | None) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else (value or "")


def _firefox_rows(connection: sqlite3.Connection) -> list[Row]:
    columns = {_text(row[1]) for row in connection.execute("PRAGMA table_info(moz_cookies)")}
    # A container's cookies (originAttributes ^userContextId=N) are another identity's: left out, as yt-dlp does.
    where = " WHERE originAttributes NOT LIKE '%userContextId=%'" if "originAttributes" in columns else ""
    rows = []
    for host, name, value, path, expiry, secure in connection.execute(
            "SELECT host, name, value, path, expiry, isSecure FROM moz_cookies" + where):
        expires = int(expiry) if expiry else None
        if expires and expires >= MILLISECONDS_FROM:
            expires //= 1000
        rows.append((_text(host), _text(name), _text(value), _text(path), expires, secure))
    return rows


def _chromium_rows(connection: sqlite3.Connection) -> list[Row]:
    columns = {_text(row[1]) for row in connection.execute("PRAGMA table_info(cookies)")}
    secure = "is_secure" if "is_secure" in columns else "secure"
    version = connection.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
    hashed = int(_text(version[0]) or 0) >= 24 if version else False
    rows = []
    for host, name, value, encrypted, path, expires_utc, is_secure in connection.execute(
            f"SELECT host_key, name, value, encrypted_value, path, expires_utc, {secure} FROM cookies"):
        host = _text(host)
        text: str | None = _text(value)
        if not text and encrypted:
            text = decrypt_v10(bytes(encrypted), host, hashed)
        expires = int(expires_utc) // 1_000_000 - WINDOWS_EPOCH_OFFSET_S if expires_utc else None
        rows.append((host, _text(name), text, _text(path), expires, is_secure))
    return rows


def decrypt_v10(encrypted: bytes, host: str, hashed: bool) -> str | None:
    """A Chromium cookie value: its text, or None when it is not ``v10`` (a ``v11`` value needs
    the desktop keyring's key).

    Raises:
        BrowserCookieError: a ``v10`` value that does not decrypt (a damaged database).
    """
    if encrypted[:3] != b"v10":
        return None
    body = encrypted[3:]
    if not body or len(body) % 16:
        raise BrowserCookieError(f"a cookie of {host} is not a whole number of AES blocks: a damaged database")
    decryptor = Cipher(algorithms.AES(V10_KEY), modes.CBC(IV)).decryptor()
    plain = decryptor.update(body) + decryptor.finalize()
    pad = plain[-1]
    if not 1 <= pad <= 16 or plain[-pad:] != bytes([pad]) * pad:
        raise BrowserCookieError(f"a cookie of {host} does not decrypt with Chromium's v10 key: a damaged database")
    plain = plain[:-pad]
    if hashed:
        if plain[:32] != hashlib.sha256(host.encode()).digest():
            raise BrowserCookieError(f"a cookie of {host} was encrypted for another host: a damaged database")
        plain = plain[32:]
    return plain.decode("utf-8", "replace")


def encrypt_v10(value: str, host: str, hashed: bool = True) -> bytes:
    """What Chromium on Linux stores for ``value`` without a keyring (tests build profiles with it)."""
    plain = (hashlib.sha256(host.encode()).digest() if hashed else b"") + value.encode()
    pad = 16 - len(plain) % 16
    encryptor = Cipher(algorithms.AES(V10_KEY), modes.CBC(IV)).encryptor()
    return b"v10" + encryptor.update(plain + bytes([pad]) * pad) + encryptor.finalize()


__all__ = ["BROWSERS", "BrowserCookieError", "BrowserCookies", "BrowserSpec", "decrypt_v10", "encrypt_v10", "find_database",
           "parse_spec", "read_browser_cookies"]
