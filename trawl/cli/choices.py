"""What ``trawl crawl`` is told to choose, yt-dlp's way: ``-f`` (the quality and the audio),
``--limit-rate`` and ``--keep-previews``, which ride in every item's options to every worker, and
``--cookies`` and ``--cookies-from-browser``, which stay with this command's own worker
(:mod:`trawl.cli.cookies`: credentials never enter a workflow's history, which the Web UI shows)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from collections.abc import Iterable

from temporalio.client import Client

from trawl.cli.common import notice
from trawl.cli.cookies import cookie_settings
from trawl.cli.output import CommandError
from trawl.listing_filters import FilterError, ListingFilters
from trawl.platforms.registry import Registry
from trawl.settings import Settings
from trawl.sizes import parse_size
from trawl.starter.client import CrawlChoices

# Left in a data directory's run/ by the first crawl of it that asks for a --limit-rate: from then
# on its crawls look for running items that keep another rate (tell_kept_rates).
RATED_NOTE = "rated-crawls"

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


def listing_filters(args: argparse.Namespace) -> ListingFilters | None:
    """``--dateafter``, ``--datebefore``, ``--match-filters``, ``--max-downloads``, ``-I``: parsed
    now, so a mistake is one line before anything starts.

    Raises:
        CommandError: a filter that does not parse (exit 2), naming the flag and the mistake.
    """
    values = {"dateafter": getattr(args, "dateafter", None) or "", "datebefore": getattr(args, "datebefore", None) or "",
              "match_filter": getattr(args, "match_filter", None) or "",
              "max_downloads": getattr(args, "max_downloads", 0) or 0,
              "playlist_items": getattr(args, "playlist_items", None) or ""}
    flags = {"dateafter": "--dateafter", "datebefore": "--datebefore", "match_filter": "--match-filters",
             "max_downloads": "--max-downloads", "playlist_items": "--playlist-items"}
    for name, value in values.items():
        try:
            ListingFilters(**{name: value}).check()
        except FilterError as err:
            raise CommandError(f"{flags[name]}: {err}") from None
    filters = ListingFilters(**values)
    return filters or None


def crawl_choices(args: argparse.Namespace) -> CrawlChoices:
    """``-f`` and ``--limit-rate`` of one crawl: they ride in its items' options to every worker;
    the listing filters ride in its listings' definitions."""
    limit_rate = 0
    if args.limit_rate:
        try:
            limit_rate = parse_size(args.limit_rate)
        except ValueError as err:
            raise CommandError(f"--limit-rate: {err}") from None
    audio, video = quality_audio(args.quality) if args.quality else ("", "")
    return CrawlChoices(quality=quality_height(video) if video else 0, limit_rate=limit_rate, audio=audio,
                        keep_previews=True if getattr(args, "keep_previews", False) else None,
                        filters=listing_filters(args))


async def tell_kept_rates(client: Client, registry: Registry, urls: Iterable[str],
                          choices: CrawlChoices | None, data_dir: Path | None) -> None:
    """Say so when running items this crawl joins keep another ``--limit-rate`` than it asks for
    (their first run's: a running item's options do not change).

    The server is asked only when an item could differ: when this crawl asks for a rate, or when a
    crawl of this archive asked for one before (:data:`RATED_NOTE`, left in its ``run/``). Without
    either, the items hold the workers' own rate, as this crawl does, and it starts without the
    visibility query. Items started with a rate by another data directory's commands on the same
    server are then not mentioned. ``data_dir``: the archive's (None: always ask).
    """
    from trawl.starter.kept_options import kept_rates, kept_rates_line

    limit_rate = choices.limit_rate if choices is not None else 0
    if data_dir is not None:
        note = data_dir / "run" / RATED_NOTE
        if limit_rate:
            note.parent.mkdir(parents=True, exist_ok=True)
            note.touch()
        elif not note.exists():
            return
    kept = await kept_rates(client, registry, urls, limit_rate)
    if kept:
        notice(kept_rates_line(kept, limit_rate), items=[k.workflow_id for k in kept])


def crawl_settings(args: argparse.Namespace, settings: Settings) -> Settings:
    """The settings of ``trawl crawl``'s own worker with ``--cookies`` and
    ``--cookies-from-browser``: credentials stay on the machine that was given them (never in a
    workflow's history, which the Web UI shows). A login cookie about to expire is said here."""
    return cookie_settings(getattr(args, "cookies", None), getattr(args, "cookies_from_browser", None), settings)


__all__ = ["crawl_choices", "crawl_settings", "quality_audio", "quality_height", "tell_kept_rates"]
