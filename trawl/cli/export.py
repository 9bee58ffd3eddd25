"""Named files and yt-dlp's habits: ``trawl export DIR``, and what ``trawl crawl`` adds for them
(``--export DIR``, ``-o TEMPLATE``, ``--cookies``, ``--limit-rate``, ``-f``)."""

from __future__ import annotations

import argparse
import asyncio
import http.cookiejar
import os
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

from trawl.cli.common import open_catalog
from trawl.cli.output import EXIT_FAILED_ITEMS, CommandError, say
from trawl.starter.client import CrawlChoices
from trawl.errors import TrawlError
from trawl.export import (
    MANIFEST,
    Exporter,
    ExportStats,
    Template,
    TemplateError,
    item_for_key,
)
from trawl.platforms.registry import PLATFORMS, default_registry
from trawl.settings import Settings
from trawl.sizes import parse_size
from trawl.storage.blobs import open_blob_store
from trawl.contracts import ItemResult

# The real domains each platform's cookies belong to (the configured base URLs' hosts count too).
PLATFORM_DOMAINS = {p.name: p.cookie_domains for p in PLATFORMS if p.cookie_domains}

# What `trawl export --help` ends with: what a person must know before touching the files.
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


def exporter_for(settings: Settings, directory: str, *, template: str | None = None, link: str | None = None,
                 windows_names: bool = False, write_info_json: bool = False) -> Exporter:
    """An :class:`Exporter` from the command's flags over ``[export]`` in the settings."""
    try:
        parsed = Template.parse(template or settings.export.template)
    except TemplateError as err:
        raise CommandError(f"bad template: {err}") from None
    try:
        return Exporter(Path(directory), open_blob_store(settings), parsed, link=link or settings.export.link,
                        windows_names=windows_names or settings.export.windows_names,
                        write_info_json=write_info_json or settings.export.write_info_json)
    except OSError as err:
        raise CommandError(f"cannot export into {directory}: {err.strerror or err}") from None


class CrawlExport:
    """``trawl crawl --export DIR``: each item's files are exported as soon as its result is in."""

    def __init__(self, settings: Settings, exporter: Exporter) -> None:
        self.exporter = exporter
        self.catalog = open_catalog(settings, schema=False)
        self.tasks: list[asyncio.Task[None]] = []
        self.stats = ExportStats()
        self.failed: list[str] = []

    def on_result(self, result: ItemResult) -> None:
        if result.outcome in ("committed", "duplicate") and result.canonical_key:
            self.tasks.append(asyncio.create_task(self._export(result.canonical_key)))

    async def _export(self, key: str) -> None:
        # The files are written in a thread; the totals are added here, in the event loop, so
        # exports finishing at once never add to them together.
        try:
            done = await asyncio.to_thread(self._export_files, key)
        except (OSError, TrawlError) as err:
            self.failed.append(key)
            say("crawl", f"export of {key} failed: {err}")
            return
        for line in done.refused:
            say("crawl", f"not exported: {line}")
        if done.refused:
            self.failed.append(key)
        self.stats.add(done)

    def _export_files(self, key: str) -> ExportStats:
        item = item_for_key(self.catalog, key)
        return self.exporter.export_item(item) if item is not None else ExportStats()

    async def finish(self) -> int:
        """Wait for the exports, save the manifest, say what was done; the exit code they add."""
        await asyncio.gather(*self.tasks)
        await asyncio.to_thread(self.exporter.close)
        self.exporter.store.close()
        self.catalog.close()
        say("crawl", f"exported {len(self.stats.written)} new file(s) into {self.exporter.root}"
                     + (f", {self.stats.kept} already there" if self.stats.kept else ""))
        return EXIT_FAILED_ITEMS if self.failed else 0


def crawl_export(args: argparse.Namespace, settings: Settings) -> CrawlExport | None:
    """The crawl's exporter when ``--export`` or ``-o`` asks for one (``-o`` alone: here)."""
    if not args.export and not args.output:
        return None
    exporter = exporter_for(settings, args.export or ".", template=args.output, link=args.link,
                            windows_names=args.windows_names, write_info_json=args.write_info_json)
    _say_swept("crawl", exporter)
    return CrawlExport(settings, exporter)


