"""The ``trawl`` command."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterable
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

from starter.client import (
    connect,
    ensure_search_attributes,
    item_progress,
    item_result,
    live_workers,
    start_crawl,
    unreachable,
    start_item,
)
from starter.binding import ApiConfigError
from starter.embedded import ServerError, temporal_server
from trawl.errors import BlockedAddress, TrawlError, UnsupportedUrl
from trawl.logs import configure_logging, default_worker_name, get_logger, quiet_stream, stdout_for_logs
from trawl.platforms.registry import Registry, build_registry
from trawl.settings import ConfigError, Settings, load_settings
from trawl.storage.catalog import Catalog, CatalogItem
from workers.main import install_core_logging, running_worker
from workflows.crawl import CrawlWorkflow
from workflows.media_item import ItemResult, MediaItemWorkflow

log = get_logger("trawl.cli")

EXIT_FAILED_ITEMS = 1
EXIT_USAGE = 2


@contextlib.asynccontextmanager
async def session(settings: Settings, *, worker: bool, registry: Registry | None = None,
                  metrics: bool = False, one_shot: bool = False) -> AsyncIterator[Client]:
    """A Temporal client (starting the embedded server if needed) and, optionally, a worker.

    A ``one_shot`` command (crawl, fsck --repair) runs its own worker only when none of the
    deployment's workers polls its queues: workers on one queue must be interchangeable, and the
    running ones carry the operator's settings (net policy, limits, platforms), which a client's
    settings may not widen or change.
    """
    with temporal_server(settings) as settings:  # this data directory's server may listen elsewhere
        client = await connect(settings, metrics=metrics)
        await ensure_search_attributes(client, settings.temporal.namespace)
        if worker and one_shot:
            running = await live_workers(client, settings)
            if running:
                shown = ", ".join(running[:3]) + (f" and {len(running) - 3} more" if len(running) > 3 else "")
                print(f"trawl: the workers already polling the {settings.temporal.task_queue_prefix!r} queues "
                      f"({shown}) do this work, under their own settings; no worker started here",
                      file=sys.stderr)
                worker = False
        if worker:
            async with running_worker(client, settings, registry, one_shot=one_shot):
                yield client
        else:
            yield client


# -- output ------------------------------------------------------------------------------------
def _human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def _clean(text: str | None, width: int) -> str:
    text = "".join(ch if ch.isprintable() else " " for ch in (text or "-"))
    return text if len(text) <= width else text[: width - 1] + "~"


def result_record(result: ItemResult) -> dict[str, Any]:
    return {
        "id": result.workflow_id, "url": result.url, "canonical_key": result.canonical_key,
        "platform": result.platform, "outcome": result.outcome, "title": result.title,
        "error_class": result.error_class, "error": result.error,
        "assets": [{"kind": a.kind, "name": a.name, "sha256": a.sha256, "size": a.size, "path": a.path,
                    "mime": a.mime} for a in result.assets],
    }


def result_line(result: ItemResult) -> str:
    size = sum(a.size for a in result.assets)
    sha = result.assets[0].sha256[:12] if result.assets else "-"
    detail = _clean(result.title, 32) if result.outcome != "failed" else f"{result.error_class}: {_clean(result.error, 60)}"
    return f"{result.outcome:<10} {detail:<32} {(_human_size(size) if size else '-'):>10}  {sha:<12}  {result.url}"


def item_record(item: CatalogItem) -> dict[str, Any]:
    return {
        "id": item.workflow_id, "url": item.source_url, "canonical_key": item.canonical_key,
        "canonical_url": item.canonical_url, "platform": item.platform, "outcome": item.status,
        "title": item.title, "uploader": item.uploader, "duration": item.duration, "created_at": item.created_at,
        "assets": [{"kind": a.kind, "name": a.name, "sha256": a.sha256, "size": a.size, "path": a.blob_path,
                    "mime": a.mime} for a in item.assets],
    }


# -- commands ----------------------------------------------------------------------------------
def read_urls(args_urls: Iterable[str], file: str | None) -> list[str]:
    urls = [u for u in args_urls if u.strip()]
    if file:
        source = sys.stdin if file == "-" else open(file, encoding="utf-8")
        with source:
            urls += [line.strip() for line in source if line.strip() and not line.lstrip().startswith("#")]
    return urls


class OutageNotice:
    """Says, at most every few seconds, that the server is unreachable while results are awaited."""

    EVERY_S = 10.0

    def __init__(self, address: str) -> None:
        self.address = address
        self.last = 0.0

    def unreachable(self, message: str) -> None:
        now = time.monotonic()
        if now - self.last < self.EVERY_S:
            return
        self.last = now
        if sys.stderr.isatty():
            print(f"trawl: Temporal server at {self.address} unreachable, still waiting ({message})",
                  file=sys.stderr, flush=True)
        else:
            log.warning("temporal server unreachable, still waiting", address=self.address, error=message)


# Failures that stall items without failing them: the operator must hear of them while waiting.
STALLING_CLASSES = frozenset({"storage_error"})
STALL_CHECK_S = 5.0
STALL_CHECK_ITEMS = 32


async def report_stalls(waiting: dict[str, tuple[Any, str]]) -> None:
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
                    print(f"waiting    {kind}: {_clean(pending.last_failure.message, 160)} "
                          f"(stage {pending.activity_type.name}, attempt {pending.attempt}; retried until it "
                          f"clears)  {url}", file=sys.stderr, flush=True)


async def crawl_urls(client: Client, settings: Settings, registry: Registry, urls: list[str],
                     on_result: Any = None) -> list[ItemResult]:
    """Start one item workflow per URL, wait for all; results in completion order."""
    results: list[ItemResult] = []
    pending = []
    outage = OutageNotice(settings.temporal.address)
    waiting: dict[str, tuple[Any, str]] = {}
    for url in urls:
        try:
            started = await start_item(client, settings, registry, url)
        except TrawlError as err:
            result = ItemResult("-", url, "failed", error_class=err.error_class, error=err.message)
            results.append(result)
            if on_result:
                on_result(result)
            continue
        waiting[started.workflow_id] = (started.handle, url)
        pending.append(asyncio.create_task(item_result(started.handle, url, outage.unreachable)))
    stalls = asyncio.create_task(report_stalls(waiting))
    try:
        for done in asyncio.as_completed(pending):
            result = await done
            waiting.pop(result.workflow_id, None)
            results.append(result)
            if on_result:
                on_result(result)
    finally:
        stalls.cancel()
    return results


def source_urls(settings: Settings, registry: Registry, name: str) -> list[str]:
    from trawl.http import make_client
    from trawl.platforms.base import ResolveContext
    from trawl.sources import expand, find_source

    source = find_source(settings, name)
    with make_client(settings.net) as http:
        return expand(source, settings, registry, ResolveContext(http, settings.net.max_page_bytes))


async def cmd_crawl(args: argparse.Namespace, settings: Settings) -> int:
    from trawl.sources import SourceError

    registry = build_registry(settings.platforms)
    urls = read_urls(args.urls, args.file)
    if args.detach:
        return await detach_crawl(args, settings, registry, urls)
    if args.source:
        try:
            urls += await asyncio.to_thread(source_urls, settings, registry, args.source)
        except (SourceError, TrawlError) as err:
            print(f"trawl crawl: source {args.source}: {err}", file=sys.stderr)
            return EXIT_USAGE
    if not urls:
        print("trawl crawl: no URLs given (pass URLs, --file FILE or --source NAME)", file=sys.stderr)
        return EXIT_USAGE

    def emit(result: ItemResult) -> None:
        print(json.dumps(result_record(result)) if args.json else result_line(result), flush=True)

    async with session(settings, worker=not args.no_worker, registry=registry, one_shot=True) as client:
        results = await crawl_urls(client, settings, registry, urls, emit)
    return EXIT_FAILED_ITEMS if any(r.outcome == "failed" for r in results) else 0


def resolved_record(url: str, item: Any) -> dict[str, Any]:
    return {"url": url, "outcome": "resolved", "canonical_key": item.canonical_key,
            "canonical_url": item.canonical_url, "platform": item.platform, "title": item.title,
            "uploader": item.uploader, "duration": item.duration, "published_at": item.published_at,
            "assets": [{"name": a.name, "kind": a.kind, "urls": a.urls, "expected_size": a.expected_size,
                        "mime": a.mime} for a in item.assets]}


def cmd_resolve(args: argparse.Namespace, settings: Settings) -> int:
    """Resolve without downloading, like ``yt-dlp -j``."""
    from trawl.http import make_client
    from trawl.platforms.base import ResolveContext

    registry = build_registry(settings.platforms)
    failed = False
    with make_client(settings.net) as http:
        ctx = ResolveContext(http, settings.net.max_page_bytes)
        for url in args.urls:
            try:
                item = registry.resolver_for(url).resolve(url.strip(), ctx)
            except TrawlError as err:
                failed = True
                record = {"url": url, "outcome": "failed", "error_class": err.error_class, "error": err.message}
                print(json.dumps(record) if args.json else f"failed     {err.error_class}: {_clean(err.message, 100)}",
                      flush=True)
                continue
            if args.json:
                print(json.dumps(resolved_record(url, item), ensure_ascii=False), flush=True)
                continue
            duration = f"{item.duration:.0f} s" if item.duration else "-"
            print(f"{item.canonical_key}  {_clean(item.title, 60)}  by {_clean(item.uploader, 30)}  {duration}")
            for asset in item.assets:
                size = _human_size(asset.expected_size) if asset.expected_size else "size unknown"
                print(f"    {asset.name:<10} {asset.kind:<9} {size:>12}  {_clean(asset.urls[0], 100)}"
                      + (f"  (+{len(asset.urls) - 1} backup)" if len(asset.urls) > 1 else ""))
    return EXIT_FAILED_ITEMS if failed else 0


async def detach_crawl(args: argparse.Namespace, settings: Settings, registry: Registry, urls: list[str]) -> int:
    """Start a CrawlWorkflow (workers elsewhere do the work) and print its id."""
    if not urls and not args.source:
        print("trawl crawl: no URLs given (pass URLs, --file FILE or --source NAME)", file=sys.stderr)
        return EXIT_USAGE
    async with session(settings, worker=False) as client:
        handle, refused = await start_crawl(client, settings, registry, urls, source=args.source,
                                            concurrency=args.concurrency)
    for line in refused:
        print(f"trawl crawl: refused {line}", file=sys.stderr)
    print(json.dumps({"crawl_id": handle.id, "refused": refused}) if args.json else handle.id)
    return 0


def stats_line(stats: Any) -> str:
    done = ", ".join(f"{n} {outcome}" for outcome, n in sorted(stats.outcomes.items())) or "nothing finished"
    state = "cancelled" if stats.cancelled else ("paused" if stats.paused else ("finished" if stats.finished_at
                                                                                 else "running"))
    return (f"{state:<9} {stats.queued} queued, {stats.running} running, {done}; "
            f"{_human_size(stats.bytes)}" + (f"; {stats.refused} refused" if stats.refused else ""))


async def crawl_stats(handle: Any) -> Any:
    desc = await handle.describe()
    if desc.status == WorkflowExecutionStatus.RUNNING:
        return desc, await handle.query(CrawlWorkflow.stats)
    if desc.status == WorkflowExecutionStatus.COMPLETED:
        return desc, await handle.result()
    return desc, None


async def cmd_crawls(args: argparse.Namespace, settings: Settings) -> int:
    async with session(settings, worker=False) as client:
        found = 0
        async for execution in client.list_workflows("WorkflowType = 'CrawlWorkflow'", limit=args.limit):
            found += 1
            handle = client.get_workflow_handle_for(CrawlWorkflow.run, execution.id)
            try:
                _, stats = await crawl_stats(handle)
            except RPCError:
                stats = None
            status = execution.status.name.lower() if execution.status else "unknown"
            started = execution.start_time.strftime("%Y-%m-%d %H:%M:%S") if execution.start_time else "-"
            print(f"{execution.id:<20} {started}  {status:<10} {stats_line(stats) if stats else ''}")
        if not found:
            print("no crawls", file=sys.stderr)
    return 0


async def cmd_crawl_status(args: argparse.Namespace, settings: Settings) -> int:
    async with session(settings, worker=False) as client:
        handle = client.get_workflow_handle_for(CrawlWorkflow.run, args.id)
        try:
            desc, stats = await crawl_stats(handle)
            while sys.stdout.isatty() and not args.json and desc.status == WorkflowExecutionStatus.RUNNING:
                print("\r" + stats_line(stats) + " " * 8, end="", flush=True)
                await asyncio.sleep(1)
                desc, stats = await crawl_stats(handle)
        except RPCError as err:
            if unreachable(err):
                print(f"trawl crawl-status: the Temporal server at {settings.temporal.address} is unreachable "
                      f"({err.message}); try again when it is back", file=sys.stderr)
                return EXIT_FAILED_ITEMS
            print(f"trawl crawl-status: no crawl {args.id!r}: {err.message}", file=sys.stderr)
            return EXIT_USAGE
        if sys.stdout.isatty() and not args.json:
            print()
        if args.json:
            print(json.dumps({"id": handle.id, "status": desc.status.name if desc.status else None,
                              "stats": dataclasses.asdict(stats) if stats else None}))
        else:
            print(f"{handle.id}: {desc.status.name.lower() if desc.status else 'unknown'}")
            if stats:
                print(stats_line(stats))
    return 0


def cmd_items(args: argparse.Namespace, settings: Settings) -> int:
    catalog = Catalog(settings.catalog_url)
    catalog.create_schema()
    items = catalog.list(platform=args.platform, limit=args.limit)
    for item in items:
        if args.json:
            print(json.dumps(item_record(item)))
        else:
            size = sum(a.size for a in item.assets)
            sha = item.assets[0].sha256[:12] if item.assets else "-"
            print(f"{item.platform:<10} {_clean(item.title, 32):<32} {_human_size(size):>10}  {sha:<12}  "
                  f"{item.canonical_key}")
    if not args.json:
        print(f"{len(items)} item(s) in {settings.catalog_url.split('@')[-1]}", file=sys.stderr)
    return 0


def _workflow_id(registry: Registry, ident: str) -> str:
    if ident.startswith(("http://", "https://")):
        return registry.route(ident).workflow_id
    return ident


def progress_bar(progress: dict[str, Any], width: int = 30) -> str:
    done, total = progress["bytes_done"], progress["bytes_total"]
    if total:
        filled = min(width, width * done // total)
        bar = f"[{'#' * filled}{'.' * (width - filled)}] {100 * done // total:3d}%"
    else:
        bar = f"[{'?' * width}]  ..."
    size = f"{_human_size(done)}" + (f" / {_human_size(total)}" if total else "")
    state = "paused" if progress["paused"] else progress["stage"]
    error = f"  last error {_clean(progress['last_error'], 50)}" if progress["last_error"] else ""
    return f"{bar} {size:>22}  {state:<8} attempt {progress['attempt']}{error}"


async def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    async with session(settings, worker=False) as client:
        workflow_id = _workflow_id(build_registry(settings.platforms), args.id)
        handle = client.get_workflow_handle_for(MediaItemWorkflow.run, workflow_id)
        try:
            desc = await handle.describe()
        except RPCError as err:
            print(f"trawl status: no item {args.id!r}: {err.message}", file=sys.stderr)
            return EXIT_USAGE
        live = sys.stdout.isatty() and not args.json and not args.once
        while live and desc.status == WorkflowExecutionStatus.RUNNING:
            print("\r" + progress_bar(await item_progress(client, handle)), end="", flush=True)
            await asyncio.sleep(0.5)
            desc = await handle.describe()
        if live:
            print()
        record: dict[str, Any] = {"id": handle.id, "status": desc.status.name if desc.status else "UNKNOWN"}
        result = None
        if desc.status == WorkflowExecutionStatus.RUNNING:
            record["progress"] = await item_progress(client, handle)
        elif desc.status is not None:
            result = await item_result(handle, "")
            record["result"] = result_record(result)
        if args.json:
            print(json.dumps(record))
            return 0
        print(f"{record['id']}: {record['status'].lower()}")
        if "progress" in record:
            print(progress_bar(record["progress"]))
        if result is not None:
            print(result_line(result))
    return 0


async def cmd_signal(args: argparse.Namespace, settings: Settings) -> int:
    async with session(settings, worker=False) as client:
        handle = client.get_workflow_handle(_workflow_id(build_registry(settings.platforms), args.id))
        try:
            if args.command == "cancel" and not handle.id.startswith("crawl-"):
                await handle.cancel()
            else:  # a crawl cancels through its signal, which cancels its items and reports them
                await handle.signal(args.command)
        except RPCError as err:
            print(f"trawl {args.command}: {args.id}: {err.message}", file=sys.stderr)
            return EXIT_USAGE
    print(f"{args.command}: {handle.id}")
    return 0


def _stop_event() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    stop = _stop_event()
    client = await connect(settings, metrics=True)
    await ensure_search_attributes(client, settings.temporal.namespace)
    async with running_worker(client, settings):
        logging.getLogger("trawl").info(
            "worker started", extra={"trawl": {"address": settings.temporal.address,
                                               "queues": f"{settings.temporal.task_queue_prefix}-*",
                                               "metrics": _metrics_url(settings)}})
        await stop.wait()
    return 0


def _metrics_url(settings: Settings) -> str | None:
    worker = settings.worker
    return f"http://{worker.metrics_host}:{worker.metrics_port}/metrics" if worker.metrics_port else None


async def serve_api(settings: Settings, client: Client, stop: asyncio.Event) -> None:
    import uvicorn

    from starter.api import create_app
    from starter.binding import require_safe_binding

    require_safe_binding(settings)
    config = uvicorn.Config(create_app(settings, client), host=settings.api.host, port=settings.api.port,
                            log_config=None, access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign] - our handlers stop it
    task = asyncio.create_task(server.serve())
    await stop.wait()
    server.should_exit = True
    await task


def _with_api_args(args: argparse.Namespace, settings: Settings) -> Settings:
    api = settings.api.model_copy(update={k: v for k, v in (("host", args.host), ("port", args.port)) if v})
    return settings.model_copy(update={"api": api})


async def cmd_api(args: argparse.Namespace, settings: Settings) -> int:
    settings = _with_api_args(args, settings)
    stop = _stop_event()
    async with session(settings, worker=False) as client:
        print(f"trawl api on http://{settings.api.host}:{settings.api.port} (docs at /docs); Ctrl-C stops",
              file=sys.stderr)
        await serve_api(settings, client, stop)
    return 0


async def cmd_up(args: argparse.Namespace, settings: Settings) -> int:
    settings = _with_api_args(args, settings)
    stop = _stop_event()
    async with session(settings, worker=True, metrics=True) as client:
        print(f"trawl up: Temporal {settings.temporal.address}, Web UI http://127.0.0.1:{settings.temporal.ui_port}"
              f", API http://{settings.api.host}:{settings.api.port}/docs, data {settings.data_dir.resolve()}; "
              "Ctrl-C stops", file=sys.stderr)
        await serve_api(settings, client, stop)
    return 0


async def cmd_fsck(args: argparse.Namespace, settings: Settings) -> int:
    """Check every blob against its name and every catalog row against the store.

    With ``--json`` the only thing on stdout is one JSON object, the repair's re-crawl included.
    """
    from trawl.storage.blobs import LocalBlobStore
    from trawl.storage.fsck import check, quarantine

    catalog = Catalog(settings.catalog_url)
    catalog.create_schema()
    blobs = LocalBlobStore(settings.blobs_dir)
    report = await asyncio.to_thread(check, catalog, blobs)
    summary: dict[str, Any] = {"items": report.items, "blobs": report.blobs, "orphans": report.orphans,
                               "problems": [dataclasses.asdict(p) for p in report.problems]}
    if not args.json:
        for problem in report.problems:
            print(f"{problem.kind:<14} {problem.path}  {problem.detail}"
                  + (f"  [{problem.canonical_key}]" if problem.canonical_key else ""))
        print(f"{report.items} item(s), {report.blobs} blob(s) checked: {len(report.problems)} problem(s), "
              f"{len(report.orphans)} unreferenced blob(s)", file=sys.stderr)
    code = 0
    if report.problems and not args.repair:
        code = EXIT_FAILED_ITEMS
    elif report.problems:
        urls = quarantine(report, catalog, blobs, settings.data_dir / "quarantine")
        catalog.close()
        summary["repair"] = {"quarantine": str(settings.data_dir / "quarantine"), "recrawled": []}
        if not args.json:
            print(f"moved damaged files to {settings.data_dir / 'quarantine'}; crawling {len(urls)} item(s) again",
                  file=sys.stderr)
        if urls:
            registry = build_registry(settings.platforms)
            show = (lambda r: None) if args.json else (lambda r: print(result_line(r), flush=True))
            async with session(settings, worker=True, registry=registry, one_shot=True) as client:
                results = await crawl_urls(client, settings, registry, urls, show)
            summary["repair"]["recrawled"] = [result_record(r) for r in results]
            code = EXIT_FAILED_ITEMS if any(r.outcome == "failed" for r in results) else 0
    if args.json:
        print(json.dumps(summary))
    return code


async def cmd_setup(args: argparse.Namespace, settings: Settings) -> int:
    """Prepare a server and catalog trawl did not create: search attributes and tables."""
    client = await connect(settings)
    await ensure_search_attributes(client, settings.temporal.namespace)
    catalog = Catalog(settings.catalog_url)
    catalog.create_schema()
    catalog.close()
    print(f"search attributes registered in namespace {settings.temporal.namespace} at {settings.temporal.address}; "
          f"catalog tables ready in {settings.catalog_url.split('@')[-1]}")
    return 0


async def cmd_server(args: argparse.Namespace, settings: Settings) -> int:
    stop = _stop_event()
    with temporal_server(settings) as settings:
        print(f"Temporal at {settings.temporal.address}, Web UI http://127.0.0.1:{settings.temporal.ui_port}; "
              "Ctrl-C stops", file=sys.stderr)
        await stop.wait()
    return 0


async def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    from starter.demo import run_demo

    return await run_demo(settings, sim_port=args.sim_port)


def cmd_logs(args: argparse.Namespace, settings: Settings) -> int:
    from trawl.durations import parse_duration
    from trawl.triage import render, triage

    try:
        since = parse_duration(args.since) if args.since else None
        recent = parse_duration(args.recent)
    except ValueError as err:
        print(f"trawl logs triage: {err}", file=sys.stderr)
        return EXIT_USAGE
    try:
        source = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8", errors="replace")
    except OSError as err:
        print(f"trawl logs triage: cannot read {args.file}: {err.strerror}", file=sys.stderr)
        return EXIT_USAGE
    with source:
        report = triage(source, since=since, recent=recent)
    print(json.dumps(report.to_json(), indent=2) if args.json else render(report))
    return 0


def cmd_simulator(args: argparse.Namespace, settings: Settings) -> int:
    import time

    from trawl.simulator import Simulator
    from trawl.simulator.demo import install_demo_site

    with Simulator(port=args.port) as sim:
        for case in install_demo_site(sim):
            print(case.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
    return 0


# -- wiring ------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trawl", description="A durable media crawler on Temporal.")
    parser.add_argument("--log-level", default=None, help="log level (default WARNING for one-shot commands)")
    sub = parser.add_subparsers(dest="command", required=True)

    crawl = sub.add_parser("crawl", help="crawl URLs and wait for the results")
    crawl.add_argument("urls", nargs="*", help="page or media URLs")
    crawl.add_argument("--file", help="read URLs from FILE, one per line ('-' for stdin)")
    crawl.add_argument("--source", help="crawl the named source from the settings ([[sources]])")
    crawl.add_argument("--json", action="store_true", help="one JSON object per item")
    crawl.add_argument("--no-worker", action="store_true", help="do not run a worker in this process")
    crawl.add_argument("--detach", action="store_true",
                       help="start a crawl workflow, print its id and return (workers elsewhere do the work)")
    crawl.add_argument("--concurrency", type=int, default=8, help="items in flight at once (with --detach)")

    crawls = sub.add_parser("crawls", help="list crawl workflows")
    crawls.add_argument("--limit", type=int, default=50)
    crawl_status = sub.add_parser("crawl-status", help="a crawl's progress (live on a terminal)")
    crawl_status.add_argument("id")
    crawl_status.add_argument("--json", action="store_true")

    resolve = sub.add_parser("resolve", help="resolve URLs without downloading (like yt-dlp -j)")
    resolve.add_argument("urls", nargs="+")
    resolve.add_argument("--json", action="store_true")

    items = sub.add_parser("items", help="list the catalog")
    items.add_argument("--json", action="store_true")
    items.add_argument("--platform")
    items.add_argument("--limit", type=int, default=1000)

    status = sub.add_parser("status", help="show an item workflow (id or URL)")
    status.add_argument("id")
    status.add_argument("--json", action="store_true")
    status.add_argument("--once", action="store_true", help="print once instead of following on a terminal")

    for name, text in (("pause", "pause an item or a crawl"), ("resume", "resume a paused item or crawl"),
                       ("cancel", "cancel an item or a crawl")):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("id", help="item workflow id, item URL, or crawl id")

    sub.add_parser("server", help="run only the embedded Temporal server (foreground)")
    sub.add_parser("setup", help="register search attributes on a Temporal server and create the catalog tables")
    fsck = sub.add_parser("fsck", help="check every blob against its hash and every catalog row against the store")
    fsck.add_argument("--repair", action="store_true",
                      help="move damaged blobs to data/quarantine, drop their rows and crawl those items again")
    fsck.add_argument("--json", action="store_true")
    worker = sub.add_parser("worker", help="run only a worker (foreground)")
    worker.add_argument("--processes", type=int, help="worker processes to supervise (default worker.processes)")
    up = sub.add_parser("up", help="run the embedded server, a worker and the HTTP API (foreground)")
    api = sub.add_parser("api", help="run the HTTP API (foreground)")
    for cmd in (up, api):
        cmd.add_argument("--host", help="listen address (default api.host, 127.0.0.1)")
        cmd.add_argument("--port", type=int, help="listen port (default api.port, 8000)")
    demo = sub.add_parser("demo", help="crawl the built-in simulated site end to end")
    demo.add_argument("--sim-port", type=int, default=18765)
    logs = sub.add_parser("logs", help="read trawl's JSON logs")
    logs_sub = logs.add_subparsers(dest="logs_command", required=True)
    tri = logs_sub.add_parser("triage", help="what is failing, where, and since when")
    tri.add_argument("file", nargs="?", default="-", help="log file ('-' or nothing: stdin)")
    tri.add_argument("--since", help="only lines newer than this (e.g. 30m, 2h)")
    tri.add_argument("--recent", default="5m", help="a group seen this close to the newest line, with no "
                                                    "success after it, is still failing (default 5m)")
    tri.add_argument("--json", action="store_true")
    sim = sub.add_parser("simulator", help="serve the demo site on loopback (foreground)")
    sim.add_argument("--port", type=int, default=18765)
    return parser


ASYNC_COMMANDS = {"crawl": cmd_crawl, "crawls": cmd_crawls, "crawl-status": cmd_crawl_status, "status": cmd_status, "pause": cmd_signal, "resume": cmd_signal,
                  "cancel": cmd_signal, "worker": cmd_worker, "up": cmd_up, "api": cmd_api, "setup": cmd_setup, "fsck": cmd_fsck, "server": cmd_server, "demo": cmd_demo}
SYNC_COMMANDS = {"items": cmd_items, "simulator": cmd_simulator, "logs": cmd_logs, "resolve": cmd_resolve}
LONG_RUNNING = {"worker", "up", "server", "api"}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
    except ConfigError as err:
        print(f"trawl: {err}", file=sys.stderr)
        return EXIT_USAGE
    long_running = args.command in LONG_RUNNING
    supervising = args.command == "worker" and (args.processes or settings.worker.processes) > 1
    quiet = "ERROR" if args.command == "demo" else "WARNING"  # the demo prints its own table
    # Long-running commands log on stdout; one with a Temporal client of its own keeps that stream
    # for trawl's lines (the core of a runtime it does not configure writes to descriptor 1). A
    # supervisor's children inherit its stdout, so it keeps the real one.
    log_stream = sys.stderr
    if long_running:
        log_stream = sys.stdout if supervising else stdout_for_logs()
    configure_logging(stream=log_stream,
                      level=args.log_level or ("INFO" if long_running else quiet),
                      worker=settings.worker.identity or default_worker_name())
    try:
        if supervising:
            from trawl.http import make_client
            from workers.supervisor import supervise  # signal handlers need the main thread

            make_client(settings.net).close()  # a refused proxy is said once here, not by every child
            return supervise(settings, args.processes or settings.worker.processes)
        if args.command in SYNC_COMMANDS:
            return SYNC_COMMANDS[args.command](args, settings)
        install_core_logging()  # before any client connects: the core's lines become log records
        return asyncio.run(ASYNC_COMMANDS[args.command](args, settings))
    except BrokenPipeError:
        # The reader of our output went away (`trawl logs triage | head`): stop writing, quietly,
        # with the status a shell shows for a tool that SIGPIPE stopped.
        quiet_stream(sys.stdout)
        return 128 + signal.SIGPIPE
    except (ServerError, UnsupportedUrl, ApiConfigError, BlockedAddress) as err:
        print(f"trawl {args.command}: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except RPCError as err:
        print(f"trawl {args.command}: Temporal: {err.message}", file=sys.stderr)
        return EXIT_USAGE


def console_main() -> None:
    """Entry point of the installed ``trawl`` command.

    Leaves with ``os._exit`` once output is flushed: the Temporal SDK's native threads can still
    call into Python while the interpreter finalizes, which aborts the process
    ("PyGILState_Release ... must be current") after all work is done and the exit code is known.
    Everything trawl writes (catalog transactions, blob renames) is complete by this point.
    """
    try:
        code = main()
    except BrokenPipeError:  # raised outside main's commands (argparse's help, a usage error)
        quiet_stream(sys.stdout)
        code = 128 + signal.SIGPIPE
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # what was still buffered for a reader that went away
            quiet_stream(stream)
            code = code or 128 + signal.SIGPIPE
    os._exit(code)


if __name__ == "__main__":
    console_main()
