"""Following sources: ``watch add``, ``watch list``, ``watch pause|resume|trigger|remove``.

Each watch is a Temporal Schedule that starts a crawl every interval (see :mod:`trawl.starter.watches`);
a watch of a source carries the source's definition, so any worker runs it. A run that failed (a
source it could not expand) shows as ``failed: <why>`` in ``watch list``.
"""

from __future__ import annotations

import argparse
import json
import sys

from trawl.cli.common import session
from trawl.cli.choices import listing_filters
from trawl.cli.output import EXIT_FAILED_ITEMS, CommandError, clean, say
from trawl.starter.watches import (
    Watch,
    WatchError,
    add_watch,
    counts_text,
    list_watches,
    pause_watch,
    remove_watch,
    resume_watch,
    trigger_watch,
    watch_dict,
)
from trawl.platforms.registry import build_registry
from trawl.settings import Settings

LAST_RUN_WIDTH = 100  # `watch list` cuts a failed run's reason there (`--json` has it whole)


def _when(value: str | None) -> str:
    return value[:19].replace("T", " ") if value else "-"


def _what(watch: Watch) -> str:
    return f"source {watch.source}" if watch.source else f"{watch.urls} URL(s)"


def _print(watch: Watch, as_json: bool, message: str) -> None:
    print(json.dumps(watch_dict(watch)) if as_json else message, flush=True)


async def cmd_add(args: argparse.Namespace, settings: Settings) -> int:
    registry = build_registry(settings.platforms)
    filters = listing_filters(args)
    async with session(settings, worker=False) as client:
        try:
            watch, refused = await add_watch(client, settings, registry, args.name, source=args.source,
                                             urls=[*args.urls, *(args.url or [])],
                                             every=args.every, jitter=args.jitter, concurrency=args.concurrency,
                                             paused=args.paused, filters=filters,
                                             refresh_extras_days=args.refresh_extras_days, recheck=args.recheck)
        except WatchError as err:
            raise CommandError(str(err)) from None
    for line in refused:
        say("watch", f"refused {line}")
    state = "paused" if watch.paused else f"next run {_when(watch.next_run)}"
    _print(watch, args.json, f"watch {watch.name}: {_what(watch)} every {watch.every}"
           + (f" (jitter {watch.jitter})" if watch.jitter != "0s" else "") + f"; {state}")
    return 0


async def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    async with session(settings, worker=False) as client:
        watches = await list_watches(client, settings)
    if args.json:
        for watch in watches:
            print(json.dumps(watch_dict(watch)))
        return 0
    if not watches:
        print("no watches (trawl watch add NAME --source S --every 1h)", file=sys.stderr)
        return 0
    rows = [("NAME", "WATCHES", "EVERY", "PAUSED", "LAST RUN", "NEXT RUN")]
    for w in watches:
        kind = (w.source_description or "").split(" ", 1)[0]
        what = f"{w.source} ({kind})" if w.source else f"{w.urls} URL(s)"
        rows.append((w.name, clean(what, 40), w.every, "yes" if w.paused else "no",
                     clean(counts_text(w.last_run), LAST_RUN_WIDTH), _when(w.next_run)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1])
    return 0


async def cmd_steer(args: argparse.Namespace, settings: Settings) -> int:
    action = args.action
    async with session(settings, worker=False) as client:
        try:
            if action == "pause":
                watch = await pause_watch(client, settings, args.name)
                message = f"watch {watch.name}: paused (runs going on finish; trawl watch resume {watch.name})"
            elif action == "resume":
                watch = await resume_watch(client, settings, args.name)
                message = f"watch {watch.name}: resumed; next run {_when(watch.next_run)}"
            elif action == "trigger":
                watch, started = await trigger_watch(client, settings, args.name)
                if not started:
                    raise CommandError(f"watch {watch.name}: a run is going on ({', '.join(watch.running)}); "
                                       "nothing started (a watch never runs twice at once)", EXIT_FAILED_ITEMS)
                running = f" ({', '.join(watch.running)})" if watch.running else ""
                message = f"watch {watch.name}: a run starts now{running}"
            else:
                watch = await remove_watch(client, settings, args.name)
                going = f"; its run going on finishes ({', '.join(watch.running)})" if watch.running else ""
                message = f"watch {watch.name}: removed{going}"
        except WatchError as err:
            raise CommandError(str(err)) from None
    _print(watch, args.json, message)
    return 0
