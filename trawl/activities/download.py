"""download: stream one asset to its ``.part`` file, heartbeating the resume state."""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, NoReturn

import httpx
from temporalio import activity
from temporalio.exceptions import ApplicationError, CancelledError

from trawl.activities.application_errors import classified
from trawl.contracts import DiscardInput, DownloadInput, DownloadResult, LivePart
from trawl.download import DownloadOutcome, HostSlots, Stopped, discard, discard_hls, downloader_for
from trawl.download.live import LIVE_PROTOCOL, discard_live, recording_view
from trawl.download.live_comments import LiveCommentSidecars
from trawl.settings import DownloadSettings
from trawl.workdirs import mark_owner, workdir_name

ProgressSink = Callable[[str, dict[str, Any]], None]
# Reports per download of known size (every 25 %): each is a signal, 4 history events and a
# billable action; the CLI and the API read exact bytes from the heartbeats instead.
PROGRESS_STEPS = 4
PROGRESS_EVERY_BYTES = 64 * 1024 * 1024  # without a known size
# Nor before the download has run this long, unless it tells the item a size it did not have: a
# shorter one ends before anybody reads the details line, and a report is a signal and a workflow
# task of its own (a tiny item has two in all).
REPORT_AFTER_S = 5.0
# A live recording reports its measures (media recorded, size, window) when it holds its first
# segment, then every this many seconds of media: the Web UI's details line says them.
LIVE_REPORT_EVERY_S = 600.0
# A download heartbeats once its activity has run this long. The SDK sends an activity's first
# heartbeat to the server at once (it throttles only the later ones): a round trip through the
# frontend and the history service and a write of the item's state, which an activity that ends
# sooner (every tiny item's) does not need. What the heartbeat carries is kept anyway: the resume
# state is saved beside the partial file at every beat, and a retry on this host reads it there
# (the partial file is only here). A cancel is seen at the first heartbeat, so at most this late.
FIRST_BEAT_AFTER_S = 1.0