def _say_swept(command: str, exporter: Exporter) -> None:
    if exporter.swept:
        say(command, f"removed {len(exporter.swept)} staging file(s) an interrupted export left in {exporter.root}")


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    """Write the catalog's items as named files under DIR; only what is new is added.

    A file whose directory inside DIR is a symbolic link (or a file) is not written: one line
    says which, the others are exported, and the exit code is :data:`EXIT_FAILED_ITEMS`.
    """
    known = default_registry().platforms  # every platform, enabled or not: its items may be in the catalog
    if args.platform is not None and args.platform not in known:
        raise CommandError(f"--platform {args.platform!r}: unknown platform; known: {', '.join(known)}")
    exporter = exporter_for(settings, args.dir, template=args.template, link=args.link,
                            windows_names=args.windows_names, write_info_json=args.write_info_json)
    _say_swept("export", exporter)
    catalog = open_catalog(settings)
    try:
        stats = ExportStats()
        try:
            for item in catalog.committed(args.platform):
                done = exporter.export_item(item)
                stats.add(done)
                for rel in done.written:
                    print(rel, flush=True)
                for line in done.refused:
                    say("export", f"not exported: {line}")
        finally:
            exporter.close()
    except TrawlError as err:
        raise CommandError(f"{err}", EXIT_FAILED_ITEMS) from None
    except OSError as err:
        raise CommandError(f"cannot write into {args.dir}: {err.strerror or err} ({err.filename or ''})",
                           EXIT_FAILED_ITEMS) from None
    finally:
        exporter.store.close()
        catalog.close()
    how = exporter.link + (f" ({stats.copied_instead} copied: the store is not a local directory on this "
                           "filesystem)" if stats.copied_instead else "")
    refused = f", {len(stats.refused)} refused (see above)" if stats.refused else ""
    print(f"{stats.items} item(s): {len(stats.written)} new file(s), {stats.kept} already there{refused}, in "
          f"{args.dir} [{how}]", file=sys.stderr)
    return EXIT_FAILED_ITEMS if stats.refused else 0


def tree_lines(root: Path) -> list[str]:
    """The files under ``root`` drawn as ``tree`` draws them (the manifest left out)."""
    lines: list[str] = []

    def walk(directory: Path, prefix: str) -> None:
        entries = sorted((p for p in directory.iterdir() if p.name != MANIFEST and not p.name.startswith(".")),
                         key=lambda p: (p.is_file(), p.name))
        for i, entry in enumerate(entries):
            last = i == len(entries) - 1
            lines.append(f"{prefix}{'└── ' if last else '├── '}{entry.name}{'/' if entry.is_dir() else ''}")
            if entry.is_dir():
                walk(entry, prefix + ("    " if last else "│   "))

    walk(root, "")
    return lines


def export_and_show(settings: Settings, root: Path) -> None:
    """Export the whole catalog under ``root`` (settings' template and link) and print the tree."""
    exporter = exporter_for(settings, str(root))
    catalog = open_catalog(settings, schema=False)
    try:
        stats = exporter.export_items(catalog.committed())
    except (OSError, TrawlError) as err:
        print(f"\nexport:   into {root} failed: {err}", file=sys.stderr)
        return
    finally:
        exporter.close()
        exporter.store.close()
        catalog.close()
    for line in stats.refused:
        print(f"export:   not exported: {line}", file=sys.stderr)
    print(f"\nexport:   {root} ({len(stats.written)} new file(s), {stats.kept} already there; "
          f"`trawl export DIR` does this for any directory)")
    print(f"{root}/")
    for line in tree_lines(root):
        print(line)


__all__ = ["CrawlExport", "crawl_export", "crawl_choices", "crawl_settings", "quality_height", "split_cookies"]
