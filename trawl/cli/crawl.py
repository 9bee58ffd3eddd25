"""Crawling: ``crawl``, ``crawls`` (``crawl-status``: :mod:`trawl.cli.crawl_status`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import signal
import sys
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sized
from datetime import timedelta
from typing import IO, Any

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowQueryFailedError
from temporalio.exceptions import ApplicationError
from temporalio.exceptions import CancelledError as TemporalCancelledError
from temporalio.service import RPCError, RPCStatusCode

from trawl.cli import export
from trawl.cli.choices import crawl_choices, crawl_settings, tell_kept_rates
from trawl.cli.common import OutageNotice, _stop_signals, session
from trawl.cli.output import (
    EXIT_FAILED_ITEMS,
    CommandError,
    StatusLine,
    outcomes_line,
    printable,
    result_line,
    say,
    stats_line,
)
from trawl.cli.progress import CrawlProgress
from trawl.starter.client import (
    REFUSAL_MESSAGE_CHARS,
    CrawlChoices,
    CrawlRefused,
    begin_crawl,
    crawl_handle,
    item_handle,
    item_result,
    start_crawl,
    unreachable,
)
from trawl.starter.views import Unanswered, crawl_state, crawls_query, result_dict, status_name
from trawl.platforms.registry import Registry, build_registry
from trawl.settings import Settings
from trawl.storage.blobs import open_blob_store
from trawl.formatting import human_size
from trawl.text import shown
from trawl.contracts import (
    END_RECORDING, PROGRESS, RESULTS, RESULTS_PAGE, RESULTS_READ, CrawlEnded, CrawlResults,
    CrawlStats, ItemResult, Progress, ResultsRead)


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
    """What one ``crawl_urls`` follows: its crawl's id once started, and its running items as the
    crawl last named them (workflow id -> (handle, URL))."""

    def __init__(self) -> None:
        self.crawl_id: str | None = None
        self.waiting: dict[str, tuple[Any, str]] = {}


# Items an attached crawl runs at once at most (its CrawlWorkflow's concurrency): the rest of its
# URLs wait in the crawl's frontier, so a crawl of a million lines starts as fast as one of ten.
CRAWL_WINDOW = 1000
DETACHED_CONCURRENCY = 8  # a detached crawl's default: it may run for days beside others
FOLLOW_EVERY_S = 0.25  # how often a followed crawl is asked for its new results
QUERY_PATIENCE_S = 10.0  # a results query unanswered this long: no worker runs the crawl now
ENRICHED_AT_ONCE = 8  # results completed from the catalog or their item at once


async def crawl_urls(client: Client, settings: Settings, registry: Registry, urls: Iterable[str],
                     on_result: Callable[[ItemResult], None] | None = None, *, line: StatusLine | None = None,
                     awaited: Awaited | None = None, choices: CrawlChoices | None = None, keep: bool = True,
                     window: int = CRAWL_WINDOW, source: str | None = None) -> list[ItemResult]:
    """Crawl ``urls`` (and the items of ``source``) as one CrawlWorkflow, as ``--detach`` and the
    API do, and follow it: each result as the crawl records it, in completion order.

    The crawl expands listings and the parts a multi-part video names, counts the items the
    catalog knows committed as duplicates without a workflow, and runs at most ``window`` items
    at once (the rest wait in its frontier). It holds back when this command falls
    RESULTS_BACKLOG results behind, so every result reaches ``on_result``. ``keep`` false
    returns no results (the command's memory stays flat). With ``line`` (a terminal's status
    line), live progress is drawn on it; ``awaited`` tells the caller the crawl's id and its
    running items (when interrupted, say). ``choices`` (``-f``, ``--limit-rate``) ride in every
    item's options. URLs refused before the crawl starts come first, as failed results; a URL
    given for an item given before (the same URL, or another form of it) gets a duplicate's line
    when that item's result comes.

    Raises:
        CommandError: the crawl failed as a whole (a source that could not be expanded).
    """
    results: list[ItemResult] = []
    awaited = awaited or Awaited()
    waiting = awaited.waiting
    total = len(urls) if isinstance(urls, Sized) else 0
    attempts = {stage: getattr(settings.retry, stage).maximum_attempts for stage in ("fetch", "download", "verify", "commit")}
    progress = CrawlProgress(client, total, line, attempts) if line is not None and line.enabled else None

    repeats: dict[str, list[str]] = {}  # workflow id -> the other URLs given for its item

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
        for url in repeats.pop(result.workflow_id, []) if result.workflow_id != "-" else []:
            # The same item given again (another URL form of it, or the same URL): one item, so
            # a duplicate beside the first one's line, as the crawl counts it.
            outcome = "duplicate" if result.outcome in ("committed", "duplicate") else result.outcome
            finished(dataclasses.replace(result, url=url, outcome=outcome))

    try:
        handle, filled = await begin_crawl(client, settings, registry, urls, source=source, concurrency=window,
                                           choices=choices, follow=True)
        refusals = filled.refusals
        for url, workflow_id in filled.repeats:
            repeats.setdefault(workflow_id, []).append(url)
    except CrawlRefused as err:
        handle, refusals = None, err.refusals
    for refusal in refusals:  # the URL as given (a line may hold terminal escapes or megabytes), escaped and cut
        finished(ItemResult("-", shown(refusal.url), "failed", error_class=refusal.error_class,
                            error=shown(refusal.message, REFUSAL_MESSAGE_CHARS)))
    if handle is None:
        if line is not None:
            line.close()
        return results
    awaited.crawl_id = handle.id
    watchers = [asyncio.create_task(report_stalls(waiting, line))]
    if progress is not None:
        watchers.append(asyncio.create_task(progress.follow(waiting)))
    known = KnownItems(settings, registry)
    following = CrawlFollower(client, handle, known, OutageNotice(settings.temporal.address, line), line)
    try:
        async with contextlib.aclosing(following.pages()) as pages:
            async for page in pages:
                for result in await following.completed(page.results):
                    finished(result)
                waiting.clear()
                waiting.update({item.workflow_id: (client.get_workflow_handle(item.workflow_id), item.url)
                                for item in page.running})
                if progress is not None:
                    counts = page.stats
                    progress.total = len(refusals) + counts.queued + counts.running + counts.finished
    except asyncio.CancelledError:  # Ctrl-C: the crawl goes on without this command, not held back for it
        await following.leave()
        raise
    finally:
        for watcher in watchers:
            watcher.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
        if line is not None:
            line.close()
        known.close()
    if following.failure:
        raise CommandError(f"crawl {handle.id} failed: {following.failure}", EXIT_FAILED_ITEMS)
    return results


class CrawlFollower:
    """Reads a followed crawl's results page by page until it has ended and every result is read."""

    def __init__(self, client: Client, handle: Any, known: KnownItems, outage: OutageNotice,
                 line: StatusLine | None) -> None:
        self.client = client
        self.handle = handle
        self.known = known
        self.outage = outage
        self.line = line
        self.since = 0
        self.stats: CrawlStats | None = None
        self.failure: str | None = None  # why the crawl failed as a whole
        self.ended: CrawlEnded | None = None  # what the crawl returned, its last results with it
        self.told_unanswered = False
        self.told_failed = False

    async def pages(self) -> AsyncIterator[CrawlResults]:
        """Each new page of results (with the crawl's counts), until the crawl has ended and its
        last result is read."""
        ending = asyncio.ensure_future(self._end())
        try:
            while True:
                ended = ending.done()
                last = self._last_page() if ended else None
                if last is not None:  # read from what the crawl returned: no query to a worker
                    self.since, self.stats = last.next, last.stats
                    yield last
                    return
                page = await self._page()
                if page is None:  # unanswered: no worker runs the crawl now
                    if ended:
                        return
                    await asyncio.wait({ending}, timeout=FOLLOW_EVERY_S)
                    continue
                if page.missed:
                    say("crawl", f"{page.missed} result(s) of {self.handle.id} were not shown (the crawl went on "
                                 "without this command); `trawl crawl-status` counts them all")
                self.since, self.stats = page.next, page.stats
                if page.wants_read:
                    await self._read_up_to(page.next)
                yield page
                if len(page.results) >= RESULTS_PAGE:
                    continue  # more are there already
                if ended:
                    return
                if page.stats.finished_at is not None:  # every result is read: the run ends now
                    await asyncio.wait({ending}, timeout=QUERY_PATIENCE_S)
                    return
                await asyncio.wait({ending}, timeout=FOLLOW_EVERY_S)
        finally:
            ending.cancel()
            await asyncio.gather(ending, return_exceptions=True)

    async def _end(self) -> None:
        """Wait for the crawl to end, riding out server outages; a failure's reason is kept."""
        delay = 0.25
        while True:
            try:
                self.ended = await self.client.get_workflow_handle(self.handle.id, result_type=CrawlEnded).result()
                return
            except WorkflowFailureError as err:
                cause = err.cause
                if not isinstance(cause, TemporalCancelledError):
                    self.failure = cause.message if isinstance(cause, ApplicationError) else str(cause or err)
                return
            except RPCError as err:
                if not unreachable(err):
                    raise
                self.outage.unreachable(err.message)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)

    def _last_page(self) -> CrawlResults | None:
        """The results from ``since`` on as the ended crawl returned them; None when it returned
        none (a crawl that failed, one from before they were returned) or they do not reach back
        as far as this command has read (then a query reads them)."""
        ended = self.ended
        if ended is None or not 0 <= ended.last_results_from <= self.since:
            return None
        tail = ended.last_results[self.since - ended.last_results_from:]
        if self.since + len(tail) != ended.last_results_from + len(ended.last_results):
            return None
        return CrawlResults(tail, self.since, self.since + len(tail), 0, ended)

    async def _page(self) -> CrawlResults | None:
        # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow a cancel (Ctrl-C) that
        # comes as its answer does, and this runs four times a second.
        try:
            async with asyncio.timeout(QUERY_PATIENCE_S):
                return await self.handle.query(RESULTS, self.since, result_type=CrawlResults,
                                               rpc_timeout=timedelta(seconds=QUERY_PATIENCE_S + 5))
        except (TimeoutError, RPCError) as err:
            if isinstance(err, RPCError) and unreachable(err):
                self.outage.unreachable(err.message)
                await asyncio.sleep(1.0)
                return None
            if isinstance(err, RPCError) and err.status != RPCStatusCode.DEADLINE_EXCEEDED:
                raise CommandError(f"following crawl {self.handle.id}: {err.message}", EXIT_FAILED_ITEMS) from None
            if not self.told_unanswered:
                self.told_unanswered = True
                self._tell(f"waiting    no worker answers crawl {self.handle.id}: start one (`trawl worker`, or "
                           "`trawl up`) with the same Temporal address and task queue prefix, or wait if they are busy")
            return None
        except WorkflowQueryFailedError as err:
            # A worker took the query and failed it: most often its deadlock detector, when a
            # loaded worker's workflow task ran over 2 s. The crawl goes on; so does this command.
            if not self.told_failed:
                self.told_failed = True
                self._tell(f"waiting    a worker failed to answer crawl {self.handle.id} ({shown(str(err), 200)}); "
                           "asking again")
            await asyncio.sleep(1.0)
            return None

    def _tell(self, text: str) -> None:
        if self.line is not None:
            self.line.print(text, file=sys.stderr)
        else:
            print(text, file=sys.stderr, flush=True)

    async def _read_up_to(self, read: int, leaving: bool = False) -> None:
        try:
            async with asyncio.timeout(QUERY_PATIENCE_S):
                await self.handle.signal(RESULTS_READ, ResultsRead(read, leaving))
        except (TimeoutError, RPCError):
            pass  # the crawl asks again (or goes on alone after FOLLOWER_PATIENCE_S)

    async def leave(self) -> None:
        """Tell the crawl this command reads no more, so it does not hold back for it."""
        await self._read_up_to(self.since, leaving=True)

    async def completed(self, results: list[ItemResult]) -> list[ItemResult]:
        """The results as a command shows them: a committed item's title, size and hash where the
        crawl recorded only its outcome (an item it joined, one the catalog knew), from the
        catalog or else from the item's own result."""
        slots = asyncio.Semaphore(ENRICHED_AT_ONCE)

        async def one(result: ItemResult) -> ItemResult:
            if result.outcome not in ("committed", "duplicate") or result.canonical_key is not None:
                return result
            async with slots:
                found = await asyncio.to_thread(self.known.result, result.url)
                if found is None and result.workflow_id != "-":
                    with contextlib.suppress(Exception):
                        own = self.client.get_workflow_handle(result.workflow_id, result_type=ItemResult)
                        async with asyncio.timeout(QUERY_PATIENCE_S):
                            found = await item_result(own, result.url)
                        found.outcome = result.outcome
            return found or result

        return list(await asyncio.gather(*(one(r) for r in results)))


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


