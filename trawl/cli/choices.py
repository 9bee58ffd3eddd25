"""What ``trawl crawl`` is told to choose, yt-dlp's way: ``-f`` (the quality and the audio),
``--limit-rate`` and ``--keep-previews``, which ride in every item's options to every worker, and
``--cookies``, which stays with this command's own worker (credentials never enter a workflow's
history, which the Web UI shows)."""

from __future__ import annotations

import argparse
import http.cookiejar
import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from trawl.cli.output import CommandError
from trawl.platforms.registry import PLATFORMS
from trawl.settings import Settings
from trawl.sizes import parse_size
from trawl.starter.client import CrawlChoices

# The real domains each platform's cookies belong to (the configured base URLs' hosts count too).
PLATFORM_DOMAINS = {p.name: p.cookie_domains for p in PLATFORMS if p.cookie_domains}

# yt-dlp's -f as trawl understands it: a height (720p, 1080), best, worst, or ...[height<=N].
_HEIGHT = re.compile(r"(?:(?:best|bv\*?|b|bestvideo)\*?\[height<=\??(\d+)\](?:\+.*|/.*)?|(\d+)p?)")

# yt-dlp's audio selectors -> the audio a platform that offers several kinds takes
# (ResolveContext.audio): Hi-Res FLAC, Dolby (E-AC-3), or plain AAC.
_AUDIO = re.compile(r"\+?(?:ba|bestaudio)\[acodec\^?=([\w.-]+)\]")
AUDIO_CODECS = {"flac": "lossless", "ec-3": "dolby", "eac3": "dolby", "mp4a": "aac", "aac": "aac"}


def quality_audio(spec: str) -> tuple[str, str]:
    """``-f``'s audio selector (``bv*+ba[acodec=flac]``) as the audio wanted, and the spec without it.

    Raises:
        CommandError: an audio codec this does not know.
    """
    text = spec.strip().lower()
    match = _AUDIO.search(text)
    if match is None:
        return "", spec
    audio = AUDIO_CODECS.get(match[1])
    if audio is None:
        raise CommandError(f"-f {spec!r}: the audio codec is one of {', '.join(AUDIO_CODECS)}")
    rest = (text[:match.start()] + text[match.end():]).strip("+/")
    return audio, rest if rest not in ("", "bv", "bv*", "bestvideo") else "best"


def quality_height(spec: str) -> int:
    """``-f``: the tallest video wanted, in lines (a platform maps it to its own quality, HLS picks
    the variant at or below it).

    Raises:
        CommandError: a spec this does not understand.
    """
    text = spec.strip().lower()
    if text in ("best", "bv*+ba/b", "bestvideo+bestaudio/best", "bestvideo+bestaudio", "b"):
        height = 100_000
    elif text in ("worst", "w", "worstvideo+worstaudio"):
        height = 1
    elif match := _HEIGHT.fullmatch(text):
        height = int(match[1] or match[2])
    else:
        raise CommandError(f"-f {spec!r}: give best, worst, a height such as 720p, or bestvideo[height<=720]")
    if height < 1:
        raise CommandError(f"-f {spec!r}: the height must be positive")
    return height


def split_cookies(path: str, settings: Settings, into: Path) -> dict[str, str]:
    """Write the cookies of a Netscape ``cookies.txt`` into one file per platform they belong to.

    A cookie belongs to a platform when its domain is one of the platform's
    (:data:`PLATFORM_DOMAINS`, or a configured base URL's host, e.g. a simulator) or a subdomain of
    one, compared label by label. A cookie for a wider domain (``.com.cn``, ``.com``) or for a name
    that merely ends the same way (``notexample.com``) goes to no platform; no platform gets
    another's cookies.

    Returns:
        platform -> the file written for it (only platforms with cookies).

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
    written: dict[str, str] = {}
    into.mkdir(parents=True, exist_ok=True)
    for platform, real in PLATFORM_DOMAINS.items():
        config = settings.platforms[platform]
        domains = set(real) | {urlsplit(str(v)).hostname or "" for k, v in config.model_dump().items()
                               if k.endswith("_base") and v} - {""}
        mine = [c for c in jar if any(_domain_matches(c.domain, domain) for domain in domains)]
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


def _domain_matches(cookie_domain: str, platform_domain: str) -> bool:
    """Whether a cookie for ``cookie_domain`` is the platform's: that domain or one below it.

    Never the other way round: a cookie set for a parent of the platform's domain is set for
    every site under that parent (a public suffix such as ``com.cn``), so it is not the platform's.
    """
    domain = cookie_domain.strip().lstrip(".").rstrip(".").lower()
    own = platform_domain.strip().lstrip(".").rstrip(".").lower()
    return bool(domain) and bool(own) and (domain == own or domain.endswith("." + own))


def crawl_choices(args: argparse.Namespace) -> CrawlChoices:
    """``-f`` and ``--limit-rate`` of one crawl: they ride in its items' options to every worker."""
    limit_rate = 0
    if args.limit_rate:
        try:
            limit_rate = parse_size(args.limit_rate)
        except ValueError as err:
            raise CommandError(f"--limit-rate: {err}") from None
    audio, video = quality_audio(args.quality) if args.quality else ("", "")
    return CrawlChoices(quality=quality_height(video) if video else 0, limit_rate=limit_rate, audio=audio,
                        keep_previews=True if getattr(args, "keep_previews", False) else None)


def crawl_settings(args: argparse.Namespace, settings: Settings) -> Settings:
    """The settings of ``trawl crawl``'s own worker with ``--cookies``: credentials stay on the
    machine that was given them (never in a workflow's history, which the Web UI shows)."""
    if not args.cookies:
        return settings
    platforms = {platform: {"cookies_file": path}
                 for platform, path in split_cookies(args.cookies, settings, settings.data_dir / "cookies").items()}
    new_platforms = settings.platforms.model_copy(update={
        name: settings.platforms[name].model_copy(update=changes) for name, changes in platforms.items()})
    return settings.model_copy(update={"platforms": new_platforms})


__all__ = ["crawl_choices", "crawl_settings", "quality_audio", "quality_height", "split_cookies"]
