"""Facebook listings: a page's or profile's videos, reels and photos tabs, its albums, a photo set.

Source kinds and their ids:

- ``facebook_videos``: a page's or profile's videos tab; id: its name (``harbourcouncil``) or
  numeric id (``100064102938475``). URLs: ``/<page>/videos/``, ``/pg/<page>/videos/``,
  ``/profile.php?id=<id>&sk=videos``, ``/people/<name>/<id>/?sk=videos``, ``/<page>?sk=videos``.
  Neither yt-dlp nor gallery-dl lists this tab (the site pages it through GraphQL calls nobody
  has published): trawl reads the tab page the way it reads a video page, its
  ``<script type="application/json" data-sjs>`` blocks, taking the ``Video`` nodes of the
  ``pageItems.edges[]`` list (the list shape Facebook's profile tabs use, as gallery-dl reads it
  on the photos and albums tabs) and following ``page_info.end_cursor`` as ``?cursor=`` while
  ``has_next_page``. That paging is trawl's design, not a published capture.
- ``facebook_reels``: a page's or profile's reels tab; id as above. URLs: ``/<page>/reels/``,
  ``/people/<name>/<id>/reels/``, ``/profile.php?id=<id>&sk=reels_tab``, ``/<page>?sk=reels_tab``.
  No downloader lists this tab and no capture of it is published: trawl reads it as the videos
  tab (``Video`` nodes of ``pageItems.edges[]``, ``?cursor=`` paging), and, when the page has no
  such list, the ``/reel/<id>`` links in it (what a browser script that collects a tab's reels
  reads: its ``a[href^="/reel/"]``). Each reel is listed as ``/reel/<id>``, the video resolver's form.
- ``facebook_photos``: a profile's photos (gallery-dl's ``FacebookPhotosExtractor``); id as above.
  URLs: ``/<page>/photos``, ``/<page>/photos_by``, ``/profile.php?id=<id>&sk=photos`` (or
  ``sk=photos_by``, or ``?id=<id>/photos``), ``/people/<name>/<id>/?sk=photos``, and the bare
  profile ``/<page>``, ``/profile.php?id=<id>``, ``/people/<name>/<id>/`` (gallery-dl's default
  for a profile is its photos). The ``/<page>/photos_by`` page names the profile's photo set
  (between ``"pageItems"`` and ``"page_info"``: ``set=<set>`` or ``\\/photos\\/<set>\\/``), which
  is then walked as a set.
- ``facebook_album``: a photo set; id: the set id (``a.<album>``, ``pb.<uid>.-2207520000``,
  ``t.<uid>``, ``pcb.<post>``), or ``<set>:<photo id>`` to start at that photo. URLs:
  ``/media/set/?set=<set>``, ``/photo/?set=<set>`` (no ``fbid``), ``/<page>/photos/<set>/`` (naming
  no photo), ``/photo/?fbid=<id>&set=<set>&setextract`` (gallery-dl's "from this photo on").
  gallery-dl's walk (``extract_set``): the set page's first photo (the last ``"id":"`` between
  ``{"__typename":"Photo","__isMedia":"Photo","`` and ``","creation_story"``, else after
  ``{"__typename":"Photo","id":"``), then photo page after photo page by their "next" photo
  (:func:`trawl.platforms.facebook.photo.parse_photo_page`) until there is none or it comes round
  again. There is no paging API: a page of this listing is :data:`PHOTOS_PER_PAGE` photos of the
  walk, one request each.
- ``facebook_albums``: a profile's albums tab (gallery-dl's ``FacebookAlbumsExtractor``); id: the
  profile, or ``<profile>/<album title>`` for one album by its title (any case). URLs:
  ``/<page>/photos_albums[/<title>]``, ``/profile.php?id=<id>&sk=photos_albums``. Lists the albums'
  set URLs (``/media/set/?set=a.<album>&type=3``), each a ``facebook_album`` listing, from the
  first page of ``"TimelineAppCollectionAlbumsRenderer"``'s ``collection.pageItems.edges[].node``
  (``title.text``, ``node.url``), as gallery-dl reads it: only the first page.

Refused offline as ``login_required`` (only an account with a session can list them; gallery-dl
and yt-dlp need cookies for them too): ``/me`` and its tabs (the account's own profile),
``/saved``, a person's tagged photos (``/<name>/photos_of``, ``sk=photos_of``), a group's media
tabs (``/groups/<group>/media``, ``/photos``, ``/videos``) and watch parties (``/watchparty/<id>``,
yt-dlp's test: "Requires logging in"). A tab page that shows Facebook's login wall, or a profile
that "isn't available" to an anonymous visitor, is ``login_required`` when fetched
(:func:`trawl.platforms.facebook.errors.classify_listing_page`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

from trawl.errors import LoginRequired, ParseError, cookies_advice
from trawl.platforms.base import Page, ResolveContext, Resolver, base_pattern, dig
from trawl.platforms.facebook.config import FacebookSettings
from trawl.platforms.facebook.errors import classify_listing_page, classify_page
from trawl.platforms.facebook.hosts import HOSTS, page_headers
from trawl.platforms.facebook.photo import FacebookPhotoResolver, check_photo_answer, extr, parse_photo_page
from trawl.platforms.facebook.resolver import FacebookResolver, json_blocks
from trawl.platforms.platform import ListingForm

PHOTOS_PER_PAGE = 20  # photos of a set walk per listing page (each one photo page request)
_FLAGS = re.IGNORECASE
_TAIL = r"/?(?:[?#].*)?$"  # an optional slash, query and fragment, then the end
# First path segments that are Facebook's own, never a page or profile name.
_RESERVED = (
    "watch", "reel", "reels", "share", "plugins", "groups", "events", "media", "photo", "photos", "video",
    "videos", "login", "stories", "hashtag", "marketplace", "gaming", "help", "policies", "privacy", "pages",
    "pg", "ads", "business", "settings", "notifications", "messages", "friends", "bookmarks", "search",
    "saved", "me", "watchparty", "live", "fundraisers", "dialog", "sharer", "l", "tr", "ajax", "api",
    "home", "checkpoint", "recover", "people", "profile", "story", "permalink", "memories", "news", "jobs",
    "community", "legal", "about", "careers", "lite", "mobile", "find-friends", "latest", "feeds", "reg",
    "r.php", "campaign", "privacy_sandbox", "terms", "cookies", "directory", "places", "offers", "games",
)
_FILE = r"(?:php|html?|xml|rss|atom|json|txt|m3u8|mpd|mp4|m4a|mp3|webm|ts|jpe?g|png|gif|webp)"
# A page or profile name: letters, digits and dots (not one of Facebook's paths, not a file name).
_NAME = (rf"(?!(?:{'|'.join(re.escape(r) for r in _RESERVED)})(?:[/?#]|$))"
         rf"(?![A-Za-z0-9._-]+\.{_FILE}(?:[/?#]|$))(?P<id>[A-Za-z0-9._-]+)")
_PEOPLE = r"people/[^/?#]+/(?P<pid>\d+)"
_PROFILE_PHP = r"profile\.php\?(?:[^#]*&)?id=(?P<uid>\d+)"
_SET = r"[A-Za-z0-9._-]+"


def _sk(tabs: str) -> str:
    """A lookahead: the query's ``sk`` is one of ``tabs``."""
    return rf"(?=[^#]*[?&]sk=(?:{tabs})(?:[&#]|$))"