class ProgressReporter:
    """Tells the item workflow how far a download got, at coarse steps, once it has run
    :data:`REPORT_AFTER_S` (at once when it learns a size the platform did not give).

    Heartbeats carry the exact offset but only the server and clients see them; a few reports
    per download let the workflow itself show bytes in the Web UI's details line and keep the
    bytes of a paused download counted. Each report is a signal (history events), hence steps.
    """

    def __init__(self, sink: ProgressSink | None, workflow_id: str, asset: str, size_given: bool = False) -> None:
        self.sink = sink
        self.workflow_id = workflow_id
        self.asset = asset
        self.last_step: int | None = None
        self.total: int | None = None
        # A size the platform did not give is reported at once when the server announces it: it
        # is how the item learns its total (trawl.workflows.progress).
        self.size_given = size_given
        self.quiet_until = time.monotonic() + REPORT_AFTER_S

    def __call__(self, state: Any) -> None:
        """Report a downloader's heartbeat state (its ``offset`` and ``estimated_total``) if it passed a step."""
        if self.sink is None:
            return
        live = recording_view(asdict(state)) if getattr(state, "protocol", None) == LIVE_PROTOCOL else None
        if live is not None:
            step = int(live["seconds"] // LIVE_REPORT_EVERY_S) if live["segments"] else None
            if step != self.last_step and step is not None:
                self.last_step = step
                self.sink(self.workflow_id, {"asset": self.asset, "bytes_done": live["bytes"], "bytes_total": None,
                                             "live": live})
            return
        total = self.total = state.estimated_total
        if total and state.offset >= total:
            return  # the activity's own result tells the item just after (a signal would cost a workflow task)
        if time.monotonic() < self.quiet_until and not (total and not self.size_given):
            return  # the step passed by then is reported at the first heartbeat after
        step = state.offset * PROGRESS_STEPS // total if total else state.offset // PROGRESS_EVERY_BYTES
        if step != self.last_step:
            self.last_step = step
            self.sink(self.workflow_id, {"asset": self.asset, "bytes_done": state.offset, "bytes_total": total})

    def final(self, offset: int) -> None:
        """The exact bytes kept by a download that stopped (a pause): the SDK replaces the details
        of a requested cancellation, so this report is how the item learns them."""
        if self.sink is not None:
            self.sink(self.workflow_id, {"asset": self.asset, "bytes_done": offset, "bytes_total": self.total})


class DownloadActivities:
    def __init__(self, client: httpx.Client, work_dir: Path, settings: DownloadSettings, max_delay: timedelta,
                 max_attempts: int = 0, progress: ProgressSink | None = None,
                 sidecars: LiveCommentSidecars | None = None) -> None:
        self.client = client
        self.work_dir = Path(work_dir)
        self.settings = settings
        self.max_delay = max_delay
        self.max_attempts = max_attempts
        self.progress = progress
        self.sidecars = sidecars or LiveCommentSidecars()  # a live recording's comments, beside it
        # One cap per worker process: every download's extra segment connections share it.
        self.host_slots = HostSlots(settings.max_connections_per_host)

    def part_path(self, workflow_id: str, asset_name: str) -> Path:
        return self.work_dir / workdir_name(workflow_id) / f"{asset_name}.part"

    # Cancellation is polled at each heartbeat instead of raised into the thread, so a cancel
    # can never land between writing bytes and recording how many were written.
    @activity.defn(name="download", no_thread_cancel_exception=True)
    @classified(lambda self: self.max_delay)
    def download(self, inp: DownloadInput) -> DownloadResult:
        part = self.part_path(inp.workflow_id, inp.asset.name)
        mark_owner(part.parent, inp.workflow_id)
        report = ProgressReporter(self.progress, inp.workflow_id, inp.asset.name,
                                  size_given=inp.asset.expected_size is not None)

        quiet_until = time.monotonic() + _quiet_left(activity.info())

        def beat(state: Any) -> None:  # the downloader's own state dataclass
            if time.monotonic() >= quiet_until:
                activity.heartbeat(asdict(state))
            report(state)

        # The asset's protocol picks the downloader (plain HTTP, HLS); each reads back its own
        # state from the last attempt's heartbeat.
        downloader_class = downloader_for(inp.asset.protocol)
        downloader = downloader_class.from_settings(
            self.client,
            self.settings,
            heartbeat=beat,
            should_stop=lambda: activity.is_cancelled() or activity.is_worker_shutdown(),
            platform=inp.platform,
            quality=inp.quality,
            limit_rate=inp.limit_rate,
            host_slots=self.host_slots,
        )
        details = activity.info().heartbeat_details
        try:
            with self.sidecars.around(inp.asset, inp.platform, inp.canonical_url, part, self.client):
                outcome = downloader.download(
                    inp.asset.urls,
                    part,
                    headers=inp.asset.headers,
                    expected_size=inp.asset.expected_size,
                    previous=downloader_class.previous_state(details[0] if details else None, inp.asset.urls),
                    **({"live_part": _with_earlier(inp)} if inp.live_part is not None else {}),
                )
        except Stopped as stopped:
            _stopped(stopped, report)
        return self._result(inp, outcome)

    @staticmethod
    def _result(inp: DownloadInput, outcome: DownloadOutcome) -> DownloadResult:
        return DownloadResult(
            asset_name=inp.asset.name, path=outcome.path, size=outcome.size, sha256=outcome.sha256,
            url=outcome.url, etag=outcome.etag, mime=outcome.mime, total=outcome.total,
            resumed_from=outcome.resumed_from, transferred=outcome.transferred, connections=outcome.connections,
            live=outcome.live,
        )

    def discard_files(self, workflow_id: str, name: str) -> None:
        """Remove what a download of asset ``name`` left: its partial file, state and record, an
        HLS remux, a recording's parts."""
        part = self.part_path(workflow_id, name)
        discard(part)
        discard_hls(part)
        discard_live(part)

    @activity.defn(name="discard")
    def discard(self, inp: DiscardInput) -> None:
        """Remove partial files: named assets, or the workflow's whole work directory."""
        if inp.asset_names:
            for name in inp.asset_names:
                self.discard_files(inp.workflow_id, name)
        else:
            shutil.rmtree(self.work_dir / workdir_name(inp.workflow_id), ignore_errors=True)


def _quiet_left(info: activity.Info) -> float:
    """How much longer a download of this attempt keeps from heartbeating: what is left of the
    attempt's first :data:`FIRST_BEAT_AFTER_S` (a quarter of a shorter heartbeat timeout).

    The attempt's, not each download's: small_item downloads a cover, verifies it, then the video,
    and quiet seconds of each would add up to a silence the heartbeat timeout takes for a lost
    worker. Its start is stamped by the server's clock; a worker's clock behind it leaves at most
    the whole quiet time from now."""
    timeout = info.heartbeat_timeout
    quiet = min(FIRST_BEAT_AFTER_S, timeout.total_seconds() / 4) if timeout else FIRST_BEAT_AFTER_S
    ran = (datetime.now(timezone.utc) - info.started_time).total_seconds()  # the SDK's is in UTC
    return min(quiet, max(quiet - ran, 0.0))


def _with_earlier(inp: DownloadInput) -> LivePart | None:
    """The part to record, told where an earlier recording of its broadcast stopped (its asset's
    live_after, from the fetch), which the first part of a new recording goes on after."""
    if inp.live_part is None or inp.asset.live_after is None:
        return inp.live_part
    return dataclasses.replace(inp.live_part, earlier=inp.asset.live_after)


def _stopped(stopped: Stopped, report: ProgressReporter) -> NoReturn:
    """A download that stopped: cancelled (a pause or a cancel; the partial file is kept) or the
    worker shutting down (the next worker resumes)."""
    if activity.is_cancelled():
        report.final(stopped.offset)
        raise CancelledError("download cancelled; partial file kept", {"offset": stopped.offset}) from None
    raise ApplicationError("worker shutting down; resume elsewhere", type="worker_shutdown") from None
