"""Everything that crosses Temporal: the types and names the workflows, the activities, the
worker and the clients (CLI, API) share, imported downward by all of them and defined once.

- Activities: one dataclass in, one out (``FetchInput`` -> ``FetchResult`` ...).
- Items: ``ItemOptions`` (the deployment's choices, fixed at start: queues, per-stage retry and
  timeout policies), ``ItemInput``, ``ItemResult``, ``Progress``.
- Names: workflow types, signals and queries, task queues, search attributes.

Workflows import this module passed through the sandbox, so its classes are built once per
worker process, not again for every item the sandbox starts; clients read results without
importing the workflows and their activities.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio.common import RetryPolicy, SearchAttributeKey

from trawl.errors import BY_CLASS, NON_RETRYABLE
from trawl.models import Asset, MoreItem, Resolved

# -- search attributes of the item and crawl workflows (registered by trawl.starter.embedded) ---
PLATFORM = SearchAttributeKey.for_keyword("Platform")
CANONICAL_KEY = SearchAttributeKey.for_keyword("CanonicalKey")
STAGE = SearchAttributeKey.for_keyword("Stage")
OUTCOME = SearchAttributeKey.for_keyword("Outcome")
CRAWL_ID = SearchAttributeKey.for_keyword("CrawlId")
# Columns for the Web UI's list (Keyword: shown as is, matched exactly; at most 255 characters).
TITLE = SearchAttributeKey.for_keyword("Title")
ERROR_CLASS = SearchAttributeKey.for_keyword("ErrorClass")
SEARCH_ATTRIBUTES = (PLATFORM, CANONICAL_KEY, STAGE, OUTCOME, CRAWL_ID, TITLE, ERROR_CLASS)

# -- workflow types, their signals and queries: the names clients address them by ---------------
ITEM_WORKFLOW = "MediaItemWorkflow"
CRAWL_WORKFLOW = "CrawlWorkflow"
EXTRAS_WORKFLOW = "ExtrasRefreshWorkflow"  # a committed item's extras fetched again, as a dated snapshot
PAUSE = "pause"  # signal, item and crawl: stop at the next step, downloads keeping their bytes
RESUME = "resume"  # signal, item and crawl
# signal, item: a live recording ends now, what it holds finished and committed (`trawl crawl`'s Ctrl-C)
END_RECORDING = "end_recording"
CANCEL_CRAWL = "cancel"  # signal, crawl (an item is cancelled through Temporal cancellation)
ADD_URLS = "add_urls"  # signal, crawl: list[CrawlItem]
FRONTIER_ADDED = "frontier_added"  # signal, crawl: FrontierGrew, what a client added to its frontier
DOWNLOAD_PROGRESS = "download_progress"  # signal, item: DownloadProgress, sent by the download activity
PROGRESS = "progress"  # query, item -> Progress
STATS = "stats"  # query, crawl -> CrawlStats
RESULTS = "results"  # query, crawl: the results recorded after a sequence number -> CrawlResults
RESULTS_READ = "results_read"  # signal, crawl: ResultsRead, how far a following command has printed

# -- per-stage retry and timeout policies, as data the starter builds from the settings ---------

STAGES = ("fetch", "download", "verify", "commit")
# The name a small item's one activity goes by among its running downloads and in its progress reports.
SMALL_ITEM_ASSET = "*"
# Failure classes that are expected outcomes, told in full by their class and message (a 404, a
# login wall, a lost host): their failures carry no stack trace (trawl.worker.interceptors) and a failed
# item's failure no chain of causes. internal_error (a bug) and unclassified failures keep both.
EXPECTED_FAILURES: frozenset[str] = (frozenset(BY_CLASS) - {"internal_error"}) | {"host_lost"}


@dataclass
class StagePolicy:
    initial_interval_s: float = 1.0
    backoff_coefficient: float = 2.0
    maximum_interval_s: float = 60.0
    maximum_attempts: int = 10
    start_to_close_s: float = 600.0
    schedule_to_close_s: float | None = None

    def retry_policy(self) -> RetryPolicy:
        """The stage's policy; classes retried only briefly (name_not_found) are retryable here
        and made final by the activity itself at their ``max_attempts`` (trawl.activities.application_errors)."""
        return RetryPolicy(
            initial_interval=timedelta(seconds=self.initial_interval_s),
            backoff_coefficient=self.backoff_coefficient,
            maximum_interval=timedelta(seconds=self.maximum_interval_s),
            # No attempt limit here: the activities apply maximum_attempts to every class but the
            # infrastructure ones, which retry until schedule_to_close (trawl.activities.application_errors).
            maximum_attempts=0,
            non_retryable_error_types=list(NON_RETRYABLE),
        )

    @property
    def start_to_close(self) -> timedelta:
        return timedelta(seconds=self.start_to_close_s)

    @property
    def schedule_to_close(self) -> timedelta | None:
        return None if self.schedule_to_close_s is None else timedelta(seconds=self.schedule_to_close_s)


@dataclass
class LiveParts:
    """How a live recording is cut into parts: a part ends at the first segment boundary at or
    past ``seconds`` of media or ``bytes`` (0: no size limit); the ``max_parts``-th takes the rest."""

    seconds: float = 3600.0
    bytes: int = 0
    max_parts: int = 200


@dataclass
class LivePart:
    """The part a recording's download is to record (DownloadInput.live_part)."""

    index: int  # 1, 2, ...: never reused (a part lost with its host leaves a hole, and a gap)
    seconds: float
    bytes: int = 0
    last: bool = False  # the last part allowed: it takes the rest of the recording
    # The record of the last part committed (DownloadResult.live), where the recording goes on
    # from on a host that does not hold its state; None: this is the first part.
    after: dict[str, Any] | None = None
    # The recording ends here, and why (source_ended: a re-fetch found the source over; url_expired:
    # no working address to be had): the part held is finished without reading the playlist.
    end: str = ""
    # Set by the download activity from its asset (Asset.live_after), not by the workflow: where an
    # earlier recording of the broadcast stopped; the first part of a new one goes on after it.
    earlier: dict[str, Any] | None = None


