"""Watches: a source or a list of URLs crawled again and again, each watch one Temporal Schedule.

The schedule (id ``<task queue prefix>-watch-<name>``, on the Web UI's Schedules page) starts a
``CrawlWorkflow`` every interval, with jitter, on the deployment's workflow queue, exactly as
``trawl crawl --detach`` starts one. A run still going when the next is due makes the schedule skip
that one (overlap policy SKIP), and after the Temporal server was down, missed runs older than
``watch.catchup_window`` are dropped: an outage ends in at most one catch-up run. Watches live in
Temporal, so they survive restarts of workers, API and CLI; nothing else stores them.

A watch of a source carries the source's definition (its ``[[sources]]`` table, as it was when
the watch was added) in the schedule's action: each run asks a worker to expand that definition
(its listing stops at the first page of known items), whatever that worker's settings hold. A
``url_file`` is read by the worker that expands the run, on its host: a watch takes only an absolute
path. Watches added before they carried their source name it only; their runs expand the source
of that name in the worker's settings. A run whose source cannot be expanded fails (a failed
Temporal run), and its reason shows wherever the run does. A watch of URLs carries them, routed
when the watch was added. Items already in the catalog finish as ``duplicate`` without a platform
request.

Each run is its own crawl: Temporal names a schedule's run after the schedule's workflow id and
the second the run is due, and a trigger is due when asked, so ``trigger`` picks a second of its
own (no run of that name ever started, and not a second the interval falls on: see
:func:`trigger_watch`).

Shared by ``trawl watch`` (:mod:`trawl.cli.watch`) and the API (:mod:`trawl.api.watches`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import PurePosixPath, PureWindowsPath
from collections.abc import Callable
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp
from temporalio.api.schedule.v1 import SchedulePatch, TriggerImmediatelyRequest
from temporalio.api.workflowservice.v1 import PatchScheduleRequest

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionExecutionStartWorkflow,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleDescription,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
    WorkflowQueryFailedError,
)
from temporalio.service import RPCError, RPCStatusCode

from trawl.starter.client import (
    MAX_CRAWL_BYTES,
    MAX_CRAWL_CONCURRENCY,
    MAX_CRAWL_URLS,
    CrawlRefused,
    CrawlTooLarge,
    crawl_handle,
    encoded_size,
    item_options,
    refusal_line,
)
from trawl.starter.views import crawl_failure, crawl_state, crawl_status
from trawl.durations import parse_duration
from trawl.platforms.registry import Registry
from trawl.settings import Settings
from trawl.listing_filters import ListingFilters
from trawl.sources import SourceError, describe, find_source, source_definition, source_from_definition, with_filters
from trawl.contracts import CRAWL_WORKFLOW, CrawlInput, ExtrasSweep, workflow_queue
from trawl.recheck import MAX_RECHECK, with_recheck
from trawl.routing import route_all
from trawl.errors import TrawlError

WATCH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
# A run's counts come from its worker (a query) while it runs; a worker that cannot answer within
# this long leaves the counts out rather than holding up the list.
RUN_STATS_WAIT_S = 5.0
# How long `trigger` waits for the schedule to start the run it asked for (normally well under a
# second): it answers once it knows whether the run started, or after this long, asked.
TRIGGER_WAIT_S = 10.0
MAX_REFRESH_EXTRAS_DAYS = 3650


class WatchError(Exception):
    """A watch cannot be made or found; the message says what to do."""


class WatchInvalid(WatchError):
    """A mistake in what was asked: a bad name, interval or source, or nothing to watch."""


class WatchExists(WatchError):
    """A watch of that name exists already."""


class WatchNotFound(WatchError):
    """No watch of that name."""


@dataclass
class WatchRun:
    """One run of a watch: a crawl, with its counts once known."""

    crawl_id: str
    scheduled_at: str
    started_at: str
    status: str  # Temporal's: RUNNING, COMPLETED, ... (CANCELLED for a cancelled crawl)
    new: int | None = None  # committed by this run
    duplicate: int | None = None
    failed: int | None = None
    outcomes: dict[str, int] = field(default_factory=dict)
    error: str | None = None  # why a FAILED run failed (a source it could not expand)


@dataclass
class Watch:
    name: str
    schedule_id: str
    source: str | None  # a source's name, or None for a watch of URLs
    source_description: str | None  # e.g. "feed https://...": what the source is in the settings
    # The source's definition the schedule carries (its settings table when the watch was added);
    # None for a watch of URLs, and for one added before watches carried their source (its runs
    # expand the source of that name in the worker's settings).
    source_settings: dict[str, Any] | None
    urls: int  # URLs carried by the schedule (a watch of URLs)
    every: str
    jitter: str
    concurrency: int
    paused: bool
    note: str | None
    runs: int  # runs started so far
    skipped_overlap: int  # due while a run still ran
    missed_catchup: int  # dropped: missed longer ago than the catch-up window
    running: list[str]
    last_run: WatchRun | None
    next_run: str | None
    created_at: str
    # Each run refreshes the extras of the watch's items younger than this many days; 0: never.
    refresh_extras_days: int = 0
    recheck: int = 0  # items of its listings re-checked per run (trawl.recheck), the oldest-checked first


def schedule_id(settings: Settings, name: str) -> str:
    return f"{settings.temporal.task_queue_prefix}-watch-{name}"


def runs_like(sid: str) -> str:
    """The crawl ids of a schedule's runs as a SQL LIKE pattern: ``crawl-<sid>-`` and Temporal's
    timestamp (``2026-12-05T13:08:00Z``), so watch ``a``'s runs are not those of a watch ``a-b``."""
    escaped = f"crawl-{sid}-".replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "____-__-__T__:__:__Z"


