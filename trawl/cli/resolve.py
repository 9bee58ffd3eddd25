"""Reading without downloading: ``resolve`` (yt-dlp's ``-j``), and the URLs of a listing. No
Temporal here: ``trawl resolve`` loads no client."""

from __future__ import annotations

import argparse
import json
from typing import Any

from trawl.cli.output import EXIT_FAILED_ITEMS, clean, printable
from trawl.formatting import human_size
from trawl.errors import TrawlError, UnsupportedUrl
from trawl.platforms.registry import ListingRoute, Registry, build_registry
from trawl.settings import Settings


def listing_urls(settings: Settings, registry: Registry, listing: ListingRoute) -> list[str]:
    """The item URLs of a listing given as a URL, read here as a named source's are.

    Raises:
        TrawlError: the listing could not be read (its class says why: ``not_found``,
            ``login_required``, ...), or it is a listing of a disabled platform (``unsupported_url``).
    """
    from trawl.sources import SourceError, listing_source

    try:
        return _expanded(settings, registry, listing_source(listing))
    except SourceError as err:
        raise UnsupportedUrl(f"{listing.url}: {err}") from None


def _expanded(settings: Settings, registry: Registry, source: Any) -> list[str]:
    from trawl.http_client import make_client
    from trawl.platforms.base import ResolveContext
    from trawl.sources import expand

    with make_client(settings.net) as http:
        return expand(source, settings, registry, ResolveContext(http, settings.net.max_page_bytes))


def resolved_record(url: str, item: Any) -> dict[str, Any]:
    return {"url": url, "outcome": "resolved", "canonical_key": item.canonical_key,
            "canonical_url": item.canonical_url, "platform": item.platform, "title": item.title,
            "uploader": item.uploader, "duration": item.duration, "published_at": item.published_at,
            "assets": [{"name": a.name, "kind": a.kind, "urls": a.urls, "expected_size": a.expected_size,
                        "mime": a.mime} for a in item.assets],
            "metadata": item.metadata, "more": [m.url for m in item.more]}


def print_listing(registry: Registry, listing: ListingRoute, entries: list[str], as_json: bool) -> None:
    """A listing's entries without downloading, as ``yt-dlp --flat-playlist``: one JSON object per
    entry (``-j``) with its URL and, where the URL holds it, its key; else a line each and a count."""
    for entry in entries:
        try:
            key = registry.resolver_for(entry).offline_key(entry)
        except TrawlError:
            key = None
        if as_json:
            print(json.dumps({"url": entry, "outcome": "listed", "canonical_key": key, "listing": listing.url,
                              "listing_kind": listing.kind}, ensure_ascii=False), flush=True)
        else:
            print(f"{key or '-':<32} {clean(entry, 100)}", flush=True)
    if not as_json:
        print(f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'} in {listing.kind} {listing.id}", flush=True)


def cmd_resolve(args: argparse.Namespace, settings: Settings) -> int:
    """Resolve without downloading, like ``yt-dlp -j``."""
    from trawl.http_client import make_client
    from trawl.models import refuse_previews
    from trawl.platforms.base import ResolveContext

    registry = build_registry(settings.platforms)
    failed = False
    with make_client(settings.net) as http:
        ctx = ResolveContext(http, settings.net.max_page_bytes)
        for url in args.urls:
            try:
                listing = registry.listing_for(url)
                if listing is not None:
                    print_listing(registry, listing, listing_urls(settings, registry, listing), args.json)
                    continue
                item = registry.resolver_for(url).resolve(url.strip(), ctx)
                refuse_previews(item)  # as a crawl would: a preview is never the item
            except TrawlError as err:
                failed = True
                record = {"url": url, "outcome": "failed", "error_class": err.error_class, "error": err.message}
                print(json.dumps(record) if args.json else f"failed     {err.error_class}: {printable(err.message)}",
                      flush=True)
                continue
            if args.json:
                print(json.dumps(resolved_record(url, item), ensure_ascii=False), flush=True)
                continue
            duration = f"{item.duration:.0f} s" if item.duration else "-"
            print(f"{item.canonical_key}  {clean(item.title, 60)}  by {clean(item.uploader, 30)}  {duration}")
            for asset in item.assets:
                size = human_size(asset.expected_size) if asset.expected_size else "size unknown"
                print(f"    {asset.name:<10} {asset.kind:<9} {size:>12}  {clean(asset.urls[0], 100)}"
                      + (f"  (+{len(asset.urls) - 1} backup)" if len(asset.urls) > 1 else ""))
            parts = item.metadata.get("parts")
            if isinstance(parts, list) and len(parts) > 1:
                print(f"    part {item.metadata.get('part', 1)} of {len(parts)}:")
                for part in parts:
                    if isinstance(part, dict):
                        length = f"{part['duration']:.0f} s" if isinstance(part.get("duration"), (int, float)) else "-"
                        print(f"      P{part.get('page', '?'):<4} {clean(part.get('title'), 60):<60} {length:>8}")
            for more in item.more:  # crawled too by `trawl crawl` of this URL
                print(f"    more       {clean(more.url, 100)}")
    return EXIT_FAILED_ITEMS if failed else 0