_NO_SK = r"(?![^#]*[?&]sk=)"


def _profile_id(match: re.Match[str]) -> str:
    """The id a form names: a page's name, a ``people/`` or ``profile.php`` numeric id."""
    found = match.groupdict()
    return next(found[g] for g in ("id", "pid", "uid") if found.get(g))


def listing_forms(config: FacebookSettings) -> list[ListingForm]:
    """The listing URL forms Facebook's pages take, on its real hosts and the configured page base."""
    site = base_pattern(HOSTS, config.page_base)
    login = "only a logged-in account can list " + "{}" + "; " + cookies_advice("facebook")

    def form(kind: str, pattern: str, listing_id: Callable[[re.Match[str]], str] = _profile_id,
             login_required: str = "") -> ListingForm:
        return ListingForm(kind, re.compile(site + pattern, _FLAGS), listing_id, login_required)

    def profile(kind: str, tabs: str, sk: str) -> list[ListingForm]:
        """A profile's tab as a path (``/<name>/<tab>``) or as ``sk=`` on any profile URL form."""
        path = [form(kind, rf"/(?:pg/)?{_NAME}/(?:{tabs}){_TAIL}"),
                form(kind, rf"/{_PEOPLE}/(?:{tabs}){_TAIL}")] if tabs else []
        return path + [
            form(kind, rf"/{_sk(sk)}{_PROFILE_PHP}(?:[&#].*)?$"),
            form(kind, rf"/{_sk(sk)}(?:{_PEOPLE}|{_NAME})/?\?.*$"),
        ]

    return [
        # Only a session can list these: refused before anything else is tried.
        form("facebook_photos", r"/me(?:/[^?#]*)?(?:[?#].*)?$", login_required=login.format("its own profile (/me)")),
        form("facebook_photos", rf"/saved{_TAIL}", login_required=login.format("its saved items")),
        form("facebook_photos", rf"/(?:pg/)?{_NAME}/photos_of{_TAIL}",
             login_required=login.format("the photos a person is tagged in")),
        form("facebook_photos", rf"/(?:{_sk('photos_of')}(?:{_PROFILE_PHP}|{_PEOPLE}|{_NAME})).*$",
             login_required=login.format("the photos a person is tagged in")),
        form("facebook_photos", r"/groups/[^/?#]+/(?:media|photos|videos)(?:/[^?#]*)?(?:[?#].*)?$",
             login_required=login.format("a group's media")),
        form("facebook_videos", rf"/watchparty/\d+{_TAIL}", login_required=login.format("a watch party")),
        # Photo sets.
        form("facebook_album", rf"/media/set/?\?(?:[^#]*&)?set=(?P<id>{_SET})(?:[&#].*)?$"),
        form("facebook_album", rf"/photo(?:\.php)?/?\?(?=(?:[^#]*&)?fbid=(?P<fbid>\d+)(?:[&#]|$))"
                               rf"(?=(?:[^#]*&)?set=(?P<set>{_SET})(?:[&#]|$))(?=[^#]*&setextract(?:[=&#]|$)).*$",
             lambda m: f"{m['set']}:{m['fbid']}"),
        form("facebook_album", rf"/photo(?:\.php)?/?\?(?!(?:[^#]*&)?fbid=)(?:[^#]*&)?set=(?P<id>{_SET})(?:[&#].*)?$"),
        form("facebook_album", rf"/(?:pg/)?(?!media/)[^/?#]+/photos/(?P<id>(?:a|pb|pcb|t|g|ms|oa|vb)\.{_SET}){_TAIL}"),
        # A profile's tabs, then the bare profile (its photos, as gallery-dl takes it).
        form("facebook_albums", rf"/(?:pg/)?{_NAME}/photos_albums(?:/(?P<title>[^/?#]+))?{_TAIL}",
             lambda m: m["id"] + (f"/{unquote(m['title'])}" if m["title"] else "")),
        *profile("facebook_albums", "", "photos_albums"),
        *profile("facebook_videos", "videos", "videos"),
        *profile("facebook_reels", "reels", "reels_tab"),
        form("facebook_photos", rf"/{_PROFILE_PHP}/photos(?:_by)?(?:[&#].*)?$"),
        *profile("facebook_photos", "photos|photos_by", "photos|photos_by"),
        form("facebook_photos", rf"/{_NO_SK}{_PROFILE_PHP}(?:[&#].*)?$"),
        form("facebook_photos", rf"/{_NO_SK}(?:{_PEOPLE}|{_NAME}){_TAIL}"),
    ]


