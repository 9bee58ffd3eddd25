"""All of trawl's configuration: one pydantic-settings class.

Sources, strongest first: keyword arguments (tests), environment variables (``TRAWL_`` prefix,
``__`` between nested names, e.g. ``TRAWL_NET__ALLOW_PRIVATE=true``), then ``trawl.toml`` in the
working directory (or the file named by ``TRAWL_CONFIG`` instead), then the user's own
``$XDG_CONFIG_HOME/trawl/trawl.toml`` (``~/.config/trawl/trawl.toml``); the two files are merged
table by table. Sizes take units (``10G``, ``500MiB``: :mod:`trawl.sizes`). Built once in each
process's ``main()`` and passed down; workflow code never reads it.

``[platforms]`` has a section per platform of :data:`trawl.platforms.registry.PLATFORMS`, each
the model its platform module declares; the source kinds include the kinds the platforms list.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import re
import tomllib
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from trawl.durations import parse_duration
from trawl.errors import redact
from trawl.netguard import is_allowed
from trawl.proxies import check_proxy_url
from trawl.paths import (  # noqa: F401 - read here too
    DEFAULT_DATA_DIR_SHOWN, config_file, config_files, default_data_dir, user_config_file)
# PlatformSettings, every [platforms.<name>] section's base, is read from here too.
from trawl.platforms.platform import Platform, PlatformSettings, PlatformsSettingsBase, platforms_model  # noqa: F401
from trawl.platforms.registry import PLATFORMS, listing_kinds
from trawl.sizes import parse_size

Duration = Annotated[timedelta, BeforeValidator(parse_duration)]
ByteSize = Annotated[int, BeforeValidator(parse_size)]  # 1048576, "64K", "500MiB", "10G"

MiB = 1024 * 1024
GiB = 1024 * MiB


class ConfigError(Exception):
    """The configuration cannot be used; the message names the setting and the problem."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


_HOST_PORT = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>[0-9]{1,5})")


class TemporalSettings(_Section):
    # The Temporal frontend (HOST:PORT); a server already answering here is used as is, else the
    # embedded server listens here.
    address: str = "127.0.0.1:7233"
    namespace: str = "default"  # the Temporal namespace trawl's workflows and search attributes live in
    # Start the Temporal CLI dev server when nothing answers at `address`.
    embedded: bool = True
    ui_port: int = 8233  # the embedded server's Web UI port (the web page links to it)
    # The embedded server a one-shot command (`trawl crawl URL`) starts keeps running in the
    # background, with a worker, for the commands after it, and stops by itself once no command
    # has used it and its worker has run no activity for this long (`trawl down` stops it now).
    # 0: no background server; it stops with the last command using it.
    idle_timeout: Duration = Field(default=timedelta(minutes=10), ge=timedelta(0), le=timedelta(days=7))
    # Prefix of every task queue, so two deployments can share one server.
    task_queue_prefix: str = "trawl"
    # A server beyond localhost (self-hosted with TLS, or Temporal Cloud). The SDK's environment
    # configuration is read first (TOML profiles in TEMPORAL_CONFIG_FILE or the default location,
    # profile TEMPORAL_PROFILE or this one, and TEMPORAL_* variables); what is set here wins.
    profile: str = ""
    api_key: str = ""  # an API key for the server (Temporal Cloud)
    tls: bool = False  # on by itself with an API key or any certificate below
    tls_server_ca: Path | None = None  # PEM file of the server's CA (default: the system's roots)
    tls_client_cert: Path | None = None  # mTLS client certificate (PEM)
    tls_client_key: Path | None = None  # mTLS client key (PEM)
    tls_server_name: str = ""  # SNI / certificate name, when it differs from the address

    @field_validator("address")
    @classmethod
    def _host_port(cls, value: str) -> str:
        match = _HOST_PORT.fullmatch(value.strip())
        if not match or not 0 < int(match["port"]) < 65536:
            raise ValueError("expected HOST:PORT, e.g. 127.0.0.1:7233 or temporal:7233")
        return value.strip()


class CatalogSettings(_Section):
    # SQLAlchemy URL; empty means SQLite at <data_dir>/catalog.db.
    url: str = ""
    # Search reads an item's extras line by line (a subtitle cue, a danmaku, a comment): the first
    # this many lines of each kind of an item are indexed, each cut to 300 characters; 0 indexes
    # none. The index costs about 17 bytes a character of text (docs/library.md).
    search_extras_lines: int = Field(default=2000, ge=0, le=100_000)


_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