@dataclass
class ItemOptions:
    """Everything an item workflow needs to know about the deployment, fixed at start."""

    queue_prefix: str = "trawl"
    fetch: StagePolicy = field(default_factory=StagePolicy)
    download: StagePolicy = field(default_factory=StagePolicy)
    verify: StagePolicy = field(default_factory=StagePolicy)
    commit: StagePolicy = field(default_factory=StagePolicy)
    heartbeat_timeout_s: float = 10.0
    max_redownloads: int = 2
    max_refetches: int = 3
    # Host-local work (download, verify, commit of one item on the host that holds its bytes).
    local_schedule_to_start_s: float = 120.0
    max_host_changes: int = 3
    # Items of at most this many bytes (every asset's size known) run download, verify and commit
    # as one activity; 0 (runs started before it existed) never does.
    small_item_size: int = 0
    # Items of at most this many bytes (every asset's size known from the platform) are downloaded,
    # verified and committed by their first fetch: one activity for the whole item. 0: never.
    with_fetch_size: int = 0
    # That first fetch is the activity fetch_and_store_tiny; False (runs started before it): the
    # fetch activity, told with_fetch_size.
    tiny_activity: bool = False
    # An item past small_item_size of one file and its cover runs download, verify and commit as
    # one activity on the host it claimed (MediaItemWorkflow._one_activity_on_host); False (runs
    # started before it): an activity per stage there.
    one_activity_on_host: bool = False
    # A crawl's own choices (`trawl crawl -f`, `--limit-rate`); 0: the worker's settings.
    quality: int = 0  # the tallest video wanted, in lines (720 = 720p)
    limit_rate: int = 0  # bytes per second for each download
    audio: str = ""  # lossless, dolby or aac: where a platform offers several kinds (-f ...+ba[acodec=...])
    # Keep what the platform offers only as a preview, under a key of its own (download.keep_previews).
    keep_previews: bool = False
    # The extras' policy (retry.extras): a committed item's extras (Resolved.extras) are fetched,
    # each in an activity of its own (trawl.activities.extras). None (runs started before it): none.
    extras: StagePolicy | None = None
    # A live recording is committed in parts of this length (download.live_part_duration and
    # live_part_size); None (runs started before parts): it is one file, committed at its end.
    live_parts: LiveParts | None = None
    # A recording a URL's run finds is recorded by the broadcast's own workflow (its id names the
    # broadcast: broadcast_workflow_id), which every URL of it joins; False (runs started before):
    # the URL's run records it itself.
    broadcast_workflows: bool = False

    def fetch_queue(self, platform: str) -> str:
        return fetch_queue(self.queue_prefix, platform)

    @property
    def download_queue(self) -> str:
        return download_queue(self.queue_prefix)

    @property
    def join_queue(self) -> str:
        return join_queue(self.queue_prefix)


