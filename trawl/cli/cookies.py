"""The cookies ``trawl crawl`` is given, yt-dlp's way: ``--cookies FILE`` (a Netscape cookies.txt)
and ``--cookies-from-browser BROWSER[:PROFILE]`` (read now, :mod:`trawl.browser_cookies`).

Either way they are split by domain into one cookies.txt per platform (owner-only files in the
data directory's ``cookies/``), which this command's own worker reads through
``platforms.<name>.cookies_file``: credentials never enter a workflow's history. A platform's
login cookie that has expired, or expires within :data:`LOGIN_NOTICE`, is said once here.
"""

from __future__ import annotations

import http.cookiejar
import os
import time
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlsplit

from trawl.cli.output import CommandError, say
from trawl.platforms.registry import PLATFORMS
from trawl.settings import Settings

# The real domains each platform's cookies belong to (the configured base URLs' hosts count too).
PLATFORM_DOMAINS = {p.name: p.cookie_domains for p in PLATFORMS if p.cookie_domains}
# Each platform's login cookie (as its package names it), whose expiry a crawl checks.
LOGIN_COOKIES = {p.name: p.login_cookie for p in PLATFORMS if p.login_cookie}
# A login cookie expiring within this is said before the crawl, while there is time to log in again.
LOGIN_NOTICE = timedelta(days=7)


def file_jar(path: str) -> http.cookiejar.CookieJar:
    """``--cookies FILE``.

    Raises:
        CommandError: the file cannot be read or is not in Netscape format.
    """
    jar = http.cookiejar.MozillaCookieJar(path)
    try:
        jar.load(ignore_discard=True, ignore_expires=True)
    except FileNotFoundError:
        raise CommandError(f"--cookies {path}: no such file; export a cookies.txt (Netscape format) from a "
                           "browser where you are logged in") from None
    except (OSError, http.cookiejar.LoadError) as err:
        raise CommandError(f"--cookies {path}: {err}; give a cookies.txt in Netscape format "
                           "(the first line is '# Netscape HTTP Cookie File')") from None
    return jar


def browser_jar(spec: str) -> http.cookiejar.CookieJar:
    """``--cookies-from-browser BROWSER[:PROFILE]``: the profile's cookies, read now. Cookies only
    the desktop keyring could decrypt (Chromium's v11) are left out, and a line says how many.

    Raises:
        CommandError: the profile is missing, locked or unreadable (one line, exit 2).
    """
    from trawl.browser_cookies import BrowserCookieError, parse_spec, read_browser_cookies  # cryptography: when asked

    try:
        read = read_browser_cookies(parse_spec(spec))
    except BrowserCookieError as err:
        raise CommandError(f"--cookies-from-browser {err}") from None
    if read.keyring_only:
        say("crawl", f"--cookies-from-browser {spec}: {read.keyring_only} cookie(s) are encrypted with the "
                     "desktop keyring's key (v11), which trawl does not read: they are left out (export a "
                     "cookies.txt from the browser for them)")
    return read.jar


def platform_domains(settings: Settings) -> dict[str, set[str]]:
    """Each platform's cookie domains: its real ones and its configured base URLs' hosts."""
    domains = {}
    for platform, real in PLATFORM_DOMAINS.items():
        config = settings.platforms[platform]
        domains[platform] = set(real) | {urlsplit(str(v)).hostname or "" for k, v in config.model_dump().items()
                                         if k.endswith("_base") and v} - {""}
    return domains