class StorageSettings(_Section):
    # Where blobs live: empty = <data_dir>/blobs; a directory path; or s3://bucket/prefix for any
    # S3-compatible store (credentials from the standard AWS variables and files).
    url: str = ""
    # The S3 API endpoint of a store that is not AWS (MinIO, SeaweedFS), e.g. http://minio:9000;
    # empty: AWS. A custom endpoint is addressed path-style (http://host/bucket/key).
    s3_endpoint_url: str = ""
    # Empty: from AWS_REGION / the AWS config file, else us-east-1.
    s3_region: str = ""
    # Files larger than one part are uploaded in parts of this size, s3_concurrency at a time
    # (each part is held in memory while it is sent: memory per upload is about
    # (s3_concurrency + 1) x s3_part_size). S3's smallest part is 5 MiB.
    s3_part_size: ByteSize = Field(default=8 * MiB, ge=5 * MiB, le=1 * GiB)
    s3_concurrency: int = Field(default=4, ge=1, le=64)  # parts of one upload sent at once (see s3_part_size)
    # The longest an object store request may wait to connect, or for its next bytes to go or
    # come (not its whole length); one that met no answer is sent again (s3_outage_wait).
    s3_timeout: Duration = Field(default=timedelta(seconds=10), gt=timedelta(0))
    # A request that cannot reach the store (refused, reset, timed out) is sent again every 0.5 s
    # for this long before its activity fails as storage_error (and retries at most 5 s apart):
    # an outage shorter than this costs an item no failed attempt, and it goes on within about
    # 0.5 s of the store's return, from where its upload was. An item waiting so shows as
    # committing, not as waiting for storage_error, until this has passed.
    s3_outage_wait: Duration = Field(default=timedelta(seconds=60), ge=timedelta(0))
    # A multipart upload begun this long ago and neither completed nor aborted (its worker was
    # killed, or the store was down when it tried to abort) is abandoned: the workers' clean-up
    # and `trawl fsck --repair` abort it, and `trawl setup` sets the bucket's lifecycle rule to
    # (in whole days). Longer than any commit's start_to_close, so no upload still running is hit.
    # A blob no item names, stored this long ago and not announced by a commit since (an attempt
    # killed between its put and its row), is abandoned too: removed by the same two.
    abandon_uploads_after: Duration = Field(default=timedelta(hours=24), gt=timedelta(0))

    @field_validator("url")
    @classmethod
    def _store_url(cls, value: str) -> str:
        value = value.strip()
        if value.startswith("s3://"):
            bucket = value.removeprefix("s3://").split("/", 1)[0]
            if not _BUCKET.fullmatch(bucket):
                raise ValueError("expected s3://BUCKET or s3://BUCKET/PREFIX with a valid bucket name")
        elif "://" in value:
            raise ValueError("expected a directory path or s3://BUCKET/PREFIX")
        return value


class NetSettings(_Section):
    # Allow loopback and private targets (refused by default: blocked_address); the demo and
    # tests turn it on for the simulator.
    allow_private: bool = False
    # Networks (CIDR) allowed even though they are private, e.g. ["10.20.0.0/16"] for an
    # internal media server; everything else private stays refused.
    allowed_networks: list[str] = []
    # An HTTP(S) proxy for all outbound traffic (HTTP_PROXY/HTTPS_PROXY/NO_PROXY are honoured too).
    proxy: str = ""
    # Several HTTP(S) proxies, e.g. ["http://user:pass@proxy1.example:3128", "http://proxy2.example:8080"]:
    # each platform's requests take them in turn, and one that fails (unreachable, 407, its own
    # 5xx) is rested for proxy_rest. net.proxy, if set too, is the first; the HTTP(S)_PROXY
    # variables are not read then. Checked at start: an entry that does not parse, or whose address
    # the guard refuses (a private one, unless allow_private or allowed_networks), stops the command.
    proxies: list[str] = []
    # How long a proxy that failed is skipped (when all are resting, the one back soonest is tried).
    proxy_rest: Duration = Field(default=timedelta(seconds=60), gt=timedelta(0))
    # Server errors in a row that are the proxy's own (a CONNECT answered 5xx, a 5xx with
    # Proxy-Status or X-Squid-Error) that rest it; unreachable and 407 rest it at once.
    proxy_failures: int = Field(default=3, ge=1)
    # A CA bundle file for TLS verification (a corporate proxy's CA, say), or a directory of CA
    # certificates; empty: certifi's. Checked at start (it exists, a file holds a certificate) and
    # made absolute, as the background worker reads it from another working directory.
    ca_bundle: str = ""
    user_agent: str = "trawl/0.1 (media crawler)"  # the User-Agent of the HTTP client's requests
    # The HTTP client waits this long at most to connect (and for a free pooled connection) ...
    connect_timeout: Duration = timedelta(seconds=10)
    read_timeout: Duration = timedelta(seconds=30)  # ... and this long for the next bytes to go or come
    max_redirects: int = Field(default=10, ge=0, le=50)  # redirects followed at most
    # Largest HTML/JSON page a resolver reads.
    max_page_bytes: ByteSize = Field(default=5 * MiB, gt=0)
    # Connections the process's one HTTP client may hold at once, over every download, segment
    # and fetch. 0: derived from the worker's slots (see derived_max_connections). A request that
    # finds none free within connect_timeout fails as network_timeout naming this setting.
    max_connections: int = Field(default=0, ge=0)


    @field_validator("allowed_networks")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for network in value:
            ipaddress.ip_network(network, strict=False)  # ValueError names the bad entry
        return value

    @field_validator("ca_bundle")
    @classmethod
    def _ca_bundle(cls, value: str) -> str:
        if not value.strip():
            return ""
        path = Path(value.strip()).expanduser().absolute()
        if path.is_dir():
            return str(path)
        if not path.is_file():
            raise ValueError(f"no such file or directory: {path} (a PEM file of CA certificates, a directory of "
                             "them, or empty for certifi's)")
        import ssl

        from trawl.http_client import tls_context  # here: settings load without the HTTP client

        try:
            tls_context(str(path))  # kept: this process's clients use the context read here
        except (OSError, ssl.SSLError) as err:
            raise ValueError(f"{path} holds no CA certificate that can be read ({err})") from None
        return str(path)

    @field_validator("proxies")
    @classmethod
    def _proxies(cls, value: list[str], info: ValidationInfo) -> list[str]:
        """Each entry parses; one written as an address the guard refuses is refused here (a name is
        resolved and checked when the HTTP client is made, :func:`trawl.http_client.make_client`)."""
        for entry in value:
            check_proxy_url(entry)  # ValueError names the bad entry
            if info.data.get("allow_private"):
                continue
            host = (urlsplit(entry.strip()).hostname or "").split("%", 1)[0]
            try:
                literal = ipaddress.ip_address(host)
            except ValueError:
                continue
            if not is_allowed(str(literal), tuple(info.data.get("allowed_networks") or ())):
                raise ValueError(f"the proxy {redact(entry)} is a private address, refused by the address guard; "
                                 "add it to net.allowed_networks (or set net.allow_private)")
        return value

    @property
    def pool_size(self) -> int:
        """The connections the HTTP client's pool holds: ``max_connections``, or (0, these settings
        made outside :class:`Settings`) :data:`DEFAULT_MAX_CONNECTIONS`, the default worker's."""
        return self.max_connections or DEFAULT_MAX_CONNECTIONS


