"""Which host takes an item's host-local work (download, verify, commit).

The samples-python ``worker_specific_task_queues`` pattern: the claim runs on the shared download
queue, so whichever worker has a free slot answers, with its own host's queue; the item's files
then stay on that host from the first byte to the commit.

An item's first fetch may claim its own host instead (:class:`HostRoom`, asked for by
``FetchInput.claim_host_over``): when the worker that resolved a larger item has room on its
host's queue, its answer names that queue, and the item goes there without a claim of its own
(an activity and a workflow task fewer before the first byte). A worker without room answers
none and the item claims a host as above.
"""

from __future__ import annotations

import threading
import time

from temporalio import activity

from trawl.models import LIVE_PROTOCOL, Resolved, small_item

# Seconds a fetch's claim holds its room for an activity to come to the host's queue: the item's
# workflow task after the fetch schedules it within milliseconds on a working server.
PROMISE_S = 10.0


class HostActivities:
    def __init__(self, host_queue: str) -> None:
        self.host_queue = host_queue

    @activity.defn(name="claim_host")
    async def claim_host(self) -> str:
        return self.host_queue


class HostRoom:
    """This worker process's host-local work (the activities running on its host's queue, counted
    by :class:`trawl.worker.interceptors.HostWorkInterceptor`) against its ``slots``, and the items
    its fetches claimed the host for whose first activity there has not come yet. Processes that
    share a host id (and so its queue) each count their own."""

    def __init__(self, queue: str, slots: int) -> None:
        self.queue = queue
        self.slots = slots
        self.running = 0
        self.promised: dict[str, float] = {}  # workflow id -> when its fetch claimed the host
        self.closed = False  # the worker is stopping: it claims nothing more
        self._lock = threading.Lock()

    def claim(self, workflow_id: str) -> str:
        """The host's queue when it has room for the item of ``workflow_id`` (that room is then
        held for it for :data:`PROMISE_S`, or until its first activity here), else ``""``."""
        with self._lock:
            self._expire()
            if self.closed or self.running + len(self.promised) >= self.slots:
                return ""
            self.promised[workflow_id] = time.monotonic()
            return self.queue

    def began(self, workflow_id: str) -> None:
        """An activity of ``workflow_id``'s item began on the host's queue (its claim, if any, is spent)."""
        with self._lock:
            self.running += 1
            self.promised.pop(workflow_id, None)

    def ended(self) -> None:
        with self._lock:
            self.running -= 1

    def close(self) -> None:
        with self._lock:
            self.closed = True

    def _expire(self) -> None:
        now = time.monotonic()
        for workflow_id in [w for w, when in self.promised.items() if now - when > PROMISE_S]:
            del self.promised[workflow_id]


def claims_a_host(resolved: Resolved, small_item_size: int) -> bool:
    """Whether an item resolved, not committed and not finished by its fetch, goes on to claim a
    host (MediaItemWorkflow._on_one_host): not a small item (:func:`trawl.models.small_item`), and
    no live recording among its files (a recording may go to its broadcast's own run); never
    when ``small_item_size`` is -1 (the fetch was not asked to claim)."""
    if small_item_size < 0 or any(asset.protocol == LIVE_PROTOCOL for asset in resolved.assets):
        return False
    return not small_item(resolved.assets, small_item_size)