def check_name(name: str) -> str:
    if not WATCH_NAME.fullmatch(name):
        raise WatchInvalid(f"invalid watch name {name!r}: use letters, digits, '.', '_' and '-' (at most 63, "
                           "starting with a letter or digit)")
    return name


def _duration(text: str | timedelta, what: str) -> timedelta:
    try:
        value = parse_duration(text)
    except ValueError as err:
        raise WatchInvalid(f"{what}: {err}") from None
    if value.microseconds:  # schedules and `watch list` count whole seconds
        raise WatchInvalid(f"{what}: {text} is not a whole number of seconds")
    return value


def show_duration(value: timedelta) -> str:
    """``90 s`` -> ``1m30s``: the form the settings and ``--every`` take."""
    seconds = int(value.total_seconds())
    if seconds == 0:
        return "0s"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return "".join(parts)


def live_watch_source(registry: Registry, urls: list[str],
                      follow: Callable[[str], str | None] | None = None) -> dict[str, Any] | None:
    """The source a watch of ``urls`` polls when they are one live room (its platform's resolver
    says so: :meth:`~trawl.platforms.base.Resolver.watch_source`), else None. A URL that stands for
    a room only once followed (a short link) is asked of ``follow`` (:func:`follow_once`).

    Raises:
        WatchInvalid: a live room among other URLs (a room is watched on its own).
    """
    found = []
    for url in urls:
        try:
            resolver = registry.route(url).resolver
        except Exception:  # noqa: BLE001 - a URL that cannot be routed is refused with the others later
            found.append(None)
            continue
        source = resolver.watch_source(url)
        if source is None and follow is not None and len(urls) == 1:
            try:
                target = follow(url)
            except TrawlError as err:
                raise WatchInvalid(f"{url}: could not follow it to tell whether it leads to a live room "
                                   f"({err.error_class}: {err}); give the room's own URL") from None
            source = registry.route(target).resolver.watch_source(target) if target is not None else None
        found.append(source)
    rooms = [f for f in found if f is not None]
    if rooms and len(urls) > 1:
        raise WatchInvalid("a live room is watched on its own: add one watch per room")
    return rooms[0] if rooms else None