# ``trawl demo`` runs on the task queue prefix with this added: its settings (loopback allowed,
# simulated platforms) differ from the deployment's, and workers on one queue are interchangeable.
DEMO_QUEUE_SUFFIX = "-demo"


def extras_workflow_id(canonical_key: str) -> str:
    """An item's extras refresh (ExtrasRefreshWorkflow): one at a time, a second one joins it."""
    return f"extras-{canonical_key}"


@dataclass
class SweepInput:
    sweep: ExtrasSweep
    options: ItemOptions  # the watch's run's, handed to each refresh


def workflow_queue(prefix: str) -> str:
    return f"{prefix}-workflows"


def fetch_queue(prefix: str, platform: str) -> str:
    return f"{prefix}-fetch-{platform}"


def download_queue(prefix: str) -> str:
    return f"{prefix}-download"


def host_queue(prefix: str, host_id: str) -> str:
    """The worker-specific queue of one host: the work that needs its local partial files."""
    return f"{prefix}-host-{host_id}"


def join_queue(prefix: str) -> str:
    """Waiting for items another crawl or command started: its own queue, so a join never holds
    one of the pipeline's download slots while the item it waits for needs one."""
    return f"{prefix}-joins"


# -- activities' inputs and results -------------------------------------------------------------
@dataclass
class FetchInput:
    url: str
    workflow_id: str
    platform: str = ""
    # A re-fetch for fresh media URLs (after url_expired) must resolve: the catalog's answer has
    # no media URLs, and another URL form may have committed the item meanwhile.
    fresh_urls: bool = False
    quality: int = 0  # the crawl's -f as a height; 0: the platform's setting
    keep_previews: bool = False  # ItemOptions.keep_previews
    audio: str = ""  # ItemOptions.audio
    # The stage's attempt limit from the item's options (one source for the whole policy, whichever
    # worker runs it); None: the worker's own setting (runs started before the options carried it).
    stage_attempts: int | None = None
    # A first fetch may finish an item whose assets total at most this many bytes (download,
    # verify and commit, as small_item does) in the same activity (fetch_and_store_tiny; runs
    # started before it: fetch); 0: it only resolves.
    with_fetch_size: int = 0
    limit_rate: int = 0  # as DownloadInput's, for that download
    download_attempts: int | None = None  # the download stage's attempt limit, for its log lines
    # When the item's run started (ISO 8601): a retried fetch that finds the item committed by this
    # workflow id since then committed it itself (its reply was lost), rather than found a duplicate.
    run_started_at: str = ""
    # A first fetch may claim its own worker's host for an item that will claim one (not small by
    # this small_item_size: trawl.activities.host.claims_a_host) when that host has room; -1 (runs
    # started before it, and later fetches): it claims none.
    claim_host_over: int = -1


@dataclass
class StoredAsset:
    """A committed file: its blob in the store is ``key`` (``sha256/ab/cd/<sha256>``), wherever
    the store is; no worker's file path travels."""

    name: str
    kind: str
    sha256: str
    size: int
    # Results recorded before blobs had keys carry a ``path`` instead (ignored when read back).
    key: str = ""
    mime: str | None = None

    def __post_init__(self) -> None:
        # Such a result's blob has the key its sha256 names: the store's one key form,
        # ``sha256/ab/cd/<sha256>`` (trawl.storage.protocol.blob_key, which a stored key can never
        # leave; tests/test_contracts.py holds the two together).
        self.key = self.key or f"sha256/{self.sha256[:2]}/{self.sha256[2:4]}/{self.sha256}"


@dataclass
class FetchResult:
    resolved: Resolved
    committed: bool  # the catalog already holds this canonical key
    stored: list[StoredAsset] = field(default_factory=list)  # its assets, when committed
    # The item downloaded, verified and committed by fetch_and_store_tiny (FetchInput.with_fetch_size);
    # None: only resolved (not that small, or that attempt failed: the workflow goes on as usual).
    finished: CommitResult | None = None
    # The host's queue the fetch claimed for the item (FetchInput.claim_host_over); "": none.
    host_queue: str = ""


