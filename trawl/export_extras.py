"""What an export writes of an item's extras (trawl.extras), with yt-dlp's flags and names.

Beside the main file ``NAME.mp4``, as yt-dlp names them:

- ``--write-subs`` / ``--write-auto-subs``: ``NAME.<lang>.srt`` (``--sub-format srt|vtt|json``) for
  each uploader's track / each automatic (AI) track, ``lang`` as the platform names it
  (``zh-CN``, ``ai-zh``: a track whose language starts with ``ai-`` is automatic), filtered by
  ``--sub-langs`` (comma-separated languages or regular expressions matched whole, ``all``,
  ``danmaku``; ``-LANG`` leaves one out); the danmaku is the ``danmaku`` "language":
  ``NAME.danmaku.xml``, as stored (the XML danmaku format players read), and/or with
  ``--danmaku-format ass`` ``NAME.danmaku.ass``, rendered for players without a danmaku overlay
  (trawl.danmaku_ass).
- ``--write-comments``: the comments inside ``NAME.info.json`` (its ``comments`` list, as yt-dlp
  puts them) with ``--write-info-json``, else ``NAME.comments.json`` (the stored document).
- chapters go into ``NAME.info.json`` (``chapters``) whenever the item has them.
- of an extra refreshed into dated snapshots (``comments@20261205T130800Z``), the newest is written.
- ``--embed-subs``, ``--embed-chapters``, ``--embed-metadata``, ``--embed-thumbnail``: into a copy
  of the main file made by ffmpeg (trawl.embed), which takes the exported file's place; the stored blob is never
  modified (a hard link to it is replaced by the copy, not written through).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trawl.danmaku import DanmakuParseError, parse_danmaku_xml
from trawl.danmaku_ass import Stage, render_ass
from trawl.storage.records import CatalogItem, CommittedAsset
from trawl.embed import Embedding
from trawl.subtitles import SubtitleError, convert, cues

SUB_FORMATS = ("srt", "vtt", "json")
DANMAKU_FORMATS = ("xml", "ass")
DANMAKU = "danmaku"
# A stored extra read for an export (a comment document, a track) is refused past this.
MAX_EXTRA_BYTES = 256 * 1024 * 1024


class ExtrasChoiceError(ValueError):
    """A --sub-langs or --sub-format that cannot be used; the message says what to write."""


@dataclass(frozen=True)
class ExtrasChoice:
    """Which extras an export writes, as yt-dlp's flags say it."""

    write_subs: bool = False
    write_auto_subs: bool = False
    sub_langs: tuple[str, ...] = ("all",)
    sub_format: str = "srt"
    write_comments: bool = False
    # The danmaku as stored (xml) and/or rendered as ASS subtitles (ass).
    danmaku_formats: tuple[str, ...] = ("xml",)
    # Into a copy of the main file (trawl.embed): the tracks --sub-langs chooses, the chapters,
    # the item's metadata.
    embed_subs: bool = False
    embed_chapters: bool = False
    embed_metadata: bool = False
    embed_thumbnail: bool = False

    def __post_init__(self) -> None:
        if self.sub_format not in SUB_FORMATS:
            raise ExtrasChoiceError(f"--sub-format {self.sub_format!r}: one of {', '.join(SUB_FORMATS)}")
        unknown = [f for f in self.danmaku_formats if f not in DANMAKU_FORMATS] or \
            ([] if self.danmaku_formats else ["(none)"])
        if unknown:
            raise ExtrasChoiceError(f"--danmaku-format {unknown[0]!r}: one or more of {', '.join(DANMAKU_FORMATS)}, "
                                    "comma-separated")
        for pattern in self.sub_langs:
            try:
                re.compile(pattern.removeprefix("-"))
            except re.error as err:
                raise ExtrasChoiceError(f"--sub-langs {pattern!r} is not a regular expression: {err}") from None

    @classmethod
    def parse_langs(cls, text: str) -> tuple[str, ...]:
        """``--sub-langs zh-CN,ai-.*,danmaku`` as its patterns."""
        return tuple(part.strip() for part in text.split(",") if part.strip()) or ("all",)

    @classmethod
    def parse_danmaku_formats(cls, text: str) -> tuple[str, ...]:
        """``--danmaku-format xml,ass`` as its formats, each once."""
        return tuple(dict.fromkeys(part.strip().lower() for part in text.split(",") if part.strip()))

    @property
    def any(self) -> bool:
        return self.write_subs or self.write_auto_subs or self.write_comments

    @property
    def embeds(self) -> bool:
        return self.embed_subs or self.embed_chapters or self.embed_metadata or self.embed_thumbnail

    def embedded_track(self, asset: CommittedAsset) -> bool:
        """Whether ``--embed-subs`` embeds this track: those the write flags choose, or without
        them (as yt-dlp's --embed-subs alone) the uploader's tracks --sub-langs takes."""
        if asset.kind != "subtitles":
            return False
        if self.write_subs or self.write_auto_subs:
            return self.wants(asset)
        return not (asset.language or "").startswith("ai-") and self.wants_language(asset.language or "")

    def wants_language(self, language: str) -> bool:
        """Whether ``--sub-langs`` takes ``language`` (``danmaku`` for the danmaku)."""
        wanted = False
        for pattern in self.sub_langs:
            negated = pattern.startswith("-")
            body = pattern.removeprefix("-")
            if body == "all" or re.fullmatch(body, language):
                wanted = not negated
        return wanted

    def wants(self, asset: CommittedAsset) -> bool:
        """Whether this extra asset is written as a file of its own."""
        if asset.kind == "danmaku":
            return (self.write_subs or self.write_auto_subs) and self.wants_language(DANMAKU)
        if asset.kind == "subtitles":
            language = asset.language or ""
            automatic = language.startswith("ai-")
            return (self.write_auto_subs if automatic else self.write_subs) and self.wants_language(language)
        return False


