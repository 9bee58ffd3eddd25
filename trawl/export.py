"""Committed items as named files: ``Uploader/Title [id].mp4`` instead of ``sha256/ab/cd/<sha256>``.

A *template* such as ``{platform}/{uploader}/{title} [{id}].{ext}`` names each asset's file;
its fields come from the catalog (:data:`FIELDS`). What lands on disk is always a safe relative
path (:func:`safe_component`): no separators or traversal from field values, no control
characters, at most :data:`MAX_COMPONENT_BYTES` bytes of UTF-8 per component (cut on character
boundaries, shortening the longest field first so ``[id]`` and ``.ext`` survive), no Windows
device names or trailing dots and spaces, and with ``windows_names`` none of ``<>:"\\|?*``
(replaced by full-width look-alikes) and collisions compared without case.

Collisions are resolved deterministically: assets of one item that would share a name get their
asset name appended (``... - image-2.jpg``); a name already taken by other bytes (another item,
an unrelated file) gets `` (2)``, `` (3)``, ... Items are exported in commit order, so a new
item never takes a name an older one had. A file that is there with the right bytes is left
alone, so exporting again adds only what is new; ``.trawl-export.json`` remembers size, mtime
and sha256 of what was written so a second run does not re-read copies.

Files are hard links to the blob where the store is a local directory on the same filesystem
(``link="hardlink"``), symbolic links to it (``"symlink"``, local stores only), and copies
otherwise, streamed from the :class:`~trawl.storage.blobs.BlobStore` (any backend), hashed on the
way and renamed into place only when the bytes match their key.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import mimetypes
import os
import re
import string
import threading
import unicodedata
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from trawl.errors import ContentCorrupt
from trawl.storage.blobs import READ_CHUNK, BlobStore
from trawl.storage.records import CatalogItem, CommittedAsset

if TYPE_CHECKING:  # the caller opens the catalog
    from trawl.storage.catalog import Catalog

DEFAULT_TEMPLATE = "{platform}/{uploader}/{title} [{id}].{ext}"
MAX_COMPONENT_BYTES = 255  # NAME_MAX of Linux, macOS and the usual filesystems, in bytes
NA = "NA"  # a field the catalog does not have, as yt-dlp writes it
MANIFEST = ".trawl-export.json"
LinkMode = Literal["hardlink", "copy", "symlink"]
LINK_MODES: tuple[str, ...] = ("hardlink", "copy", "symlink")

FIELDS: dict[str, str] = {
    "platform": "bilibili, weibo, facebook or generic",
    "id": "the platform's id (the canonical key without its platform prefix)",
    "key": "the canonical key, e.g. bilibili:BV1xx411c7mD",
    "title": "the title",
    "uploader": "the uploader's name",
    "uploader_id": "the uploader's id, when the platform gives it",
    "upload_date": "YYYYMMDD",
    "part": "the part number of a multi-part video",
    "kind": "the asset's kind: video, audio, image, thumbnail",
    "asset": "the asset's name within its item: video, audio, image-2, thumbnail",
    "ext": "the extension of the asset's sniffed type: mp4, m4a, flv, ts, jpg, ...",
    "sha256": "the first 16 hex digits of the file's sha256",
}

# Extensions by the MIME type verify recorded from the sniffed bytes.
EXT_BY_MIME = {
    "video/mp4": "mp4", "audio/mp4": "m4a", "video/quicktime": "mov", "video/webm": "webm",
    "audio/webm": "webm", "video/x-flv": "flv", "video/mp2t": "ts", "application/ogg": "ogg",
    "audio/ogg": "ogg", "audio/mpeg": "mp3", "audio/flac": "flac", "audio/wav": "wav",
    "image/jpeg": "jpg", "image/png": "png", "image/gif": "gif", "image/webp": "webp",
}

# A character that would split or escape a name becomes a look-alike that does not (as yt-dlp does).
_ALWAYS = {"/": "\u29f8", "\\": "\u29f9"}
_WINDOWS = {"<": "\uff1c", ">": "\uff1e", ":": "\uff1a", '"': "\uff02", "|": "\uff5c", "?": "\uff1f",
            "*": "\uff0a"}
_RESERVED = frozenset({"con", "prn", "aux", "nul", "conin$", "conout$"}
                      | {f"{dev}{n}" for dev in ("com", "lpt") for n in "123456789\u00b9\u00b2\u00b3"})
_KEEP_FORMAT = frozenset("\u200c\u200d")  # joiners hold emoji and Indic scripts together
_SPACES = re.compile(r"\s+")
_PART = re.compile(r"_p(\d+)$")


class TemplateError(ValueError):
    """A template that cannot name files; the message says what to change."""


def ext_for(mime: str | None) -> str:
    """The extension (without a dot) for a MIME type; ``bin`` when nothing better is known."""
    base = (mime or "").split(";", 1)[0].strip().lower()
    if base in EXT_BY_MIME:
        return EXT_BY_MIME[base]
    guessed = mimetypes.guess_extension(base) if base else None
    return guessed.lstrip(".") if guessed else "bin"


def _cut(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 is at most ``max_bytes`` bytes (whole characters)."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", "ignore")


def safe_component(name: str, *, max_bytes: int = MAX_COMPONENT_BYTES, windows: bool = False,
                   empty: str = "_") -> str:
    """One path component that is safe to create anywhere under the export directory.

    Separators become look-alikes (``/`` -> ``⧸``), control characters (C0, DEL, C1) become
    spaces and runs of white space one space, invisible format characters (bidirectional
    overrides that disguise extensions, BOMs) are dropped, leading dots and spaces (hidden files,
    ``..``) and trailing dots and spaces (which Windows drops) are removed, Windows device names
    (``CON``, ``nul.txt``, ``COM1``) get an ``_``, and the result is cut to ``max_bytes`` bytes of
    UTF-8 on a character boundary. With ``windows``, ``<>:"|?*`` become full-width look-alikes.
    Idempotent: a safe component is returned unchanged.

    Args:
        name: any text.
        max_bytes: the limit for the component's UTF-8 bytes.
        windows: also make the name valid on Windows filesystems.
        empty: what an empty result becomes.
    """
    table = {**_ALWAYS, **(_WINDOWS if windows else {})}
    out = []
    for char in unicodedata.normalize("NFC", name):
        if char in table:
            out.append(table[char])
            continue
        category = unicodedata.category(char)
        if category == "Cc":
            out.append(" ")
        elif category in ("Cf", "Cs", "Co", "Cn") and char not in _KEEP_FORMAT:
            continue
        elif category in ("Zl", "Zp"):
            out.append(" ")
        else:
            out.append(char)
    text = _SPACES.sub(" ", "".join(out))
    text = _trim(_cut(_trim(text), max_bytes))
    if not text:
        text = empty
    stem = text.split(".", 1)[0].rstrip(" ")
    if stem.casefold() in _RESERVED:
        text = stem + "_" + text[len(stem):]
        text = _trim(_cut(text, max_bytes)) if len(text.encode()) > max_bytes else text
    return text


def _trim(text: str) -> str:
    return text.lstrip(". ").rstrip(". ")


@dataclass(frozen=True)
class Template:
    """A parsed name template: literal text and ``{field}`` or ``{field:spec}`` per component."""

    text: str
    components: tuple[tuple[tuple[str, str | None, str], ...], ...]

    @classmethod
    def parse(cls, text: str) -> Template:
        """Check ``text`` and split it into components.

        Raises:
            TemplateError: an unknown field, attribute or index access, a conversion, an absolute
                path, ``..``, or a template without any field.
        """
        if not text.strip():
            raise TemplateError("empty template; e.g. " + DEFAULT_TEMPLATE)
        if text.startswith(("/", "\\")) or re.match(r"[A-Za-z]:[\\/]", text):
            raise TemplateError(f"{text!r}: a template names files inside the export directory, not an absolute path")
        parts = [p for p in text.split("/") if p not in ("", ".")]
        if any(p == ".." for p in parts):
            raise TemplateError(f"{text!r}: '..' would leave the export directory")
        components = []
        seen_field = False
        for part in parts:
            pieces = []
            try:
                parsed = list(string.Formatter().parse(part))
            except ValueError as err:
                raise TemplateError(f"{text!r}: {err} (write a literal brace as {{{{ or }}}})") from None
            for literal, name, spec, conversion in parsed:
                if name is not None and name not in FIELDS:
                    raise TemplateError(f"{text!r}: unknown field {{{name}}}; fields: "
                                        + ", ".join(f"{{{f}}}" for f in FIELDS))
                if conversion:
                    raise TemplateError(f"{text!r}: conversions such as !{conversion} are not supported")
                if spec and "{" in spec:
                    raise TemplateError(f"{text!r}: nested fields in a format spec are not supported")
                seen_field = seen_field or name is not None
                pieces.append((literal, name, spec or ""))
            components.append(tuple(pieces))
        if not seen_field:
            raise TemplateError(f"{text!r}: every item would get the same name; use fields such as {{title}} "
                                "and {id}")
        for literal, name, spec in (p for c in components for p in c):
            if name is not None and spec:
                try:
                    format("x", spec)
                except ValueError as err:
                    raise TemplateError(f"{text!r}: {{{name}:{spec}}}: {err}") from None
        return cls(text, tuple(components))

    @property
    def names_ext_last(self) -> bool:
        """Whether the last component ends with ``.{ext}`` (then the extension is kept when cutting)."""
        last = self.components[-1]
        return bool(last) and last[-1][1] == "ext" and last[-1][0].endswith(".")

    def render(self, values: dict[str, str], *, windows: bool = False, suffix: str = "",
               max_bytes: int = MAX_COMPONENT_BYTES) -> list[str]:
        """The safe path components for one asset.

        ``suffix`` is inserted before the extension of the last component (collision marks). A
        component over ``max_bytes`` loses bytes from its longest field first.
        """
        rendered: list[str] = []
        for index, pieces in enumerate(self.components):
            last = index == len(self.components) - 1
            fields = {name: safe_component(format(values.get(name) or NA, spec), windows=windows, empty=NA)
                      for _, name, spec in pieces if name is not None}
            for _ in range(len(fields) + 1):
                text = self._join(pieces, fields, suffix if last else "", last)
                excess = len(text.encode()) - max_bytes
                if excess <= 0 or not fields:
                    break
                longest = max(fields, key=lambda n: (len(fields[n].encode()), n))
                size = len(fields[longest].encode())
                if size <= 16:
                    break
                fields[longest] = _trim(_cut(fields[longest], max(16, size - excess))) or NA
            if last and len(text.encode()) > max_bytes:
                # Still too long (long literal text): cut before the collision mark and extension.
                tail = suffix + ("." + fields.get("ext", "") if self.names_ext_last else "")
                body = text[: len(text) - len(tail)]
                text = _trim(_cut(body, max_bytes - len(tail.encode()))) + tail
            rendered.append(safe_component(text, max_bytes=max_bytes, windows=windows))
        return rendered

    def _join(self, pieces: tuple[tuple[str, str | None, str], ...], fields: dict[str, str], suffix: str,
              last: bool) -> str:
        out = []
        for i, (literal, name, _spec) in enumerate(pieces):
            if last and suffix and self.names_ext_last and i == len(pieces) - 1:
                literal = literal[:-1] + suffix + "."
            out.append(literal)
            if name is not None:
                out.append(fields[name])
        text = "".join(out)
        if last and suffix and not self.names_ext_last:
            text += suffix
        return text


def upload_date(published_at: str | None) -> str | None:
    """``YYYYMMDD`` of a publication time as the resolvers record it (ISO 8601 or an RFC 2822 date)."""
    if not published_at:
        return None
    text = published_at.strip()
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            try:
                when = datetime.strptime(text, "%a %b %d %H:%M:%S %z %Y")  # Weibo's created_at
            except ValueError:
                return None
    return when.strftime("%Y%m%d")


def _platform_id(item: CatalogItem) -> str:
    """The platform's id: the canonical key without its platform prefix."""
    return item.canonical_key.split(":", 1)[1] if ":" in item.canonical_key else item.canonical_key