class DownloadSettings(_Section):
    chunk_size: ByteSize = Field(default=1 * MiB, ge=16 * 1024)  # read by no code today (accepted, has no effect)
    max_file_size: ByteSize = Field(default=20 * GiB, gt=0)  # larger files fail as too_large
    # Bytes of work_dir's filesystem that downloads leave free (for the state records beside the
    # partial files, and whatever else shares the filesystem). A download of known size takes
    # the room of its whole file before writing, waits (storage_error) while there is none, and
    # fails as too_large if the filesystem, less this, could never hold it (docs/limits.md).
    keep_free: ByteSize = Field(default=1 * MiB, ge=0)
    # A running activity that sends no heartbeat for this long counts as lost (worker_lost) and is
    # retried.
    heartbeat_timeout: Duration = timedelta(seconds=10)
    # A corrupt file is deleted and downloaded again at most this many times.
    max_redownloads: int = Field(default=2, ge=0)
    # Partial files of a failed item stay this long (a re-crawl resumes from them); then the
    # workers' clean-up removes them.
    keep_failed_partials: Duration = timedelta(hours=24)
    # Connections per file for files of at least segment_min_size bytes on servers that honour
    # Range (throttled CDNs limit each connection); 1 turns segments off. Per platform:
    # segments_by_platform = {"<platform>": 8}.
    segments: int = Field(default=4, ge=1, le=32)
    segments_by_platform: dict[str, int] = {}  # segments for one platform's files instead, e.g. {"<platform>" = 8}
    segment_min_size: ByteSize = Field(default=32 * MiB, ge=1 * MiB)  # smaller files use one connection
    # A fresh segmented download opens its extra connections once the first one would need
    # longer than this for the rest of the file ("0s": at once); a server fast enough over one
    # connection then gets the segments one after another over that one.
    split_after: Duration = timedelta(seconds=2)
    # Extra connections that segments may open to one host, across the downloads of a process.
    max_connections_per_host: int = Field(default=8, ge=0)
    # verify re-reads the whole file and re-hashes it (strict); off, it trusts the sha256 hashed
    # while streaming (and reads the file only for a platform md5). fsck finds rot later.
    verify_rehash: bool = False
    # An item whose assets are all known (from the platform) to total at most this many bytes is
    # downloaded, verified and committed in one activity on any host (a retry starts over); 0
    # turns this off.
    # 16 MiB: three activity round trips fewer per item (claim, verify, commit) took bench/batch.py
    # (30 files of 8 MiB) from 1.05-1.07x aria2c's time to about 1.0x; the price is that a retry
    # landing on another host downloads up to 16 MiB again.
    small_item_size: ByteSize = Field(default=16 * MiB, ge=0)
    # A larger item of one file (and its cover) runs download, verify and commit as one activity
    # on the host it claimed (the one that keeps its partial files, where retries resume and a
    # file already verified is not downloaded again); DASH's video and audio, a gallery or a live
    # recording take an activity per file and stage there, side by side. Two activity round trips
    # fewer: on a throttled 96 MiB file the item ended 16-18 ms after its download activity
    # instead of 88-138 ms, 37 history events instead of 43 (docs/benchmarks.md). False: an
    # activity per stage. Read where items are started (the command, the API): a watch keeps the
    # options it was created with.
    one_activity_on_host: bool = True
    # An item whose assets are all known to total at most this many bytes is downloaded, verified
    # and committed by its first fetch, the activity fetch_and_store_tiny on the platform's fetch
    # queue (every item's first fetch is that activity; it only resolves the others): one activity
    # and no search-attribute upsert before its outcome (docs/benchmarks.md, bench/cost.py: 22
    # history events became 14). Kept small because the download then holds a fetch slot (8 per
    # platform and worker) and must fit fetch's start_to_close. If that attempt fails, or a
    # limit_rate would make it slow, the item goes on as a small item. 0 turns it off. On since
    # the crawl decides from its own record (patch crawl-own-record) and blobs a killed commit
    # stored are reclaimed (blob_intents): the chaos test is green with it on.
    with_fetch_size: ByteSize = Field(default=1 * MiB, ge=0)
    # What a platform offers only as a preview or trailer (a supporter-only video's free minutes)
    # fails as preview_only by default: stored under the video's key it would make the real video
    # a duplicate for ever. True keeps it under a key of its own (<key>:preview), marked as a
    # preview in its metadata and in `trawl items` (`trawl crawl --keep-previews` for one crawl).
    keep_previews: bool = False
    # HLS: the variant of a master playlist is the tallest at or below this many lines (1080 =
    # 1080p), else the lowest; variants without a RESOLUTION rank by bandwidth.
    hls_quality: int = Field(default=1080, ge=1)
    # Live HLS recordings (docs/live.md): a recording ends once it holds this much media, for a
    # playlist that never gains EXT-X-ENDLIST; what it holds is committed. At most 48 hours, and
    # shorter than retry.download.schedule_to_close (left at its default, 0.9 of a shorter one);
    # keep it under retry.download.start_to_close too, or the attempt times out first (the next
    # one goes on from the last media sequence).
    live_max_duration: Duration = Field(default=timedelta(hours=4), gt=timedelta(0), le=timedelta(hours=48))
    # A live playlist that gains no new segment (or cannot be read) for this long has stalled: the
    # recording ends and what it holds is committed (a recording that holds nothing fails as
    # not_found). From 5 seconds to 1 hour.
    live_stall_timeout: Duration = Field(default=timedelta(seconds=60), ge=timedelta(seconds=5),
                                         le=timedelta(hours=1))
    # A recording is committed in parts as it goes (docs/live.md), each a playable file: a part
    # ends at the first segment boundary at or past this much media (from 2 seconds to 24 hours)...
    live_part_duration: Duration = Field(default=timedelta(hours=1), ge=timedelta(seconds=2),
                                         le=timedelta(hours=24))
    # ...or at or past this many bytes ("2G"; 0: no size limit, at least 1 MiB otherwise). A
    # recording has at most 200 parts (its workflow's history stays bounded): the 200th takes the rest.
    live_part_size: ByteSize = Field(default=0, ge=0)

    # Bytes per second for each download (yt-dlp's --limit-rate, e.g. "500K", "2M"); 0: no limit.
    # A limited download uses one connection.
    limit_rate: ByteSize = Field(default=0, ge=0)

    @field_validator("live_part_size")
    @classmethod
    def _part_size_holds_segments(cls, value: int) -> int:
        if 0 < value < MiB:
            raise ValueError("a part of a recording must be 0 (no size limit) or at least 1 MiB")
        return value

    def segments_for(self, platform: str) -> int:
        return self.segments_by_platform.get(platform, self.segments)


