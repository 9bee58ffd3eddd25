"""What the live end-to-end tests share (tests/e2e/test_live*.py, test_watch_room.py,
test_bilibili_rooms.py): the tools they need, the simulated Bilibili site with its live rooms, a
test's settings with it, and the two worker processes a kill test runs.

A test module imports the fixtures it uses by name (``bili``, ``settings``: they then stand for the
conftest's ``settings`` in that module, the ``worker`` fixture included) and may define its own
``bili`` or ``settings`` from :func:`bilibili_site` and :func:`live_settings` where it needs others.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, WorkflowHandle

from tests.conftest import make_settings
from tests.e2e.test_worker_kill import start_worker
from tests.polling import until
from trawl.contracts import host_queue
from trawl.platforms.bilibili.danmaku_site import comment_id
from trawl.platforms.bilibili.room_site import ROOM_LONG
from trawl.platforms.bilibili.site import BilibiliSite, install_bilibili_site
from trawl.settings import PlatformsSettings, Settings
from trawl.simulator import Simulator
from trawl.starter.client import item_progress

# A recording is remuxed by ffmpeg and its files are checked with ffprobe.
NEEDS_FFMPEG = pytest.mark.skipif(shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None,
                                  reason="ffmpeg is not installed (.ci/run installs it)")
ROOM_INIT = "/room/v1/Room/room_init"
PLAY_INFO = "/xlive/web-room/v2/index/getRoomPlayInfo"
PER_SECOND = 4  # comments a live room's audience sends, where a test counts them


def requests(sim: Simulator, path: str) -> int:
    """How many requests the simulator has answered on ``path``."""
    return sim.stats[path].requests if path in sim.stats else 0


def bilibili_site(sim: Simulator, comments_per_second: int | None = None) -> BilibiliSite:
    """The simulated Bilibili site (its live rooms and their comment servers) on ``sim``."""
    site = install_bilibili_site(sim)
    if comments_per_second is not None:
        site.rooms.comments_per_second = comments_per_second
    return site


def live_settings(tmp_path: Path, temporal_address: str, bili: BilibiliSite | None = None,
                  **overrides: Any) -> Settings:
    """A test's settings with Bilibili on the simulated site (when given), and workers that stop
    within 5 s (unless ``overrides`` says otherwise): a recording the test ended does not hold a
    worker's shutdown up."""
    overrides.setdefault("worker", {"graceful_shutdown_timeout": "5s"})
    if bili is not None:
        overrides["platforms"] = PlatformsSettings(bilibili=bili.settings())
    return make_settings(tmp_path, temporal_address, **overrides)


@pytest.fixture
def bili(sim: Simulator) -> BilibiliSite:
    return bilibili_site(sim)


@pytest.fixture
def settings(tmp_path: Path, temporal_address: str, bili: BilibiliSite) -> Settings:
    return live_settings(tmp_path, temporal_address, bili)


def delivered_ids(bili: BilibiliSite) -> set[str]:
    """The ids of the comments the long room's comment server delivered to someone."""
    return {comment_id(ROOM_LONG, n) for n in bili.rooms.chats[ROOM_LONG].delivered}


async def host_pollers(client: Client, settings: Settings) -> bool:
    """Whether two workers poll the host's queue, where the recording's download runs."""
    described = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
        namespace=client.namespace, task_queue=TaskQueue(name=host_queue(settings.temporal.task_queue_prefix,
                                                                       settings.host_id)),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY))
    return len({poller.identity for poller in described.pollers}) >= 2


async def recording_worker(client: Client, handle: WorkflowHandle) -> str:
    """The identity of the worker that runs the recording's download, once it has one (the item
    ``handle`` leaves it to its broadcast's workflow, which its progress names)."""
    recording = (await item_progress(client, handle)).get("recording")
    if recording:
        handle = client.get_workflow_handle(recording)
    description = await handle.describe()
    return next((activity.last_worker_identity for activity in description.raw_description.pending_activities
                 if activity.activity_type.name == "download" and activity.last_worker_identity), "")


@contextlib.asynccontextmanager
async def two_workers(client: Client, settings: Settings, tmp_path: Path,
                      **env: str) -> AsyncIterator[dict[str, subprocess.Popen[bytes]]]:
    """Two ``trawl worker`` processes (``live-a``, ``live-b``, with ``env`` added), both polling the
    host's queue when the block begins, so a kill comes a few segments in however slowly a worker
    starts; whichever is still running when it ends is killed."""
    workers = {name: start_worker(settings, tmp_path, TRAWL_WORKER__IDENTITY=name, **env)
               for name in ("live-a", "live-b")}
    try:
        await until(lambda: host_pollers(client, settings), "both workers polling the host's queue", timeout=60)
        yield workers
    finally:
        for proc in workers.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


async def kill_the_recorder(client: Client, handle: WorkflowHandle,
                            workers: dict[str, subprocess.Popen[bytes]]) -> float:
    """SIGKILL the worker that holds the recording of item ``handle``; when it was killed (epoch s)."""
    holder = await until(lambda: recording_worker(client, handle), "the recording's worker", timeout=30)
    workers[holder].send_signal(signal.SIGKILL)
    killed_at = time.time()
    workers[holder].wait(timeout=30)
    return killed_at
