"""Named files: ``trawl export DIR``, and what ``trawl crawl`` adds for them (``--export DIR``,
``-o TEMPLATE``, ``--link``, ...). The crawl's other yt-dlp habits (``-f``, ``--limit-rate``) are
:mod:`trawl.cli.choices`, its cookies :mod:`trawl.cli.cookies`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from trawl.cli.common import open_catalog
from trawl.cli.output import EXIT_FAILED_ITEMS, CommandError, say
from trawl.errors import TrawlError
from trawl.export_extras import ExtrasChoice, ExtrasChoiceError
from trawl.export import (
    MANIFEST,
    Exporter,
    ExportStats,
    Template,
    TemplateError,
    item_for_key,
)
from trawl.platforms.registry import default_registry
from trawl.settings import Settings
from trawl.storage.blobs import open_blob_store
from trawl.contracts import ItemResult


def exporter_for(settings: Settings, directory: str, *, template: str | None = None, link: str | None = None,
                 windows_names: bool = False, write_info_json: bool = False,
                 args: argparse.Namespace | None = None) -> Exporter:
    """An :class:`Exporter` from the command's flags over ``[export]`` in the settings (``args``:
    the command's extras flags, trawl.export_extras)."""
    try:
        parsed = Template.parse(template or settings.export.template)
    except TemplateError as err:
        raise CommandError(f"bad template: {err}") from None
    extras = extras_choice(settings, args)
    try:
        return Exporter(Path(directory), open_blob_store(settings), parsed, link=link or settings.export.link,
                        windows_names=windows_names or settings.export.windows_names,
                        write_info_json=write_info_json or settings.export.write_info_json, extras=extras)
    except OSError as err:
        raise CommandError(f"cannot export into {directory}: {err.strerror or err}") from None


def extras_choice(settings: Settings, args: argparse.Namespace | None) -> ExtrasChoice:
    """Which extras to write: the command's flags over ``[export]`` in the settings."""
    given = vars(args) if args is not None else {}
    own = settings.export
    try:
        return ExtrasChoice(
            write_subs=bool(given.get("write_subs")) or own.write_subs,
            write_auto_subs=bool(given.get("write_auto_subs")) or own.write_auto_subs,
            sub_langs=ExtrasChoice.parse_langs(given["sub_langs"]) if given.get("sub_langs") else tuple(own.sub_langs),
            sub_format=given.get("sub_format") or own.sub_format,
            write_comments=bool(given.get("write_comments")) or own.write_comments,
            danmaku_formats=(ExtrasChoice.parse_danmaku_formats(given["danmaku_format"])
                             if given.get("danmaku_format") is not None else tuple(own.danmaku_format)),
            embed_subs=bool(given.get("embed_subs")) or own.embed_subs,
            embed_chapters=bool(given.get("embed_chapters")) or own.embed_chapters,
            embed_metadata=bool(given.get("embed_metadata")) or own.embed_metadata,
            embed_thumbnail=bool(given.get("embed_thumbnail")) or own.embed_thumbnail)
    except ExtrasChoiceError as err:
        raise CommandError(str(err)) from None


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
        for line in done.notes:
            say("crawl", line)
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
        asked = [flag for flag, on in (("--write-subs", args.write_subs), ("--write-auto-subs", args.write_auto_subs),
                                       ("--write-comments", args.write_comments), ("--sub-langs", args.sub_langs),
                                       ("--sub-format", args.sub_format), ("--embed-subs", args.embed_subs),
                                       ("--embed-chapters", args.embed_chapters),
                                       ("--embed-metadata", args.embed_metadata),
                                       ("--danmaku-format", args.danmaku_format),
                                       ("--embed-thumbnail", args.embed_thumbnail)) if on]
        if asked:
            raise CommandError(f"{asked[0]} writes files beside exported media: add --export DIR (or -o TEMPLATE)")
        return None
    exporter = exporter_for(settings, args.export or ".", template=args.output, link=args.link,
                            windows_names=args.windows_names, write_info_json=args.write_info_json, args=args)
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
                            windows_names=args.windows_names, write_info_json=args.write_info_json, args=args)
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
                for line in done.notes:
                    say("export", line)
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


__all__ = ["CrawlExport", "cmd_export", "crawl_export", "export_and_show", "exporter_for"]