def follow_once(settings: Settings, registry: Registry) -> Callable[[str], str | None]:
    """Where a URL leads when only a request tells (:meth:`~trawl.platforms.base.Resolver.watch_target`),
    asked through the usual HTTP client and its address guard."""
    def follow(url: str) -> str | None:
        from trawl.http_client import make_client
        from trawl.platforms.base import ResolveContext

        with make_client(settings.net) as http:
            return registry.route(url).resolver.watch_target(url, ResolveContext(http, settings.net.max_page_bytes))

    return follow


async def add_watch(client: Client, settings: Settings, registry: Registry, name: str, *,
                    source: str | None = None, urls: list[str] | None = None, every: str | timedelta | None = None,
                    jitter: str | timedelta | None = None, concurrency: int = 8,
                    paused: bool = False, filters: ListingFilters | None = None,
                    refresh_extras_days: int = 0, recheck: int = 0) -> tuple[Watch, list[str]]:
    """Create the watch's schedule; returns the watch and the URLs refused (given, not watched).
    ``filters`` (``--dateafter``, ...) go into the definition of its source and of each listing it
    watches; a relative date (``now-7days``) is resolved at each run.

    ``refresh_extras_days``: each run first fetches again the extras (comments, danmaku...) of the
    items the watch's runs brought that are younger than that many days, each a dated snapshot
    (docs/extras.md), at most ``watch.refresh_extras_limit`` a run, the youngest first; 0: never.

    A watch of a live room's URL polls the room (its source, ``watch.live_poll_interval`` unless
    ``every`` says otherwise): each run crawls the room only while it is live, the recording keeps
    the run going until the broadcast ends (the schedule skips the runs due meanwhile), and the
    next broadcast is recorded by the first run after it starts.

    With ``recheck`` N, each run also asks the platform again about N committed items of each
    listing it reads (those never re-checked first, then those checked longest ago) and records
    what vanished upstream (:mod:`trawl.recheck`), paced at the platform's rate.

    Raises:
        WatchInvalid: a bad name, interval, jitter or concurrency; an unknown source; both or neither
            of a source and URLs.
        CrawlRefused: every URL given was refused.
        CrawlTooLarge: more URLs than one crawl carries.
        WatchExists: a watch of that name exists already.
    """
    check_name(name)
    urls = [u for u in (urls or []) if u.strip()]
    if bool(source) == bool(urls):
        raise WatchInvalid("give either a source (--source NAME) or URLs to watch, not both" if source
                           else "nothing to watch: give a source (--source NAME) or URLs")
    room = await asyncio.to_thread(live_watch_source, registry, urls, follow_once(settings, registry)) if urls else None
    if every is None and room is None:
        raise WatchInvalid("every: how often to crawl (--every 1h, say); only a live room's watch has a default "
                           "(watch.live_poll_interval)")
    interval = _duration(settings.watch.live_poll_interval if every is None else every, "every")
    if interval < settings.watch.min_interval:
        raise WatchInvalid(f"every: {show_duration(interval)} is shorter than watch.min_interval "
                           f"({show_duration(settings.watch.min_interval)})")
    spread = settings.watch.jitter if jitter is None else _duration(jitter, "jitter")
    if spread > interval:
        raise WatchInvalid(f"jitter ({show_duration(spread)}) must not exceed the interval ({show_duration(interval)})")
    if not 1 <= concurrency <= MAX_CRAWL_CONCURRENCY:
        raise WatchInvalid(f"concurrency must be 1 to {MAX_CRAWL_CONCURRENCY} (got {concurrency})")
    if not 0 <= refresh_extras_days <= MAX_REFRESH_EXTRAS_DAYS:
        raise WatchInvalid(f"refresh_extras_days must be 0 (never) to {MAX_REFRESH_EXTRAS_DAYS} "
                           f"(got {refresh_extras_days})")
    if not 0 <= recheck <= MAX_RECHECK:
        raise WatchInvalid(f"recheck must be 0 to {MAX_RECHECK} items per run (got {recheck})")
    described = definition = None
    if room is not None:
        try:
            found = source_from_definition(room)
        except SourceError as err:
            raise WatchInvalid(str(err)) from None
        source, urls, described, definition = found.name, [], describe(found), source_definition(found)
    elif source:
        try:
            found = find_source(settings, source)
        except SourceError as err:
            raise WatchInvalid(str(err)) from None
        if found.kind == "url_file" and not _absolute(found.path):
            raise WatchInvalid(f"source {source!r} is a url_file with a relative path ({found.path}): a watch's runs "
                               "read it on the host of the worker that runs them, so give the source an absolute path")
        described, definition = describe(found), source_definition(found, filters)
    if len(urls) > MAX_CRAWL_URLS:
        raise CrawlTooLarge(f"a watch carries at most {MAX_CRAWL_URLS} URLs (got {len(urls)}): put them in a "
                            "url_file source and watch that")
    items, refusals = await asyncio.to_thread(route_all, registry, urls)
    if urls and not items:
        raise CrawlRefused(refusals)
    for item in items:
        item.listing = with_recheck(with_filters(item.listing, filters), recheck)
    if recheck and not any(item.listing for item in items) and (definition is None or definition["kind"] == "url_file"):
        raise WatchInvalid("recheck re-checks the items of the listings a watch reads: give a source that is a "
                           "listing or a feed, or a listing's URL (a url_file's or single items are re-checked "
                           "with trawl recheck)")
    # Each run puts its URLs and what its source expands to into its own frontier, read page by page.
    sid = schedule_id(settings, name)
    sweep = ExtrasSweep(runs_like(sid), refresh_extras_days, settings.watch.refresh_extras_limit) \
        if refresh_extras_days else None
    inp = CrawlInput(items=items, source=source, concurrency=concurrency, options=item_options(settings),
                     source_definition=with_recheck(definition, recheck), frontier=True, refresh_extras=sweep)
    # The schedule hands this input to every run: it must fit in one Temporal payload.
    if await encoded_size(client, inp) > MAX_CRAWL_BYTES:
        raise CrawlTooLarge(f"the watch's URLs make more than {MAX_CRAWL_BYTES} bytes: put them in a url_file "
                            "source and watch that")
    what = f"source {source} ({described})" if source else f"{len(items)} URL(s)"
    schedule = Schedule(
        action=ScheduleActionStartWorkflow(
            CRAWL_WORKFLOW, inp, id=f"crawl-{sid}", task_queue=workflow_queue(settings.temporal.task_queue_prefix),
            memo={"watch": name}, static_summary=f"watch {name}: {what}"[:200]),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=interval)], jitter=spread or None),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP, catchup_window=settings.watch.catchup_window),
        state=ScheduleState(paused=paused, note="paused when added" if paused else None),
    )
    try:
        await client.create_schedule(sid, schedule, memo={
            "watch": name, "source": source, "source_description": described, "source_settings": definition,
            "urls": len(items), "concurrency": concurrency, "refresh_extras_days": refresh_extras_days,
            "recheck": recheck})
    except ScheduleAlreadyRunningError:
        raise WatchExists(f"a watch named {name!r} exists already: remove it first (trawl watch remove {name}) "
                          "or pick another name") from None
    return await get_watch(client, settings, name), [refusal_line(r) for r in refusals]


