"""Browser profiles made in a test: a Firefox ``cookies.sqlite`` and a Chromium ``Cookies`` with the
browsers' own schemas (Firefox 128's ``moz_cookies``; Chromium's database version 24, values
encrypted ``v10`` as Chromium on Linux stores them without a keyring)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

from trawl.browser_cookies import WINDOWS_EPOCH_OFFSET_S, encrypt_v10

# (host, name, value, expires as Unix seconds or 0 for a session cookie)
Cookie = tuple[str, str, str, int]

FIREFOX_SCHEMA = """CREATE TABLE moz_cookies (id INTEGER PRIMARY KEY, originAttributes TEXT NOT NULL DEFAULT '',
name TEXT, value TEXT, host TEXT, path TEXT, expiry INTEGER, lastAccessed INTEGER, creationTime INTEGER,
isSecure INTEGER, isHttpOnly INTEGER, inBrowserElement INTEGER DEFAULT 0, sameSite INTEGER DEFAULT 0,
rawSameSite INTEGER DEFAULT 0, schemeMap INTEGER DEFAULT 0, isPartitionedAttributeSet INTEGER DEFAULT 0,
CONSTRAINT moz_uniqueid UNIQUE (name, host, path, originAttributes))"""

CHROMIUM_SCHEMA = ["CREATE TABLE meta(key LONGVARCHAR NOT NULL UNIQUE PRIMARY KEY, value LONGVARCHAR)",
                   """CREATE TABLE cookies(creation_utc INTEGER NOT NULL,host_key TEXT NOT NULL,
top_frame_site_key TEXT NOT NULL,name TEXT NOT NULL,value TEXT NOT NULL,encrypted_value BLOB NOT NULL,
path TEXT NOT NULL,expires_utc INTEGER NOT NULL,is_secure INTEGER NOT NULL,is_httponly INTEGER NOT NULL,
last_access_utc INTEGER NOT NULL,has_expires INTEGER NOT NULL,is_persistent INTEGER NOT NULL,
priority INTEGER NOT NULL,samesite INTEGER NOT NULL,source_scheme INTEGER NOT NULL,source_port INTEGER NOT NULL,
last_update_utc INTEGER NOT NULL,source_type INTEGER NOT NULL,has_cross_site_ancestor INTEGER NOT NULL,
UNIQUE (host_key, top_frame_site_key, has_cross_site_ancestor, name, path, source_scheme, source_port))"""]


def firefox_profile(directory: Path, cookies: Iterable[Cookie], *, keep_open: bool = False) -> sqlite3.Connection | None:
    """A Firefox profile at ``directory`` whose ``cookies.sqlite`` holds ``cookies``.

    With ``keep_open`` the database is left as a running Firefox leaves it: in WAL mode under an
    exclusive lock, the cookies still in ``cookies.sqlite-wal``; the open connection is returned
    (close it to let go).
    """
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "prefs.js").write_text("// Mozilla User Preferences\n")
    connection = sqlite3.connect(directory / "cookies.sqlite")
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute(FIREFOX_SCHEMA)
    connection.commit()
    if keep_open:
        connection.execute("PRAGMA wal_autocheckpoint=0")
        connection.execute("PRAGMA locking_mode=EXCLUSIVE")
    connection.executemany(
        "INSERT INTO moz_cookies (name, value, host, path, expiry, lastAccessed, creationTime, isSecure, isHttpOnly)"
        " VALUES (?, ?, ?, '/', ?, 0, 0, 0, 1)",
        [(name, value, host, expires or 0) for host, name, value, expires in cookies])
    # The same names in a container ("Work"): another identity, which a reader must leave out.
    connection.executemany(
        "INSERT INTO moz_cookies (originAttributes, name, value, host, path, expiry, isSecure, isHttpOnly)"
        " VALUES ('^userContextId=2', ?, 'container', ?, '/', 0, 0, 1)",
        [(name, host) for host, name, _, _ in cookies])
    connection.commit()
    if keep_open:
        return connection
    connection.close()
    return None


def chromium_profile(user_data: Path, cookies: Iterable[Cookie], profile: str = "Default",
                     v11: Iterable[Cookie] = ()) -> Path:
    """A Chromium profile ``user_data/profile`` whose ``Network/Cookies`` holds ``cookies``
    encrypted ``v10`` (and ``v11`` ones: random bytes under a key only a keyring would hold)."""
    directory = user_data / profile / "Network"
    directory.mkdir(parents=True, exist_ok=True)
    (user_data / "Local State").write_text('{"profile": {"last_used": "%s"}}' % profile)
    connection = sqlite3.connect(directory / "Cookies")
    for statement in CHROMIUM_SCHEMA:
        connection.execute(statement)
    connection.executemany("INSERT INTO meta VALUES (?, ?)", [("version", "24"), ("last_compatible_version", "24")])

    def row(host: str, name: str, encrypted: bytes, expires: int) -> tuple:
        utc = (expires + WINDOWS_EPOCH_OFFSET_S) * 1_000_000 if expires else 0
        return (0, host, "", name, "", encrypted, "/", utc, 0, 1, 0, int(bool(expires)), int(bool(expires)),
                1, 0, 2, 443, 0, 0, 0)

    rows = [row(host, name, encrypt_v10(value, host), expires) for host, name, value, expires in cookies]
    rows += [row(host, name, b"v11" + bytes(range(32)), expires) for host, name, _, expires in v11]
    connection.executemany(f"INSERT INTO cookies VALUES ({', '.join('?' * 20)})", rows)
    connection.commit()
    connection.close()
    return user_data / profile