class WorkerSettings(_Section):
    processes: int = Field(default=1, ge=1)  # worker processes `trawl worker` supervises (--processes)
    # Download slots of each of the worker's two download queues (shared and host-local).
    max_concurrent_activities: int = Field(default=16, ge=1)
    # On stop, how long running activities may take to finish before they are cancelled.
    graceful_shutdown_timeout: Duration = timedelta(seconds=10)
    identity: str = ""  # the worker's identity on the Temporal server; empty: HOST:PID
    # Prometheus metrics of `trawl worker` / `trawl up` at http://<metrics_host>:<metrics_port>/metrics;
    # 0 turns them off.
    metrics_host: str = "127.0.0.1"
    metrics_port: int = Field(default=9464, ge=0, le=65535)  # 0 turns metrics off
    # The machine this worker runs on: its partial files are only here, so verify and commit of
    # what it downloads run on its own task queue. Empty: the host name. Processes of one host
    # share it (and its work_dir).
    host_id: str = ""
    # Partial files of this host (default <data_dir>/work); never shared between hosts.
    work_dir: Path | None = None
    # How long host-local work may wait for its host before the host counts as gone and the
    # item's files are downloaded again elsewhere.
    local_schedule_to_start: Duration = timedelta(minutes=2)
    # How often a running activity's heartbeat reaches the server, at most (the SDK sends the
    # latest and drops those between). Each is a billable action on Temporal Cloud and a write on
    # a self-hosted server: 3,600 for an hour of download at 1 s, 1,200 at 3 s. The heartbeat is
    # also the download's resume point and how a pause or cancel reaches it: a longer interval
    # downloads more again after a lost worker and stops later (docs/production.md). At most 8 s
    # (0.8 of download.heartbeat_timeout, 10 s, is the SDK's own bound).
    heartbeat_interval: Duration = Field(default=timedelta(seconds=1), gt=timedelta(0), le=timedelta(seconds=8))


# Fetch activities a worker process runs at once on each enabled platform's queue
# (trawl.worker.main's FETCH_CONCURRENCY); counted here to size the HTTP pool.
FETCH_SLOTS_PER_PLATFORM = 8


