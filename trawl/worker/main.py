"""A worker process: builds the activities from the settings and polls trawl's task queues.

Queues: ``<prefix>-workflows`` (item workflows), ``<prefix>-fetch-<platform>`` (one per
platform, so politeness can be set per platform), ``<prefix>-download`` (download, verify,
commit, which share the worker's disk).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import hashlib
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import temporalio.workflow
from temporalio.client import Client
from temporalio.worker import Interceptor, Worker

import trawl
from trawl.activities.broadcast import BroadcastActivities
from trawl.activities.commit import CommitActivities
from trawl.activities.crawl import CrawlActivities
from trawl.activities.download import DownloadActivities
from trawl.activities.extras import ExtraActivities
from trawl.activities.fetch import FetchActivities
from trawl.activities.host import HostActivities, HostRoom
from trawl.activities.small import SmallItemActivities
from trawl.activities.tiny import TinyItemActivities
from trawl.activities.verify import VerifyActivities
from trawl.download.live_comments import LiveCommentSidecars
from trawl.http_client import make_client
from trawl.logs import default_worker_name
from trawl.platforms.base import ResolveContext
from trawl.platforms.registry import Registry, build_registry
from trawl.settings import FETCH_SLOTS_PER_PLATFORM, Settings
from trawl.notify import Notifier
from trawl.storage.blobs import open_blob_store
from trawl.worker.cleanup import clean_periodically, keep_statistics
from trawl.worker.runtime import ONE_SHOT_MARK
from trawl.worker.type_hints import install as cache_type_hints
from trawl.worker.interceptors import (HostWorkInterceptor, ObservingInterceptor, TrawlFailureConverter,
                                       trawl_data_converter)
from trawl.worker.sandbox import keep_loaded_code, workflow_runner
from trawl.workflows.crawl import CrawlWorkflow
from trawl.workflows.extras import ExtrasRefreshWorkflow
from trawl.workflows.media_item import MediaItemWorkflow
from trawl.contracts import DOWNLOAD_PROGRESS, download_queue, fetch_queue, host_queue, join_queue, workflow_queue

WORKFLOWS = (MediaItemWorkflow, CrawlWorkflow, ExtrasRefreshWorkflow)
# The workflow sandbox's imports of these modules for each run take their code as imported just
# above, read now and checked against it (trawl.worker.sandbox.LoadedCode): files replaced later,
# under a running worker, never mix into its runs.
keep_loaded_code(WORKFLOWS)
FETCH_CONCURRENCY = FETCH_SLOTS_PER_PLATFORM  # the HTTP pool (net.max_connections) is sized for these
JOIN_SLOTS = 1000
# A workflow's next task goes first to the worker that holds it in its cache (its sticky queue);
# when that worker is dead the server waits this long before any worker may take it (the SDK's
# default is 10 s). A live recording's part boundary waits on a workflow task, and a live window
# holds about nine seconds: another worker takes over within this.
STICKY_TIMEOUT = timedelta(seconds=3)


@functools.cache
def code_build_id() -> str:
    """The workers' build id: trawl's version and a hash of its own code. The SDK's default hashes
    the bytecode of every loaded module (about 0.2 s at each start, paid by every one-shot
    command); the dependencies are pinned, so trawl's code is what tells two builds apart."""
    root = Path(trawl.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return f"trawl-{trawl.__version__}-{digest.hexdigest()[:12]}"


def progress_signaller(client: Client) -> Callable[[str, dict[str, Any]], None]:
    """Send a download's progress report to its item workflow, from an activity thread, without waiting."""
    loop = asyncio.get_running_loop()

    def send(workflow_id: str, report: dict[str, Any]) -> None:
        sent = asyncio.run_coroutine_threadsafe(
            client.get_workflow_handle(workflow_id).signal(DOWNLOAD_PROGRESS, report), loop)
        # A report that does not arrive (the item just finished) matters to nobody.
        sent.add_done_callback(lambda done: done.cancelled() or done.exception())

    return send


def with_trawl_failures(client: Client) -> Client:
    """``client``, or a client on its connection whose data converter encodes failures as trawl's
    workers do (:class:`TrawlFailureConverter`: no stack trace for an expected failure class)."""
    if isinstance(client.data_converter.failure_converter, TrawlFailureConverter):
        return client
    return Client(**{**client.config(), "data_converter": trawl_data_converter(client.data_converter)})


@contextlib.asynccontextmanager
async def running_worker(
    client: Client, settings: Settings, registry: Registry | None = None, *, one_shot: bool = False,
    workflows: Sequence[type] = WORKFLOWS,
    interceptors: Sequence[Interceptor] = (),
) -> AsyncIterator[list[Worker]]:
    """Run every trawl worker of this process for the duration of the block.

    ``one_shot`` marks the identity of a worker that lives only as long as one command, so other
    commands can tell it from the deployment's long-running workers (see ``live_workers``).
    """
    registry = registry or build_registry(settings.platforms)
    client = with_trawl_failures(client)
    # The item summary line carries its own fields; the SDK's context suffix would repeat them.
    temporalio.workflow.logger.workflow_info_on_message = False
    cache_type_hints()  # every payload this process decodes reads a class's hints once (trawl.worker.type_hints)
    identity = (settings.worker.identity or default_worker_name()) + (ONE_SHOT_MARK if one_shot else "")
    prefix = settings.temporal.task_queue_prefix
    settings.work_dir.mkdir(parents=True, exist_ok=True)
    from trawl.storage.catalog import Catalog  # here, not at the top: clients import this module for its names
    from trawl.storage.catalog_state import CatalogState
    catalog = Catalog(settings.catalog_url)
    catalog.create_schema()
    # What a platform's workers share across processes: visitor sessions, proxies' rests.
    shared = CatalogState(catalog)
    http = make_client(settings.net, shared)
    retry = settings.retry
    blobs = open_blob_store(settings)  # a local directory or an S3 bucket, by storage.url
    # Each stage's attempt limit is applied by its activities (trawl.activities.application_errors), so that
    # infrastructure failures can wait out the stage's schedule_to_close instead.
    download = DownloadActivities(http, settings.work_dir, settings.download, retry.download.maximum_interval,
                                  retry.download.maximum_attempts, progress=progress_signaller(client),
                                  sidecars=LiveCommentSidecars.from_settings(settings))
    verify = VerifyActivities(retry.verify.maximum_interval, retry.verify.maximum_attempts,
                              rehash=settings.download.verify_rehash)
    notifier = Notifier(settings)  # the webhooks (notify.webhooks): a thread of their own
    commit = CommitActivities(catalog, blobs, settings.work_dir, retry.commit.maximum_interval,
                              retry.commit.maximum_attempts, notifier=notifier, prefix=prefix)
    download_slots = settings.worker.max_concurrent_activities
    threads = 2 * download_slots + FETCH_CONCURRENCY * len(registry.platforms)  # shared + host queue
    executor = concurrent.futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="activity")
    common = dict(
        identity=identity,
        build_id=code_build_id(),
        interceptors=[ObservingInterceptor(notifier), *interceptors],
        graceful_shutdown_timeout=settings.worker.graceful_shutdown_timeout,
        # At most one heartbeat per interval reaches the server (worker.heartbeat_interval): pause
        # and cancel arrive with the next one's answer.
        max_heartbeat_throttle_interval=settings.worker.heartbeat_interval,
        default_heartbeat_throttle_interval=settings.worker.heartbeat_interval,
    )
    crawl = CrawlActivities(client, settings, registry, catalog)
    host = HostActivities(host_queue(prefix, settings.host_id))
    # What this host's queue runs, against its slots: a first fetch claims this host for a larger
    # item while there is room (FetchInput.claim_host_over), saving the item its claim_host.
    room = HostRoom(host.host_queue, download_slots)
    small = SmallItemActivities(download, verify, commit)  # the three stages of a small item in one activity
    fetch = FetchActivities(registry, ResolveContext(http, settings.net.max_page_bytes, shared=shared), catalog,
                            retry.fetch.maximum_interval, retry.fetch.maximum_attempts)
    # A tiny item's first fetch stores it whole, as small_item does: an activity of its own, which
    # older runs reach through fetch (FetchInput.with_fetch_size).
    tiny = TinyItemActivities(fetch, small, retry.fetch.maximum_interval)
    # A committed item's extras, each on its own, on its platform's fetch queue (its politeness).
    extras = ExtraActivities(registry, http, catalog, blobs, settings.work_dir, retry.extras.maximum_interval,
                             retry.extras.maximum_attempts, settings.catalog.search_extras_lines)
    fetch.older_tiny = tiny.fetched_and_stored
    fetch.room = room
    workers = [
        # The shared queue: host claims and source expansion; and, for runs started before
        # host-local work and joins had queues of their own, every stage and their joins.
        Worker(client, task_queue=download_queue(prefix),
               activities=[host.claim_host, download.download, download.discard, verify.verify, commit.commit,
                           crawl.expand_source, crawl.frontier_add, crawl.frontier_next, crawl.join_item,
                           crawl.refresh_watch_extras,
                           small.small_item],
               activity_executor=executor, max_concurrent_activities=download_slots, **common),
        # This host's own queue: the work that needs the partial files under its work_dir (an
        # item's stages one by one, or in one small_item: download.one_activity_on_host).
        Worker(client, task_queue=host_queue(prefix, settings.host_id),
               activities=[download.download, download.discard, verify.verify, commit.commit, small.small_item],
               activity_executor=executor, max_concurrent_activities=download_slots,
               **{**common, "interceptors": [*common["interceptors"], HostWorkInterceptor(room)]}),
    ]
    if workflows:  # a process may leave the workflows to others (the crawl groupings test does)
        keep_loaded_code(workflows)  # a test's own workflows; trawl's are kept since the import
        workers.insert(0, Worker(client, task_queue=workflow_queue(prefix), workflows=list(workflows),
                                 sticky_queue_schedule_to_start_timeout=STICKY_TIMEOUT,
                                 workflow_runner=workflow_runner(client.data_converter), **common))
    # Joins only wait (an async activity each, no thread): many at once cost nearly nothing.
    workers.append(Worker(client, task_queue=join_queue(prefix),
                          activities=[crawl.join_item, BroadcastActivities(client).record_broadcast],
                          max_concurrent_activities=JOIN_SLOTS, **common))
    for platform in registry.platforms:
        # The server enforces this rate for the queue, i.e. for all workers on all hosts together.
        rate = getattr(settings.platforms, platform).requests_per_second
        workers.append(Worker(client, task_queue=fetch_queue(prefix, platform),
                              activities=[fetch.fetch, tiny.fetch_and_store_tiny, extras.fetch_extra,
                                          extras.record_missing_extra, extras.plan_extras],
                              activity_executor=executor, max_concurrent_activities=FETCH_CONCURRENCY,
                              max_task_queue_activities_per_second=rate, **common))
    tasks = [asyncio.create_task(worker.run()) for worker in workers]
    # The clean-up also reads into search's lines the extras stored before search read them (0009).
    cleanup = asyncio.create_task(clean_periodically(client, settings.work_dir, settings.download.keep_failed_partials,
                                                     catalog, blobs, settings.storage.abandon_uploads_after,
                                                     extras_lines=settings.catalog.search_extras_lines))
    statistics = asyncio.create_task(keep_statistics(catalog))  # PostgreSQL without autovacuum
    try:
        yield workers
    finally:
        room.close()  # a fetch that ends while this worker stops leaves the item to claim_host
        cleanup.cancel()
        statistics.cancel()
        await asyncio.gather(*(worker.shutdown() for worker in workers), return_exceptions=True)
        await asyncio.gather(cleanup, statistics, *tasks, return_exceptions=True)
        executor.shutdown(wait=False, cancel_futures=True)
        http.close()
        blobs.close()
        catalog.close()
        notifier.close()


async def run_until_stopped(client: Client, settings: Settings, stop: asyncio.Event) -> None:
    async with running_worker(client, settings):
        await stop.wait()