@dataclass
class DownloadInput:
    workflow_id: str
    asset: Asset
    platform: str = ""
    canonical_url: str = ""
    quality: int = 0  # HLS: the crawl's -f as a height; 0: download.hls_quality
    limit_rate: int = 0  # the crawl's --limit-rate; 0: download.limit_rate
    stage_attempts: int | None = None  # as FetchInput's
    live_part: LivePart | None = None  # a recording in parts: the part to record (None: all of it in one)


@dataclass
class DownloadResult:
    asset_name: str
    path: str
    size: int
    sha256: str
    url: str
    etag: str | None = None
    mime: str | None = None
    total: int | None = None
    resumed_from: int = 0
    transferred: int = 0
    connections: int = 1  # the most connections the download used at once (segments)
    # A part of a live recording: its record (trawl.download.live.part_record: its sequences,
    # seconds, where it starts in the recording, its gaps, and why the recording ended if it did).
    live: dict[str, Any] | None = None


@dataclass
class VerifyInput:
    asset: Asset
    download: DownloadResult
    platform: str = ""
    canonical_url: str = ""
    duration: float | None = None  # the platform's, checked with ffprobe when installed
    stage_attempts: int | None = None  # as FetchInput's


@dataclass
class VerifyResult:
    asset_name: str
    sniffed: str
    mime: str


@dataclass
class CommitFile:
    asset: Asset
    download: DownloadResult
    mime: str


@dataclass
class CommitInput:
    workflow_id: str
    source_url: str
    resolved: Resolved
    files: list[CommitFile] = field(default_factory=list)
    stage_attempts: int | None = None  # as FetchInput's
    # Add the files to the item (created with the first), not commit it once: a live recording's
    # parts as they are recorded, then its other files.
    append: bool = False


@dataclass
class CommitResult:
    outcome: str  # committed | duplicate
    assets: list[StoredAsset] = field(default_factory=list)


@dataclass
class DiscardInput:
    workflow_id: str
    asset_names: list[str] = field(default_factory=list)  # empty: the whole work directory
    platform: str = ""
    canonical_url: str = ""


@dataclass
class SmallItemInput:
    workflow_id: str
    source_url: str
    resolved: Resolved
    quality: int = 0  # the crawl's -f and --limit-rate, as in DownloadInput
    limit_rate: int = 0
    # As FetchInput's, of the download stage whose policy the activity runs under: it applies to
    # the verify and commit done inside too.
    stage_attempts: int | None = None


@dataclass
class ExtraInput:
    """Fetch one extra (``extra``: a name of the platform's, Resolved.extras) of a committed item."""

    workflow_id: str
    resolved: Resolved
    extra: str
    stage_attempts: int | None = None  # as FetchInput's
    # A refresh's snapshot (``20261205T130800Z``): its files are stored as ``<name>@<snapshot>``,
    # beside the earlier ones, never over them; "": the item's first extras.
    snapshot: str = ""


@dataclass
class StoredExtra:
    """A file an extra stored (``key``), or one recorded missing (``missing``: its error class)."""

    name: str
    kind: str
    language: str = ""
    key: str = ""
    sha256: str = ""
    size: int = 0
    mime: str | None = None
    missing: str = ""
    reason: str = ""

    @property
    def blob(self) -> str:
        """Its blob's key (an item's result leaves ``key`` out: a crawl carries many results)."""
        sha = self.sha256
        return self.key or (f"sha256/{sha[:2]}/{sha[2:4]}/{sha}" if sha else "")


@dataclass
class ExtraResult:
    extra: str
    files: list[StoredExtra] = field(default_factory=list)


@dataclass
class RefreshInput:
    """Fetch a committed item's extras again (``extras``: those named; empty: every one that applies)."""

    canonical_key: str
    platform: str
    extras: list[str] = field(default_factory=list)
    options: ItemOptions = field(default_factory=ItemOptions)


@dataclass
class PlanInput:
    canonical_key: str
    extras: list[str] = field(default_factory=list)


@dataclass
class PlanResult:
    """The committed item as its extras need it (no media URLs), and the extras to fetch."""

    resolved: Resolved
    extras: list[str] = field(default_factory=list)


@dataclass
class RefreshResult:
    canonical_key: str
    snapshot: str
    extras: list[StoredExtra] = field(default_factory=list)


