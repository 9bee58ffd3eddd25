"""Crawling: ``crawl``, ``crawls``, ``crawl-status``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sized
from typing import IO, Any

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

from trawl.cli import export
from trawl.cli.choices import crawl_choices, crawl_settings
from trawl.cli.common import OutageNotice, session
from trawl.cli.output import (
    EXIT_FAILED_ITEMS,
    CommandError,
    StatusLine,
    is_terminal,
    printable,
    result_line,
    say,
    stats_line,
)
from trawl.cli.resolve import listing_urls, source_urls
from trawl.cli.progress import SAMPLE_EVERY_S, CrawlProgress, CrawlSpeed
from trawl.starter.client import (
    REFUSAL_MESSAGE_CHARS,
    CrawlChoices,
    crawl_handle,
    item_result,
    start_crawl,
    start_item,
    unreachable,
)
from trawl.starter.views import Unanswered, crawl_dict, crawl_state, result_dict, status_name
from trawl.starter.waiting import RunningItems, items_dict, running_items
from trawl.errors import TrawlError
from trawl.platforms.registry import Registry, build_registry
from trawl.settings import Settings
from trawl.storage.blobs import open_blob_store
from trawl.text import shown
from trawl.contracts import CRAWL_WORKFLOW, CrawlStats, ItemResult


def _url_lines(lines: Iterable[str]) -> Iterator[str]:
    for line in lines:
        text = line.strip()
        if text and not text.startswith(("#", ";")):
            yield text


class UrlList:
    """The URLs a crawl command was given: its arguments, a file's lines, a source's URLs, in that
    order. A file is read twice, once up front (its count, and any error before anything starts)
    and again line by line as the crawl takes them: a file of a million lines is never held whole.
    Standard input cannot be read twice and is held."""

    def __init__(self, args_urls: Iterable[str], file: str | None) -> None:
        self.given = [u.strip() for u in args_urls if u.strip()]
        self.file = file
        self.more: list[str] = []
        self._held: list[str] | None = None
        self._file_count = 0
        if file:
            with self._open() as source:
                if file == "-":
                    self._held = list(self._read(source))
                    self._file_count = len(self._held)
                else:
                    self._file_count = sum(1 for _ in self._read(source))

    def _open(self) -> IO[str]:
        assert self.file is not None
        try:
            return sys.stdin if self.file == "-" else open(self.file, encoding="utf-8")
        except OSError as err:
            raise CommandError(f"cannot read {self.file}: {err.strerror or err}; give a file of URLs, one a line "
                               "('-' for stdin)") from None

    def _read(self, source: IO[str]) -> Iterator[str]:
        try:
            yield from _url_lines(source)
        except (OSError, UnicodeDecodeError) as err:
            raise CommandError(f"cannot read {self.file}: {err}; give a text file of URLs, one a line") from None

    def extend(self, urls: Iterable[str]) -> None:
        self.more.extend(urls)

    def __len__(self) -> int:
        return len(self.given) + self._file_count + len(self.more)

    def __iter__(self) -> Iterator[str]:
        yield from self.given
        if self._held is not None:
            yield from self._held
        elif self.file:
            with self._open() as source:
                yield from self._read(source)
        yield from self.more


def read_urls(args_urls: Iterable[str], file: str | None) -> UrlList:
    """The URLs of ``trawl crawl URL... -a FILE``; iterate it to read them."""
    return UrlList(args_urls, file)


# Failures that stall items without failing them: the operator must hear of them while waiting.
STALLING_CLASSES = frozenset({"storage_error"})
STALL_CHECK_S = 5.0
STALL_CHECK_ITEMS = 32


async def report_stalls(waiting: dict[str, tuple[Any, str]], line: StatusLine | None = None) -> None:
    """While items are awaited, say once per item and class when one waits on a stalling failure.

    A full disk or an unreachable catalog is retried for hours; without this, a crawl would just
    sit there. Only a bounded number of items is described per round.
    """
    told: set[tuple[str, str]] = set()
    while True:
        await asyncio.sleep(STALL_CHECK_S)
        for workflow_id, (handle, url) in list(waiting.items())[:STALL_CHECK_ITEMS]:
            try:
                desc = await handle.describe()
            except RPCError:
                continue
            for pending in desc.raw_description.pending_activities:
                kind = pending.last_failure.application_failure_info.type
                if kind in STALLING_CLASSES and (workflow_id, kind) not in told:
                    told.add((workflow_id, kind))
                    text = (f"waiting    {kind}: {printable(pending.last_failure.message)} "
                            f"(stage {pending.activity_type.name}, attempt {pending.attempt}; retried until it "
                            f"clears)  {url}")
                    if line is not None:
                        line.print(text, file=sys.stderr)
                    else:
                        print(text, file=sys.stderr, flush=True)


class Awaited:
    """The items of one ``crawl_urls`` not finished yet: workflow id -> (handle, URL), in start order."""

    def __init__(self) -> None:
        self.waiting: dict[str, tuple[Any, str]] = {}


# Item workflows an attached crawl has started and awaits at most: the rest of its URLs wait in
# their file, so a crawl of a million lines starts as fast and holds as little as one of a thousand.
CRAWL_WINDOW = 1000
STARTS_AT_ONCE = 16


async def crawl_urls(client: Client, settings: Settings, registry: Registry, urls: Iterable[str],
                     on_result: Callable[[ItemResult], None] | None = None, *, line: StatusLine | None = None,
                     awaited: Awaited | None = None, expand: bool = True,
                     choices: CrawlChoices | None = None, keep: bool = True,
                     window: int = CRAWL_WINDOW) -> list[ItemResult]:
    """Start one item workflow per URL, wait for all; results in completion order. A URL the
    catalog knows committed (offline, as fetch would) is a duplicate at once: no item workflow.

    URLs are taken from ``urls`` as the ``window`` of items awaited has room, so a long file is
    read as the crawl goes. ``keep`` false returns no results (``on_result`` sees each one): the
    command's memory then stays flat but for the ids of the items started (one string each).
    With ``line`` (a terminal's status line), live progress is drawn on it while waiting;
    ``awaited`` lets the caller see which items are still running (when interrupted, say).
    With ``expand``, the other items a URL stands for (parts 2..N of a bare multi-part video URL)
    are crawled too, each once, as their results name them. ``choices`` (``-f``, ``--limit-rate``)
    ride in every item's options.
    """
    results: list[ItemResult] = []
    pending: set[asyncio.Task[ItemResult]] = set()
    started_ids: set[str] = set()
    queued: deque[str] = deque()  # a listing's entries, the parts a result names: before the rest
    given = iter(urls)
    outage = OutageNotice(settings.temporal.address, line)
    waiting = (awaited or Awaited()).waiting
    total = len(urls) if isinstance(urls, Sized) else 0
    progress = CrawlProgress(client, total, line) if line is not None and line.enabled else None
    known = KnownItems(settings, registry)

    def finished(result: ItemResult) -> None:
        waiting.pop(result.workflow_id, None)
        if keep:
            results.append(result)
        if progress is not None:
            progress.finished(result)
        if on_result:
            on_result(result)
        if progress is not None:
            progress.line.show(progress.render())

    async def start(url: str) -> None:
        try:
            listing = registry.listing_for(url)
            if listing is not None:  # a profile, a collection, a feed: its items, each once
                if listing.workflow_id not in started_ids:
                    started_ids.add(listing.workflow_id)
                    entries = await asyncio.to_thread(listing_urls, settings, registry, listing)
                    if progress is not None:
                        progress.total += len(entries) - 1
                    queued.extendleft(reversed(entries))
                return
            duplicate = await asyncio.to_thread(known.result, url)
            if duplicate is not None:
                finished(duplicate)
                started_ids.add(duplicate.workflow_id)
                queue_more(duplicate)
                return
            started = await start_item(client, settings, registry, url, choices=choices)
        except TrawlError as err:
            # The URL as given (a file's line may hold terminal escapes or megabytes), escaped and cut.
            finished(ItemResult("-", shown(url), "failed", error_class=err.error_class,
                                error=shown(err.message, REFUSAL_MESSAGE_CHARS)))
            return
        started_ids.add(started.workflow_id)
        waiting[started.workflow_id] = (started.handle, url)
        pending.add(asyncio.create_task(item_result(started.handle, url, outage.unreachable)))

    def queue_more(result: ItemResult) -> None:
        for more in result.more if expand else []:
            if more.workflow_id in started_ids:
                continue  # given too, or named by another result: crawled once
            started_ids.add(more.workflow_id)
            if progress is not None:
                progress.total += 1
            queued.append(more.url)

    async def fill() -> None:
        """Start URLs until the window is full or none is left, several at once (each start is a
        catalog lookup and a round trip to the server)."""
        while len(pending) < max(1, window):
            batch: list[str] = []
            while len(batch) < min(STARTS_AT_ONCE, max(1, window) - len(pending)):
                url = queued.popleft() if queued else next(given, None)
                if url is None:
                    break
                batch.append(url)
            if not batch:
                return
            await asyncio.gather(*(start(url) for url in batch))

    await fill()
    watchers = [asyncio.create_task(report_stalls(waiting, line))]
    if progress is not None:
        watchers.append(asyncio.create_task(progress.follow(waiting)))
    try:
        while pending:
            done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                pending.discard(task)
                result = task.result()
                finished(result)
                queue_more(result)
            await fill()
    finally:
        for watcher in watchers:
            watcher.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
        for task in pending:
            task.cancel()
        if line is not None:
            line.close()
        known.close()
    return results


class KnownItems:
    """The catalog asked, before an item workflow starts, whether a URL's item is committed."""

    def __init__(self, settings: Settings, registry: Registry) -> None:
        self.settings = settings
        self.registry = registry
        self._catalog: Any = None
        self._opening = threading.Lock()  # several URLs are looked up at once, in threads

    def result(self, url: str) -> ItemResult | None:
        """A duplicate's result when the catalog knows ``url`` committed (and what else it stands
        for, parts 2..N, without a request); None to let the item workflow find out. A catalog
        that does not answer leaves it to the workflow too."""
        from trawl.routing import stored_assets
        from trawl.errors import StorageError
        from trawl.known import known_with_more, route_more

        try:
            with self._opening:
                if self._catalog is None:
                    from trawl.storage.catalog import Catalog

                    self._catalog = Catalog(self.settings.catalog_url)
            known = known_with_more(self._catalog, self.registry, url)
        except StorageError:
            return None
        if known is None:
            return None
        item, others = known
        route = self.registry.route(url)
        return ItemResult(route.workflow_id, url, "duplicate", item.canonical_key, item.platform, item.title,
                          assets=stored_assets(item), more=route_more(self.registry, others, route.workflow_id))

    def close(self) -> None:
        if self._catalog is not None:
            self._catalog.close()


def interrupted_message(unfinished: list[str]) -> str:
    if not unfinished:
        return "interrupted; every item had finished"
    one = len(unfinished) == 1
    shown = ", ".join(unfinished[:3]) + (f" and {len(unfinished) - 3} more" if len(unfinished) > 3 else "")
    return (f"interrupted; {len(unfinished)} {'item keeps its' if one else 'items keep their'} progress on the "
            f"Temporal server ({shown}): run the same `trawl crawl` again (or `trawl up`) to finish "
            f"{'it' if one else 'them'}, `trawl cancel ID` to drop {'it' if one else 'one'}")


async def cmd_crawl(args: argparse.Namespace, settings: Settings) -> int:
    from trawl.sources import SourceError

    registry = build_registry(settings.platforms)
    urls = read_urls(args.urls, args.file)
    choices = crawl_choices(args)  # -f, --limit-rate: in the items' options, for every worker
    if args.detach:
        if any((args.export, args.output, args.cookies)):
            raise CommandError("--export, -o and --cookies act in this command's own worker; leave them out "
                               "with --detach (set the cookies in the workers' settings instead)")
        return await detach_crawl(args, settings, registry, urls, choices)
    settings = crawl_settings(args, settings)  # --cookies: this command's worker
    if args.source:
        try:
            urls.extend(await asyncio.to_thread(source_urls, settings, registry, args.source))
        except (SourceError, TrawlError) as err:
            raise CommandError(f"source {args.source}: {err}") from None
    if not urls:
        raise CommandError("no URLs given (pass URLs, --file FILE or --source NAME)")
    line = StatusLine(sys.stderr)
    blobs = open_blob_store(settings) if args.json else None
    exporting = export.crawl_export(args, settings)

    def emit(result: ItemResult) -> None:
        line.print(json.dumps(result_dict(result, blobs)) if args.json else result_line(result))
        if exporting is not None:
            exporting.on_result(result)

    awaited = Awaited()
    failed = False

    def emit_counted(result: ItemResult) -> None:
        nonlocal failed
        failed |= result.outcome == "failed"
        emit(result)

    async with session(settings, worker=not args.no_worker, registry=registry, one_shot=True) as client:
        try:
            await crawl_urls(client, settings, registry, urls, emit_counted, line=line, awaited=awaited,
                             choices=choices, keep=False)
        except asyncio.CancelledError:  # Ctrl-C: say it before the worker takes its time to stop
            line.close()
            say("crawl", interrupted_message(list(awaited.waiting)))
            raise
        finally:
            if blobs is not None:
                blobs.close()
    exported = await exporting.finish() if exporting is not None else 0
    return EXIT_FAILED_ITEMS if failed else exported


async def detach_crawl(args: argparse.Namespace, settings: Settings, registry: Registry, urls: Iterable[str],
                       choices: CrawlChoices | None = None) -> int:
    """Start a CrawlWorkflow (workers elsewhere do the work) and print its id."""
    if not urls and not args.source:
        raise CommandError("no URLs given (pass URLs, --file FILE or --source NAME)")
    async with session(settings, worker=False) as client:
        handle, refused = await start_crawl(client, settings, registry, urls, source=args.source,
                                            concurrency=args.concurrency, choices=choices)
    for line in refused:
        say("crawl", f"refused {line}")
    print(json.dumps({"crawl_id": handle.id, "refused": refused}) if args.json else handle.id)
    return 0


async def _next_sample(handle: Any, client: Client, desc: Any, stats: CrawlStats | None) -> tuple[Any, CrawlStats | None]:
    """The crawl's state again; a query a busy worker leaves unanswered after it answered once is
    no reason to give up: the last answer (``desc``, ``stats``) stands."""
    try:
        return await crawl_state(handle, client)
    except Unanswered:
        return desc, stats


# -- crawls --------------------------------------------------------------------------------------
async def cmd_crawls(args: argparse.Namespace, settings: Settings) -> int:
    async with session(settings, worker=False) as client:
        found = 0
        unanswered: Unanswered | None = None
        async for execution in client.list_workflows(f"WorkflowType = '{CRAWL_WORKFLOW}'", limit=args.limit):
            found += 1
            handle = crawl_handle(client, execution.id)
            stats = None
            running = execution.status == WorkflowExecutionStatus.RUNNING
            if not (running and unanswered):  # one unanswered query is enough to know no worker runs
                try:
                    _, stats = await crawl_state(handle, client)
                except RPCError:
                    pass
                except Unanswered as err:
                    unanswered = err
            status = status_name(execution.status).lower()
            started = execution.start_time.strftime("%Y-%m-%d %H:%M:%S") if execution.start_time else "-"
            print(f"{execution.id:<20} {started}  {status:<10} {stats_line(stats) if stats else ''}")
        if not found:
            print("no crawls", file=sys.stderr)
        if unanswered is not None:
            say("crawls", f"running crawls are shown without counts: {unanswered}")
    return 0


MEASURE_TRIES = 3  # a one-off look takes this many more samples, a second apart, for a speed
ITEMS_EVERY = 5  # the live line reads the running items (one request each) every this many samples


async def cmd_crawl_status(args: argparse.Namespace, settings: Settings) -> int:
    async with session(settings, worker=False) as client:
        handle = crawl_handle(client, args.id)
        speed = CrawlSpeed(client, args.id)
        live = is_terminal(sys.stdout) and not args.json
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
        except RPCError as err:
            if unreachable(err):
                raise CommandError(f"the Temporal server at {settings.temporal.address} is unreachable "
                                   f"({err.message}); try again when it is back", EXIT_FAILED_ITEMS) from None
            raise CommandError(f"no crawl {args.id!r}: {err.message}") from None
        except Unanswered as err:
            raise CommandError(str(err), EXIT_FAILED_ITEMS) from None
        if args.json:
            print(json.dumps({**crawl_dict(handle.id, desc, stats), "items": items_dict(items)}))
            return 0
        print(f"{handle.id}: {status_name(desc.status).lower()}")
        if stats:
            running = desc.status == WorkflowExecutionStatus.RUNNING
            print(stats_line(stats, speed.speed if running else None, speed.eta if running else None))
            for waiting in items.waiting if items else []:
                print(f"waiting   {waiting.line()}")
            if items and items.stages:
                print(f"doing     {items.doing()}")
            for refusal in stats.refusals:
                print(f"refused   {printable(refusal)}")
    return 0


__all__ = ["crawl_urls", "read_urls"]