def field_values(item: CatalogItem, asset: CommittedAsset) -> dict[str, str]:
    """The template's field values for one of an item's assets ("" where not known: rendered NA).

    The catalog columns come first; the committed metadata fills what they lack (an uploader id,
    a part number, a title the column does not have).
    """
    meta = item.metadata
    ext = ext_for(asset.mime)
    ident = _platform_id(item)
    title = item.title or meta.get("title") or ""
    if title.lower().endswith("." + ext) and len(title) > len(ext) + 1:
        title = title[: -len(ext) - 1]  # a direct file's title is its file name: no "clip.mp4.mp4"
    part = _PART.search(ident)
    part_value = part[1] if part else meta.get("part") or meta.get("playlist_index")
    return {
        "platform": item.platform, "id": ident, "key": item.canonical_key,
        "title": title,
        "uploader": item.uploader or meta.get("uploader") or "",
        "uploader_id": str(meta.get("uploader_id") or ""),
        "upload_date": upload_date(item.published_at) or str(meta.get("upload_date") or ""),
        "part": str(part_value or ""), "kind": asset.kind, "asset": asset.name, "ext": ext,
        "sha256": asset.sha256[:16],
    }


def item_for_key(catalog: Catalog, canonical_key: str) -> CatalogItem | None:
    """One committed item by its canonical key, or None (only committed items are exported)."""
    item = catalog.get(canonical_key)
    return item if item is not None and item.status == "committed" else None


