"""claim_host: which host takes an item's host-local work (download, verify, commit).

The samples-python ``worker_specific_task_queues`` pattern: the claim runs on the shared download
queue, so whichever worker has a free slot answers, with its own host's queue; the item's files
then stay on that host from the first byte to the commit.
"""

from __future__ import annotations

from temporalio import activity


class HostActivities:
    def __init__(self, host_queue: str) -> None:
        self.host_queue = host_queue

    @activity.defn(name="claim_host")
    async def claim_host(self) -> str:
        return self.host_queue