def latest(assets: list[CommittedAsset]) -> list[CommittedAsset]:
    """Each extra's newest snapshot (``comments@20261205T130800Z`` over ``comments``), in order."""
    newest: dict[str, CommittedAsset] = {}
    for asset in assets:
        base, _, stamp = asset.name.partition("@")
        kept = newest.get(base)
        if kept is None or stamp > kept.name.partition("@")[2]:
            newest[base] = asset
    return [asset for asset in assets if newest.get(asset.name.partition("@")[0]) is asset]


def sidecars(item: CatalogItem, choice: ExtrasChoice, read: Callable[[CommittedAsset], bytes],
             info_json: bool) -> list[tuple[str, bytes]]:
    """The item's extras as ``(suffix after NAME, bytes)``: ``.zh-CN.srt``, ``.danmaku.xml``,
    ``.comments.json`` (comments only when no info JSON carries them).

    Raises:
        SubtitleError: a stored track that is not a track, or a danmaku file that cannot be
            rendered as ASS (named).
    """
    files: list[tuple[str, bytes]] = []
    for asset in latest(item.assets):
        if choice.wants(asset) and asset.kind == "danmaku":
            body = read(asset)
            if "xml" in choice.danmaku_formats:
                files.append((".danmaku.xml", body))
            if "ass" in choice.danmaku_formats:
                files.append((".danmaku.ass", danmaku_ass(item, body)))
        elif choice.wants(asset):
            language = re.sub(r"[^A-Za-z0-9_-]", "_", asset.language or "und")[:35]  # a name part, never a path
            try:
                files.append((f".{language}.{choice.sub_format}", convert(read(asset), choice.sub_format)))
            except SubtitleError as err:
                raise SubtitleError(f"{item.canonical_key} {asset.name}: {err}") from None
        elif asset.kind == "comments" and choice.write_comments and not info_json:
            files.append((".comments.json", read(asset)))
    return files


def danmaku_ass(item: CatalogItem, body: bytes) -> bytes:
    """A stored danmaku file rendered as ASS on the video's stage (its size when the platform
    gave it, else 1920x1080).

    Raises:
        SubtitleError: the stored file is not the XML danmaku format (named).
    """
    try:
        _, comments = parse_danmaku_xml(body)
    except DanmakuParseError as err:
        raise SubtitleError(f"{item.canonical_key} danmaku: {err}") from None
    width, height = item.metadata.get("width"), item.metadata.get("height")
    sized = all(isinstance(v, int) and 64 <= v <= 16384 for v in (width, height))
    stage = Stage(width, height) if sized else Stage()  # type: ignore[arg-type]
    return render_ass(comments, stage, title=item.title or item.canonical_key)[0]


def info_fields(item: CatalogItem, choice: ExtrasChoice, read: Callable[[CommittedAsset], bytes]) -> dict[str, Any]:
    """What the item's extras add to its info JSON: ``chapters`` (always), ``comments`` (with
    ``--write-comments``), under yt-dlp's names."""
    fields: dict[str, Any] = {}
    for asset in latest(item.assets):
        if asset.kind == "chapters":
            chapters = _json(read(asset))
            if isinstance(chapters, list):
                fields["chapters"] = chapters
        elif asset.kind == "comments" and choice.write_comments:
            doc = _json(read(asset))
            if isinstance(doc, dict) and isinstance(doc.get("comments"), list):
                fields["comments"] = doc["comments"]
                if item.metadata.get("comment_count") is None:  # the platform's count stays when it gave one
                    fields["comment_count"] = len(doc["comments"])
    return fields


def embedding(item: CatalogItem, choice: ExtrasChoice, read: Callable[[CommittedAsset], bytes]) -> Embedding:
    """What ``--embed-subs``, ``--embed-chapters``, ``--embed-metadata`` and ``--embed-thumbnail`` put
    into the copy.

    Raises:
        SubtitleError: a stored track that is not a track (named).
    """
    found = Embedding()
    for asset in latest(item.assets):
        if choice.embed_subs and choice.embedded_track(asset):
            try:
                found.subtitles.append((asset.language or "und", cues(read(asset))))
            except SubtitleError as err:
                raise SubtitleError(f"{item.canonical_key} {asset.name}: {err}") from None
        elif choice.embed_chapters and asset.kind == "chapters":
            chapters = _json(read(asset))
            found.chapters = [c for c in chapters if isinstance(c, dict)] if isinstance(chapters, list) else []
        elif choice.embed_thumbnail and asset.kind == "thumbnail" and not found.thumbnail:
            found.thumbnail = read(asset)  # the item's first thumbnail, as stored (trawl.embed makes it a cover)
    if choice.embed_metadata:
        meta = item.metadata
        values = {"title": item.title or meta.get("title"), "artist": item.uploader or meta.get("uploader"),
                  "date": meta.get("upload_date"), "description": meta.get("description"),
                  "synopsis": meta.get("description"), "comment": item.canonical_url, "purl": item.canonical_url}
        found.metadata = {k: str(v) for k, v in values.items() if isinstance(v, (str, int)) and str(v)}
    return found


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None