def derived_max_connections(worker: WorkerSettings, download: DownloadSettings,
                            platforms: PlatformsSettingsBase) -> int:
    """The connections a worker process can have open at once when all its slots are busy.

    Downloads run on two queues (the shared one and this host's), each with
    ``max_concurrent_activities`` slots; each download may hold its most segments' worth of
    connections (one under ``limit_rate``); each enabled platform adds its fetch slots.
    """
    most_segments = 1 if download.limit_rate else max([download.segments, *download.segments_by_platform.values()])
    enabled = sum(1 for config in platforms.values() if config.enabled)
    return 2 * worker.max_concurrent_activities * most_segments + FETCH_SLOTS_PER_PLATFORM * enabled


class ApiSettings(_Section):
    host: str = "127.0.0.1"  # the API's listen address (`trawl api`, `trawl up`); beyond loopback only with a token
    port: int = Field(default=8000, ge=1, le=65535)  # the API's listen port
    # Bearer token for every endpoint but /healthz and the docs; required when the API binds a
    # non-loopback address.
    token: str = ""
    # A second bearer token that may read (GET) and change nothing (403); needs token.
    read_token: str = ""
    max_body_bytes: ByteSize = Field(default=1024 * 1024, gt=0)  # the largest request body
    # Requests per minute per token (per client address without one); 0 turns the limit off.
    requests_per_minute: int = Field(default=600, ge=0)
    # How long a web page sign-in lasts (its cookie's Max-Age); signing out ends it sooner.
    session_lifetime: Duration = Field(default=timedelta(hours=12), gt=timedelta(0))

    @model_validator(mode="after")
    def _read_token_beside_token(self) -> ApiSettings:
        if self.read_token and not self.token:
            raise ValueError("read_token needs token: set api.token (TRAWL_API__TOKEN) too")
        if self.read_token and self.read_token == self.token:
            raise ValueError("read_token must differ from token")
        return self


class StageRetry(_Section):
    """A stage's retry policy and timeouts (``[retry.<stage>]``). Errors the taxonomy marks
    non-retryable never retry; infrastructure failures (disk full, catalog down) retry until
    schedule_to_close, however many attempts that takes."""

    initial_interval: Duration  # the wait before the first retry
    backoff_coefficient: float = Field(default=2.0, ge=1.0)  # each wait is this many times the one before
    maximum_interval: Duration  # the longest wait between attempts
    # Attempts at most, counted by the activities (0: unlimited, bounded by schedule_to_close).
    maximum_attempts: int = Field(default=0, ge=0)
    start_to_close: Duration  # the longest one attempt may run
    schedule_to_close: Duration | None = None  # the longest all attempts together may take (none: no limit)

    @model_validator(mode="after")
    def _intervals_ordered(self) -> StageRetry:
        if self.initial_interval <= timedelta(0):
            raise ValueError("initial_interval must be positive")
        if self.maximum_interval < self.initial_interval:
            raise ValueError("maximum_interval must be at least initial_interval")
        if self.start_to_close <= timedelta(0):
            raise ValueError("start_to_close must be positive")
        return self


def _stage(initial: str, maximum: str, attempts: int, start_to_close: str, schedule_to_close: str) -> StageRetry:
    return StageRetry(
        initial_interval=initial,
        maximum_interval=maximum,
        maximum_attempts=attempts,
        start_to_close=start_to_close,
        schedule_to_close=schedule_to_close,
    )


_STAGE_DEFAULTS = {
    "fetch": _stage("1s", "5m", 10, "1m", "2h"),
    "download": _stage("2s", "5m", 20, "6h", "24h"),
    "verify": _stage("1s", "30s", 5, "30m", "2h"),
    "commit": _stage("1s", "1m", 10, "30m", "2h"),
    # An extra (danmaku, subtitles, comments) after its item is committed: a few tries, then it is
    # recorded missing with its class; the item stays committed (docs/extras.md).
    "extras": _stage("2s", "2m", 5, "30m", "1h"),
}


class RetrySettings(_Section):
    fetch: StageRetry = _STAGE_DEFAULTS["fetch"]
    download: StageRetry = _STAGE_DEFAULTS["download"]
    verify: StageRetry = _STAGE_DEFAULTS["verify"]
    commit: StageRetry = _STAGE_DEFAULTS["commit"]
    extras: StageRetry = _STAGE_DEFAULTS["extras"]

    @model_validator(mode="before")
    @classmethod
    def _fill_stage_defaults(cls, data: object) -> object:
        # One value set for a stage (TRAWL_RETRY__FETCH__MAXIMUM_ATTEMPTS=3) keeps that stage's
        # other defaults instead of requiring them all.
        if isinstance(data, dict):
            for stage, given in list(data.items()):
                if stage in _STAGE_DEFAULTS and isinstance(given, dict):
                    data[stage] = {**_STAGE_DEFAULTS[stage].model_dump(), **given}
        return data


# One section per platform of the registry, in its order: [platforms.<name>] in trawl.toml,
# TRAWL_PLATFORMS__<NAME>__<FIELD> in the environment; each platform module holds its model.
PlatformsSettings = platforms_model(PLATFORMS)
# The source kinds: the platforms' listings, then the generic ones.
SourceKind = Literal[(*listing_kinds(), "url_file", "feed")]  # type: ignore[valid-type]


