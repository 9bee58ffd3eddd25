"""A site that publishes a feed which grows: RSS 2.0 with enclosures, or Atom with entry links.

Each entry is a media file on the simulator, attached to the entry (a podcast's enclosure) or
behind an OpenGraph page the entry links to (a video site's feed). New entries go on top, as
publishers add them; with ``page_size`` the feed is paged (``?page=N`` and an RFC 5005
``<link rel="next">``), the way large archives publish theirs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import formatdate
from xml.sax.saxutils import escape, quoteattr

from trawl.simulator.demo import og_page
from trawl.simulator.media import MediaFile
from trawl.simulator.server import FileBehaviour, Request, Response, Simulator

ATOM_NS = "http://www.w3.org/2005/Atom"
MEDIA_TYPES = {"mp4": "video/mp4", "webm": "video/webm", "mp3": "audio/mpeg", "jpeg": "image/jpeg",
               "png": "image/png"}


@dataclass
class FeedEntry:
    name: str
    title: str
    media_path: str
    page_path: str | None  # the entry's page, when the media is behind one
    mime: str
    size: int
    published: float  # epoch seconds


class FeedSite:
    """A growing feed at ``path`` on ``sim``.

    Usage::

        feed = FeedSite(sim, "/feeds/podcast.xml")
        feed.add_entry("ep1", MediaFile("mp3", "ep1", 200_000))
        feed.url  # give it to a source of kind "feed"
    """

    def __init__(self, sim: Simulator, path: str = "/feeds/videos.xml", *, kind: str = "rss",
                 page_size: int = 0, title: str = "trawl simulated feed") -> None:
        if kind not in ("rss", "atom"):
            raise ValueError("kind is rss or atom")
        self.sim = sim
        self.path = path
        self.kind = kind
        self.page_size = page_size
        self.title = title
        self.entries: list[FeedEntry] = []  # newest first
        self._lock = threading.Lock()
        self._clock = 1_700_000_000.0
        sim.add_exact(path, self._serve)

    @property
    def url(self) -> str:
        return self.sim.url(self.path)

    def add_entry(self, name: str, media: MediaFile, *, as_page: bool = False, title: str | None = None,
                  behaviour: FileBehaviour | None = None) -> str:
        """Publish an entry on top of the feed; returns the URL a crawler takes from it."""
        base = self.path.rsplit("/", 1)[0]
        media_path = f"{base}/media/{name}.{media.fmt if media.fmt != 'jpeg' else 'jpg'}"
        self.sim.add_file(media_path, media, behaviour)
        title = title or f"Entry {name}"
        page_path = None
        mime = MEDIA_TYPES.get(media.fmt, "application/octet-stream")
        if as_page:
            page_path = f"{base}/watch/{name}"
            self.sim.add_page(page_path, og_page(title, media_path, video_type=mime))
        with self._lock:
            self._clock += 3600
            self.entries.insert(0, FeedEntry(name, title, media_path, page_path, mime, media.size, self._clock))
        return self.sim.url(page_path or media_path)

    def entry_urls(self) -> list[str]:
        """What a crawler takes from the feed, newest first."""
        with self._lock:
            return [self.sim.url(e.page_path or e.media_path) for e in self.entries]

    # -- serving ---------------------------------------------------------------------------
    def _serve(self, req: Request) -> Response:
        with self._lock:
            entries = list(self.entries)
        asked = req.arg("page", "1") or "1"
        page = max(1, int(asked)) if asked.isdigit() else 1
        next_url = None
        if self.page_size:
            start = (page - 1) * self.page_size
            if start + self.page_size < len(entries):
                next_url = f"{self.url}?page={page + 1}"
            entries = entries[start:start + self.page_size]
        body = self._atom(entries, next_url) if self.kind == "atom" else self._rss(entries, next_url)
        kind = "atom" if self.kind == "atom" else "rss"
        return Response(200, {"Content-Type": f"application/{kind}+xml; charset=utf-8"}, body.encode("utf-8"))

    def _rss(self, entries: list[FeedEntry], next_url: str | None) -> str:
        items = []
        for e in entries:
            if e.page_path:
                attached = f"<link>{escape(self.sim.url(e.page_path))}</link>"
            else:
                attached = (f"<link>{escape(self.sim.url(self.path))}#{e.name}</link>"
                            f"<enclosure url={quoteattr(self.sim.url(e.media_path))} length=\"{e.size}\" "
                            f"type={quoteattr(e.mime)}/>")
            items.append(f"<item><title>{escape(e.title)}</title><guid isPermaLink=\"false\">{e.name}</guid>"
                         f"<pubDate>{formatdate(e.published, usegmt=True)}</pubDate>{attached}</item>")
        paging = f'<atom:link rel="next" href={quoteattr(next_url)}/>' if next_url else ""
        return (f'<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0" xmlns:atom="{ATOM_NS}"><channel>'
                f"<title>{escape(self.title)}</title><link>{escape(self.sim.base_url)}/</link>"
                f"<description>entries of a simulated site</description>{paging}{''.join(items)}</channel></rss>\n")

    def _atom(self, entries: list[FeedEntry], next_url: str | None) -> str:
        items = []
        for e in entries:
            if e.page_path:
                link = f'<link rel="alternate" href={quoteattr(self.sim.url(e.page_path))}/>'
            else:
                link = (f'<link rel="enclosure" href={quoteattr(self.sim.url(e.media_path))} '
                        f'type={quoteattr(e.mime)} length="{e.size}"/>')
            stamp = formatdate(e.published, usegmt=True)
            items.append(f"<entry><id>urn:trawl:{e.name}</id><title>{escape(e.title)}</title>"
                         f"<updated>{_iso(e.published)}</updated>{link}<summary>{escape(stamp)}</summary></entry>")
        paging = f'<link rel="next" href={quoteattr(next_url)}/>' if next_url else ""
        updated = _iso(entries[0].published) if entries else _iso(self._clock)
        return (f'<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="{ATOM_NS}"><title>{escape(self.title)}</title>'
                f"<id>{escape(self.url)}</id><updated>{updated}</updated>{paging}{''.join(items)}</feed>\n")


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def install_feed_site(sim: Simulator, entries: int = 3, *, kind: str = "rss", page_size: int = 0,
                      path: str = "/feeds/videos.xml") -> FeedSite:
    """A feed with ``entries`` small entries already published (more with ``add_entry``)."""
    site = FeedSite(sim, path, kind=kind, page_size=page_size)
    for i in range(entries):
        site.add_entry(f"e{i}", MediaFile("mp4", f"feed-e{i}", 40_000 + i))
    return site