async def list_watches(client: Client, settings: Settings) -> list[Watch]:
    """This deployment's watches (its task queue prefix), by name.

    Temporal lists schedules from its visibility store, which may lag a moment behind an add or a
    remove; each listed watch is then described as it is now.
    """
    prefix = schedule_id(settings, "")
    ids = sorted([s.id async for s in await client.list_schedules() if s.id.startswith(prefix)])
    found = await asyncio.gather(*(_described(client, settings, sid[len(prefix):]) for sid in ids))
    return [w for w in found if w is not None]


async def _described(client: Client, settings: Settings, name: str) -> Watch | None:
    try:
        return await get_watch(client, settings, name)
    except WatchNotFound:  # removed since it was listed
        return None


async def get_watch(client: Client, settings: Settings, name: str) -> Watch:
    desc = await _describe(client, settings, name)
    return await _watch(client, name, desc)


async def pause_watch(client: Client, settings: Settings, name: str, note: str = "paused") -> Watch:
    await _describe(client, settings, name)
    await client.get_schedule_handle(schedule_id(settings, name)).pause(note=note)
    return await get_watch(client, settings, name)


async def resume_watch(client: Client, settings: Settings, name: str) -> Watch:
    await _describe(client, settings, name)
    await client.get_schedule_handle(schedule_id(settings, name)).unpause(note="resumed")
    return await get_watch(client, settings, name)


