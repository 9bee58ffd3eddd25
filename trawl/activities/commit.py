"""commit: put verified files into the blob store and record the item, idempotently.

The store verifies each put (size, and sha256 against what verify computed) before the catalog
row is written; a blob is named by its key, never by a path on this worker. The blobs are
announced in the catalog before the first put and the announcement released after the row
(trawl.storage.orphans): an attempt killed between put and row leaves a blob the clean-up can
tell from one a running attempt is about to record. The row's
``metadata`` is the item's info JSON (:func:`info_json`): what the platform said, in yt-dlp's
field names, with the stored files and the crawl time (and for a live recording, its record:
:func:`with_recording`).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio import activity

from trawl.activities.application_errors import classified
from trawl.activities.liveness import heartbeating
from trawl.contracts import CommitFile, CommitInput, CommitResult, DownloadResult, StoredAsset
from trawl.download import file_sha256, state_path
from trawl.download.live import load_record
from trawl.download.live_comments import comment_files, part_comment_files
from trawl.errors import TrawlError
from trawl.merge import join_segments, merge_dash
from trawl.models import Asset, Resolved, compact, refuse_previews
from trawl.notify import watch_of
from trawl.routing import stored_assets
from trawl.storage.blobs import BlobStore, blob_key
from trawl.storage.records import CommittedAsset
from trawl.workdirs import workdir_name

if TYPE_CHECKING:  # the catalog (SQLAlchemy) is built by the worker and handed in
    from trawl.notify import Notifier
    from trawl.storage.catalog import Catalog


class CommitActivities:
    def __init__(self, catalog: Catalog, blobs: BlobStore, work_dir: Path, max_delay: timedelta,
                 max_attempts: int = 0, notifier: Notifier | None = None, prefix: str = "") -> None:
        self.notifier = notifier  # the webhooks: a watch's new item, a live recording (trawl.notify)
        self.prefix = prefix  # the deployment's task queue prefix, which its watches' runs are named by
        self.catalog = catalog
        self.blobs = blobs
        self.work_dir = Path(work_dir)
        self.max_delay = max_delay
        self.max_attempts = max_attempts

    @activity.defn(name="commit")
    @classified(lambda self: self.max_delay)
    @heartbeating
    def commit(self, inp: CommitInput) -> CommitResult:
        item = inp.resolved
        refuse_previews(item)  # whatever path led here, a preview never enters the catalog
        if inp.append:
            return self._append(inp)
        existing = self.catalog.get(item.canonical_key)
        if existing is not None:
            # Committed already: by this workflow on an attempt whose reply was lost, or by
            # another URL form of the same item. Either way nothing new enters the store.
            shutil.rmtree(self.work_dir / workdir_name(inp.workflow_id), ignore_errors=True)
            return CommitResult(
                outcome="committed" if existing.workflow_id == inp.workflow_id else "duplicate",
                assets=stored_assets(existing),
            )
        files = self._merged(inp) or inp.files
        item = with_recording(item, files)
        files, item = with_live_comments(files, item)
        intents = self._intend(inp, files)
        rows = [self._store(file) for file in files]
        stored = [StoredAsset(r.name, r.kind, r.sha256, r.size, r.key, r.mime) for r in rows]
        created = self.catalog.commit_item(
            canonical_key=item.canonical_key, platform=item.platform, canonical_url=item.canonical_url,
            source_url=inp.source_url, title=item.title, uploader=item.uploader, duration=item.duration,
            published_at=item.published_at, workflow_id=inp.workflow_id, assets=rows,
            metadata=info_json(item, inp.source_url, rows, datetime.now(UTC)), release=intents,
        )
        if created and self.notifier is not None:
            self._notify(item, inp.source_url)
        shutil.rmtree(self.work_dir / workdir_name(inp.workflow_id), ignore_errors=True)
        # The catalog lists assets by name; a fresh commit answers in the same order.
        return CommitResult(outcome="committed" if created else "duplicate",
                            assets=sorted(stored, key=lambda a: a.name))

    def _intend(self, inp: CommitInput, files: list[CommitFile]) -> list[int]:
        run_id = activity.info().workflow_run_id if activity.in_activity() else ""
        return self.catalog.intend_blobs([blob_key(f.download.sha256) for f in files], inp.workflow_id, run_id)

    def holds(self, sha256: str, size: int) -> bool:
        """The store has the blob of these bytes (a commit's put moved the file there)."""
        blob = self.blobs.stat(blob_key(sha256))
        return blob is not None and blob.size == size

    def _store(self, file: CommitFile) -> CommittedAsset:
        """Put one verified file into the store (idempotent: a retry finds its blob there)."""
        sha, size = file.download.sha256, file.download.size
        part = Path(file.download.path)
        if part.exists():
            key = self.blobs.put(part, sha, size)
        else:  # a retry after the put already moved the file into the store
            key = blob_key(sha)
            if not self.holds(sha, size):
                raise FileNotFoundError(f"{part} vanished before commit and no blob {sha[:12]} of {size} bytes "
                                        f"is in the store")
        state_path(part).unlink(missing_ok=True)
        return CommittedAsset(file.asset.name, file.asset.kind, sha, size, file.mime, key, file.download.url)

    def _append(self, inp: CommitInput) -> CommitResult:
        """Add files to the item, created with the first ones (CommitInput.append): a live
        recording's parts as they come (a part without a file brings its record only), then its
        other files. Its ``metadata.live`` gains each part (:func:`with_part`)."""
        item = inp.resolved
        work = self.work_dir / workdir_name(inp.workflow_id)
        held = self.catalog.get(item.canonical_key) if any(f.download.live for f in inp.files) else None
        numbered = numbered_parts(inp.files, held.metadata.get("live") if held is not None else None)
        files, item = with_live_comments([f for f in numbered if f.download.path and not f.download.live], item)
        files += [f for f in numbered if f.download.path and f.download.live]
        comments = [part_comments(f, work) for f in numbered if f.download.live]
        files += [c for extra, _ in comments for c in extra]
        intents = self._intend(inp, files)
        rows = [self._store(file) for file in files]
        now = datetime.now(UTC)

        def describe(metadata: dict[str, Any], every: list[CommittedAsset]) -> tuple[dict[str, Any], float | None]:
            live = metadata.get("live") if isinstance(metadata.get("live"), dict) else None
            said = metadata.get("live_comments") if isinstance(metadata.get("live_comments"), dict) else None
            for file in numbered:
                if file.download.live:
                    live = with_part(live, file.download.live, file.asset.name if file.download.path else None,
                                     file.download.size)
            for _, summary in comments:
                said = with_part_comments(said, summary)
            described = item
            if live is not None:
                described = replace(item, duration=item.duration if item.duration is not None else live.get("seconds"),
                                    metadata={**item.metadata, "live_status": "was_live" if live.get("ended")
                                              else "is_live", "live": live})
            if said is not None:
                described = replace(described, metadata={**described.metadata, "live_comments": said})
            told.append(described)
            return info_json(described, inp.source_url, every, now), described.duration

        told: list[Resolved] = []
        every = self.catalog.add_to_item(
            canonical_key=item.canonical_key, platform=item.platform, canonical_url=item.canonical_url,
            source_url=inp.source_url, title=item.title, uploader=item.uploader, published_at=item.published_at,
            workflow_id=inp.workflow_id, assets=rows, describe=describe, release=intents)
        if told and self.notifier is not None:  # each part: live_recording; the first: a watch's new item
            self._notify(told[-1], inp.source_url, new=any(r.name == "video" for r in rows))
        ended = any(f.download.live and f.download.live.get("ended") for f in inp.files)
        work = self.work_dir / workdir_name(inp.workflow_id)
        if ended and not any(work.glob("*.part")):  # nothing else of the item is still being written here
            shutil.rmtree(work, ignore_errors=True)
        return CommitResult(outcome="committed",
                            assets=[StoredAsset(r.name, r.kind, r.sha256, r.size, r.key, r.mime) for r in every])

    def _notify(self, item: Resolved, source_url: str, new: bool = True) -> None:
        """Tell the webhooks of a new item a watch's run brought (``new``: not for each later part
        of a recording), and of a live recording's commit. What cannot be read for it is left out:
        a notification never fails a commit."""
        assert self.notifier is not None
        about = {"canonical_key": item.canonical_key, "platform": item.platform, "title": item.title,
                 "uploader": item.uploader, "canonical_url": item.canonical_url, "url": source_url}
        try:
            crawls = self.catalog.crawls_of(item.canonical_key) if new else []
        except TrawlError:
            crawls = []
        for crawl_id in crawls:
            watch = watch_of(crawl_id, self.prefix)
            if watch is not None:
                self.notifier.emit("watch_item", {"watch": watch, "crawl_id": crawl_id, **about})
        live = item.metadata.get("live")
        if isinstance(live, dict):
            self.notifier.emit("live_recording", {**about, "ended": live.get("ended"), "seconds": live.get("seconds"),
                                                  "record": live})

    def _merged(self, inp: CommitInput) -> list[CommitFile] | None:
        """DASH video + audio, or a video's segments, as one file, when the platform asks for it
        and ffmpeg manages."""
        if inp.resolved.metadata.get("merge") == "join":
            return self._joined(inp)
        if inp.resolved.metadata.get("merge") != "dash":
            return None
        video = next((f for f in inp.files if f.asset.kind == "video"), None)
        audio = next((f for f in inp.files if f.asset.kind == "audio"), None)
        if video is None or audio is None or not Path(video.download.path).exists():
            return None
        out = Path(video.download.path).with_name("merged.mp4.part")
        if not merge_dash(Path(video.download.path), Path(audio.download.path), out):
            return None
        size = out.stat().st_size
        merged = DownloadResult(asset_name="video", path=str(out), size=size, sha256=file_sha256(out),
                                url=video.download.url, total=size)
        rest = [f for f in inp.files if f is not video and f is not audio]
        return [CommitFile(Asset("video", "video", video.asset.urls, mime="video/mp4"), merged, "video/mp4"), *rest]

    def _joined(self, inp: CommitInput) -> list[CommitFile] | None:
        """The video's segments (its video assets, in the platform's order) joined into one MP4."""
        segments = [f for f in inp.files if f.asset.kind == "video"]
        if len(segments) < 2 or not all(Path(f.download.path).exists() for f in segments):
            return None
        first = segments[0]
        out = Path(first.download.path).with_name("joined.mp4.part")
        if not join_segments([Path(f.download.path) for f in segments], out):
            return None
        size = out.stat().st_size
        joined = DownloadResult(asset_name="video", path=str(out), size=size, sha256=file_sha256(out),
                                url=first.download.url, total=size)
        rest = [f for f in inp.files if f not in segments]
        return [CommitFile(Asset("video", "video", first.asset.urls, mime="video/mp4"), joined, "video/mp4"), *rest]


def with_recording(item: Resolved, files: list[CommitFile]) -> Resolved:
    """``item`` with the record of a live recording among ``files`` (written beside its file by
    trawl.download.live: sequences, seconds, gaps, why it ended) as its ``metadata.live``, and the
    seconds recorded as its duration when the platform gave none."""
    for file in files:
        record = load_record(Path(file.download.path))
        if record is not None:
            duration = item.duration if item.duration is not None else record.get("seconds")
            return replace(item, metadata={**item.metadata, "live_status": "was_live", "live": record},
                           duration=duration)
    return item


def with_live_comments(files: list[CommitFile], item: Resolved) -> tuple[list[CommitFile], Resolved]:
    """``files`` with the comment files a live recording's sidecar listed in its work directory
    (trawl.download.live_comments: once the recording ended), and ``item`` with their summary as
    ``metadata.live_comments``; ``files`` and ``item`` as they are for anything else."""
    extra: list[CommitFile] = []
    summary = None
    names = {f.asset.name for f in files}
    for directory in dict.fromkeys(Path(f.download.path).parent for f in files if f.download.path):
        listed, found = comment_files(directory)
        summary = summary or found
        extra += [CommitFile(Asset(c.name, c.kind, [], mime=c.mime),
                             DownloadResult(asset_name=c.name, path=str(c.path), size=c.size, sha256=c.sha256, url="",
                                            mime=c.mime, total=c.size), c.mime) for c in listed if c.name not in names]
    if summary is not None:
        item = replace(item, metadata={**item.metadata, "live_comments": summary})
    return files + extra, item


def with_part(live: dict[str, Any] | None, record: dict[str, Any], asset: str | None, size: int) -> dict[str, Any]:
    """A recording's ``metadata.live`` with one more part (``record``: DownloadResult.live, its
    ``part`` numbered among the item's by :func:`numbered_parts`; ``asset``: the name its file is
    stored under, None for a part without a file): the part in ``parts`` (in order, with where it
    starts), its gaps and restarts added, the recording's counts and end as of that part. A part
    listed already changes nothing.

    An item recorded again (its broadcast's workflow run again after a failure) holds the parts of
    each recording (``recording_started_at`` tells them apart, ``recording_part`` is the part's
    number in its own recording); its counts are the sums of every recording's."""
    live = dict(live or {})
    parts = [p for p in live.get("parts", []) if isinstance(p, dict)]
    if any(p.get("part") == record.get("part") for p in parts):
        return live
    entry = {key: record.get(key) for key in ("part", "first_sequence", "last_sequence", "segments", "seconds",
                                              "start_seconds", "started_at", "recording_started_at",
                                              "recording_part")}
    parts.append({**entry, "asset": asset, "size": size})
    gaps = [*live.get("gaps", []), *record.get("gaps", [])]
    restarts = [*live.get("restarts", []), *record.get("restarts", [])]
    recordings = dict(live.get("recordings") or {}) if isinstance(live.get("recordings"), dict) else {}
    if not recordings and live.get("started_at") and live.get("started_at") != record.get("recording_started_at"):
        recordings[str(live["started_at"])] = {key: live.get(key) for key in (  # committed before recordings were kept
            "segments", "seconds", "missing_segments")}
    recordings[str(record.get("recording_started_at"))] = {
        "segments": record.get("total_segments"), "seconds": record.get("total_seconds"),
        "missing_segments": record.get("missing_segments")}

    def total(key: str) -> Any:
        values = [r.get(key) for r in recordings.values() if isinstance(r, dict)]
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        return round(sum(numbers), 3) if isinstance(sum(numbers), float) else sum(numbers)

    live.update(playlist=record.get("playlist"), started_at=live.get("started_at") or record.get("recording_started_at"),
                ended_at=record.get("ended_at") or None, ended=record.get("ended"),
                first_sequence=live.get("first_sequence") if len(recordings) > 1 else record.get(
                    "recording_first_sequence"), last_sequence=record.get("last_sequence"),
                segments=total("segments"), seconds=total("seconds"), gaps=gaps,
                missing_segments=total("missing_segments"),
                parts=sorted(parts, key=lambda p: p.get("part") or 0))
    if restarts:
        live["restarts"] = restarts
    if len(recordings) > 1:
        live["recordings"] = recordings
    return live


_PART_SUFFIX = re.compile(r"-part\d{3,}$")


def part_number(live: dict[str, Any] | None, record: dict[str, Any]) -> int:
    """The number among the item's parts of the part ``record`` (DownloadResult.live: ``part`` is
    its number in its own recording): the same as its recording's parts committed before it
    (a retried commit finds its own), after every part of the item's other recordings (a
    broadcast recorded again after a failed run: its parts follow, never replace, the first's)."""
    live = live or {}
    parts = [p for p in live.get("parts", []) if isinstance(p, dict) and isinstance(p.get("part"), int)]
    recording, local = record.get("recording_started_at"), int(record.get("part") or 0)

    def recording_of(entry: dict[str, Any]) -> Any:  # parts committed before they said so: the one recording
        return entry.get("recording_started_at", live.get("started_at"))

    same = [p for p in parts if recording_of(p) == recording]
    if same:
        first = same[0]
        return local + first["part"] - int(first.get("recording_part") or first["part"])
    return local + max((p["part"] for p in parts), default=0)


def numbered_parts(files: list[CommitFile], live: dict[str, Any] | None) -> list[CommitFile]:
    """``files`` with each part of a live recording named and numbered among the item's parts
    (:func:`part_number`): the first ``video``, the next ``video-part002``..."""
    numbered = []
    for file in files:
        record = file.download.live
        if record and isinstance(record.get("part"), int):
            number = part_number(live, record)
            base = _PART_SUFFIX.sub("", file.asset.name)
            name = base if number == 1 else f"{base}-part{number:03d}"
            record = {**record, "part": number, "recording_part": record.get("recording_part", record["part"])}
            file = replace(file, asset=replace(file.asset, name=name),
                           download=replace(file.download, asset_name=name, live=record))
        numbered.append(file)
    return numbered


def part_comments(file: CommitFile, work: Path) -> tuple[list[CommitFile], dict[str, Any] | None]:
    """The comment files of a recording's part (``file``, numbered by :func:`numbered_parts`)
    that its download's sidecar listed in the work directory (trawl.download.live_comments), each
    named for the part as its video is (``live-danmaku``, ``live-danmaku-part002``...), and their
    summary (None: the part has none)."""
    record = file.download.live or {}
    directory = Path(file.download.path).parent if file.download.path else work
    listed, summary = part_comment_files(directory, int(record.get("recording_part") or record.get("part") or 0))
    number = int(record.get("part") or 0)
    suffix = "" if number == 1 else f"-part{number:03d}"
    extra = [CommitFile(Asset(_PART_SUFFIX.sub("", c.name) + suffix, c.kind, [], mime=c.mime),
                        DownloadResult(asset_name=_PART_SUFFIX.sub("", c.name) + suffix, path=str(c.path), size=c.size,
                                       sha256=c.sha256, url="", mime=c.mime, total=c.size), c.mime) for c in listed]
    if summary is None:
        return extra, None
    danmaku = next((c.asset.name for c in extra if c.asset.kind != "messages"), None)
    return extra, {**summary, "part": number, "assets": [c.asset.name for c in extra], "danmaku": danmaku}


def with_part_comments(said: dict[str, Any] | None, summary: dict[str, Any] | None) -> dict[str, Any] | None:
    """An item's ``metadata.live_comments`` with one more part's (``summary``, from
    :func:`part_comments`): the part in ``parts`` (its assets, messages and comments), the counts
    summed over the parts, the stream's state (connections, spans without one) as of that part."""
    if summary is None:
        return said
    said = dict(said or {})
    parts = [p for p in said.get("parts", []) if isinstance(p, dict) and p.get("part") != summary.get("part")]
    parts.append({key: summary.get(key) for key in ("part", "danmaku", "assets", "messages", "comments")})
    parts.sort(key=lambda p: p.get("part") or 0)
    said.update({key: value for key, value in summary.items() if key not in ("part", "danmaku", "assets")})
    said.update(parts=parts, messages=sum(int(p.get("messages") or 0) for p in parts),
                comments=sum(int(p.get("comments") or 0) for p in parts))
    return said


def info_json(item: Resolved, source_url: str, assets: list[CommittedAsset], crawled_at: datetime) -> dict[str, Any]:
    """The catalog's record of an item, in the field names of yt-dlp's info JSON where it has one.

    The resolver's metadata (description, uploader_id, counts, tags, parts...) comes first; the
    item's own columns fill what it leaves out; then the stored files (``assets``: name, kind,
    size, sha256, mime, the URL they came from) and the crawl time (``crawled_at``, ISO UTC, and
    ``epoch``, yt-dlp's name for it).
    """
    published = item.published_at
    info: dict[str, Any] = {
        "id": item.canonical_key.split(":", 1)[-1],
        "title": item.title,
        "uploader": item.uploader,
        "duration": item.duration,
        "webpage_url": item.canonical_url,
        "upload_date": published[:10].replace("-", "") if published and len(published) >= 10 else None,
        **compact(item.metadata),
    }
    info.update(
        canonical_key=item.canonical_key,
        platform=item.platform,
        extractor=item.platform,
        original_url=source_url,
        published_at=published,
        assets=[compact({"name": a.name, "kind": a.kind, "size": a.size, "sha256": a.sha256, "mime": a.mime,
                         "url": a.source_url}) for a in assets],
        crawled_at=crawled_at.isoformat(),
        epoch=int(crawled_at.timestamp()),
    )
    return compact(info)