class SourceSettings(_Section):
    """A named list of URLs to crawl: ``trawl crawl --source NAME``, ``trawl watch add --source NAME``."""

    name: str  # what `--source NAME` names
    # A platform listing (an uploader, a user, ...: id), url_file (path) or feed (url).
    kind: SourceKind
    id: str = ""  # a platform listing's id (an uploader's or user's id)
    path: str = ""  # url_file: one URL per line, # comments
    url: str = ""  # feed: an RSS or Atom feed's address
    max_pages: int = Field(default=3, ge=1, le=100)  # pages of a listing read at most
    # Listings stop at the first page whose items the catalog holds already (a watch's re-runs
    # read one page); true reads all max_pages pages, e.g. to fill in what an earlier, shorter
    # listing never reached.
    full_listing: bool = False
    # Filters applied while its listing pages (yt-dlp's syntax; docs/crawls.md, "Filters"); "": none.
    # Only entries published on or after this day: 20260101, today, now-7days (at each run).
    dateafter: str = Field(default="", max_length=100)
    datebefore: str = Field(default="", max_length=100)  # only entries published on or before this day
    # Conditions on what the listing says of an entry: duration > 60 & title ~= (?i)news.
    match_filter: str = Field(default="", max_length=1000)
    max_downloads: int = Field(default=0, ge=0)  # at most this many entries of the listing; 0: all
    playlist_items: str = Field(default="", max_length=1000)  # entries by position: 1-5,8,-3:

    @field_validator("dateafter", "datebefore", "match_filter", "playlist_items")
    @classmethod
    def _parses(cls, value: str, info: ValidationInfo) -> str:
        from trawl.listing_filters import FilterError, ListingFilters

        try:
            ListingFilters(**{info.field_name: value}).check()
        except FilterError as err:
            raise ValueError(str(err)) from None
        return value

    @model_validator(mode="after")
    def _needs_its_argument(self) -> SourceSettings:
        if self.kind == "url_file" and not self.path:
            raise ValueError(f"source {self.name!r}: kind url_file needs path")
        if self.kind == "feed" and not self.url:
            raise ValueError(f"source {self.name!r}: kind feed needs url")
        if self.kind not in ("url_file", "feed") and not self.id:
            raise ValueError(f"source {self.name!r}: kind {self.kind} needs id")
        return self


class WatchSettings(_Section):
    """Watches (``trawl watch``): Temporal Schedules that crawl a source or URLs again and again."""

    # After the Temporal server was down, a run missed less than this long ago is still taken
    # (once: a watch never runs twice at a time); older missed runs are dropped. Temporal's
    # smallest window is 10 s.
    catchup_window: Duration = timedelta(minutes=5)
    # Random delay added to each run, up to this much, unless `watch add --jitter` says otherwise.
    jitter: Duration = timedelta(0)
    # Shortest interval `watch add --every` accepts.
    min_interval: Duration = timedelta(seconds=1)
    # How often a watch of a live room (`watch add NAME ROOM_URL`) asks whether the room is live,
    # unless --every says otherwise: a broadcast starts recording within about this long.
    live_poll_interval: Duration = timedelta(seconds=10)
    # A watch with `--refresh-extras-days N` refreshes at most this many of its young items'
    # extras a run (the youngest first): each is a workflow of a few requests a page of comments.
    refresh_extras_limit: int = Field(default=50, ge=1, le=10_000)

    @field_validator("catchup_window")
    @classmethod
    def _temporal_minimum(cls, value: timedelta) -> timedelta:
        if value < timedelta(seconds=10):
            raise ValueError("must be at least 10s (Temporal's smallest catch-up window)")
        return value

    @field_validator("live_poll_interval")
    @classmethod
    def _poll_bounds(cls, value: timedelta) -> timedelta:
        if not timedelta(seconds=1) <= value <= timedelta(hours=1) or value.microseconds:
            raise ValueError("must be whole seconds, from 1s to 1h (a live room is asked once each)")
        return value


NOTIFY_EVENTS = ("watch_item", "needs_person", "live_recording")


class WebhookSettings(_Section):
    """A webhook: a JSON POST for each event (``trawl.notify``)."""

    url: str  # http(s); its address passes the address guard like any request (net.allow_private)
    # Signs each body: header X-Trawl-Signature: sha256=<HMAC-SHA256 of the body, hex>. Empty: unsigned.
    secret: str = ""
    # watch_item (a watch's run committed a new item), needs_person (an item failed for a reason a
    # person must fix: login_required, forbidden, blocked_address), live_recording (a recording
    # committed a part, or ended). Empty: all of them.
    events: list[str] = []
    attempts: int = Field(default=5, ge=1, le=20)  # tries per event, waiting 1 s, 2 s, 4 s, ... (at most 60 s)

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        from urllib.parse import urlsplit

        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"a webhook URL is http:// or https:// with a host, not {value[:80]!r}")
        return value

    @field_validator("events")
    @classmethod
    def _events(cls, value: list[str]) -> list[str]:
        return _notify_events(value)


def _notify_events(value: list[str]) -> list[str]:
    unknown = [e for e in value if e not in NOTIFY_EVENTS]
    if unknown:
        raise ValueError(f"unknown event(s) {', '.join(unknown)}: give some of {', '.join(NOTIFY_EVENTS)}")
    return value


