"""An item's progress as its workflow keeps it: the ``progress`` query's answer and the Web UI's
live details line ("download 35% 14.2/40.0 MiB - <title>").

Bookkeeping only: no command comes from here (the details line is metadata, not history), so the
item workflow's story stays in :mod:`trawl.workflows.media_item`.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from trawl.contracts import DownloadProgress, Progress
    from trawl.formatting import recording_words

MiB = 1024 * 1024


class ProgressBook:
    """Bytes of verified assets, of unfinished downloads (as last reported or kept) and the total
    (the platform's sizes, with those it did not give as the servers announce them; unknown until
    every asset has one)."""

    def __init__(self) -> None:
        self.progress = Progress()
        self.title: str | None = None
        self._partial: dict[str, int] = {}  # asset name -> bytes of its unfinished download
        self._verified: set[str] = set()  # assets whose download was verified
        self._sizes: dict[str, int | None] = {}  # asset name -> its size, as given or announced
        self._given: set[str] = set()  # the assets whose size the platform gave
        self._live: dict[str, Any] | None = None  # a live recording's latest measures

    # -- bytes ------------------------------------------------------------------------------
    def known_sizes(self, sizes: dict[str, int | None]) -> None:
        """Each asset's size as the platform gave it (None: unknown until its server announces it
        in a report). The total is known once every asset's size is: a download of a known size
        may end before it reports (trawl.activities.download.REPORT_AFTER_S), so a total of the
        sizes announced so far could fall short of the bytes done."""
        self._sizes = dict(sizes)
        self._given = {name for name, size in sizes.items() if size is not None}
        self._total()

    def _total(self) -> None:
        sizes = list(self._sizes.values())
        self.progress.bytes_total = sum(sizes) if sizes and None not in sizes else None  # type: ignore[arg-type]

    def reported(self, report: DownloadProgress) -> None:
        """A running download's report. A paused download's last report may arrive after its
        activity ended: reports of every asset not verified yet count."""
        if report.live is not None:
            self.recording(report.live)
        if report.asset in self._verified:
            return
        self._partial[report.asset] = max(self._partial.get(report.asset, 0), report.bytes_done)
        if report.bytes_total and report.asset in self._sizes and report.asset not in self._given:
            # Sizes the platform did not give: what the servers announce, as they announce it.
            self._sizes[report.asset] = report.bytes_total
            self._total()
        self._refresh()
        self.show(self.progress.stage)

    def recording(self, live: dict[str, Any]) -> None:
        """A live recording's measures (a download's report, or a part's record as committed):
        the details line says ``recording`` with them instead of a download of unknown size."""
        self._live = live
        self.show(self.progress.stage)

    def downloaded(self, name: str, size: int, whole: bool = True) -> None:
        """An asset's download ended with ``size`` bytes (not verified yet); ``whole``: the asset's
        whole size, which counts in the total if nothing gave it before (a cover image ends before
        it would report; a recording's part is not its recording's size)."""
        self._partial[name] = size
        if whole and name in self._sizes and name not in self._given:  # an announced size may be a guess (HLS)
            self._sizes[name] = size
            self._total()
        self._refresh()

    def left_out(self, name: str) -> None:
        """An optional asset is left out of the item: its bytes and its size no longer count."""
        self._sizes.pop(name, None)
        self._given.discard(name)
        self._total()
        self.dropped(name)

    def dropped(self, name: str) -> None:
        """An asset's bytes are gone (a corrupt file removed, an optional asset left out)."""
        self._partial.pop(name, None)
        self._refresh()

    def verified(self, name: str, size: int) -> None:
        self._partial.pop(name, None)
        self._verified.add(name)
        self.progress.bytes_finished += size
        self._refresh()

    def all_done(self, names: list[str], size: int) -> None:
        """Every asset done in one step (a small item's one activity, a tiny item's fetch)."""
        self._verified.update(names)
        self._partial.clear()
        self.progress.bytes_finished = size
        self._refresh()

    def unfinished_gone(self) -> None:
        """Every unfinished download's bytes are gone (the small item's activity removed them)."""
        self._partial.clear()
        self._refresh()

    def restart(self) -> None:
        """Everything is downloaded again (the host holding the files was lost)."""
        self._partial.clear()
        self._verified.clear()
        self.progress.bytes_finished = 0
        self._refresh()

    def _refresh(self) -> None:
        self.progress.bytes_done = self.progress.bytes_finished + sum(self._partial.values())

    # -- the details line ---------------------------------------------------------------------
    def show(self, stage: str) -> None:
        """The live details line for ``stage`` (the static summary is fixed at start: the URL; the
        title arrives with fetch, so the details line carries it)."""
        progress = self.progress
        shown = "paused" if progress.paused and stage not in ("done", "cancelled") else stage
        total, done = progress.bytes_total, progress.bytes_done
        amount = ""
        if total:
            amount = f" {100 * done // total}% {done / MiB:.1f}/{total / MiB:.1f} MiB"
        elif done:
            amount = f" {done / MiB:.1f} MiB"
        kept = " kept" if shown == "paused" and done else ""
        if self._live is not None and shown in ("download", "verify", "commit", "paused"):
            paused = " (paused)" if shown == "paused" else ""
            workflow.set_current_details(f"{recording_words(self._live)}{paused}{self._title_suffix()}")
            return
        workflow.set_current_details(f"{shown}{amount}{kept}{self._title_suffix()}")

    def ended(self, outcome: str, error_class: str | None) -> None:
        error = f" {error_class}" if error_class else ""
        workflow.set_current_details(f"{outcome}{error}{self._title_suffix()}")

    def _title_suffix(self) -> str:
        return f" - {self.title[:200]}" if self.title else ""