@dataclass
class MissingExtraInput:
    """Record an extra that kept failing as missing, with its class and reason."""

    workflow_id: str
    canonical_key: str
    platform: str
    extra: str
    error_class: str
    reason: str


# -- the item workflow's input, result and what it reports --------------------------------------
@dataclass
class ItemInput:
    url: str
    platform: str = "generic"
    crawl_id: str | None = None
    options: ItemOptions = field(default_factory=ItemOptions)
    # The broadcast this run records, resolved by the URL's run that handed it over (the run's id
    # is broadcast_workflow_id of its key): no first fetch, no hand-over. None: a run of a URL.
    broadcast: Resolved | None = None


def broadcast_workflow_id(canonical_key: str) -> str:
    """The workflow id of the recording of one broadcast: its item's key names the room (or the
    playlist's URL) and the broadcast's start, so however many URLs and crawls ask for it, it is
    recorded once."""
    return f"item-{canonical_key}"


@dataclass
class BroadcastInput:
    """Start (or join) the recording of a broadcast (the activity record_broadcast) and wait for it."""

    workflow_id: str  # broadcast_workflow_id
    task_queue: str  # the item workflows' queue
    item: ItemInput  # the broadcast run's input (ItemInput.broadcast set)
    summary: str = ""


@dataclass
class ItemResult:
    workflow_id: str
    url: str
    outcome: str  # committed | duplicate | failed | cancelled
    canonical_key: str | None = None
    platform: str | None = None
    title: str | None = None
    error_class: str | None = None
    error: str | None = None
    assets: list[StoredAsset] = field(default_factory=list)
    # Other items the URL stands for (parts 2..N of a bare multi-part video URL), routed: whoever
    # started this item starts them as their own items.
    more: list[MoreItem] = field(default_factory=list)
    # Its extras once committed (ItemOptions.extras): each file stored or recorded missing.
    extras: list[StoredExtra] = field(default_factory=list)

    @classmethod
    def from_details(cls, fields: dict[str, Any], url: str = "") -> ItemResult:
        """A failed item's result as its failure's details carry it (plain dicts), for ``url``."""
        result = cls(**{k: v for k, v in fields.items() if k in {f.name for f in dataclasses.fields(cls)}})
        asset_fields = {f.name for f in dataclasses.fields(StoredAsset)}
        result.assets = [StoredAsset(**{k: v for k, v in a.items() if k in asset_fields}) if isinstance(a, dict)
                         else a for a in result.assets]
        result.more = [m for m in map(MoreItem.of, result.more) if m is not None]
        extra_fields = {f.name for f in dataclasses.fields(StoredExtra)}
        result.extras = [StoredExtra(**{k: v for k, v in e.items() if k in extra_fields}) if isinstance(e, dict)
                         else e for e in result.extras]
        result.url = url or result.url
        return result


@dataclass
class Progress:
    stage: str = "queued"
    bytes_done: int = 0  # verified assets plus the bytes last reported (or kept) by running downloads
    bytes_total: int | None = None
    attempt: int = 1
    last_error: str | None = None
    paused: bool = False
    bytes_finished: int = 0  # verified assets only
    # The broadcast's own workflow that records what this item found (broadcast_workflow_id): its
    # progress is the recording's; this run only waits for it (and passes pause and resume on).
    recording: str | None = None


@dataclass
class DownloadProgress:
    """What a running download reports to its item now and then (and what a paused one kept)."""

    asset: str
    bytes_done: int
    bytes_total: int | None = None
    # The stage a small item's one activity is really in when its download is done but a later
    # stage waits (a commit retried while the store is down); "": the report is a download's.
    stage: str = ""
    # A live recording's measures (trawl.download.live.recording_view), for the details line.
    live: dict[str, Any] | None = None


# -- crawls --------------------------------------------------------------------------------------
@dataclass
class CrawlItem:
    url: str
    platform: str
    workflow_id: str
    # A listing URL (a profile, a collection, a feed): the source it stands for
    # (trawl.sources.source_definition's shape), expanded by the crawl into its items.
    listing: dict[str, Any] | None = None


@dataclass
class Refusal:
    """A URL refused offline (no resolver takes it, or a login-only listing), and why; ``index``
    is where it stood in the list given."""

    index: int
    url: str
    error_class: str
    message: str

    def __str__(self) -> str:
        return f"{self.url}: {self.error_class}: {self.message}"


