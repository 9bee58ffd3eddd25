"""Per-stage retry and timeout policies, as data the starter builds from the settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from trawl.errors import BY_CLASS, NON_RETRYABLE

STAGES = ("fetch", "download", "verify", "commit")
# Failure classes that are expected outcomes, told in full by their class and message (a 404, a
# login wall, a lost host): their failures carry no stack trace (workers.interceptors) and a failed
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
        and made final by the activity itself at their ``max_attempts`` (activities.errors)."""
        return RetryPolicy(
            initial_interval=timedelta(seconds=self.initial_interval_s),
            backoff_coefficient=self.backoff_coefficient,
            maximum_interval=timedelta(seconds=self.maximum_interval_s),
            # No attempt limit here: the activities apply maximum_attempts to every class but the
            # infrastructure ones, which retry until schedule_to_close (activities.errors).
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
    # A crawl's own choices (`trawl crawl -f`, `--limit-rate`); 0: the worker's settings.
    quality: int = 0  # the tallest video wanted, in lines (720 = 720p)
    limit_rate: int = 0  # bytes per second for each download

    def fetch_queue(self, platform: str) -> str:
        return fetch_queue(self.queue_prefix, platform)

    @property
    def download_queue(self) -> str:
        return download_queue(self.queue_prefix)

    @property
    def join_queue(self) -> str:
        return join_queue(self.queue_prefix)


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
