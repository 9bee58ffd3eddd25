"""What an export writes of an item's extras (trawl.extras), with yt-dlp's flags and names.

Beside the main file ``NAME.mp4``, as yt-dlp names them:

- ``--write-subs`` / ``--write-auto-subs``: ``NAME.<lang>.srt`` (``--sub-format srt|vtt|json``) for
  each uploader's track / each automatic (AI) track, ``lang`` as the platform names it
  (``zh-CN``, ``ai-zh``: a track whose language starts with ``ai-`` is automatic), filtered by
  ``--sub-langs`` (comma-separated languages or regular expressions matched whole, ``all``,
  ``danmaku``; ``-LANG`` leaves one out); the danmaku is the ``danmaku`` "language":
  ``NAME.danmaku.xml``, as stored (the XML danmaku format players read).
- ``--write-comments``: the comments inside ``NAME.info.json`` (its ``comments`` list, as yt-dlp
  puts them) with ``--write-info-json``, else ``NAME.comments.json`` (the stored document).
- chapters go into ``NAME.info.json`` (``chapters``) whenever the item has them.
- of an extra refreshed into dated snapshots (``comments@20261205T130800Z``), the newest is written.
- ``--embed-subs``, ``--embed-chapters``, ``--embed-metadata``: into a copy of the main file made
  by ffmpeg (trawl.embed), which takes the exported file's place; the stored blob is never
  modified (a hard link to it is replaced by the copy, not written through).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trawl.storage.records import CatalogItem, CommittedAsset
from trawl.embed import Embedding
from trawl.subtitles import SubtitleError, convert, cues

SUB_FORMATS = ("srt", "vtt", "json")
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
    # Into a copy of the main file (trawl.embed): the tracks --sub-langs chooses, the chapters,
    # the item's metadata.
    embed_subs: bool = False
    embed_chapters: bool = False
    embed_metadata: bool = False

    def __post_init__(self) -> None:
        if self.sub_format not in SUB_FORMATS:
            raise ExtrasChoiceError(f"--sub-format {self.sub_format!r}: one of {', '.join(SUB_FORMATS)}")
        for pattern in self.sub_langs:
            try:
                re.compile(pattern.removeprefix("-"))
            except re.error as err:
                raise ExtrasChoiceError(f"--sub-langs {pattern!r} is not a regular expression: {err}") from None

    @classmethod
    def parse_langs(cls, text: str) -> tuple[str, ...]:
        """``--sub-langs zh-CN,ai-.*,danmaku`` as its patterns."""
        return tuple(part.strip() for part in text.split(",") if part.strip()) or ("all",)

    @property
    def any(self) -> bool:
        return self.write_subs or self.write_auto_subs or self.write_comments

    @property
    def embeds(self) -> bool:
        return self.embed_subs or self.embed_chapters or self.embed_metadata

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
        SubtitleError: a stored track that is not a track (named).
    """
    files: list[tuple[str, bytes]] = []
    for asset in latest(item.assets):
        if choice.wants(asset) and asset.kind == "danmaku":
            files.append((".danmaku.xml", read(asset)))
        elif choice.wants(asset):
            language = re.sub(r"[^A-Za-z0-9_-]", "_", asset.language or "und")[:35]  # a name part, never a path
            try:
                files.append((f".{language}.{choice.sub_format}", convert(read(asset), choice.sub_format)))
            except SubtitleError as err:
                raise SubtitleError(f"{item.canonical_key} {asset.name}: {err}") from None
        elif asset.kind == "comments" and choice.write_comments and not info_json:
            files.append((".comments.json", read(asset)))
    return files


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
    """What ``--embed-subs``, ``--embed-chapters`` and ``--embed-metadata`` put into the copy.

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