@dataclass
class ExpandInput:
    source: str
    stage_attempts: int | None = None  # as FetchInput's
    # The source's definition (trawl.sources.source_definition) when the crawl carries it; None:
    # the source of that name in the worker's settings.
    definition: dict[str, Any] | None = None
    # The crawl whose frontier takes the items (none come back in the result); None: they come back.
    crawl_id: str | None = None


@dataclass
class ExtrasSweep:
    """A watch's option: each run fetches again (as ``trawl extras`` does, a dated snapshot) the
    extras of the items its runs brought that are younger than ``days`` days, by their publication
    date (else by when they were committed), at most ``limit`` of them, the youngest first.

    ``runs_like``: what the watch's runs' crawl ids look like (a SQL LIKE pattern, ``crawl-<schedule
    id>-`` and Temporal's timestamp), so the items of a watch named ``a-b`` are not ``a``'s."""

    runs_like: str
    days: int
    limit: int = 50


@dataclass
class SweepResult:
    started: int = 0  # refreshes started (or joined: one of the item was running)


@dataclass
class ExpandResult:
    items: list[CrawlItem] = field(default_factory=list)  # none when the expansion went to a frontier
    refused: list[str] = field(default_factory=list)  # URLs no resolver takes, with the reason
    # URLs of committed items, known without a request: duplicates that need no item workflow
    # (nor a slot of their platform's rate-limited fetch queue).
    known: list[str] = field(default_factory=list)
    # Into a crawl's frontier (ExpandInput.crawl_id): entries added, and URLs it held already.
    added: int = 0
    repeated: int = 0


@dataclass
class FrontierGrew:
    """Entries a client added to a crawl's frontier, and URLs it gave that the frontier held already
    (the same item twice in one crawl: a duplicate)."""

    added: int = 0
    repeated: int = 0
    refused: list[str] = field(default_factory=list)  # URLs refused offline, "URL: why" (the latest few)


@dataclass
class FrontierAdd:
    """Entries for a crawl's frontier (a watch run's URLs, carried in its input)."""

    crawl_id: str
    items: list[CrawlItem] = field(default_factory=list)


@dataclass
class FrontierRead:
    crawl_id: str
    after: int  # the cursor: the last entry read
    limit: int = 200


@dataclass
class FrontierPage:
    """The next entries of a crawl's frontier: those to start, and the known ones only counted."""

    items: list[CrawlItem] = field(default_factory=list)
    known: int = 0  # committed items the catalog knows offline: duplicates, no item workflow
    read: int = 0  # entries read (items, known ones, listings); 0: nothing after the cursor
    cursor: int = 0  # the last entry read
    # The known ones themselves (``known`` counts them), so a crawl followed by a command shows
    # each one's line; runs recorded before this field read it empty.
    known_items: list[CrawlItem] = field(default_factory=list)


@dataclass
class JoinInput:
    workflow_id: str


@dataclass
class JoinResult:
    outcome: str  # an item outcome, or "missing" when no such workflow exists
    bytes: int = 0
    error_class: str | None = None


@dataclass
class CrawlState:
    """Everything a crawl carries across continue-as-new."""

    pending: list[CrawlItem] = field(default_factory=list)
    in_flight: list[CrawlItem] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    refused: list[str] = field(default_factory=list)
    started_at: str = ""
    paused: bool = False
    cancelled: bool = False
    source_expanded: bool = False
    runs: int = 1
    # Items in flight that another crawl or command started: this crawl only waits for them.
    joined: list[str] = field(default_factory=list)
    # The listings expanded so far (their CrawlItem.workflow_id): each once, even when a feed or
    # another listing names it again.
    listed: list[str] = field(default_factory=list)
    # Refusals counted but no longer kept (``refused`` keeps the latest KEPT_REFUSALS).
    refused_dropped: int = 0
    # A crawl whose URLs live in the catalog's frontier (CrawlInput.frontier): entries added and
    # read so far, the cursor (the last entry read), and whether the last read found none.
    frontier_added: int = 0
    frontier_read: int = 0
    cursor: int = 0
    exhausted: bool = False
    # Results recorded so far (the sequence number of the next one), the latest ones themselves
    # (a followed crawl carries the ones its command has not read), how far the following
    # command has read, and whether it let go (or was given up on): see CrawlInput.follow.
    reported: int = 0
    results: list[ItemResult] = field(default_factory=list)
    results_read: int = 0
    unfollowed: bool = False