# -- reading pages ---------------------------------------------------------------------------
def _fetch(resolver: FacebookResolver, ctx: ResolveContext, path: str, what: str) -> Page:
    url = f"{resolver.config.page_base.rstrip('/')}{path}"
    return resolver.fetch_page(url, ctx, page_headers(resolver.config), item_url=what)


def _logged_in(config: FacebookSettings) -> bool:
    return "Cookie" in page_headers(config)


def _page_items(blocks: list[Any]) -> list[dict[str, Any]]:
    """Every ``pageItems`` object (``{"edges": [...], "page_info": {...}}``) in the page's JSON."""
    found: list[dict[str, Any]] = []
    stack: list[Any] = list(reversed(blocks))
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(reversed(node))
        elif isinstance(node, dict):
            items = node.get("pageItems")
            if isinstance(items, dict) and isinstance(items.get("edges"), list):
                found.append(items)
            stack.extend(reversed([v for v in node.values() if isinstance(v, (dict, list))]))
    return found


def _video_ids(edge: Any) -> list[str]:
    """The ``Video`` nodes' ids inside one list entry, in order."""
    ids: list[str] = []
    stack = [edge]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(reversed(node))
        elif isinstance(node, dict):
            video_id = node.get("id")
            if node.get("__typename") == "Video" and isinstance(video_id, str) and video_id.isdigit():
                ids.append(video_id)
            stack.extend(reversed([v for v in node.values() if isinstance(v, (dict, list))]))
    return ids