def download_name(item: CatalogItem, asset: CommittedAsset, template: Template | None = None, *,
                  windows: bool = False) -> str:
    """The file name (last component of the template) an asset is offered under, e.g. by the API."""
    template = template or Template.parse(DEFAULT_TEMPLATE)
    return template.render(field_values(item, asset), windows=windows)[-1]


def info_json(item: CatalogItem, files: dict[str, str]) -> dict[str, Any]:
    """The item's metadata as yt-dlp's ``.info.json`` spells it: the ``metadata`` column's fields,
    the catalog columns under yt-dlp's names where it lacks them, and the assets with sizes,
    hashes and the exported file names (``files``: asset name -> relative path)."""
    info: dict[str, Any] = dict(item.metadata)
    columns = {
        "id": _platform_id(item), "title": item.title, "uploader": item.uploader, "duration": item.duration,
        "upload_date": upload_date(item.published_at), "webpage_url": item.canonical_url,
        "extractor_key": item.platform, "timestamp_published": item.published_at,
    }
    for name, value in columns.items():
        if info.get(name) in (None, "") and value not in (None, ""):
            info[name] = value
    info["canonical_key"] = item.canonical_key
    info["platform"] = item.platform
    info["source_url"] = item.source_url
    info["crawled_at"] = item.created_at
    info["assets"] = [{"name": a.name, "kind": a.kind, "mime": a.mime, "ext": ext_for(a.mime), "size": a.size,
                       "sha256": a.sha256, "filename": files.get(a.name)} for a in item.assets]
    return info