@dataclass
class CrawlInput:
    items: list[CrawlItem] = field(default_factory=list)
    source: str | None = None
    concurrency: int = 8
    options: ItemOptions = field(default_factory=ItemOptions)
    # Continue as new once the history holds this many events (the server's limit is 51,200).
    history_limit: int = 10_000
    state: CrawlState | None = None
    # The source's definition (trawl.sources.source_definition), which a watch's runs carry: the
    # worker expands it whatever its settings hold. None: the source named ``source`` in the
    # settings of the worker that expands it.
    source_definition: dict[str, Any] | None = None
    # The crawl's URLs live in the catalog's frontier (table crawl_frontier, under the crawl's
    # workflow id), read page by page: no payload grows with the crawl. ``items`` are added to it
    # first; ``frontier_added`` counts what the starter put there already.
    frontier: bool = False
    frontier_added: int = 0
    # A command prints this crawl's results as they come (an attached ``trawl crawl``): the crawl
    # starts and reads nothing more while RESULTS_BACKLOG results wait unread, so none is dropped
    # before the command has read it, unless the command stops reading for FOLLOWER_PATIENCE_S.
    follow: bool = False
    # A watch's runs refresh the extras of its young items first (trawl.starter.watches); None: not.
    refresh_extras: ExtrasSweep | None = None


# Entries a crawl reads from its frontier at once: what it carries queued (about 75 kB) and one
# activity per page (6 history events), so 20,000 URLs cost 40 pages.
FRONTIER_PAGE = 500
KEPT_REFUSALS = 100  # the latest refusals a crawl carries (all are counted)
# The type of the failure of a crawl whose frontier entries its workers' catalog does not hold
# (the starter wrote them to another catalog).
FRONTIER_MISSING = "frontier_missing"
SOURCE_FAILED = "source_failed"  # the type of the failure of a crawl whose source was not expanded


@dataclass
class CrawlStats:
    queued: int
    running: int
    finished: int
    outcomes: dict[str, int]
    bytes: int
    refused: int
    started_at: str
    finished_at: str | None
    paused: bool
    cancelled: bool
    runs: int
    error: str | None = None  # why the crawl failed: its source could not be expanded
    frontier: bool = False  # its URLs live in the catalog's frontier (CrawlInput.frontier)
    # The latest refusals, each "URL: why" (a URL no resolver takes, a listing that could not be
    # read); ``refused`` counts them all.
    refusals: list[str] = field(default_factory=list)


@dataclass
class CrawlEnded(CrawlStats):
    """What a crawl returns: its stats and, when a command followed it, its last results (at
    most RESULTS_TAIL), numbered from ``last_results_from``, so that command reads its last page
    from there, not by a query a worker must answer by replaying the closed crawl. -1: none
    returned (nobody followed it, or it is from before they were returned). Read as CrawlStats
    (the API, crawl-status), the results are left out: unknown fields are ignored."""

    last_results: list[ItemResult] = field(default_factory=list)
    last_results_from: int = -1


RESULTS_TAIL = 50  # results a followed crawl returns at its end (CrawlStats.last_results)
RESULTS_KEPT = 4000  # the latest results a crawl keeps for its query (RESULTS)
RESULTS_BACKLOG = 1000  # unread results a followed crawl lets wait before it holds back
RESULTS_PAGE = 500  # results one query returns at most
FOLLOWER_PATIENCE_S = 60  # a followed crawl held back this long without a read goes on alone


@dataclass
class ResultsRead:
    """How far a command following a crawl has read its results (``RESULTS_READ``); ``leaving``:
    it stops following (Ctrl-C), so the crawl no longer holds back for it."""

    read: int
    leaving: bool = False


@dataclass
class CrawlResults:
    """A page of a crawl's results (``RESULTS``) with its counts, for a command that follows it.

    ``results`` are those recorded from ``first`` on (at most RESULTS_PAGE); ``next`` is the
    number to ask from next time; ``missed`` counts results after the one asked for that are no
    longer kept. ``running`` names some running items (for their progress). ``wants_read``: the
    crawl holds back until the command signals how far it has read.
    """

    results: list[ItemResult]
    first: int
    next: int
    missed: int
    stats: CrawlStats
    running: list[CrawlItem] = field(default_factory=list)
    wants_read: bool = False  # held back until the command says how far it read (RESULTS_READ)