def _stated(page: Page, config: FacebookSettings, where: str) -> Exception:
    """What a listing page without its list states, or a parse error saying what is missing."""
    stated = classify_listing_page(page.text(), where, _logged_in(config))
    return stated or ParseError(f"facebook: {page.url}: no list in the page{where}")


def videos_listing(resolver: Resolver, ctx: ResolveContext, profile: str, max_pages: int,
                   enough: Callable[[list[str]], bool] | None) -> list[str]:
    """Source kind ``facebook_videos``: the videos tab of ``profile``, newest first."""
    assert isinstance(resolver, FacebookResolver)
    base = resolver.config.page_base.rstrip("/")
    urls: list[str] = []
    cursor = ""
    for _ in range(max_pages):
        path = f"/{quote(profile)}/videos/" + (f"?{urlencode({'cursor': cursor})}" if cursor else "")
        page = _fetch(resolver, ctx, path, f"{base}/{profile}/videos/")
        lists = _page_items(json_blocks(page.text()))
        if not lists:
            raise _stated(page, resolver.config, f" for the videos of {profile}")
        items = lists[0]
        ids = list(dict.fromkeys(i for edge in items["edges"] for i in _video_ids(edge)[:1]))
        page_urls = [f"{base}/watch/?v={video_id}" for video_id in ids if f"{base}/watch/?v={video_id}" not in urls]
        urls += page_urls
        if enough is not None and enough(page_urls):
            break
        cursor = dig(items, "page_info", "end_cursor") if dig(items, "page_info", "has_next_page") is True else ""
        if not isinstance(cursor, str) or not cursor or not ids:
            break
    return urls


def reels_listing(resolver: Resolver, ctx: ResolveContext, profile: str, max_pages: int,
                  enough: Callable[[list[str]], bool] | None) -> list[str]:
    """Source kind ``facebook_reels``: the reels tab of ``profile``, as ``/reel/<id>`` URLs, newest
    first. The tab is read as the videos tab is (its ``pageItems`` list of ``Video`` nodes, paged
    by ``?cursor=``); a tab page without that list but with links to reels (``/reel/<id>``, all a
    browser's reader of the tab takes) gives those links."""
    assert isinstance(resolver, FacebookResolver)
    base = resolver.config.page_base.rstrip("/")
    urls: list[str] = []
    cursor = ""
    for _ in range(max_pages):
        path = f"/{quote(profile)}/reels/" + (f"?{urlencode({'cursor': cursor})}" if cursor else "")
        page = _fetch(resolver, ctx, path, f"{base}/{profile}/reels/")
        text = page.text()
        lists = _page_items(json_blocks(text))
        if lists:
            items = lists[0]
            ids = list(dict.fromkeys(i for edge in items["edges"] for i in _video_ids(edge)[:1]))
            more = dig(items, "page_info", "has_next_page") is True
            cursor = dig(items, "page_info", "end_cursor") if more else ""
        else:
            ids = list(dict.fromkeys(_REEL_LINK.findall(text)))
            cursor = ""
            if not ids:
                raise _stated(page, resolver.config, f" for the reels of {profile}")
        page_urls = [u for u in (f"{base}/reel/{reel}" for reel in ids) if u not in urls]
        urls += page_urls
        if enough is not None and enough(page_urls):
            break
        if not isinstance(cursor, str) or not cursor or not ids:
            break
    return urls