@dataclass
class ExportStats:
    """What one export did; ``written`` lists the new files (relative paths), in order."""

    written: list[str] = field(default_factory=list)
    kept: int = 0
    copied_instead: int = 0  # hardlink or symlink asked for, a copy made (remote store, another filesystem)
    items: int = 0

    def add(self, other: ExportStats) -> None:
        self.written += other.written
        self.kept += other.kept
        self.copied_instead += other.copied_instead
        self.items += other.items


class Exporter:
    """Writes items' assets under ``root`` by a template; safe to call from several threads.

    Args:
        root: the export directory (created when missing).
        store: the blob store the catalog's keys are in.
        template: the name template.
        link: ``hardlink`` (falls back to a copy where the store is not a local directory on
            ``root``'s filesystem), ``symlink`` (local stores only, else a copy) or ``copy``.
        windows_names: names valid on Windows too; collisions compared without case.
        write_info_json: write ``<name>.info.json`` beside each item's main file.
    """

    def __init__(self, root: Path, store: BlobStore, template: Template | str = DEFAULT_TEMPLATE, *,
                 link: LinkMode = "hardlink", windows_names: bool = False, write_info_json: bool = False) -> None:
        if link not in LINK_MODES:
            raise ValueError(f"link must be one of {', '.join(LINK_MODES)}, not {link!r}")
        self.root = Path(root)
        self.store = store
        self.template = template if isinstance(template, Template) else Template.parse(template)
        self.link = link
        self.windows = windows_names
        self.write_info_json = write_info_json
        self._lock = threading.Lock()
        self._claimed: dict[str, tuple[str, str]] = {}  # folded relative path -> (item key, asset name)
        self._manifest: dict[str, list[Any]] = {}
        self._manifest_dirty = False
        self._dir_names: dict[Path, dict[str, str]] = {}
        self.root.mkdir(parents=True, exist_ok=True)
        self._load_manifest()

    # -- the public calls ------------------------------------------------------------------------
    def export_items(self, items: Iterable[CatalogItem]) -> ExportStats:
        """Export every item (in the order given); the manifest is saved at the end."""
        stats = ExportStats()
        try:
            for item in items:
                stats.add(self.export_item(item))
        finally:
            self.save()
        return stats

    def export_item(self, item: CatalogItem) -> ExportStats:
        """Export one item's assets (and its info JSON); files already there are kept."""
        with self._lock:
            return self._export_item(item)

    def save(self) -> None:
        """Write the manifest if it changed (atomically)."""
        with self._lock:
            if not self._manifest_dirty:
                return
            data = json.dumps({"version": 1, "files": self._manifest}, sort_keys=True, ensure_ascii=False)
            _write_atomically(self.root / MANIFEST, data.encode())
            self._manifest_dirty = False

    # -- naming ----------------------------------------------------------------------------------
    def _fold(self, rel: str) -> str:
        return rel.casefold() if self.windows else rel

    def _marks(self, item: CatalogItem) -> list[tuple[CommittedAsset, str]]:
        """Each asset with the mark its name needs within its item: assets of one item that would
        share a name are told apart by their asset names (`` - image-2``), the others need none."""
        first = [(asset, self._fold("/".join(self.template.render(field_values(item, asset), windows=self.windows))))
                 for asset in item.assets]
        counts: dict[str, int] = {}
        for _, rel in first:
            counts[rel] = counts.get(rel, 0) + 1
        return [(asset, f" - {safe_component(asset.name)}" if counts[rel] > 1 else "") for asset, rel in first]

    def _export_item(self, item: CatalogItem) -> ExportStats:
        stats = ExportStats(items=1)
        files: dict[str, str] = {}
        for asset, mark in self._marks(item):
            owner = (item.canonical_key, asset.name)
            values = field_values(item, asset)
            for attempt in range(1, 1000):
                counter = f" ({attempt})" if attempt > 1 else ""
                rel = "/".join(self.template.render(values, windows=self.windows, suffix=mark + counter))
                folded = self._fold(rel)
                if self._claimed.get(folded, owner) != owner:
                    continue
                state = self._state(rel, asset)
                if state == "other":
                    continue
                self._claimed[folded] = owner
                if state == "same":
                    stats.kept += 1
                else:
                    if not self._place(rel, asset):
                        stats.copied_instead += 1
                    stats.written.append(rel)
                files[asset.name] = rel
                break
            else:  # pragma: no cover - a thousand files of one name
                raise OSError(errno.EEXIST, f"no free name for {item.canonical_key} {asset.name} under {self.root}")
        if self.write_info_json and files:
            main = _main_asset(item, files)
            rel = _info_name(files[main.name], self.template)
            data = (json.dumps(info_json(item, files), indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
            target = self.root / rel
            try:
                unchanged = target.read_bytes() == data
            except OSError:
                unchanged = False
            if unchanged:
                stats.kept += 1
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                _write_atomically(target, data)
                stats.written.append(rel)
        return stats

    # -- what is on disk -------------------------------------------------------------------------
    def _state(self, rel: str, asset: CommittedAsset) -> Literal["free", "same", "other"]:
        """Whether ``rel`` is free, holds this asset's bytes already, or holds something else."""
        target = self.root / rel
        if self.windows and not os.path.lexists(target):
            # On a case-sensitive filesystem, "Title.mp4" beside "title.mp4" would break on Windows.
            if self._listing(target.parent).get(target.name.casefold()) not in (None, target.name):
                return "other"
        try:
            st = os.lstat(target)
        except FileNotFoundError:
            return "free"
        except NotADirectoryError:
            return "other"
        local = self.store.local_path(asset.key)
        if os.path.islink(target):
            if local is not None and os.readlink(target) == str(local.resolve()):
                return "same"
            return "other"
        if not os.path.isfile(target) or st.st_size != asset.size:
            return "other"
        if local is not None:
            with contextlib.suppress(OSError):
                blob = os.stat(local)
                if (blob.st_dev, blob.st_ino) == (st.st_dev, st.st_ino):
                    return "same"
        known = self._manifest.get(rel)
        if known == [asset.sha256, st.st_size, st.st_mtime_ns]:
            return "same"
        if _file_sha256(target) == asset.sha256:
            self._remember(rel, asset, target)
            return "same"
        return "other"

    def _listing(self, directory: Path) -> dict[str, str]:
        if directory not in self._dir_names:
            try:
                self._dir_names[directory] = {name.casefold(): name for name in os.listdir(directory)}
            except OSError:
                self._dir_names[directory] = {}
        return self._dir_names[directory]

    def _remember(self, rel: str, asset: CommittedAsset, target: Path) -> None:
        st = os.stat(target)
        self._manifest[rel] = [asset.sha256, st.st_size, st.st_mtime_ns]
        self._manifest_dirty = True

    def _place(self, rel: str, asset: CommittedAsset) -> bool:
        """Create ``rel`` for the asset; False when a copy stood in for the link asked for."""
        target = self.root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if self.windows:
            self._listing(target.parent)[target.name.casefold()] = target.name
        local = self.store.local_path(asset.key)
        if self.link == "symlink" and local is not None:
            os.symlink(local.resolve(), target)
            return True
        if self.link == "hardlink" and local is not None:
            try:
                os.link(local, target)
                return True
            except OSError as err:
                if err.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EACCES):
                    raise
        self._copy(asset, target)
        self._remember(rel, asset, target)
        return self.link == "copy"

    def _copy(self, asset: CommittedAsset, target: Path) -> None:
        """Stream the blob beside ``target``, check its sha256, then rename it into place."""
        staging = target.with_name(f".{target.name[:64]}.{uuid.uuid4().hex[:12]}.trawl-tmp")
        digest = hashlib.sha256()
        try:
            with self.store.open(asset.key) as reader, open(staging, "wb") as out:
                while block := reader.read(READ_CHUNK):
                    digest.update(block)
                    out.write(block)
            if digest.hexdigest() != asset.sha256:
                raise ContentCorrupt(f"blob {asset.key} does not hash to its name (run trawl fsck); not exported")
            os.replace(staging, target)
        finally:
            staging.unlink(missing_ok=True)

    def _load_manifest(self) -> None:
        try:
            data = json.loads((self.root / MANIFEST).read_text(encoding="utf-8"))
            files = data.get("files", {}) if isinstance(data, dict) else {}
            self._manifest = {k: v for k, v in files.items() if isinstance(v, list) and len(v) == 3}
        except (OSError, ValueError):
            self._manifest = {}


def _main_asset(item: CatalogItem, files: dict[str, str]) -> CommittedAsset:
    exported = [a for a in item.assets if a.name in files]
    for kind in ("video", "audio", "image"):
        for asset in exported:
            if asset.kind == kind:
                return asset
    return exported[0]


def _info_name(media: str, template: Template) -> str:
    """``Title [id].info.json`` beside ``Title [id].mp4``."""
    head, _, name = media.rpartition("/")
    stem = name.rsplit(".", 1)[0] if template.names_ext_last and "." in name else name
    info = _cut(stem, MAX_COMPONENT_BYTES - len(".info.json")).rstrip(". ") + ".info.json"
    return f"{head}/{info}" if head else info


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(READ_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _write_atomically(target: Path, data: bytes) -> None:
    staging = target.with_name(f".{target.name[:64]}.{uuid.uuid4().hex[:12]}.trawl-tmp")
    try:
        with open(staging, "wb") as out:
            out.write(data)
        os.replace(staging, target)
    finally:
        staging.unlink(missing_ok=True)


__all__ = [
    "DEFAULT_TEMPLATE", "FIELDS", "LINK_MODES", "ExportStats", "Exporter", "Template", "TemplateError",
    "download_name", "ext_for", "field_values", "info_json", "item_for_key", "safe_component", "upload_date",
]
