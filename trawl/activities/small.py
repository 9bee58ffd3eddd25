"""small_item: download, verify and commit an item in one activity.

For an item of a few kilobytes the round trips cost more than the bytes: claim_host, download,
verify and commit are four activity tasks and as many workflow tasks. An item whose assets are
all known to be small (``download.small_item_size``) runs the same three stages, the same code,
in one activity on the shared download queue instead. No stage needs another's host, so no host
is claimed: a retry that lands on the same host resumes from the partial files (kept, as by a
download, after a failure, a pause or a cancel), one on another host starts from zero, which
costs little for a small file. A larger item of one file and its cover
(``download.one_activity_on_host``) runs it on the host it claimed, where every retry resumes:
verify and commit then cost no round trip of their own. A file downloaded and verified is
recorded beside its partial file (``verified_path``) until the commit: a later attempt commits it
without downloading it again, even after a commit that failed once its put had moved the file into
the store. A corrupt file is removed here; the workflow runs the activity again, a bounded number
of times.

A cancel reaches the download at its heartbeats; one that comes after the downloads stops the
activity before the commit; one that comes during the commit does not stop it (the catalog row
and the result then both say committed).

Each stage keeps its own failure classes and attempt limits (the stage's own method classifies
what it raises), heartbeats, and log line (trawl.activities.records).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from pathlib import Path

from temporalio import activity
from temporalio.exceptions import ApplicationError, CancelledError

from trawl.activities.commit import CommitActivities
from trawl.activities.download import REPORT_AFTER_S, DownloadActivities
from trawl.contracts import (  # noqa: F401 - SmallItemInput: imported from here by the workflow
    SMALL_ITEM_ASSET, CommitFile, CommitInput, CommitResult, DownloadInput, DownloadResult, SmallItemInput,
    VerifyInput)
from trawl.activities.records import recorded
from trawl.activities.verify import VerifyActivities
from trawl.download import verified_path
from trawl.models import OPTIONAL_KINDS, Asset


class SmallItemActivities:
    def __init__(self, download: DownloadActivities, verify: VerifyActivities, commit: CommitActivities) -> None:
        self.downloads = download
        self.verifier = verify
        self.committer = commit

    # As the download: cancellation is polled at heartbeats, never raised into the thread.
    @activity.defn(name="small_item", no_thread_cancel_exception=True)
    def small_item(self, inp: SmallItemInput) -> CommitResult:
        started = time.monotonic()
        assets = inp.resolved.assets
        # A cover first: it is quick, and once its size is known (below) the item's details line
        # can say a percent while the video downloads. The files stay in the item's order.
        order = sorted(range(len(assets)), key=lambda i: assets[i].kind not in OPTIONAL_KINDS)
        verified: dict[int, CommitFile | None] = {}
        held_back: ApplicationError | None = None
        for i in order:
            try:
                file = verified[i] = self._verified(inp, assets[i])
            except ApplicationError as err:
                if assets[i].kind not in OPTIONAL_KINDS or i == order[-1]:
                    raise
                # A cover failing for now must not hold the video back (nor spend its attempts):
                # the video goes on, then this failure ends the attempt, and the next one finds
                # the video verified (_kept) and tries the cover alone.
                held_back, verified[i] = err, None
                continue
            if file is not None and assets[i].expected_size is None and i != order[-1]:
                # A size the platform did not give, learnt while another file is still to come
                # (the other path tells it with that download's result).
                self._report(inp, {"asset": file.asset.name, "bytes_done": file.download.size,
                                   "bytes_total": file.download.size})
        if activity.is_cancelled():
            # Cancelled before the commit began: nothing is stored (the files stay for the
            # workflow's discard). Once begun, the commit runs to its end and the result says
            # committed, so a run that waits for its activity's cancellation reports what the
            # catalog holds. (A pause is a cancel too: it must not end as a cover's failure.)
            raise CancelledError("cancelled before the commit; nothing stored")
        if held_back is not None:
            raise held_back
        files = [file for i in range(len(assets)) if (file := verified[i]) is not None]
        committing = CommitInput(inp.workflow_id, inp.source_url, inp.resolved, files,
                                 stage_attempts=inp.stage_attempts)
        # A run long enough to be watched (a large file) says commit while the files go to the
        # store; a quick one ends before the item would read a signal. (Not inside a tiny item's
        # fetch_and_store_tiny: its item waits for no such stage.)
        told = time.monotonic() - started >= REPORT_AFTER_S and activity.info().activity_type == "small_item"
        if told:
            self._stage_reached(inp, "commit")
        try:
            with recorded("commit", committing) as record:
                return record(self.committer.commit(committing))
        except ApplicationError as err:
            if err.type == "content_corrupt":
                # The store found the bytes are not what verify hashed: the next activity downloads
                # them again, not from the records.
                for file in files:
                    self.downloads.discard_files(inp.workflow_id, file.asset.name)
                raise
            # The files are complete; what waits now is the commit (a store that is down, say):
            # the item shows that stage until the activity's next attempt ends it.
            if not told:
                self._stage_reached(inp, "commit")
            raise

    def _stage_reached(self, inp: SmallItemInput, stage: str) -> None:
        self._report(inp, {"asset": SMALL_ITEM_ASSET, "bytes_done": 0, "stage": stage})

    def _report(self, inp: SmallItemInput, report: dict[str, object]) -> None:
        if self.downloads.progress is not None:
            self.downloads.progress(inp.workflow_id, report)

    def _verified(self, inp: SmallItemInput, asset: Asset) -> CommitFile | None:
        """One asset downloaded and verified; None for an optional one (a thumbnail) that failed for good."""
        item = inp.resolved
        part = self.downloads.part_path(inp.workflow_id, asset.name)
        kept = self._kept(part)
        if kept is not None:
            return CommitFile(asset, *kept)
        try:
            fetched = DownloadInput(inp.workflow_id, asset, item.platform, item.canonical_url, inp.quality,
                                    inp.limit_rate, stage_attempts=inp.stage_attempts)
            with recorded("download", fetched) as record:
                download = record(self.downloads.download(fetched))
            checked = VerifyInput(asset, download, item.platform, item.canonical_url, item.duration,
                                  stage_attempts=inp.stage_attempts)
            with recorded("verify", checked) as record:
                verified = record(self.verifier.verify(checked))
        except ApplicationError as err:
            # As on the other path, a missing cover must not lose the item (the stage's line says
            # why it is left out); what failed as corrupt goes, so the next run downloads it again.
            left_out = asset.kind in OPTIONAL_KINDS and err.non_retryable
            if left_out or err.type == "content_corrupt":
                self.downloads.discard_files(inp.workflow_id, asset.name)
            if not left_out:
                raise
            return None
        self._keep(part, download, verified.mime)
        return CommitFile(asset, download, verified.mime)

    @staticmethod
    def _keep(part: Path, download: DownloadResult, mime: str | None) -> None:
        """Record a file as verified, for this run's later attempts (_kept). Its bytes are synced
        first (the commit's put would sync them anyway), so a record never outlives them; the
        record itself is not: one lost with the machine costs a download, nothing more. A record
        that cannot be written (a full disk) is only a download more. Not for a tiny item's
        fetch_and_store_tiny: its item is a few kilobytes, and its fetch's attempts ask again."""
        if activity.info().activity_type != "small_item":
            return
        record = {"run": activity.info().workflow_run_id, "download": asdict(download), "mime": mime}
        try:
            fd = os.open(download.path, os.O_RDONLY)
            try:
                os.fdatasync(fd)
            finally:
                os.close(fd)
            verified_path(part).write_text(json.dumps(record))
        except OSError:
            verified_path(part).unlink(missing_ok=True)

    def _kept(self, part: Path) -> tuple[DownloadResult, str | None] | None:
        """A file an earlier attempt (or activity) of this run downloaded and verified on this
        host, by its record beside the partial file: still there, or already in the store (a
        commit that failed after its put). A record of another run (a failed run's, whose files a
        re-crawl of the URL resumes from, checked against the server) or whose file is in neither
        place is dropped."""
        try:
            record = json.loads(verified_path(part).read_text())
            download, mime = DownloadResult(**record["download"]), record["mime"]
            if record["run"] != activity.info().workflow_run_id:
                raise ValueError("a record of another run")
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError, KeyError):
            verified_path(part).unlink(missing_ok=True)
            return None
        try:
            on_disk = os.stat(download.path).st_size == download.size
        except OSError:
            on_disk = False
        try:
            stored = on_disk or self.committer.holds(download.sha256, download.size)
        except Exception:  # the store does not answer: the commit waits for it (storage_error), not a download
            return download, mime
        if stored:
            return download, mime
        verified_path(part).unlink(missing_ok=True)
        return None
