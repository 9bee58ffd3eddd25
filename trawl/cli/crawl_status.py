"""``trawl crawl-status``: one crawl's counts, speed and ETA (live on a terminal), what its running
items wait for, and its failed items by URL, class and message.

Its exit status answers whether items of the crawl failed (1, as ``trawl crawl``), so a script can
tell a clean crawl from one to look at; the crawl itself failing (its source could not be read,
say) is 1 too. A crawl still running with no failure yet, or cancelled, is 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

from trawl.cli.common import session
from trawl.cli.output import EXIT_FAILED_ITEMS, CommandError, StatusLine, is_terminal, printable, stats_line
from trawl.cli.progress import SAMPLE_EVERY_S, CrawlSpeed
from trawl.contracts import CrawlStats
from trawl.settings import Settings
from trawl.starter.client import crawl_handle, unreachable
from trawl.starter.failures import crawl_scope, failed_dict, failed_items, failure_message
from trawl.starter.views import Unanswered, crawl_dict, crawl_state, status_name
from trawl.starter.waiting import RunningItems, items_dict, running_items
from trawl.text import shown

MEASURE_TRIES = 3  # a one-off look takes this many more samples, a second apart, for a speed
ITEMS_EVERY = 5  # the live line reads the running items (one request each) every this many samples
FAILED_STATUSES = (WorkflowExecutionStatus.FAILED, WorkflowExecutionStatus.TIMED_OUT)


async def _next_sample(handle: Any, client: Client, desc: Any, stats: CrawlStats | None) -> tuple[Any, CrawlStats | None]:
    """The crawl's state again; a query a busy worker leaves unanswered after it answered once is
    no reason to give up: the last answer (``desc``, ``stats``) stands."""
    try:
        return await crawl_state(handle, client)
    except Unanswered:
        return desc, stats


def exit_code(desc: Any, stats: CrawlStats | None) -> int:
    """1 when items of the crawl failed or the crawl itself failed, else 0."""
    failed = stats.outcomes.get("failed", 0) if stats else 0
    return EXIT_FAILED_ITEMS if failed or desc.status in FAILED_STATUSES else 0


async def cmd_crawl_status(args: argparse.Namespace, settings: Settings) -> int:
    async with session(settings, worker=False) as client:
        handle = crawl_handle(client, args.id)
        live = is_terminal(sys.stdout) and not args.json
        speed = CrawlSpeed(client, args.id, steady=live)
        items: RunningItems | None = None
        try:
            desc, stats = await crawl_state(handle, client)
            line = StatusLine(sys.stdout)
            samples = 0
            while live and desc.status == WorkflowExecutionStatus.RUNNING:
                await speed.sample(stats)
                if stats and samples % ITEMS_EVERY == 0:
                    items = await running_items(client, handle.id, stats.running)
                samples += 1
                line.show(stats_line(stats, speed.speed, speed.eta) + (f"; {items.line()}" if items and items.line() else ""))
                await asyncio.sleep(SAMPLE_EVERY_S)
                desc, stats = await _next_sample(handle, client, desc, stats)
            if live and line.text:
                print()
            if not live and not args.json and desc.status == WorkflowExecutionStatus.RUNNING and stats:
                # The speed over all the samples: bytes move in steps, the first step is no speed.
                await speed.sample(stats)
                for _ in range(MEASURE_TRIES):
                    await asyncio.sleep(SAMPLE_EVERY_S)
                    now_desc, now_stats = await _next_sample(handle, client, desc, None)
                    if now_desc.status == WorkflowExecutionStatus.RUNNING and now_stats is None:
                        break  # unanswered this time: the samples so far stand
                    desc, stats = now_desc, now_stats
                    if desc.status != WorkflowExecutionStatus.RUNNING or stats is None:
                        break
                    await speed.sample(stats)
            if not live and desc.status == WorkflowExecutionStatus.RUNNING and stats:
                items = await running_items(client, handle.id, stats.running)
            failed_count = stats.outcomes.get("failed", 0) if stats else 0
            failed = await failed_items(client, crawl_scope(handle.id)) if failed_count else []
        except RPCError as err:
            if unreachable(err):
                if args.json:  # as for an unanswered crawl: an object, its status unknown
                    print(json.dumps({"id": handle.id, "status": None, "stats": None, "items": None,
                                      "failed_items": [], "unreachable": err.message}))
                raise CommandError(f"the Temporal server at {settings.temporal.address} is unreachable "
                                   f"({err.message}); try again when it is back", EXIT_FAILED_ITEMS) from None
            raise CommandError(f"no crawl {args.id!r}: {err.message}") from None
        except Unanswered as err:
            if args.json:  # a script reading stdout gets an object whatever happens: running, no counts yet
                print(json.dumps({"id": handle.id, "status": "RUNNING", "stats": None, "items": None,
                                  "failed_items": [], "unanswered": str(err)}))
            raise CommandError(str(err), EXIT_FAILED_ITEMS) from None
        code = exit_code(desc, stats)
        if args.json:
            print(json.dumps({**crawl_dict(handle.id, desc, stats), "items": items_dict(items),
                              "failed_items": [failed_dict(result) for result in failed]}))
            return code
        print(f"{handle.id}: {status_name(desc.status).lower()}")
        if stats:
            running = desc.status == WorkflowExecutionStatus.RUNNING
            print(stats_line(stats, speed.speed if running else None, speed.eta if running else None))
            for waiting in items.waiting if items else []:
                print(f"waiting   {waiting.line()}")
            if items and items.stages:
                print(f"doing     {items.doing()}")
            for recording in items.recordings if items else []:
                print(f"live      {recording.line()}  ({recording.workflow_id})")
            for refusal in stats.refusals:
                print(f"refused   {printable(refusal)}")
            for result in failed:
                print(f"failed    {result.error_class or 'error'}  {shown(result.url)}  "
                      f"{printable(failure_message(result))}")
            if failed_count > len(failed):
                print(f"failed    ... {failed_count - len(failed)} more (the {len(failed)} most recent are named)")
    return code
