"""``trawl extras KEY|URL...``: fetch committed items' extras again, each as a dated snapshot
(docs/extras.md): the earlier files stay, the new ones are stored beside them."""

from __future__ import annotations

import argparse
import asyncio
import json

from trawl.cli.common import open_catalog, session
from trawl.cli.output import EXIT_FAILED_ITEMS, CommandError
from trawl.platforms.registry import build_registry
from trawl.settings import Settings
from trawl.starter.client import start_extras_refresh


async def cmd_extras(args: argparse.Namespace, settings: Settings) -> int:
    registry = build_registry(settings.platforms)
    catalog = open_catalog(settings)
    try:
        keys = []
        for ident in args.items:
            key = catalog.key_for_url(ident) if ident.startswith(("http://", "https://")) else ident
            item = catalog.get(key) if key else None
            if item is None or item.status != "committed":
                raise CommandError(f"{ident}: no committed item of that key or URL in the catalog (crawl it first)")
            keys.append((item.canonical_key, item.platform))
    finally:
        catalog.close()
    only = [name.strip() for name in (args.only or "").split(",") if name.strip()]
    failed = 0
    async with session(settings, worker=True, registry=registry, one_shot=True) as client:
        handles = [await start_extras_refresh(client, settings, key, platform, only) for key, platform in keys]
        for result in await asyncio.gather(*(handle.result() for handle in handles)):
            failed += any(extra.missing for extra in result.extras)
            if args.json:
                print(json.dumps({"canonical_key": result.canonical_key, "snapshot": result.snapshot, "extras": [
                    {"name": e.name, "kind": e.kind, "language": e.language or None, "size": e.size,
                     "sha256": e.sha256 or None, "missing": e.missing or None, "reason": e.reason or None}
                    for e in result.extras]}, ensure_ascii=False), flush=True)
                continue
            for extra in result.extras:
                what = f"{extra.missing}: {extra.reason}" if extra.missing else f"{extra.size} bytes"
                print(f"{'missing ' if extra.missing else 'stored  '}  {result.canonical_key}  {extra.name}  {what}",
                      flush=True)
            if not result.extras:
                print(f"nothing   {result.canonical_key}  its platform offers no extras for it", flush=True)
    return EXIT_FAILED_ITEMS if failed else 0
