"""Facebook's captions: where a video page's JSON names them (the ``subtitles`` extra that stores
them is :mod:`.captions_extra`).

No capture of a real page with captions is in the references; the shape is the one yt-dlp's
Facebook extractor reads (and its tests show): the video node's
``video_available_captions_locales[]`` (``{locale, captions_url, localized_language,
localized_creation_method}``; a track with a ``localized_creation_method`` is automatic) and, on
pages without that list, the node's single ``captions_url`` in the page's locale (``en_US`` when it
states none). The file a ``captions_url`` gives is SRT (WebVTT is read too).

A track is stored as the asset ``subtitles.<locale>`` (``subtitles.en_US``), an automatic one as
``subtitles.ai-<locale>`` (the ``ai-`` prefix is how trawl tells an automatic track, as Bilibili's
``ai-zh``), its cues converted to the stored form (trawl.subtitles), so an export writes it as SRT or
WebVTT like any track.

The extra reads the video's page again for the captions' URLs: they are signed and expire like the
media's (a refresh days later needs fresh ones). Only a video whose page named captions when it was
resolved (``metadata.captions``) has the extra.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from trawl.platforms.base import str_or_none

MAX_TRACKS = 50
# A locale as a file name part (NAME.en_US.srt): letters, digits and -_ only.
_LOCALE = re.compile(r"[A-Za-z0-9_-]{1,35}")


@dataclass(frozen=True)
class Caption:
    """One captions track a page names."""

    locale: str  # en_US
    url: str
    automatic: bool = False
    name: str = ""  # the page's name for it (English (US))

    @property
    def language(self) -> str:
        """The track's language as trawl stores it: the locale, ``ai-`` before it when automatic."""
        return f"ai-{self.locale}" if self.automatic else self.locale


def find_captions(node: dict[str, Any], page_locale: str | None, absolute: Any) -> list[Caption]:
    """The captions tracks of one video node (``absolute(url)``: the URL made absolute and checked,
    or None), each locale once, the listed ones before the lone ``captions_url``."""
    found: dict[str, Caption] = {}
    listed = node.get("video_available_captions_locales")
    for entry in listed[:MAX_TRACKS] if isinstance(listed, list) else []:
        if not isinstance(entry, dict):
            continue
        locale, url = str_or_none(entry.get("locale")), absolute(entry.get("captions_url"))
        if locale is None or url is None or not _LOCALE.fullmatch(locale):
            continue
        caption = Caption(locale, url, bool(entry.get("localized_creation_method")),
                          str_or_none(entry.get("localized_language")) or "")
        found.setdefault(caption.language, caption)
    single = absolute(node.get("captions_url"))
    if single and not found:
        locale = page_locale if page_locale and _LOCALE.fullmatch(page_locale) else "en_US"
        found[locale] = Caption(locale, single)
    return list(found.values())


def page_locale(blocks: list[Any]) -> str | None:
    """The locale a page states (its ``SiteData``'s ``locale``)."""
    stack: list[Any] = list(blocks)
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if isinstance(node.get("locale"), str) and "server_revision" in node:
                return str(node["locale"])
            stack.extend(v for v in node.values() if isinstance(v, (dict, list)))
    return None


def caption_summary(tracks: list[Caption]) -> list[dict[str, Any]]:
    """What an item's metadata says of its tracks (no URL: they expire): language, name, automatic."""
    return [{"language": c.language, "name": c.name or c.locale, "automatic": c.automatic} for c in tracks]
