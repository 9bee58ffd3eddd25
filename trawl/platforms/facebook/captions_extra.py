"""Facebook's ``subtitles`` extra (trawl.extras): every captions track of a video that has them
(:mod:`.captions` says where a page names them and how they are stored)."""

from __future__ import annotations

from trawl.errors import ParseError, TrawlError
from trawl.extras import Extra, ExtraContext, ExtraFile
from trawl.models import Resolved
from trawl.platforms.base import ResolveContext
from trawl.platforms.facebook.config import FacebookSettings
from trawl.platforms.facebook.hosts import page_headers
from trawl.platforms.facebook.resolver import FacebookResolver
from trawl.subtitles import SubtitleError, parse_timed_text, to_json


class CaptionsExtra(Extra):
    """``subtitles``: every captions track of a Facebook video that has them."""

    name = "subtitles"
    kind = "subtitles"

    def __init__(self, config: FacebookSettings) -> None:
        self.config = config
        self.paced(config.requests_per_second)
        self._resolver = FacebookResolver(config)

    def applies(self, resolved: Resolved) -> bool:
        captions = resolved.metadata.get("captions")
        return isinstance(captions, list) and bool(captions)

    def fetch(self, resolved: Resolved, ctx: ExtraContext) -> list[ExtraFile]:
        video_id = str(resolved.metadata.get("id") or resolved.canonical_key.partition(":")[2])
        page_url = f"{self.config.page_base.rstrip('/')}/watch/?v={video_id}"
        self._wait_turn()
        page = self._resolver.fetch_page(page_url, ResolveContext(ctx.client, ctx.max_bytes),
                                         page_headers(self.config), item_url=resolved.canonical_url)
        tracks = self._resolver.captions(page, video_id)
        files: list[ExtraFile] = []
        for caption in tracks:
            name = f"subtitles.{caption.language}"
            try:
                body = self.get(ctx, caption.url, {"User-Agent": self.config.user_agent}, platform_codes=False)
                try:
                    stored = to_json(parse_timed_text(body))
                except SubtitleError as err:
                    raise ParseError(f"facebook: {caption.url}: {err}") from None
            except TrawlError as err:
                files.append(self.missing_or_raise(err, name, caption.language))
                continue
            files.append(ExtraFile(name, self.kind, caption.language, body=stored, mime="application/json",
                                   source_url=caption.url))
        return files


EXTRAS = {"subtitles": CaptionsExtra}