async def trigger_watch(client: Client, settings: Settings, name: str) -> tuple[Watch, bool]:
    """Run the watch now, unless a run is going (then nothing starts: a watch never runs twice at once).

    Temporal names the run ``<action's workflow id>-<second it is due>``, and starts a triggered
    run even when an ended run has that name (a scheduled one it does not start then): a trigger in
    the same second as an ended run would be a second run under its id. So the trigger names its
    second: now, or the first second after it that no run of the watch was named after and that
    the interval does not fall on (a scheduled run never takes it). Waits until the schedule has
    taken the trigger (at most ``TRIGGER_WAIT_S``), so a trigger right after this one sees its run.

    Returns:
        The watch, and whether a run was asked for (False: one was running, or started meanwhile).
    """
    desc = await _describe(client, settings, name)
    if desc.info.running_actions:
        return await _watch(client, name, desc), False
    action = desc.schedule.action
    base = action.id if isinstance(action, ScheduleActionStartWorkflow) else f"crawl-{desc.id}"
    spec = desc.schedule.spec
    interval = spec.intervals[0] if len(spec.intervals) == 1 and not spec.calendars and not spec.cron_expressions \
        else None
    due = await _free_second(client, base, interval)
    actions, skipped = desc.info.num_actions, desc.info.num_actions_skipped_overlap
    stamp = Timestamp()
    stamp.FromDatetime(due)
    await client.workflow_service.patch_schedule(PatchScheduleRequest(
        namespace=client.namespace, schedule_id=desc.id, identity=client.identity, request_id=str(uuid.uuid4()),
        patch=SchedulePatch(trigger_immediately=TriggerImmediatelyRequest(scheduled_time=stamp))), retry=True)
    run_id = f"{base}-{_second(due)}"
    deadline = time.monotonic() + TRIGGER_WAIT_S
    while True:
        desc = await _describe(client, settings, name)
        ids = {a.action.workflow_id for a in desc.info.recent_actions}
        ids.update(a.workflow_id for a in desc.info.running_actions)
        if run_id not in ids and desc.info.num_actions_skipped_overlap > skipped:  # a scheduled run came first
            return await _watch(client, name, desc), False
        # (A server that ignores the trigger's time, older than the 1.32 the tests run, names the run itself.)
        if run_id in ids or desc.info.num_actions > actions or time.monotonic() > deadline:
            return await _watch(client, name, desc), True
        await asyncio.sleep(0.1)


async def remove_watch(client: Client, settings: Settings, name: str) -> Watch:
    """Delete the watch's schedule; a run going on finishes (cancel it as any crawl)."""
    watch = await get_watch(client, settings, name)
    try:
        await client.get_schedule_handle(watch.schedule_id).delete()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise _not_found(name) from None
        raise
    return watch


def watch_dict(watch: Watch) -> dict[str, Any]:
    """A watch as ``trawl watch list --json`` prints it and the API answers."""
    return dataclasses.asdict(watch)


def counts_text(run: WatchRun | None) -> str:
    """A run in a few words: when, its status, and its counts or why it failed."""
    if run is None:
        return "never ran"
    counts = (" ".join(run.error.split()) if run.error else "counts unknown" if run.new is None else
              f"{run.new} new, {run.duplicate} duplicate, {run.failed} failed")
    return f"{run.started_at[:19].replace('T', ' ')} {run.status.lower()}: {counts}"


# -- internals -------------------------------------------------------------------------------------
def _not_found(name: str) -> WatchNotFound:
    return WatchNotFound(f"no watch named {name!r} (trawl watch list shows them)")