# After Ctrl-C, how long the command waits for each live recording it ended to commit what it held.
RECORDING_END_WAIT_S = 120.0
RECORDING_QUERY_WAIT_S = 5.0


async def end_recordings(client: Client, waiting: dict[str, tuple[Any, str]]) -> list[str]:
    """Ctrl-C on a crawl that records: each running item that records a live stream is asked to
    end (END_RECORDING: what it holds is finished and committed, a clean end), and waited for while
    this command's worker still runs; one line each says what became of it. The items are taken
    out of ``waiting``; the others go on on the server as before."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()  # the Ctrl-C is handled here: the waits below are this command's own

    async def end(workflow_id: str, url: str) -> str | None:
        handle = item_handle(client, workflow_id)
        try:
            async with asyncio.timeout(RECORDING_QUERY_WAIT_S):
                progress = await handle.query(PROGRESS, result_type=Progress)
            if not progress.recording:
                return None
            await handle.signal(END_RECORDING)
            async with asyncio.timeout(RECORDING_END_WAIT_S):
                result = await item_result(handle, url)
        except (RPCError, TimeoutError) as err:
            return f"could not end the recording of {url} ({err or 'no answer'}); it goes on on the server"
        waiting.pop(workflow_id, None)
        size = sum(a.size for a in result.assets)
        if result.outcome != "committed":
            return f"ended the recording of {url}: {result.outcome} {result.error_class or ''}".rstrip()
        return (f"ended the recording of {url}: what it recorded is committed ({len(result.assets)} "
                f"file{'s' if len(result.assets) != 1 else ''}, {human_size(size)}, {result.canonical_key})")

    said = await asyncio.gather(*(end(wid, url) for wid, (_, url) in list(waiting.items())))
    return [line for line in said if line]


def interrupted_message(crawl_id: str | None, unfinished: list[str]) -> str:
    """What becomes of a crawl whose command was interrupted: it keeps running on the server."""
    if crawl_id is None:
        return "interrupted before the crawl started; nothing was started"
    then = (f": `trawl up` (or any worker) finishes it, `trawl crawl-status {crawl_id}` follows it, "
            f"`trawl cancel {crawl_id}` stops it")
    if not unfinished:
        return f"interrupted; crawl {crawl_id} goes on on the Temporal server" + then
    one = len(unfinished) == 1
    named = ", ".join(unfinished[:3]) + (f" and {len(unfinished) - 3} more" if len(unfinished) > 3 else "")
    return (f"interrupted; crawl {crawl_id} and its {len(unfinished)} running "
            f"{'item keep their' if one else 'items keep their'} progress on the Temporal server ({named})" + then)


async def cmd_crawl(args: argparse.Namespace, settings: Settings) -> int:
    from trawl.sources import SourceError, find_source

    registry = build_registry(settings.platforms)
    urls = read_urls(args.urls, args.file)
    choices = crawl_choices(args)  # -f, --limit-rate: in the items' options, for every worker
    if args.detach:
        if any((args.export, args.output, args.cookies, args.cookies_from_browser)):
            raise CommandError("--export, -o, --cookies and --cookies-from-browser act in this command's own "
                               "worker; leave them out with --detach (set the cookies in the workers' settings "
                               "instead)")
        return await detach_crawl(args, settings, registry, urls, choices)
    given = settings
    settings = crawl_settings(args, settings)  # --cookies(-from-browser): this command's worker
    if settings is not given:  # the resolvers read their cookies_file from the settings they are built with
        registry = build_registry(settings.platforms)
    if args.source:
        try:
            find_source(settings, args.source)  # the crawl expands it; a name these settings lack is an error now
        except SourceError as err:
            raise CommandError(f"source {args.source}: {err}") from None
    if not urls and not args.source:
        raise CommandError("no URLs given (pass URLs, --file FILE or --source NAME)")
    line = StatusLine(sys.stderr)
    blobs = open_blob_store(settings) if args.json else None
    exporting = export.crawl_export(args, settings)

    def emit(result: ItemResult) -> None:
        line.print(json.dumps(result_dict(result, blobs)) if args.json else result_line(result))
        if exporting is not None:
            exporting.on_result(result)

    awaited = Awaited()
    outcomes: Counter[str] = Counter()
    failures: Counter[str] = Counter()

    def emit_counted(result: ItemResult) -> None:
        outcomes[result.outcome] += 1
        if result.outcome == "failed":
            failures[result.error_class or "error"] += 1
        emit(result)

    terminated = _end_on_sigterm()
    async with session(settings, worker=not args.no_worker, registry=registry, one_shot=True) as client:
        await tell_kept_rates(client, registry, urls, choices, settings.data_dir)  # joined running items keep their first rate
        try:
            await crawl_urls(client, settings, registry, urls, emit_counted, line=line, awaited=awaited,
                             choices=choices, keep=False, source=args.source,
                             window=args.concurrency or CRAWL_WINDOW)
        except asyncio.CancelledError:  # Ctrl-C or SIGTERM: say it before the worker takes its time to stop
            line.close()
            for said in await end_recordings(client, awaited.waiting):
                say("crawl", said)
            if awaited.waiting or not awaited.crawl_id:
                say("crawl", interrupted_message(awaited.crawl_id, list(awaited.waiting)))
            if not terminated:
                raise
            asyncio.current_task().uncancel()  # type: ignore[union-attr] - ended as asked, by SIGTERM
            return 128 + signal.SIGTERM
        finally:
            if blobs is not None:
                blobs.close()
    if sum(outcomes.values()) > 1:  # one item's line says it all
        say("crawl", outcomes_line(outcomes, failures))
    exported = await exporting.finish() if exporting is not None else 0
    return EXIT_FAILED_ITEMS if outcomes["failed"] else exported


def _end_on_sigterm() -> list[int]:
    """SIGTERM ends the command as Ctrl-C does (its crawl goes on, and it says so); the list it
    returns holds the signal once it came."""
    came: list[int] = []
    task = asyncio.current_task()

    def terminate() -> None:
        if not came and task is not None:
            came.append(signal.SIGTERM)
            _stop_signals.append(signal.SIGTERM)  # still starting: the dispatcher ends it quietly
            task.cancel()

    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, terminate)
    return came


async def detach_crawl(args: argparse.Namespace, settings: Settings, registry: Registry, urls: Iterable[str],
                       choices: CrawlChoices | None = None) -> int:
    """Start a CrawlWorkflow (workers elsewhere do the work) and print its id."""
    if not urls and not args.source:
        raise CommandError("no URLs given (pass URLs, --file FILE or --source NAME)")
    async with session(settings, worker=False, background=not args.no_worker) as client:
        await tell_kept_rates(client, registry, urls, choices, settings.data_dir)  # joined running items keep their first rate
        handle, refused = await start_crawl(client, settings, registry, urls, source=args.source,
                                            concurrency=args.concurrency or DETACHED_CONCURRENCY, choices=choices)
    for line in refused:
        say("crawl", f"refused {line}")
    print(json.dumps({"crawl_id": handle.id, "refused": refused}) if args.json else handle.id)
    return 0


# -- crawls --------------------------------------------------------------------------------------
async def cmd_crawls(args: argparse.Namespace, settings: Settings) -> int:
    async with session(settings, worker=False) as client:
        found = 0
        unanswered: Unanswered | None = None
        query = crawls_query(settings.temporal.task_queue_prefix)  # this deployment's, each once
        async for execution in client.list_workflows(query, limit=args.limit):
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


__all__ = ["crawl_urls", "read_urls"]
