"""The catalog: ``items`` (what it holds) and ``fsck`` (every blob against its hash and every row
against the store, ``--repair`` crawling damaged items again)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from typing import Any

from trawl.cli.common import open_catalog, session
from trawl.cli.crawl import crawl_urls
from trawl.cli.output import EXIT_FAILED_ITEMS, ITEMS_HEADER, CommandError, item_line, result_line
from trawl.platforms.registry import PLATFORMS, build_registry
from trawl.settings import Settings
from trawl.starter.views import item_dict, result_dict
from trawl.storage.blobs import abort_uploads, open_blob_store


def cmd_items(args: argparse.Namespace, settings: Settings) -> int:
    known = [p.name for p in PLATFORMS]
    if args.platform is not None and args.platform not in known:
        raise CommandError(f"unknown platform {args.platform!r}; give one of {', '.join(known)}")
    catalog = open_catalog(settings)
    items = catalog.list(platform=args.platform, limit=args.limit)
    blobs = open_blob_store(settings)
    if not args.json:
        print(ITEMS_HEADER)
    for item in items:
        print(json.dumps(item_dict(item, blobs)) if args.json else item_line(item))
    blobs.close()
    if not args.json:
        print(f"{len(items)} item(s) in {settings.catalog_url.split('@')[-1]}", file=sys.stderr)
    return 0


def cmd_recheck(args: argparse.Namespace, settings: Settings) -> int:
    """Ask each item's platform whether it still has it (``trawl.recheck``): one line per item,
    then the counts. Exits 1 when some item could not be checked."""
    from itertools import islice

    from trawl.http_client import make_client
    from trawl.platforms.base import ResolveContext
    from trawl.recheck import platform_pace, recheck

    known = [p.name for p in PLATFORMS]
    if args.platform is not None and args.platform not in known:
        raise CommandError(f"unknown platform {args.platform!r}; give one of {', '.join(known)}")
    if args.limit is not None and args.limit < 1:
        raise CommandError("--limit must be 1 or more")
    catalog = open_catalog(settings)
    registry = build_registry(settings.platforms)
    if args.keys:
        items = [catalog.get(key) for key in args.keys]
        missing = [key for key, item in zip(args.keys, items) if item is None]
        if missing:
            raise CommandError(f"no such item in the catalog: {', '.join(missing)}")
        chosen: Any = [item for item in items if item is not None]
    else:
        chosen = catalog.committed(args.platform)
    counts = {"there": 0, "gone": 0, "unknown": 0}
    with make_client(settings.net) as http:
        for found in recheck(catalog, registry, ResolveContext(http, settings.net.max_page_bytes),
                             islice(chosen, args.limit), platform_pace(settings)):
            counts[found.outcome] += 1
            print(json.dumps(dataclasses.asdict(found), ensure_ascii=False) if args.json else found.line(), flush=True)
    print(f"{counts['there']} there, {counts['gone']} gone upstream, {counts['unknown']} could not be checked",
          file=sys.stderr)
    return 1 if counts["unknown"] else 0


async def cmd_fsck(args: argparse.Namespace, settings: Settings) -> int:
    """Check every blob against its name and every catalog row against the store.

    With ``--json`` the only thing on stdout is one JSON object, the repair's re-crawl included.
    Problems carry the blob's ``key`` and, for people, its ``path`` (a file, or an ``s3://`` URL).
    """
    from trawl.storage.fsck import check, quarantine

    catalog = open_catalog(settings)
    blobs = open_blob_store(settings)
    report = await asyncio.to_thread(check, catalog, blobs, settings.storage.abandon_uploads_after)
    summary: dict[str, Any] = {"items": report.items, "blobs": report.blobs, "orphans": report.orphans,
                               "orphan_bytes": report.orphan_bytes, "shared": report.shared,
                               "incomplete_uploads": [{**dataclasses.asdict(u), "started": u.started.isoformat()}
                                                      for u in report.uploads],
                               "problems": [{**dataclasses.asdict(p), "path": blobs.location(p.key)}
                                            for p in report.problems]}
    if not args.json:
        for problem in report.problems:
            print(f"{problem.kind:<14} {blobs.location(problem.key)}  {problem.detail}"
                  + (f"  [{problem.canonical_key}]" if problem.canonical_key else ""))
        print(f"{report.items} item(s), {report.blobs} blob(s) checked: {len(report.problems)} problem(s), "
              f"{len(report.orphans)} unreferenced blob(s) of {report.orphan_bytes / 2**20:.1f} MiB"
              + (f", {len(report.shared)} shared with exported files (hard links: editing those files in place "
                 "changes the blobs)" if report.shared else "")
              + (f", {len(report.uploads)} incomplete upload(s) of {sum(u.size for u in report.uploads) / 2**20:.1f} MiB"
                 if report.uploads else ""), file=sys.stderr)
    code = 0
    if report.problems and not args.repair:
        code = EXIT_FAILED_ITEMS
    elif report.problems:
        aborted = await asyncio.to_thread(abort_uploads, blobs, report.abandoned)
        urls = await asyncio.to_thread(quarantine, report, catalog, blobs, settings.storage.abandon_uploads_after)
        catalog.close()
        where = getattr(blobs, "quarantine_dir", None) or "the store's quarantine"
        summary["repair"] = {"quarantine": str(where), "aborted_uploads": len(aborted),
                             "removed_orphans": [b.key for b in report.reclaimed], "recrawled": []}
        if not args.json:
            if aborted:
                print(f"aborted {len(aborted)} abandoned upload(s), {sum(u.size for u in aborted) / 2**20:.1f} MiB "
                      "of parts reclaimed", file=sys.stderr)
            if report.reclaimed:
                print(f"removed {len(report.reclaimed)} blob(s) no item refers to, "
                      f"{sum(b.size for b in report.reclaimed) / 2**20:.1f} MiB", file=sys.stderr)
            print(f"moved damaged blobs to {where}; crawling {len(urls)} item(s) again", file=sys.stderr)
        if urls:
            registry = build_registry(settings.platforms)
            show = (lambda r: None) if args.json else (lambda r: print(result_line(r), flush=True))
            async with session(settings, worker=True, registry=registry, one_shot=True) as client:
                results = await crawl_urls(client, settings, registry, urls, show)
            summary["repair"]["recrawled"] = [result_dict(r, blobs) for r in results]
            code = EXIT_FAILED_ITEMS if any(r.outcome == "failed" for r in results) else 0
    blobs.close()
    if args.json:
        print(json.dumps(summary))
    return code


__all__ = ["cmd_fsck", "cmd_items"]
