"""fetch_extra and record_missing_extra: a committed item's extras, each on its own (trawl.extras).

``fetch_extra`` runs one extra of the item's platform, stores each file it found as a blob
(announced first, as commit does: trawl.storage.orphans) and records it in the catalog as an
asset of the item with its kind and language, and the files it knows it cannot have as missing.
A failure is classified as any stage's: the item's ``retry.extras`` policy retries it, and once
it keeps failing the workflow calls ``record_missing_extra`` with the failure's class. While an
extra runs, a side thread heartbeats the last state it reported (a comment page's cursor), so a
retried attempt on any worker goes on from there.
"""

from __future__ import annotations

import contextvars
import json
import hashlib
import tempfile
import threading
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from temporalio import activity

from trawl.activities.application_errors import classified
from trawl.contracts import ExtraInput, ExtraResult, MissingExtraInput, PlanInput, PlanResult, StoredExtra
from trawl.errors import NotFound, ParseError, StorageError
from trawl.extras import EXTRA_KINDS, ExtraContext, ExtraFile
from trawl.extras_text import SEARCHED_KINDS, ExtraLine, extra_lines
from trawl.models import Resolved
from trawl.platforms.registry import Registry
from trawl.storage.blobs import BlobStore, blob_key
from trawl.storage.records import CommittedAsset, MissingExtra

if TYPE_CHECKING:  # the catalog (SQLAlchemy) is built by the worker and handed in
    from trawl.storage.catalog import Catalog

BEAT_EVERY_S = 1.0
# An extra's reason as its result carries it into the item's result (the catalog keeps it whole).
RESULT_REASON = 300