class AppriseSettings(_Section):
    """An Apprise URL: a short message for each event, sent by the apprise library (``trawl.notify_apprise``)."""

    # Any URL apprise reads (json://HOST/PATH, ntfys://ntfy.sh/TOPIC, tgram://TOKEN/CHAT, mailtos://...);
    # the host it would send to passes the address guard before each message (net.allow_private).
    url: str
    events: list[str] = []  # as a webhook's; empty: all of them
    attempts: int = Field(default=3, ge=1, le=20)  # tries per event, waiting 1 s, 2 s, 4 s, ... (at most 60 s)

    @field_validator("url")
    @classmethod
    def _known(cls, value: str) -> str:
        from trawl.notify_apprise import check_apprise_url

        check_apprise_url(value)
        return value

    @field_validator("events")
    @classmethod
    def _events(cls, value: list[str]) -> list[str]:
        return _notify_events(value)


class NotifySettings(_Section):
    """Notifications: webhooks and Apprise URLs called on the events people act on (``trawl.notify``)."""

    # [[notify.webhooks]] tables: url, secret (signs each body: X-Trawl-Signature), events
    # (watch_item, needs_person, live_recording; empty: all), attempts (default 5). See docs/library.md.
    webhooks: list[WebhookSettings] = []
    # [[notify.apprise]] tables: url (an Apprise URL), events (as a webhook's), attempts (default 3).
    apprise: list[AppriseSettings] = []


class ExportSettings(_Section):
    """Named files (``trawl export``, ``trawl crawl --export``) and the API's download names."""

    # Fields: {platform} {id} {key} {title} {uploader} {uploader_id} {upload_date} {part} {kind}
    # {asset} {ext} {sha256}; "/" makes directories. The API offers the last component.
    template: str = "{platform}/{uploader}/{title} [{id}].{ext}"
    # copy (files to edit freely), hardlink (no extra space, but the file IS the stored blob: a copy
    # where the store is remote or on another filesystem) or symlink. Copy since the links of the
    # first default surprised people who edit what they download.
    link: Literal["hardlink", "copy", "symlink"] = "copy"
    # Names valid on Windows too (<>:"|?* replaced, collisions compared without case).
    windows_names: bool = False
    # <name>.info.json beside each item's main file, from the catalog.
    write_info_json: bool = False
    # Extras beside the main file, as yt-dlp's flags (docs/extras.md): the uploader's subtitle
    # tracks as <name>.<lang>.<sub_format>, and the danmaku as <name>.danmaku.xml when sub_langs
    # takes "danmaku".
    write_subs: bool = False
    # The automatic (AI) subtitle tracks (languages ai-*) too, named the same way.
    write_auto_subs: bool = False
    # Languages or regular expressions matched whole; "all"; "danmaku"; "-LANG" leaves one out.
    sub_langs: list[str] = ["all"]
    sub_format: Literal["srt", "vtt", "json"] = "srt"
    # The danmaku as stored ("xml", <name>.danmaku.xml) and/or rendered as ASS subtitles ("ass",
    # <name>.danmaku.ass) for players without a danmaku overlay.
    danmaku_format: list[Literal["xml", "ass"]] = Field(default=["xml"], min_length=1)
    # The comments: inside <name>.info.json with write_info_json, else <name>.comments.json.
    write_comments: bool = False
    # Into a copy of the main file made by ffmpeg (the stored blob is never modified): the subtitle
    # tracks sub_langs takes (MP4, WebM).
    embed_subs: bool = False
    # The chapters, into that copy.
    embed_chapters: bool = False
    # Title, uploader, date, description and URL, into that copy.
    embed_metadata: bool = False
    # The thumbnail, into that copy (MP4, M4A and MP3 as a cover picture; MKV as an attachment).
    embed_thumbnail: bool = False

    @field_validator("template")
    @classmethod
    def _template(cls, value: str) -> str:
        from trawl.export import Template  # the parser lives with the exporter

        Template.parse(value)  # TemplateError is a ValueError naming the problem
        return value

    @field_validator("sub_langs")
    @classmethod
    def _sub_langs(cls, value: list[str]) -> list[str]:
        from trawl.export_extras import ExtrasChoice

        ExtrasChoice(sub_langs=tuple(value))  # ExtrasChoiceError is a ValueError naming the pattern
        return value