# A link to a reel in a page's HTML or its JSON (``/reel/<id>``, ``\/reel\/<id>``).
_REEL_LINK = re.compile(r"""["'(](?:https?:\\?/\\?/[a-z0-9.-]*facebook\.com)?\\?/reel\\?/(\d{6,20})""")


def profile_set(resolver: FacebookResolver, ctx: ResolveContext, profile: str) -> str | None:
    """The photo set of ``profile``'s photos, named on its ``photos_by`` page (gallery-dl's
    ``_extract_profile_set_id``); None when the profile has no photos."""
    base = resolver.config.page_base.rstrip("/")
    page = _fetch(resolver, ctx, f"/{quote(profile)}/photos_by", f"{base}/{profile}/photos_by")
    text = page.text()
    if text.find(">Page Not Found</title>", 0, 3000) > 0:
        raise _stated(page, resolver.config, f" for the photos of {profile}")
    raw = extr(text, '"pageItems"', '"page_info"')
    set_id = extr(raw, "set=", '"').split("&", 1)[0].split("\\u0026", 1)[0] or extr(raw, "\\/photos\\/", "\\/")
    if re.fullmatch(_SET, set_id) and "." in set_id:
        return set_id
    if '"pageItems"' in text and '"page_info"' in text:
        return None  # the list is there and holds no photo
    stated = classify_listing_page(text, f" for the photos of {profile}", _logged_in(resolver.config))
    if stated is not None:
        raise stated
    raise ParseError(f"facebook: {page.url}: no photo set in the page (\"pageItems\" ... set= ... \"page_info\")")


def first_photo(resolver: FacebookResolver, ctx: ResolveContext, set_id: str) -> str | None:
    """The first photo of set ``set_id``, from its set page (gallery-dl's ``parse_set_page``);
    None for an empty set."""
    base = resolver.config.page_base.rstrip("/")
    path = f"/media/set/?{urlencode({'set': set_id})}"
    page = _fetch(resolver, ctx, path, base + path)
    text = page.text()
    cut = extr(text, '{"__typename":"Photo","__isMedia":"Photo","', '","creation_story"')
    photo_id = cut.rsplit('"id":"', 1)[-1] if '"id":"' in cut else ""
    photo_id = photo_id if photo_id.isdigit() else extr(text, '{"__typename":"Photo","id":"', '"')
    if photo_id.isdigit():
        return photo_id
    if '"mediaSetToken":"' in text or '"mediasetToken":"' in text:
        return None  # the set is there and holds no photo
    where = f" for the set {set_id}"
    stated = classify_page(text, where, "the set")
    if stated is not None:
        raise stated
    raise ParseError(f"facebook: {page.url}: no first photo in the set page{where}")


def walk_set(resolver: FacebookResolver, ctx: ResolveContext, set_id: str, start: str, max_pages: int,
             enough: Callable[[list[str]], bool] | None) -> list[str]:
    """The photos of a set from ``start`` on, photo page by photo page (gallery-dl's ``extract_set``)."""
    photos = FacebookPhotoResolver(resolver.config)
    base = resolver.config.page_base.rstrip("/")
    urls: list[str] = []
    seen: set[str] = set()
    chunk: list[str] = []
    photo_id = start
    # One request per photo, outside the fetch queue's server-side rate limit: paced here at the
    # platform's requests_per_second, so a walk asks no faster than its item fetches would.
    interval = 1.0 / resolver.config.requests_per_second
    asked = -interval
    while photo_id and photo_id not in seen and len(urls) < max_pages * PHOTOS_PER_PAGE:
        seen.add(photo_id)
        time.sleep(max(0.0, asked + interval - time.monotonic()))
        asked = time.monotonic()
        page_url = photos.page_url(photo_id, set_id)
        page = resolver.fetch_page(page_url, ctx, page_headers(resolver.config), item_url=page_url)
        resume = f"{base}/photo/?fbid={photo_id}&set={set_id}&setextract"
        try:
            check_photo_answer(page, f" while listing the set {set_id}")
        except LoginRequired as err:
            raise LoginRequired(f"{err.message}; to go on from this photo later, crawl {resume}") from None
        photo = parse_photo_page(page.text())
        if not photo.id and not photo.url:
            stated = classify_page(page.text(), f" for photo {photo_id} of the set {set_id}", "the photo")
            raise stated or ParseError(f"facebook: {page.url}: not a photo page (no \"__isNode\":\"Photo\")")
        url = f"{base}/photo/?fbid={photo_id}&set={set_id}"
        urls.append(url)
        chunk.append(url)
        if len(chunk) == PHOTOS_PER_PAGE:
            if enough is not None and enough(chunk):
                return urls
            chunk = []
        photo_id = photo.next_id if photo.next_id.isdigit() else ""
    if chunk and enough is not None:
        enough(chunk)
    return urls