class ExtraActivities:
    def __init__(self, registry: Registry, client: httpx.Client, catalog: Catalog, blobs: BlobStore,
                 work_dir: Path, max_delay: timedelta, max_attempts: int = 0, search_lines: int = 2000) -> None:
        self.registry = registry
        self.client = client
        self.catalog = catalog
        self.blobs = blobs
        self.work_dir = Path(work_dir)
        self.max_delay = max_delay
        self.max_attempts = max_attempts
        self.search_lines = search_lines  # lines of each kind search reads (catalog.search_extras_lines)

    @activity.defn(name="fetch_extra")
    @classified(lambda self: self.max_delay)
    def fetch_extra(self, inp: ExtraInput) -> ExtraResult:
        resolved = inp.resolved
        extra = self.registry.extras.get(resolved.platform, inp.extra)
        if extra is None:
            raise ParseError(f"{resolved.platform} offers no extra {inp.extra!r} on this worker (or it is turned off)")
        resumed = None
        if activity.in_activity():
            details = activity.info().heartbeat_details
            resumed = details[0] if details else None
        with _Beating() as beat:
            files = extra.fetch(resolved, ExtraContext(self.client, heartbeat=beat.state, resumed=resumed))
            if inp.snapshot:  # a refresh: beside the earlier files, never over them
                files = [replace(f, name=f"{f.name}@{inp.snapshot}"[:64]) for f in files]
            return ExtraResult(inp.extra, self._store(inp.workflow_id, resolved.canonical_key, files,
                                                      metadata=not inp.snapshot))

    @activity.defn(name="plan_extras")
    @classified(lambda self: self.max_delay)
    def plan_extras(self, inp: PlanInput) -> PlanResult:
        """A committed item as its extras need it (from the catalog: its ids are in its metadata)."""
        item = self.catalog.get(inp.canonical_key)
        if item is None or item.status != "committed":
            raise NotFound(f"no committed item {inp.canonical_key} in the catalog")
        resolved = Resolved(item.canonical_key, item.canonical_url, item.platform, [], item.title, item.uploader,
                            item.duration, item.published_at, dict(item.metadata))
        names = self.registry.extras.names(resolved)
        return PlanResult(resolved, [n for n in names if not inp.extras or n in inp.extras])

    @activity.defn(name="record_missing_extra")
    @classified(lambda self: self.max_delay)
    def record_missing_extra(self, inp: MissingExtraInput) -> ExtraResult:
        extra = self.registry.extras.get(inp.platform, inp.extra)
        kind = extra.kind if extra is not None else "extra"
        missing = MissingExtra(inp.extra, kind, None, inp.error_class, inp.reason)
        self.catalog.add_extras(inp.canonical_key, [], [missing])
        return ExtraResult(inp.extra, [StoredExtra(inp.extra, kind, missing=inp.error_class,
                                                   reason=inp.reason[:RESULT_REASON])])

    def _store(self, workflow_id: str, canonical_key: str, files: list[ExtraFile],
               metadata: bool = True) -> list[StoredExtra]:
        found = [f for f in files if not f.missing]
        for file in files:
            if file.kind not in EXTRA_KINDS:
                raise ParseError(f"extra file {file.name!r} has kind {file.kind!r}, not one of {', '.join(EXTRA_KINDS)}")
        shas = {file.name: hashlib.sha256(file.body).hexdigest() for file in found}
        run_id = activity.info().workflow_run_id if activity.in_activity() else ""
        intents = self.catalog.intend_blobs([blob_key(sha) for sha in shas.values()], workflow_id, run_id)
        rows: list[CommittedAsset] = []
        self.work_dir.mkdir(parents=True, exist_ok=True)
        for file in found:
            sha = shas[file.name]
            with tempfile.NamedTemporaryFile(dir=self.work_dir, prefix=".extra-", delete=False) as out:
                out.write(file.body)
                part = Path(out.name)
            try:
                key = self.blobs.put(part, sha, len(file.body))
            finally:
                part.unlink(missing_ok=True)
            rows.append(CommittedAsset(file.name, file.kind, sha, len(file.body), file.mime, key,
                                       file.source_url or None, file.language or None))
        missing = [MissingExtra(f.name, f.kind, f.language or None, f.missing, f.reason) for f in files if f.missing]
        lines: dict[str, list[ExtraLine]] = {}
        for file in found:
            if file.kind in SEARCHED_KINDS:
                kept = lines.setdefault(file.kind, [])
                kept += extra_lines(file.kind, file.body, self.search_lines - len(kept))
        if not self.catalog.add_extras(canonical_key, rows, missing, lines, release=intents):
            raise StorageError(f"the catalog holds no item {canonical_key} to add its extras to")
        for file in found if metadata else []:
            if file.kind == "chapters":  # also in the item's metadata, as yt-dlp's info has them
                self.catalog.merge_metadata(canonical_key, {"chapters": json.loads(file.body)})
        return [StoredExtra(f.name, f.kind, f.language, key=blob_key(shas[f.name]) if not f.missing else "",
                            sha256=shas.get(f.name, ""), size=len(f.body), mime=f.mime if not f.missing else None,
                            missing=f.missing, reason=f.reason[:RESULT_REASON]) for f in files]


class _Beating:
    """A side thread that heartbeats every :data:`BEAT_EVERY_S` with the last state an extra
    reported (``state(value)``), so a cursor survives the attempt and a dead worker is noticed."""

    def __init__(self) -> None:
        self._state: list[Any] = []
        self._stop = threading.Event()
        self._context = contextvars.copy_context()
        self._thread = threading.Thread(target=self._beat, name="extra-heartbeat", daemon=True)

    def state(self, value: Any) -> None:
        """Record ``value`` now (the SDK sends the latest at its throttle, and with a failure)."""
        self._state = [value]
        if activity.in_activity():
            activity.heartbeat(value)

    def _beat(self) -> None:
        while not self._stop.wait(BEAT_EVERY_S):
            if self._context.run(activity.in_activity):
                self._context.run(activity.heartbeat, *self._state)

    def __enter__(self) -> _Beating:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
