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

Files are copies by default (``link="copy"``), or hard links to the blob where the store is a
local directory on the same filesystem (``"hardlink"``: the file *is* the blob, so editing it in
place changes the store), or symbolic links to it (``"symlink"``, local stores only); a link that
cannot be made is a copy. Copies are streamed from the
:class:`~trawl.storage.blobs.BlobStore` (any backend), hashed on the way and renamed into place
only when the bytes match their key.

Nothing is written outside the export root: each file's directory is opened from the root one
component at a time without following symbolic links, and a file whose directory is a link (or a
file) is refused with one line (:class:`UnsafeTarget`), the others exported. An ``.info.json``
sidecar keeps its main file's name (``X (2).info.json`` beside ``X (2).mp4``): the main file takes
the first name whose sidecar name is usable too. A name another item holds, or a file trawl did not
write for this item (the manifest records each sidecar's item and hash), is never replaced. Staging files
(``.<name>.<12 hex>.trawl-tmp``) an export killed mid-copy left are removed when an exporter opens
the root and no other export holds it (an ``flock`` on the root directory, which the kernel drops
when a process dies).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import mimetypes
import os
import posixpath
import re
import stat
import string
import threading
import time
import unicodedata
import uuid
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote, urlsplit

from trawl.extras import EXTRA_KINDS
from trawl.embed import embed
from trawl.export_extras import MAX_EXTRA_BYTES, ExtrasChoice, embedding, info_fields, sidecars
from trawl.subtitles import SubtitleError
from trawl.errors import ContentCorrupt
from trawl.naming import DEFAULT_TEMPLATE, FIELDS, LINK_MODES
from trawl.storage.blobs import READ_CHUNK, BlobStore
from trawl.storage.records import CatalogItem, CommittedAsset
from trawl.urls import WEB_KEY_PREFIX

if TYPE_CHECKING:  # the caller opens the catalog
    from trawl.storage.catalog import Catalog

MAX_COMPONENT_BYTES = 255  # NAME_MAX of Linux, macOS and the usual filesystems, in bytes
NA = "NA"  # a field the catalog does not have, as yt-dlp writes it
MANIFEST = ".trawl-export.json"
INFO_SUFFIX = ".info.json"
STAGING_SUFFIX = ".trawl-tmp"
STALE_STAGING_S = 24 * 3600  # where locks do not work: a staging file untouched this long is a dead export's
LinkMode = Literal["hardlink", "copy", "symlink"]

# Extensions by the MIME type verify recorded from the sniffed bytes.
EXT_BY_MIME = {
    "video/mp4": "mp4", "audio/mp4": "m4a", "video/quicktime": "mov", "video/webm": "webm",
    "audio/webm": "webm", "video/x-flv": "flv", "video/mp2t": "ts", "application/ogg": "ogg",
    "audio/ogg": "ogg", "audio/mpeg": "mp3", "audio/flac": "flac", "audio/wav": "wav",
    "image/jpeg": "jpg", "image/png": "png", "image/gif": "gif", "image/webp": "webp",
    # A live recording's comments (trawl.download.live_comments): mimetypes says .xsl and nothing.
    "application/xml": "xml", "application/x-ndjson": "jsonl",
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
_STAGING = re.compile(r"\..{1,64}\.[0-9a-f]{12}" + re.escape(STAGING_SUFFIX), re.DOTALL)  # _staging_name's
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC


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


# yt-dlp's own form, ``%(field)s``: ``%%`` is a literal ``%``; a field is ``%(a,b|default)`` and a
# printf conversion (``s``, ``d``/``i`` with flags, width and precision: ``%(title).50s``, ``%(part)03d``).
_YTDLP = re.compile(r"%%|%\((?P<inner>[^()]*)\)(?P<spec>[-#0 +]*\d*(?:\.\d+)?)(?P<type>[A-Za-z])")
_YTDLP_TYPES = "sdi"
_FIELD_NAME = re.compile(r"[a-z_][a-z0-9_]*\Z")
_PERCENT = "\ue000"  # a %% while its component is read: a private-use character, which names never keep


@dataclass(frozen=True)
class Field:
    """One field of a template: the first of ``names`` with a value, else ``default`` (else NA);
    rendered by a ``{field:spec}`` format spec, or by yt-dlp's printf ``conversion`` (``03d``)."""

    names: tuple[str, ...]
    default: str | None = None
    conversion: str = ""

    def value(self, values: dict[str, str], spec: str) -> str:
        found = next((values[name] for name in self.names if values.get(name)), None)
        if found is None:
            found = NA if self.default is None else self.default
        if not self.conversion:
            return format(found, spec)
        if self.conversion[-1] in "di":
            try:
                number = int(float(found))
            except ValueError:
                return found  # NA, or a default that is no number: as yt-dlp prints it
            return ("%" + self.conversion) % number
        return ("%" + self.conversion) % found


Piece = tuple[str, "Field | None", str]  # literal text before, the field after it (or None), its format spec


@dataclass(frozen=True)
class Template:
    """A parsed name template: per component, literal text and fields, ``{field}`` or
    ``{field:spec}`` (Python's format) or yt-dlp's ``%(field)s``, ``%(a,b|default)s``, ``%(part)03d``."""

    text: str
    components: tuple[tuple[Piece, ...], ...]

    @classmethod
    def parse(cls, text: str) -> Template:
        """Check ``text`` and split it into components.

        Raises:
            TemplateError: an unknown field, attribute or index access, a conversion, an absolute
                path, ``..``, a yt-dlp feature beyond fields, alternatives and defaults, or a
                template without any field.
        """
        if not text.strip():
            raise TemplateError("empty template; e.g. " + DEFAULT_TEMPLATE)
        if text.startswith(("/", "\\")) or re.match(r"[A-Za-z]:[\\/]", text):
            raise TemplateError(f"{text!r}: a template names files inside the export directory, not an absolute path")
        for match in _YTDLP.finditer(text):
            if "/" in (match["inner"] or ""):  # a date format such as %(upload_date>%Y/%m)s
                raise _beyond_fields(text, match[0])
        parts = [p for p in text.split("/") if p not in ("", ".")]
        if any(p == ".." for p in parts):
            raise TemplateError(f"{text!r}: '..' would leave the export directory")
        ytdlp = any(match["inner"] is not None for match in _YTDLP.finditer(text))
        components = tuple(tuple(_parse_component(part, text, ytdlp)) for part in parts)
        if not any(field is not None for c in components for _, field, _ in c):
            raise TemplateError(f"{text!r}: every item would get the same name; use fields such as {{title}} "
                                "and {id}")
        return cls(text, components)

    @property
    def names_ext_last(self) -> bool:
        """Whether the last component ends with ``.{ext}`` (then the extension is kept when cutting)."""
        last = self.components[-1]
        field = last[-1][1] if last else None
        return field is not None and field.names == ("ext",) and field.default is None and last[-1][0].endswith(".")

    def render(self, values: dict[str, str], *, windows: bool = False, suffix: str = "",
               max_bytes: int = MAX_COMPONENT_BYTES) -> list[str]:
        """The safe path components for one asset.

        ``suffix`` is inserted before the extension of the last component (collision marks). A
        component over ``max_bytes`` loses bytes from its longest field first.
        """
        rendered: list[str] = []
        for index, pieces in enumerate(self.components):
            last = index == len(self.components) - 1
            fields = {i: safe_component(field.value(values, spec), windows=windows,
                                        empty="" if field.default == "" else NA)
                      for i, (_, field, spec) in enumerate(pieces) if field is not None}
            for _ in range(len(fields) + 1):
                text = self._join(pieces, fields, suffix if last else "", last)
                excess = len(text.encode()) - max_bytes
                if excess <= 0 or not fields:
                    break
                longest = max(fields, key=lambda i: (len(fields[i].encode()), -i))
                size = len(fields[longest].encode())
                if size <= 16:
                    break
                fields[longest] = _trim(_cut(fields[longest], max(16, size - excess))) or NA
            if last and len(text.encode()) > max_bytes:
                # Still too long (long literal text): cut before the collision mark and extension.
                tail = suffix + ("." + fields[len(pieces) - 1] if self.names_ext_last else "")
                body = text[: len(text) - len(tail)]
                text = _trim(_cut(body, max_bytes - len(tail.encode()))) + tail
            rendered.append(safe_component(text, max_bytes=max_bytes, windows=windows))
        return rendered

    def _join(self, pieces: tuple[Piece, ...], fields: dict[int, str], suffix: str, last: bool) -> str:
        out = []
        for i, (literal, named, _spec) in enumerate(pieces):
            if last and suffix and self.names_ext_last and i == len(pieces) - 1:
                literal = literal[:-1] + suffix + "."
            out.append(literal)
            if named is not None:
                out.append(fields[i])
        text = "".join(out)
        if last and suffix and not self.names_ext_last:
            text += suffix
        return text


def _beyond_fields(text: str, shown: str) -> TemplateError:
    return TemplateError(f"{text!r}: {shown}: yt-dlp's date formats, replacements, traversal and arithmetic are "
                         "not supported; %(...) takes fields, 'a,b' alternatives and '|default'")


def _unknown(text: str, shown: str) -> TemplateError:
    return TemplateError(f"{text!r}: unknown field {shown}; fields: " + ", ".join(f"{{{f}}}" for f in FIELDS))


def _parse_component(part: str, text: str, ytdlp: bool) -> list[Piece]:
    """One component's pieces: yt-dlp's ``%(...)`` fields found first, the text between them read
    as Python's format (``{field}``, ``{field:spec}``, ``{{`` for a brace). In a template with
    yt-dlp fields, ``%%`` is a literal ``%``, as in yt-dlp."""
    pieces: list[Piece] = []
    literal = ""  # text not yet read as format, up to the next yt-dlp field
    at = 0
    for match in _YTDLP.finditer(part):
        literal += part[at:match.start()]
        at = match.end()
        if match[0] == "%%":
            literal += _PERCENT if ytdlp else "%%"
            continue
        pieces.extend(_format_pieces(literal, text))
        before = pieces.pop()[0] if pieces and pieces[-1][1] is None else ""
        pieces.append((before, _ytdlp_field(match, text), ""))
        literal = ""
    pieces.extend(_format_pieces(literal + part[at:], text))
    return [(literal.replace(_PERCENT, "%"), field, spec) for literal, field, spec in pieces]


def _format_pieces(segment: str, text: str) -> list[Piece]:
    if "%(" in segment.replace("%%", ""):
        spot = segment[segment.index("%("):][:40]
        raise TemplateError(f"{text!r}: {spot!r}: a yt-dlp field is %(name)s, with s or d after the parenthesis")
    try:
        parsed = list(string.Formatter().parse(segment))
    except ValueError as err:
        raise TemplateError(f"{text!r}: {err} (write a literal brace as {{{{ or }}}})") from None
    pieces: list[Piece] = []
    for literal, name, spec, conversion in parsed:
        if name is not None and name not in FIELDS:
            raise _unknown(text, f"{{{name}}}")
        if conversion:
            raise TemplateError(f"{text!r}: conversions such as !{conversion} are not supported")
        if spec and "{" in spec:
            raise TemplateError(f"{text!r}: nested fields in a format spec are not supported")
        if name is not None and spec:
            try:
                format("x", spec)
            except ValueError as err:
                raise TemplateError(f"{text!r}: {{{name}:{spec}}}: {err}") from None
        pieces.append((literal, Field((name,)) if name is not None else None, spec or ""))
    return pieces


def _ytdlp_field(match: re.Match[str], text: str) -> Field:
    names_text, bar, default = match["inner"].partition("|")
    names = tuple(names_text.split(","))
    if not all(_FIELD_NAME.match(name) for name in names):
        raise _beyond_fields(text, match[0])
    for name in names:
        if name not in FIELDS:
            raise _unknown(text, f"%({name})s")
    conversion = match["spec"] + match["type"]
    if match["type"] not in _YTDLP_TYPES:
        raise TemplateError(f"{text!r}: {match[0]}: conversions are s (text) and d (a whole number), "
                            "e.g. %(title).50s or %(part)03d")
    try:
        ("%" + conversion) % (0 if match["type"] in "di" else "x")
    except (ValueError, TypeError) as err:
        raise TemplateError(f"{text!r}: {match[0]}: {err}") from None
    return Field(names, default if bar else None, conversion)


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
                when = datetime.strptime(text, "%a %b %d %H:%M:%S %z %Y")  # "Sat Jun 15 11:44:46 +0800 2019"
            except ValueError:
                return None
    return when.strftime("%Y%m%d")


def _platform_id(item: CatalogItem) -> str:
    """The platform's id: the canonical key without its platform prefix."""
    return item.canonical_key.split(":", 1)[1] if ":" in item.canonical_key else item.canonical_key


def readable_id(item: CatalogItem) -> str:
    """``{id}``: the platform's id; for an item keyed by a hash of its URL (a page or file no
    platform claims), the URL's file name without its extension, as yt-dlp's generic extractor
    names it (``clip`` for ``.../clip.mp4``), else its host: forty hex digits say nothing to a person."""
    ident = _platform_id(item)
    if not item.canonical_key.startswith(WEB_KEY_PREFIX):
        return ident
    parts = urlsplit(item.canonical_url)
    name = unquote(posixpath.basename(parts.path.rstrip("/")))
    stem, dot, _ = name.rpartition(".")
    return (stem if dot and stem else name) or parts.hostname or ident


def url_host(item: CatalogItem) -> str:
    """The host of the item's page: its uploader when the platform names none."""
    return urlsplit(item.canonical_url or item.source_url or "").hostname or ""


def field_values(item: CatalogItem, asset: CommittedAsset) -> dict[str, str]:
    """The template's field values for one of an item's assets ("" where not known: rendered NA).

    The catalog columns come first; the committed metadata fills what they lack (an uploader id,
    a part number, a title the column does not have).
    """
    meta = item.metadata
    ext = ext_for(asset.mime)
    ident = readable_id(item)
    title = item.title or meta.get("title") or ""
    if title.lower().endswith("." + ext) and len(title) > len(ext) + 1:
        title = title[: -len(ext) - 1]  # a direct file's title is its file name: no "clip.mp4.mp4"
    part = _PART.search(_platform_id(item))
    part_value = part[1] if part else meta.get("part") or meta.get("playlist_index")
    return {
        "platform": item.platform, "id": ident, "key": item.canonical_key,
        "title": title,
        "uploader": item.uploader or meta.get("uploader") or url_host(item),
        "uploader_id": str(meta.get("uploader_id") or ""),
        "upload_date": upload_date(item.published_at) or str(meta.get("upload_date") or ""),
        "part": str(part_value or ""), "duration": str(int(item.duration)) if item.duration is not None else "",
        "kind": asset.kind, "asset": asset.name, "ext": ext,
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


class UnsafeTarget(OSError):
    """A file the export would write through a symbolic link or a file inside the export directory;
    the message names the file and the component (the file is not written)."""


@dataclass
class ExportStats:
    """What one export did; ``written`` lists the new files (relative paths), in order; ``refused``
    one line per file not written because its directory is a symbolic link or a file."""

    written: list[str] = field(default_factory=list)
    kept: int = 0
    copied_instead: int = 0  # hardlink or symlink asked for, a copy made (remote store, another filesystem)
    items: int = 0
    refused: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was left undone without failing (an embedding)

    def add(self, other: ExportStats) -> None:
        self.written += other.written
        self.kept += other.kept
        self.copied_instead += other.copied_instead
        self.items += other.items
        self.refused += other.refused
        self.notes += other.notes


class Exporter:
    """Writes items' assets under ``root`` by a template; safe to call from several threads.

    Every file is reached from the root one directory at a time without following symbolic
    links, so nothing lands outside the root (a file whose directory is a link is refused and
    listed in :attr:`ExportStats.refused`). Staging files an interrupted export left behind are
    removed when the exporter opens the root, unless another export holds the root; close the
    exporter (or use it as a context manager) to save the manifest and let the root go.

    Args:
        root: the export directory (created when missing).
        store: the blob store the catalog's keys are in.
        template: the name template.
        link: ``copy``, ``hardlink`` (falls back to a copy where the store is not a local
            directory on ``root``'s filesystem) or ``symlink`` (local stores only, else a copy).
        windows_names: names valid on Windows too; collisions compared without case.
        write_info_json: write ``<name>.info.json`` beside each item's main file.
        extras: which extras to write beside it (subtitles, danmaku, comments: trawl.export_extras).

    Attributes:
        swept: the staging files (relative paths) removed when the exporter opened the root.
    """

    def __init__(self, root: Path, store: BlobStore, template: Template | str = DEFAULT_TEMPLATE, *,
                 link: LinkMode = "copy", windows_names: bool = False, write_info_json: bool = False,
                 extras: ExtrasChoice | None = None) -> None:
        if link not in LINK_MODES:
            raise ValueError(f"link must be one of {', '.join(LINK_MODES)}, not {link!r}")
        self.root = Path(root)
        self.store = store
        self.template = template if isinstance(template, Template) else Template.parse(template)
        self.link = link
        self.windows = windows_names
        self.write_info_json = write_info_json
        self.extras = extras or ExtrasChoice()
        self._lock = threading.Lock()
        self._claimed: dict[str, tuple[str, str]] = {}  # folded relative path -> (item key, asset name)
        self._manifest: dict[str, list[Any]] = {}
        self._sidecars: dict[str, list[Any]] = {}  # relative path -> [item key, sha256, size, mtime_ns]
        # relative path -> [item key, the asset's sha256, the copy's sha256, size, mtime_ns] (trawl.embed)
        self._embedded: dict[str, list[Any]] = {}
        self._manifest_dirty = False
        self._dir_names: dict[str, dict[str, str]] = {}
        self.root.mkdir(parents=True, exist_ok=True)
        # The root as it is now, held open: every path is resolved from it, and it is the lock that
        # tells exports of the same root apart (the kernel lets it go when a process dies).
        self._root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
        self._release = weakref.finalize(self, os.close, self._root_fd)
        self.swept = self._hold_root_and_sweep()
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
            data = json.dumps({"version": 1, "files": self._manifest, "info": self._sidecars,
                               "embedded": self._embedded}, sort_keys=True,
                              ensure_ascii=False)
            _write_atomically(self._root_fd, MANIFEST, data.encode())
            self._manifest_dirty = False

    def close(self) -> None:
        """Save the manifest and let the root go (another export may then sweep it)."""
        if self._release.alive:
            try:
                self.save()
            finally:
                self._release()

    def __enter__(self) -> Exporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- naming ----------------------------------------------------------------------------------
    def _fold(self, rel: str) -> str:
        return rel.casefold() if self.windows else rel

    def _marks(self, item: CatalogItem) -> list[tuple[CommittedAsset, str]]:
        """Each asset with the mark its name needs within its item: assets of one item that would
        share a name are told apart by their asset names (`` - image-2``), the others need none."""
        # Extras (danmaku, subtitles, comments) are not media: they go beside it, named as yt-dlp
        # names them, only when asked for.
        first = [(asset, self._fold("/".join(self.template.render(field_values(item, asset), windows=self.windows))))
                 for asset in item.assets if asset.kind not in EXTRA_KINDS]
        counts: dict[str, int] = {}
        for _, rel in first:
            counts[rel] = counts.get(rel, 0) + 1
        return [(asset, f" - {safe_component(asset.name)}" if counts[rel] > 1 else "") for asset, rel in first]

    def _export_item(self, item: CatalogItem) -> ExportStats:
        stats = ExportStats(items=1)
        files: dict[str, str] = {}
        if self.write_info_json and any(a.kind in EXTRA_KINDS for a in item.assets):
            # Chapters (and with --write-comments the comments) go into the info JSON, as yt-dlp's do.
            item = replace(item, metadata={**item.metadata, **info_fields(item, self.extras, self._read)})
        marks = self._marks(item)
        anchor = None
        if self.write_info_json and item.assets:
            # The sidecar is named after the main file, so that file is placed last, under a name
            # whose sidecar name is free too (the info JSON names the other files).
            anchor = _main_asset(item, {a.name: "" for a in item.assets})
            marks.sort(key=lambda pair: pair[0] is anchor)
        for asset, mark in marks:
            try:
                files[asset.name] = self._export_asset(item, asset, mark, stats,
                                                       files if asset is anchor else None)
            except UnsafeTarget as err:
                stats.refused.append(str(err))
        if self.extras.any and files:
            media = files[_main_asset(item, files).name]
            try:
                by_suffix = dict(sidecars(item, self.extras, self._read, self.write_info_json))
            except SubtitleError as err:
                stats.refused.append(f"{media}: {err}")
                by_suffix = {}
            for suffix, data in by_suffix.items():
                try:
                    self._export_sidecar(item, media, suffix, data, stats)
                except UnsafeTarget as err:
                    stats.refused.append(str(err))
        if self.extras.embeds and files:
            try:
                self._embed(item, files, stats)
            except UnsafeTarget as err:
                stats.refused.append(str(err))
        if self.write_info_json and files:
            try:
                self._export_info(item, files, stats)
            except UnsafeTarget as err:
                stats.refused.append(str(err))
        return stats

    def _embed(self, item: CatalogItem, files: dict[str, str], stats: ExportStats) -> None:
        """Replace the exported main file by a copy with the extras embedded (trawl.embed): the blob it
        may be a link to is never written. A copy made before for the same blob is kept; one that
        cannot be made (no ffmpeg, a container without subtitles) leaves the file as it is, noted."""
        main = _main_asset(item, files)
        rel = files[main.name]
        if main.kind not in ("video", "audio"):
            return
        try:
            wanted = embedding(item, self.extras, self._read)
        except SubtitleError as err:
            stats.notes.append(f"{rel}: not embedded: {err}")
            return
        if wanted.empty:
            return
        parent = self._make_parent(rel)
        try:
            name = _last(rel)
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
            known = self._embedded.get(rel)
            if known is not None and known[:2] == [item.canonical_key, main.sha256] and \
                    known[3:] == [st.st_size, st.st_mtime_ns]:
                return
            staging = _staging_name(name)
            try:
                # The directory as this process holds it open (ffmpeg, another process, reads it there:
                # no path through a link that could have been swapped in since).
                here = Path(f"/proc/{os.getpid()}/fd/{parent}")
                why = embed(here / name, here / staging, wanted)
                stats.notes.extend(f"{rel}: not embedded: {left}" for left in wanted.left_out)
                if why:
                    stats.notes.append(f"{rel}: not embedded: {why}")
                    return
                sha = _file_sha256(parent, staging)
                os.replace(staging, name, src_dir_fd=parent, dst_dir_fd=parent)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(staging, dir_fd=parent)
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
            self._embedded[rel] = [item.canonical_key, main.sha256, sha, st.st_size, st.st_mtime_ns]
            self._manifest.pop(rel, None)  # no longer the blob's bytes
            self._manifest_dirty = True
            if rel not in stats.written:
                stats.written.append(rel)
        finally:
            os.close(parent)

    def _read(self, asset: CommittedAsset) -> bytes:
        """A stored extra's bytes (a track, a comment document), bounded, checked against its size."""
        if asset.size > MAX_EXTRA_BYTES:
            raise ContentCorrupt(f"{asset.name}: {asset.size} bytes, over the {MAX_EXTRA_BYTES} an export reads")
        with self.store.open(asset.key) as reader:
            data = reader.read(asset.size + 1)
        if len(data) != asset.size or hashlib.sha256(data).hexdigest() != asset.sha256:
            raise ContentCorrupt(f"blob {asset.key} does not hash to its name (run trawl fsck); not exported")
        return data

    def _export_sidecar(self, item: CatalogItem, media: str, suffix: str, data: bytes, stats: ExportStats,
                        refused: str = "not written for") -> None:
        """Write ``NAME<suffix>`` (``NAME.zh-CN.srt``) beside the main file ``media``, as the info JSON is
        written: a name another item's file has, or a file trawl did not write for this item, is never
        replaced (one line says so)."""
        rel = _info_name(media, self.template, suffix)
        owner = (item.canonical_key, suffix)
        state = self._info_state(rel, item.canonical_key, data)
        if self._claimed.get(self._fold(rel), owner) != owner or state == "other":
            stats.refused.append(f"{rel}: the name is taken by another file; {refused} {media}")
            return
        self._claimed[self._fold(rel)] = owner
        parent = self._make_parent(rel)
        try:
            name = _last(rel)
            if state == "same":
                stats.kept += 1
            else:
                _write_atomically(parent, name, data)
                stats.written.append(rel)
                if self.windows:
                    self._listing(parent, rel)[name.casefold()] = name
            self._remember_info(rel, item.canonical_key, data, os.stat(name, dir_fd=parent, follow_symlinks=False))
        finally:
            os.close(parent)

    def _export_asset(self, item: CatalogItem, asset: CommittedAsset, mark: str, stats: ExportStats,
                      sidecar_of: dict[str, str] | None = None) -> str:
        """Place one asset under the first name that is free or already holds its bytes. With
        ``sidecar_of`` (the item's other files, placed already) the asset is the one its ``.info.json``
        is named after, and a name is taken only where the sidecar's name beside it is usable too:
        ``X (2).mp4`` with ``X (2).info.json``, never ``X.mp4`` with ``X (2).info.json``."""
        owner = (item.canonical_key, asset.name)
        values = field_values(item, asset)
        for attempt in range(1, 1000):
            counter = f" ({attempt})" if attempt > 1 else ""
            rel = "/".join(self.template.render(values, windows=self.windows, suffix=mark + counter))
            folded = self._fold(rel)
            if self._claimed.get(folded, owner) != owner:
                continue
            if sidecar_of is not None and not self._sidecar_usable(item, {**sidecar_of, asset.name: rel}, rel):
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
            return rel
        raise OSError(errno.EEXIST, f"no free name for {item.canonical_key} {asset.name} under {self.root}")  # pragma: no cover

    def _sidecar_usable(self, item: CatalogItem, files: dict[str, str], media: str) -> bool:
        """Whether the sidecar beside ``media`` may be written: no other item claimed its name and
        it is free, holds this info JSON already, or is what trawl wrote there for this item."""
        rel = _info_name(media, self.template)
        if self._claimed.get(self._fold(rel), (item.canonical_key, INFO_SUFFIX)) != (item.canonical_key, INFO_SUFFIX):
            return False
        try:
            return self._info_state(rel, item.canonical_key, _info_bytes(item, files)) != "other"
        except UnsafeTarget:
            return True  # the media file's own placement meets the same directory and says so

    def _export_info(self, item: CatalogItem, files: dict[str, str], stats: ExportStats) -> None:
        """Write the item's ``.info.json`` beside its main file, under the main file's name (which
        was chosen so that this name is usable). A name another item's file has, or a file trawl did
        not write for this item (a person's own, or one they edited), is never replaced: if the main
        file could not be placed and the name beside the file that stands in for it is taken, the
        sidecar is not written and one line says so."""
        media = files[_main_asset(item, files).name]
        self._export_sidecar(item, media, INFO_SUFFIX, _info_bytes(item, files), stats, refused="no info JSON for")

    # -- what is on disk -------------------------------------------------------------------------
    def _open_parent(self, rel: str, *, create: bool) -> int | None:
        """The directory ``rel`` goes in, opened from the root one component at a time without
        following symbolic links (created when missing and ``create``); None when it is missing.

        Raises:
            UnsafeTarget: a component is a symbolic link or not a directory.
        """
        parts = rel.split("/")[:-1]
        fd = os.dup(self._root_fd)
        try:
            for depth, part in enumerate(parts):
                try:
                    below = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        os.close(fd)
                        return None
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, dir_fd=fd)
                    below = self._step_into(fd, part, rel, parts[: depth + 1])
                except OSError as err:
                    if err.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    raise self._unsafe(fd, part, rel, parts[: depth + 1]) from None
                os.close(fd)
                fd = below
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(fd)
            raise
        return fd

    def _make_parent(self, rel: str) -> int:
        """:meth:`_open_parent`, creating the directories that are missing."""
        parent = self._open_parent(rel, create=True)
        if parent is None:  # pragma: no cover - created above
            raise FileNotFoundError(errno.ENOENT, f"cannot create the directory of {rel}")
        return parent

    def _step_into(self, fd: int, part: str, rel: str, where: list[str]) -> int:
        try:
            return os.open(part, _DIR_FLAGS, dir_fd=fd)
        except OSError as err:
            if err.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            raise self._unsafe(fd, part, rel, where) from None

    @staticmethod
    def _unsafe(fd: int, part: str, rel: str, where: list[str]) -> UnsafeTarget:
        try:
            is_link = stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode)
        except OSError:
            is_link = False
        what = ("is a symbolic link; files are written only into real directories inside the export directory"
                if is_link else "is not a directory")
        return UnsafeTarget(f"{rel}: {'/'.join(where)} {what}")

    def _state(self, rel: str, asset: CommittedAsset) -> Literal["free", "same", "other"]:
        """Whether ``rel`` is free, holds this asset's bytes already, or holds something else."""
        parent = self._open_parent(rel, create=False)
        if parent is None:
            return "free"
        try:
            name = _last(rel)
            try:
                st = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                return "other" if self._case_taken(parent, rel) else "free"
            local = self.store.local_path(asset.key)
            if stat.S_ISLNK(st.st_mode):
                if local is not None and os.readlink(name, dir_fd=parent) == str(local.resolve()):
                    return "same"
                return "other"
            embedded = self._embedded.get(rel)
            if stat.S_ISREG(st.st_mode) and embedded is not None and embedded[1] == asset.sha256 and \
                    embedded[3:] == [st.st_size, st.st_mtime_ns]:
                return "same"  # the copy with the extras embedded that trawl made of this asset
            if not stat.S_ISREG(st.st_mode) or st.st_size != asset.size:
                return "other"
            if local is not None:
                with contextlib.suppress(OSError):
                    blob = os.stat(local)
                    if (blob.st_dev, blob.st_ino) == (st.st_dev, st.st_ino):
                        return "same"
            known = self._manifest.get(rel)
            if known == [asset.sha256, st.st_size, st.st_mtime_ns]:
                return "same"
            if _file_sha256(parent, name) == asset.sha256:
                self._remember(rel, asset, st)
                return "same"
            return "other"
        finally:
            os.close(parent)

    def _info_state(self, rel: str, key: str, data: bytes) -> Literal["free", "same", "mine", "other"]:
        """Whether a sidecar's name is free, holds ``data`` already, holds what trawl wrote there for
        this item (and nobody changed since: it may be brought up to date), or something else."""
        parent = self._open_parent(rel, create=False)
        if parent is None:
            return "free"
        try:
            name = _last(rel)
            try:
                st = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                return "other" if self._case_taken(parent, rel) else "free"
            if not stat.S_ISREG(st.st_mode):
                return "other"
            if st.st_size == len(data) and _read_small(parent, name, len(data)) == data:
                return "same"
            known = self._sidecars.get(rel)
            if known is None or known[0] != key:
                return "other"
            if known[2:] == [st.st_size, st.st_mtime_ns] or _file_sha256(parent, name) == known[1]:
                return "mine"
            return "other"
        finally:
            os.close(parent)

    def _case_taken(self, parent: int, rel: str) -> bool:
        """With Windows names: whether another case of this free name is there ("Title.mp4" beside
        "title.mp4" is fine on a case-sensitive filesystem, not on Windows)."""
        name = _last(rel)
        return self.windows and self._listing(parent, rel).get(name.casefold()) not in (None, name)

    def _listing(self, parent: int, rel: str) -> dict[str, str]:
        directory = rel.rpartition("/")[0]
        if directory not in self._dir_names:
            try:
                self._dir_names[directory] = {name.casefold(): name for name in os.listdir(parent)}
            except OSError:
                self._dir_names[directory] = {}
        return self._dir_names[directory]

    def _remember(self, rel: str, asset: CommittedAsset, st: os.stat_result) -> None:
        self._manifest[rel] = [asset.sha256, st.st_size, st.st_mtime_ns]
        self._manifest_dirty = True

    def _remember_info(self, rel: str, key: str, data: bytes, st: os.stat_result) -> None:
        record = [key, hashlib.sha256(data).hexdigest(), st.st_size, st.st_mtime_ns]
        if self._sidecars.get(rel) != record:
            self._sidecars[rel] = record
            self._manifest_dirty = True

    def _place(self, rel: str, asset: CommittedAsset) -> bool:
        """Create ``rel`` for the asset; False when a copy stood in for the link asked for."""
        parent = self._make_parent(rel)
        try:
            name = _last(rel)
            if self.windows:
                self._listing(parent, rel)[name.casefold()] = name
            local = self.store.local_path(asset.key)
            if self.link == "symlink" and local is not None:
                os.symlink(local.resolve(), name, dir_fd=parent)
                return True
            if self.link == "hardlink" and local is not None:
                try:
                    os.link(local, name, dst_dir_fd=parent)
                    return True
                except OSError as err:
                    if err.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EACCES):
                        raise
            self._copy(asset, parent, name)
            self._remember(rel, asset, os.stat(name, dir_fd=parent, follow_symlinks=False))
            return self.link == "copy"
        finally:
            os.close(parent)

    def _copy(self, asset: CommittedAsset, parent: int, name: str) -> None:
        """Stream the blob beside ``name`` in ``parent``, check its sha256, then rename it into place."""
        staging = _staging_name(name)
        digest = hashlib.sha256()
        out_fd = os.open(staging, _NEW_FILE, 0o666, dir_fd=parent)
        try:
            with open(out_fd, "wb") as out, self.store.open(asset.key) as reader:
                while block := reader.read(READ_CHUNK):
                    digest.update(block)
                    out.write(block)
            if digest.hexdigest() != asset.sha256:
                raise ContentCorrupt(f"blob {asset.key} does not hash to its name (run trawl fsck); not exported")
            os.replace(staging, name, src_dir_fd=parent, dst_dir_fd=parent)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staging, dir_fd=parent)

    def _hold_root_and_sweep(self) -> list[str]:
        """Hold the root shared for as long as this exporter is open, and remove the staging files
        an interrupted export left when no other export holds it (then none can be writing them).

        Where the filesystem has no such locks (some network filesystems), only staging files
        untouched for :data:`STALE_STAGING_S` are removed: a running copy writes to its file all
        the time.
        """
        try:
            fcntl.flock(self._root_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another export is running here: leave every staging file alone
            fcntl.flock(self._root_fd, fcntl.LOCK_SH)
            return []
        except OSError:
            return self._sweep(older_than=time.time() - STALE_STAGING_S)
        try:
            return self._sweep()
        finally:
            # Shared from here on; exports that start now wait for the sweep above to end.
            fcntl.flock(self._root_fd, fcntl.LOCK_SH)

    def _sweep(self, older_than: float | None = None) -> list[str]:
        swept = []
        # fwalk descends from the descriptor it holds and never into a symbolic link.
        for top, _dirs, names, dir_fd in os.fwalk(".", dir_fd=self._root_fd):
            for name in names:
                if not _STAGING.fullmatch(name):
                    continue
                with contextlib.suppress(OSError):
                    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode) and (older_than is None or st.st_mtime < older_than):
                        os.unlink(name, dir_fd=dir_fd)
                        swept.append(os.path.normpath(os.path.join(top, name)))
        return swept

    def _load_manifest(self) -> None:
        try:
            data = json.loads(_read_small(self._root_fd, MANIFEST, 1 << 30).decode("utf-8"))
        except (OSError, ValueError):
            return
        if isinstance(data, dict):
            files, info = data.get("files", {}), data.get("info", {})
            if isinstance(files, dict):
                self._manifest = {k: v for k, v in files.items() if isinstance(v, list) and len(v) == 3}
            if isinstance(info, dict):
                self._sidecars = {k: v for k, v in info.items() if isinstance(v, list) and len(v) == 4}
            embedded = data.get("embedded", {})
            if isinstance(embedded, dict):
                self._embedded = {k: v for k, v in embedded.items() if isinstance(v, list) and len(v) == 5}