def album_listing(resolver: Resolver, ctx: ResolveContext, listing_id: str, max_pages: int,
                  enough: Callable[[list[str]], bool] | None) -> list[str]:
    """Source kind ``facebook_album``: id ``<set>`` or ``<set>:<first photo id>``."""
    assert isinstance(resolver, FacebookResolver)
    set_id, _, start = listing_id.partition(":")
    if not re.fullmatch(_SET, set_id) or (start and not start.isdigit()):
        raise ParseError(f"facebook: {listing_id!r} is not a photo set id (a.<album>, or <set>:<photo id>)")
    start = start or first_photo(resolver, ctx, set_id) or ""
    return walk_set(resolver, ctx, set_id, start, max_pages, enough) if start else []


def photos_listing(resolver: Resolver, ctx: ResolveContext, profile: str, max_pages: int,
                   enough: Callable[[list[str]], bool] | None) -> list[str]:
    """Source kind ``facebook_photos``: a profile's photos, the set its ``photos_by`` page names."""
    assert isinstance(resolver, FacebookResolver)
    set_id = profile_set(resolver, ctx, profile)
    return album_listing(resolver, ctx, set_id, max_pages, enough) if set_id else []


def albums_listing(resolver: Resolver, ctx: ResolveContext, listing_id: str, max_pages: int,
                   enough: Callable[[list[str]], bool] | None) -> list[str]:
    """Source kind ``facebook_albums``: the set URLs of a profile's albums (its tab's first page),
    or of its album titled as in ``<profile>/<title>``; each is a ``facebook_album`` listing."""
    assert isinstance(resolver, FacebookResolver)
    profile, _, title = listing_id.partition("/")
    base = resolver.config.page_base.rstrip("/")
    page = _fetch(resolver, ctx, f"/{quote(profile)}/photos_albums", f"{base}/{profile}/photos_albums")
    collection = _albums_collection(json_blocks(page.text()))
    if collection is None:
        raise _stated(page, resolver.config, f" for the albums of {profile}")
    urls: list[str] = []
    for edge in collection.get("edges") or []:
        name = dig(edge, "node", "title", "text")
        set_id = _set_of(dig(edge, "node", "node", "url"))
        if set_id is None or (title and (not isinstance(name, str) or name.lower() != title.lower())):
            continue
        url = f"{base}/media/set/?set={set_id}&type=3"
        if url not in urls:
            urls.append(url)
    return urls


def _albums_collection(blocks: list[Any]) -> dict[str, Any] | None:
    """``pageItems`` of the ``TimelineAppCollectionAlbumsRenderer``'s collection, if the page has one."""
    stack: list[Any] = list(reversed(blocks))
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(reversed(node))
        elif isinstance(node, dict):
            items = dig(node, "collection", "pageItems")
            if node.get("__typename") == "TimelineAppCollectionAlbumsRenderer" and isinstance(items, dict):
                return items
            stack.extend(reversed([v for v in node.values() if isinstance(v, (dict, list))]))
    return None


def _set_of(url: Any) -> str | None:
    if not isinstance(url, str):
        return None
    values = parse_qs(urlsplit(url).query).get("set") or []
    return values[0] if values and re.fullmatch(_SET, values[0]) else None


LISTINGS = {
    "facebook_videos": videos_listing,
    "facebook_reels": reels_listing,
    "facebook_photos": photos_listing,
    "facebook_album": album_listing,
    "facebook_albums": albums_listing,
}