def _absolute(path: str) -> bool:
    """Absolute on any worker's host (POSIX, or Windows with its drive)."""
    return PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute()


def _second(moment: datetime) -> str:
    """A moment as Temporal appends it to a scheduled run's workflow id (RFC 3339, whole seconds, UTC)."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


async def _free_second(client: Client, base: str, interval: ScheduleIntervalSpec | None) -> datetime:
    """The first second from now that names no run yet (``<base>-<second>``) and, for an interval
    of 2 s or more, is not one the interval falls on (every multiple of it since the epoch, plus
    its offset)."""
    every = int(interval.every.total_seconds()) if interval else 0
    offset = int(interval.offset.total_seconds()) if interval and interval.offset else 0
    due = datetime.now(timezone.utc).replace(microsecond=0)
    while True:
        if every < 2 or (int(due.timestamp()) - offset) % every:
            try:
                await client.get_workflow_handle(f"{base}-{_second(due)}").describe()
            except RPCError as err:
                if err.status == RPCStatusCode.NOT_FOUND:
                    return due
                raise
        due += timedelta(seconds=1)


async def _describe(client: Client, settings: Settings, name: str) -> ScheduleDescription:
    if not WATCH_NAME.fullmatch(name):
        raise _not_found(name)
    try:
        return await client.get_schedule_handle(schedule_id(settings, name)).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise _not_found(name) from None
        raise


async def _watch(client: Client, name: str, desc: ScheduleDescription) -> Watch:
    memo = await desc.memo()
    spec, info, state = desc.schedule.spec, desc.info, desc.schedule.state
    every = spec.intervals[0].every if spec.intervals else timedelta(0)
    last = info.recent_actions[-1] if info.recent_actions else None
    running = [a.workflow_id for a in info.running_actions if isinstance(a, ScheduleActionExecutionStartWorkflow)]
    return Watch(
        name=name, schedule_id=desc.id, source=memo.get("source"), source_description=memo.get("source_description"),
        source_settings=memo.get("source_settings"),
        urls=int(memo.get("urls") or 0), every=show_duration(every), jitter=show_duration(spec.jitter or timedelta(0)),
        concurrency=int(memo.get("concurrency") or 0), paused=state.paused, note=state.note,
        runs=info.num_actions, skipped_overlap=info.num_actions_skipped_overlap,
        missed_catchup=info.num_actions_missed_catchup_window, running=running,
        last_run=await run_of(client, last) if last is not None else None,
        next_run=_iso(info.next_action_times[0]) if info.next_action_times and not state.paused else None,
        created_at=_iso(info.created_at), refresh_extras_days=int(memo.get("refresh_extras_days") or 0),
        recheck=int(memo.get("recheck") or 0),
    )


async def run_of(client: Client, action: Any) -> WatchRun:
    """A run (one of a schedule's recent actions) with its crawl's status and counts."""
    crawl_id = action.action.workflow_id
    run = WatchRun(crawl_id, _iso(action.scheduled_at), _iso(action.started_at), "UNKNOWN")
    handle = crawl_handle(client, crawl_id)
    try:
        desc, stats = await asyncio.wait_for(crawl_state(handle), RUN_STATS_WAIT_S)
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:  # past the namespace's retention
            return dataclasses.replace(run, status="GONE")
        return run
    except (WorkflowQueryFailedError, TimeoutError):
        return run
    run.status = crawl_status(desc)
    if run.status == "FAILED":
        try:
            run.error, stats = await asyncio.wait_for(crawl_failure(handle), RUN_STATS_WAIT_S)
        except (RPCError, TimeoutError):
            pass
    if stats is not None:
        run.outcomes = dict(stats.outcomes)
        run.new = stats.outcomes.get("committed", 0)
        run.duplicate = stats.outcomes.get("duplicate", 0)
        run.failed = stats.outcomes.get("failed", 0)
    return run


def _iso(moment: datetime) -> str:
    return moment.isoformat()