def _main_asset(item: CatalogItem, files: dict[str, str]) -> CommittedAsset:
    exported = [a for a in item.assets if a.name in files]
    for kind in ("video", "audio", "image"):
        for asset in exported:
            if asset.kind == kind:
                return asset
    return exported[0]


def _info_bytes(item: CatalogItem, files: dict[str, str]) -> bytes:
    return (json.dumps(info_json(item, files), indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _info_name(media: str, template: Template, tail: str = INFO_SUFFIX) -> str:
    """``Title [id].info.json`` beside ``Title [id].mp4`` (``Title [id] (2).mp4``: ``Title [id] (2).info.json``);
    another ``tail`` names another sidecar the same way (``Title [id].zh-CN.srt``)."""
    head, _, name = media.rpartition("/")
    stem = name.rsplit(".", 1)[0] if template.names_ext_last and "." in name else name
    info = _cut(stem, MAX_COMPONENT_BYTES - len(tail.encode())).rstrip(". ") + tail
    return f"{head}/{info}" if head else info


def _last(rel: str) -> str:
    return rel.rpartition("/")[2]


def _staging_name(name: str) -> str:
    """A hidden name beside ``name`` that :data:`_STAGING` (the sweep) recognises and nothing else has."""
    return f".{name[:64]}.{uuid.uuid4().hex[:12]}{STAGING_SUFFIX}"


def _read_small(parent: int, name: str, limit: int) -> bytes:
    """Up to ``limit`` bytes of a file (not through a symbolic link)."""
    with open(os.open(name, os.O_RDONLY | os.O_NOFOLLOW | _CLOEXEC, dir_fd=parent), "rb") as handle:
        return handle.read(limit)


def _file_sha256(parent: int, name: str) -> str:
    digest = hashlib.sha256()
    with open(os.open(name, os.O_RDONLY | os.O_NOFOLLOW | _CLOEXEC, dir_fd=parent), "rb") as handle:
        while block := handle.read(READ_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _write_atomically(parent: int, name: str, data: bytes) -> None:
    staging = _staging_name(name)
    try:
        with open(os.open(staging, _NEW_FILE, 0o666, dir_fd=parent), "wb") as out:
            out.write(data)
        os.replace(staging, name, src_dir_fd=parent, dst_dir_fd=parent)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staging, dir_fd=parent)


__all__ = [
    "DEFAULT_TEMPLATE", "FIELDS", "LINK_MODES", "ExportStats", "Exporter", "Template", "TemplateError", "UnsafeTarget",
    "download_name", "ext_for", "field_values", "info_json", "item_for_key", "safe_component", "upload_date",
]