class LogSettings(_Section):
    # One-shot commands (crawl, items, ...) write their JSON log lines on stderr, as --log-json
    # does. Otherwise their stderr carries plain lines for a person (warnings and errors), on a
    # terminal or not, and the JSON lines go to <data_dir>/trawl.log. Long-running commands
    # (worker, up, ...) write JSON on stdout either way.
    json_stderr: bool = False


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="TRAWL_",
        env_nested_delimiter="__",
        extra="forbid",
        toml_file="trawl.toml",
    )

    # Holds temporal.db, catalog.db, blobs/ and work/ (partial files): one archive wherever a
    # command runs. Earlier versions kept it in ./data of the working directory (set data_dir to
    # that directory, or TRAWL_DATA_DIR, to keep using one).
    data_dir: Path = Field(default_factory=default_data_dir, json_schema_extra={"shown_default": DEFAULT_DATA_DIR_SHOWN})
    temporal: TemporalSettings = TemporalSettings()
    catalog: CatalogSettings = CatalogSettings()
    storage: StorageSettings = StorageSettings()
    net: NetSettings = NetSettings()
    download: DownloadSettings = DownloadSettings()
    worker: WorkerSettings = WorkerSettings()
    retry: RetrySettings = RetrySettings()
    platforms: PlatformsSettings = PlatformsSettings()
    sources: list[SourceSettings] = []
    watch: WatchSettings = WatchSettings()
    api: ApiSettings = ApiSettings()
    export: ExportSettings = ExportSettings()
    logs: LogSettings = LogSettings()
    notify: NotifySettings = NotifySettings()

    @model_validator(mode="after")
    def _recordings_fit_their_download(self) -> Settings:
        # A recording is one download attempt after another (each goes on from the last media
        # sequence held), but all of them must end within the stage's schedule_to_close.
        limit = self.retry.download.schedule_to_close
        if limit is None or self.download.live_max_duration < limit:
            return self
        if "live_max_duration" not in self.download.model_fields_set:  # the default: fitted, not refused
            self.download = self.download.model_copy(update={"live_max_duration": limit * 0.9})
            return self
        if self.download.live_max_duration >= limit:
            raise ValueError(f"download.live_max_duration ({_hours(self.download.live_max_duration)}) must be shorter "
                             f"than retry.download.schedule_to_close ({_hours(limit)}): a recording must end before "
                             "its download is given up on")
        return self

    @model_validator(mode="after")
    def _derive_max_connections(self) -> Settings:
        # The pool is sized where the worker's slots are known, so every make_client(settings.net)
        # gets it; a copy, since the default NetSettings instance may be shared.
        if self.net.max_connections == 0:
            self.net = self.net.model_copy(
                update={"max_connections": derived_max_connections(self.worker, self.download, self.platforms)})
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings,
                TomlConfigSettingsSource(settings_cls, toml_file=config_files(), deep_merge=True))

    @property
    def catalog_url(self) -> str:
        return self.catalog.url or f"sqlite:///{(self.data_dir / 'catalog.db').resolve()}"

    @property
    def blobs_dir(self) -> Path:
        """The local blob store's directory (``storage.url`` when it is a path)."""
        if self.storage.url and not self.storage.url.startswith("s3://"):
            return Path(self.storage.url)
        return self.data_dir / "blobs"

    @property
    def work_dir(self) -> Path:
        return self.worker.work_dir or self.data_dir / "work"

    @property
    def host_id(self) -> str:
        return self.worker.host_id or socket.gethostname()

    @property
    def temporal_db(self) -> Path:
        return self.data_dir / "temporal.db"


def settings_json(settings: Settings) -> str:
    """``settings`` as JSON that :func:`settings_from_json` reads back whole (durations in
    seconds), for a process that must run with exactly these settings (the background worker)."""
    def plain(value: object) -> object:
        if isinstance(value, timedelta):
            return value.total_seconds()
        if isinstance(value, Path):
            return str(value)
        raise TypeError(f"cannot write {type(value).__name__} as JSON")

    return json.dumps(settings.model_dump(mode="python"), default=plain, sort_keys=True)


def settings_from_json(text: str) -> Settings:
    """The settings :func:`settings_json` wrote; no environment or file is read."""
    return Settings.model_validate(json.loads(text))


@cache
def settings_for(platforms: tuple[Platform, ...]) -> type[Settings]:
    """A :class:`Settings` whose ``[platforms]`` are these platforms' sections (generic last):
    what trawl's own settings are with the registry's list, for a list of one's own (tests)."""
    model = platforms_model(platforms)
    return create_model("Settings", __base__=Settings, platforms=(model, model()))


# The pool of a client whose NetSettings were made on their own (net.max_connections 0 outside
# Settings): what the default worker would get.
DEFAULT_MAX_CONNECTIONS = derived_max_connections(WorkerSettings(), DownloadSettings(), PlatformsSettings())


def _hours(value: timedelta) -> str:
    return f"{value.total_seconds() / 3600:g}h"


def load_settings(**overrides: object) -> Settings:
    """Build the settings, turning validation errors into one readable :class:`ConfigError`."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except tomllib.TOMLDecodeError as exc:
        # "Invalid value (at line 2, column 17)": the position is only in the message before 3.14.
        where = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        reason = str(exc).split(" (at ")[0]
        position = f"line {where[1]}, column {where[2]}: " if where else ""
        raise ConfigError(f"{_broken_file() or config_file()}: {position}not valid TOML: {reason}; fix that line "
                          "(strings are quoted, booleans are true or false)") from None
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            where = ".".join(str(part) for part in err["loc"]) or "settings"
            problems.append(redact(f"{where}: {err['msg']} (got {err.get('input')!r})"))  # a proxy's password
        if len(problems) == 1:
            raise ConfigError(f"invalid configuration: {problems[0]}") from None
        raise ConfigError("invalid configuration:\n" + "\n".join(f"  {p}" for p in problems)) from None


def _broken_file() -> Path | None:
    """Which of the config files is not valid TOML (the parser's error does not say)."""
    for path in config_files():
        try:
            tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError:
            continue
        except tomllib.TOMLDecodeError:
            return path
    return None