def split_jar(cookies: Iterable[http.cookiejar.Cookie], settings: Settings, into: Path) -> dict[str, str]:
    """Write ``cookies`` into one file per platform they belong to.

    A cookie belongs to a platform when its domain is one of the platform's
    (:func:`platform_domains`) or a subdomain of one, compared label by label. A cookie for a wider
    domain (``.com.cn``, ``.com``) or for a name that merely ends the same way
    (``notexample.com``) goes to no platform; no platform gets another's cookies.

    Returns:
        platform -> the file written for it (only platforms with cookies).
    """
    cookies = list(cookies)
    written: dict[str, str] = {}
    into.mkdir(parents=True, exist_ok=True)
    for platform, domains in platform_domains(settings).items():
        mine = [c for c in cookies if any(_domain_matches(c.domain, domain) for domain in domains)]
        if not mine:
            continue
        target = into / f"{platform}.txt"
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))  # credentials: owner only
        own = http.cookiejar.MozillaCookieJar(str(target))
        for cookie in mine:
            own.set_cookie(cookie)
        own.save(ignore_discard=True, ignore_expires=True)
        written[platform] = str(target)
    return written


def split_cookies(path: str, settings: Settings, into: Path) -> dict[str, str]:
    """:func:`split_jar` of a Netscape ``cookies.txt`` (raises :class:`CommandError` as :func:`file_jar`)."""
    return split_jar(file_jar(path), settings, into)


def _domain_matches(cookie_domain: str, platform_domain: str) -> bool:
    """Whether a cookie for ``cookie_domain`` is the platform's: that domain or one below it.

    Never the other way round: a cookie set for a parent of the platform's domain is set for
    every site under that parent (a public suffix such as ``com.cn``), so it is not the platform's.
    """
    domain = cookie_domain.strip().lstrip(".").rstrip(".").lower()
    own = platform_domain.strip().lstrip(".").rstrip(".").lower()
    return bool(domain) and bool(own) and (domain == own or domain.endswith("." + own))


def login_reminders(settings: Settings, now: float | None = None) -> list[str]:
    """One line per platform whose login cookie (in its ``cookies_file``) has expired or expires
    within :data:`LOGIN_NOTICE`; a session cookie (no expiry) or a file that cannot be read says
    nothing here (the platform's own answer tells)."""
    now = time.time() if now is None else now
    lines = []
    for platform, name in LOGIN_COOKIES.items():
        path = settings.platforms[platform].cookies_file
        if not path:
            continue
        jar = http.cookiejar.MozillaCookieJar(path)
        try:
            jar.load(ignore_discard=True, ignore_expires=True)
        except (OSError, http.cookiejar.LoadError):
            continue
        expiries = [c.expires for c in jar if c.name == name and c.expires]
        if not expiries:
            continue
        expires = max(expiries)
        day = datetime.fromtimestamp(expires, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        if expires <= now:
            lines.append(f"{platform}: the login cookie {name} expired on {day}: what needs a login will fail as "
                         "login_required; log in again in the browser and give its cookies again")
        elif expires - now <= LOGIN_NOTICE.total_seconds():
            days = (expires - now) / 86400
            hours = (expires - now) / 3600
            left = f"in {days:.0f} day(s)" if days >= 1 else f"in {hours:.0f} hour(s)" if hours >= 1 else "within the hour"
            lines.append(f"{platform}: the login cookie {name} expires on {day} ({left}): log in again in the "
                         "browser before then and give its cookies again")
    return lines


def cookie_settings(cookies: str | None, from_browser: str | None, settings: Settings) -> Settings:
    """The settings of the crawl command's own worker with the cookies given (both may be: the
    browser's win where they name the same cookie), then the login reminders said once."""
    jars = [jar for jar in (file_jar(cookies) if cookies else None,
                            browser_jar(from_browser) if from_browser else None) if jar is not None]
    if jars:
        merged = {(c.domain, c.path, c.name): c for jar in jars for c in jar}
        written = split_jar(merged.values(), settings, settings.data_dir / "cookies")
        new_platforms = settings.platforms.model_copy(update={
            name: settings.platforms[name].model_copy(update={"cookies_file": path})
            for name, path in written.items()})
        settings = settings.model_copy(update={"platforms": new_platforms})
    for line in login_reminders(settings):
        say("crawl", line)
    return settings


__all__ = ["LOGIN_NOTICE", "browser_jar", "cookie_settings", "file_jar", "login_reminders", "split_cookies",
           "split_jar"]
