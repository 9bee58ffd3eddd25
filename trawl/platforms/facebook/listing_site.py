"""The simulated Facebook's photos and listings: photo pages, photo sets, a profile's tabs.

Installed by :class:`trawl.platforms.facebook.site.FacebookSite` (its ``media`` attribute). No
capture of these pages is in the references; each answer is built on the shape gallery-dl's
Facebook extractor reads (``gallery_dl/extractor/facebook.py``, the markers it cuts the HTML at,
quoted in its docstrings below), inside the ``<script type="application/json" data-sjs>`` Relay
blocks real pages carry (as the video pages of :mod:`.site`):

- **Photo page** ``/photo/?fbid=<id>&set=<set>`` (also ``/photo.php``), gallery-dl's
  ``parse_photo_page``: the photo node ``{"__typename":"Photo","image":{"uri":...},...,"url":
  "https:\\/\\/www.facebook.com\\/photo\\/?fbid=<id>&set=<set>","__isNode":"Photo","id":"<id>"}``,
  the owner as ``"owner":{"__typename":"User","id":...}`` and ``"owner":{"__typename":"User","name":...}``,
  the caption in ``"message":{"delight_ranges":[],...,"text":...},"message_preferred_body"``, the
  date as ``"created_time":<s>,``, the next photo of the set as
  ``"nextMediaAfterNodeId":{"__typename":"Photo","id":...}``. The set decides the next photo (an
  empty ``set=`` means the photo's own album); the photos-by set comes round to its first photo
  again at its end, as gallery-dl's "Detected a loop in the set" expects. The image is on a
  signed CDN (``/v/t39.30808-6/``, ``oe`` hex expiry, ``oh`` signature: a real photo URL's path
  and parameters). Facebook redirects anonymous visitors to ``/login`` after a few photo pages
  (gallery-dl's "You must be logged in to continue viewing images"):
  :attr:`FacebookMediaSite.max_anonymous_photo_views`, and :data:`LOGIN_PHOTO_ID` always; its
  block is a page carrying ``{"__dr":"CometErrorRoot.react"}`` (:data:`BLOCKED_PHOTO_ID`).
- **Set page** ``/media/set/?set=<set>``, gallery-dl's ``parse_set_page``: ``"mediaSetToken"``,
  ``"title":{"text":...}``, the owner, and a grid of ``{"__typename":"Photo","__isMedia":"Photo",
  "image":{...},"id":"<id>","creation_story":{...}}`` nodes, the first being the walk's start.
- **Photos tab** ``/<profile>/photos_by`` (and ``/photos``), gallery-dl's
  ``_extract_profile_set_id``: ``"pageItems":{"edges":[{"node":{...,"url":"...photo.php?fbid=<id>
  &set=pb.<uid>.-2207520000&type=3"}}]},"page_info"`` (``keepersdiary`` names its set the other
  way gallery-dl reads, ``\\/<profile>\\/photos\\/<set>\\/<id>\\/``); a profile Facebook hides
  from anonymous visitors answers ``"props":{"title":"This content isn't available right now"``.
- **Albums tab** ``/<profile>/photos_albums``, gallery-dl's ``FacebookAlbumsExtractor``:
  ``{"__typename":"TimelineAppCollectionAlbumsRenderer","collection":{"id":...,"name":{...},
  "pageItems":{"edges":[{"node":{"node":{"__typename":"Album","id":...,"url":
  "https://www.facebook.com/media/set/?set=a.<id>&type=3"},"image":{"uri":...},"title":{"text":...}}}],
  "page_info":{...}}},...}``: one page, so that gallery-dl's cut (``},"pageItems":`` to ``}}},``)
  parses it too.
- **Videos tab** ``/<profile>/videos/``: **not from a published capture.** Neither yt-dlp nor
  gallery-dl reads this tab; its shape is trawl's design on the page shape trawl's video resolver
  reads: Relay blocks whose ``pageItems.edges[].node.node`` are ``Video`` nodes as on a video page
  (``id``, ``videoId``, ``owner``, ``playable_duration_in_ms``, ``preferred_thumbnail``; no media
  URLs), :data:`VIDEOS_PER_TAB_PAGE` per page, ``page_info.has_next_page``/``end_cursor``, the next
  page asked as ``?cursor=<end_cursor>``, a suggested video outside the list. ``membersonly``
  answers with the login wall, ``gonepage`` as a hidden profile.
- **Reels tab** ``/<profile>/reels/``: **not from a published capture** either; the videos tab's
  shape with ``/reel/<id>/`` URLs, :data:`REELS_PER_TAB_PAGE` per page (:data:`REELS`), and for
  ``keepersdiary`` a page with no list, only ``<a href="/reel/<id>/">`` links (all a browser
  script collecting a tab's reels reads).
"""

from __future__ import annotations

import html
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from trawl.platforms.facebook.page_parts import LOGIN_WALL, UNAVAILABLE, VIDEOS, relay, script
from trawl.simulator.media import MediaFile
from trawl.simulator.server import Request, Response, Simulator
from trawl.simulator.signed import SignedMedia

if TYPE_CHECKING:  # the site makes this one (its media)
    from trawl.platforms.facebook.site import FacebookSite

PHOTO_CDN_PREFIX = "/v/t39.30808-6"
HARBOUR_UID = "100064102938475"
WINTER_SET = "a.4410000000000001"  # harbourcouncil's album "Harbour in winter": 4 photos
LIGHTHOUSE_SET = "a.4410000000000002"  # keepersdiary's album: 2 photos
EMPTY_SET = "a.4410000000000003"  # harbourcouncil's empty album
MEMBERS_SET = "a.4410000000000004"  # its second photo's page redirects to /login
PHOTOS_BY_SET = f"pb.{HARBOUR_UID}.-2207520000"  # harbourcouncil's photos: 5, its walk comes round
LOGIN_PHOTO_ID = "8810000000000099"  # its page always redirects to /login
BLOCKED_PHOTO_ID = "8810000000000098"  # its page is Facebook's CometErrorRoot block
VIDEOS_PER_TAB_PAGE = 2
REELS_PER_TAB_PAGE = 1
# A profile's reels, newest first (any video page serves as /reel/<id>): harbourcouncil's in a
# pageItems list, keepersdiary's as links only.
REELS = {"harbourcouncil": ("2847561930284756", "1029384756473829"), "keepersdiary": ("3958271046382910",)}
LOGIN_PROFILE, HIDDEN_PROFILE, EMPTY_PROFILE = "membersonly", "gonepage", "emptypage"


@dataclass(frozen=True)
class FbPhoto:
    id: str
    owner: str  # the profile name
    owner_name: str
    caption: str
    created: int
    size: int


PHOTOS = {p.id: p for p in (
    FbPhoto("8810000000000001", "harbourcouncil", "Harbour Council", "Ice on the pier\nJanuary morning", 1704186000, 41_000),
    FbPhoto("8810000000000002", "harbourcouncil", "Harbour Council", "Frozen nets", 1704272400, 42_000),
    FbPhoto("8810000000000003", "harbourcouncil", "Harbour Council", "Snow on the quay", 1704358800, 43_000),
    FbPhoto("8810000000000004", "harbourcouncil", "Harbour Council", "Café by the harbour \u2615", 1704445200, 44_000),
    FbPhoto("8810000000000005", "keepersdiary", "Keeper's Diary", "The lamp room", 1706000000, 45_000),
    FbPhoto("8810000000000006", "keepersdiary", "Keeper's Diary", "", 1706086400, 46_000),
    FbPhoto("8810000000000007", "harbourcouncil", "Harbour Council", "Summer regatta", 1719800000, 47_000),
    FbPhoto(BLOCKED_PHOTO_ID, "harbourcouncil", "Harbour Council", "", 1704531600, 48_000),
)}
# Set -> (title, owner profile, photo ids in the set's order).
SETS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    WINTER_SET: ("Harbour in winter", "harbourcouncil",
                 ("8810000000000001", "8810000000000002", "8810000000000003", "8810000000000004")),
    LIGHTHOUSE_SET: ("Lighthouse", "keepersdiary", ("8810000000000005", "8810000000000006")),
    EMPTY_SET: ("Empty album", "harbourcouncil", ()),
    MEMBERS_SET: ("Members only", "harbourcouncil", ("8810000000000007", LOGIN_PHOTO_ID, "8810000000000001")),
    PHOTOS_BY_SET: ("Harbour Council's photos", "harbourcouncil",
                    ("8810000000000007", "8810000000000004", "8810000000000003", "8810000000000002",
                     "8810000000000001")),
}
LOOPING_SETS = frozenset({PHOTOS_BY_SET})  # the last photo's next is the first again
# A profile's photos-by set and albums (a profile not named here has no photos tab).
PROFILE_SETS = {"harbourcouncil": PHOTOS_BY_SET, "keepersdiary": LIGHTHOUSE_SET}
PROFILE_ALBUMS = {"harbourcouncil": (WINTER_SET, MEMBERS_SET, EMPTY_SET), "keepersdiary": (LIGHTHOUSE_SET,)}
UIDS = {"harbourcouncil": HARBOUR_UID, "keepersdiary": "100064555000111", EMPTY_PROFILE: "100064555000222"}

_HIDDEN = ('<!DOCTYPE html><html lang="en"><head><title>Facebook</title></head><body>'
           '<script type="application/json" data-sjs>{"require":[["RelayPrefetchedStreamCache","next",[],'
           '["adp_ProfileCometHeaderQuery",{"props":{"title":"This content isn\'t available right now",'
           '"body":"When this happens, it\'s usually because the owner only shared it with a small group of people, '
           'changed who can see it or it\'s been deleted."}}]]]}</script></body></html>')
_BLOCKED = ('<!DOCTYPE html><html lang="en"><head><title>Facebook</title></head><body>'
            '<script type="application/json" data-sjs>{"__dr":"CometErrorRoot.react"}</script></body></html>')


class FacebookMediaSite:
    """Photo pages, photo sets and profile tabs of the simulated Facebook.

    Attributes:
        max_anonymous_photo_views: after this many photo pages asked without a ``c_user``
            cookie, photo pages redirect to ``/login`` (None: never).
        photo_page_requests: photo pages served.
        tab_requests: profile tab and set pages served, by path.
    """

    def __init__(self, sim: Simulator, site: FacebookSite) -> None:
        self.sim = sim
        self.site = site
        self.cdn = SignedMedia(sim, PHOTO_CDN_PREFIX, ttl=3 * 24 * 3600.0, expiry_param="oe", hex_expiry=True,
                               sig_param="oh")
        self.max_anonymous_photo_views: int | None = None
        self.photo_page_requests = 0
        self.anonymous_photo_views = 0
        self.tab_requests: dict[str, int] = {}
        self._lock = threading.Lock()
        for photo in PHOTOS.values():
            self.cdn.add(self._image_name(photo.id), MediaFile("jpeg", f"facebook-photo-{photo.id}", photo.size))
        sim.add_route(r"/login/?", lambda req: self._html(LOGIN_WALL))
        sim.add_route(r"/photo(?:\.php)?/?", self._serve_photo)
        sim.add_route(r"/media/set/?", self._serve_set)
        sim.add_route(r"/(?P<profile>[^/]+)/videos/?", self._serve_videos_tab)
        sim.add_route(r"/(?P<profile>[^/]+)/reels/?", self._serve_reels_tab)
        sim.add_route(r"/(?P<profile>[^/]+)/photos(?:_by)?/?", self._serve_photos_tab)
        sim.add_route(r"/(?P<profile>[^/]+)/photos_albums/?", self._serve_albums_tab)

    # -- what tests use ----------------------------------------------------------------------
    def image_url(self, photo_id: str) -> str:
        """A freshly signed full-size image URL of ``photo_id``, as its page names it."""
        return self.cdn.url(self._image_name(photo_id), _nc_cat="111", ccb="1-7", _nc_sid="127cfc",
                            _nc_ohc="Hx8fFQ3rPdUQ7kNvgF", _nc_ht="scontent-bos5-1.xx")

    def photo_url(self, photo_id: str, set_id: str = "") -> str:
        """The simulator's ``/photo/?fbid=<id>&set=<set>``."""
        return self.sim.url(f"/photo/?{urlencode({'fbid': photo_id, 'set': set_id})}")

    def set_photos(self, set_id: str) -> tuple[str, ...]:
        return SETS[set_id][2]

    # -- pages -------------------------------------------------------------------------------
    def photo_html(self, photo_id: str, set_id: str) -> str:
        """The photo page of ``photo_id`` seen in ``set_id`` ("" for its own album)."""
        photo = PHOTOS[photo_id]
        set_id = set_id or next((s for s, (_, _, ids) in SETS.items() if photo_id in ids and s.startswith("a.")),
                                PROFILE_SETS.get(photo.owner, ""))
        ids = SETS.get(set_id, ("", "", ()))[2]
        next_id = None
        if photo_id in ids:
            at = ids.index(photo_id)
            if at + 1 < len(ids):
                next_id = ids[at + 1]
            elif set_id in LOOPING_SETS:
                next_id = ids[0]
        uid = UIDS.get(photo.owner, HARBOUR_UID)
        node = {
            "__typename": "Photo",
            "image": {"uri": self.image_url(photo_id), "width": 2048, "height": 1365},
            "owner": {"__typename": "User", "id": uid},
            "created_time": photo.created,
            "url": f"https://www.facebook.com/photo/?fbid={photo_id}&set={set_id}",
            "__isNode": "Photo",
            "id": photo_id,
        }
        story = {
            "message": {"delight_ranges": [], "image_ranges": [], "inline_style_ranges": [], "aggregated_ranges": [],
                        "ranges": [], "color_ranges": [], "text": photo.caption},
            "message_preferred_body": None,
            "owner": {"__typename": "User", "name": photo.owner_name, "id": uid},
        }
        viewer = {"nextMediaAfterNodeId": {"__typename": "Photo", "id": next_id} if next_id else None,
                  "prevMediaBeforeNodeId": None}
        blocks = [relay("CometPhotoRootContentQueryRelayPreloader_1", {"currMedia": node}),
                  relay("CometPhotoRootContentQueryRelayPreloader_2", {"creation_story": story if photo.caption else
                                                                         {"owner": story["owner"]}}),
                  relay("CometPhotoRootViewerQueryRelayPreloader_3", {"mediaViewer": viewer})]
        return self._page(f"{photo.caption.splitlines()[0] if photo.caption else 'Photo'}", blocks)

    def set_html(self, set_id: str) -> str:
        title, owner, ids = SETS[set_id]
        grid = [{"node": {"__typename": "Photo", "__isMedia": "Photo",
                          "image": {"uri": self.image_url(i), "width": 206, "height": 206}, "id": i,
                          "creation_story": {"id": f"S:_I{i}"}}} for i in ids]
        data = {"mediaSetToken": set_id, "title": {"text": title},
                "owner": {"__typename": "User", "id": UIDS.get(owner, HARBOUR_UID)},
                "media": {"edges": grid, "page_info": {"has_next_page": False}}}
        return self._page(title, [relay("CometMediaSetPageQueryRelayPreloader_1", data)])

    def photos_tab_html(self, profile: str) -> str:
        set_id = PROFILE_SETS.get(profile)
        edges = []
        for photo_id in SETS[set_id][2] if set_id else ():
            if set_id and set_id.startswith("a."):
                url = f"https://www.facebook.com/{profile}/photos/{set_id}/{photo_id}/"
            else:
                url = f"https://www.facebook.com/photo.php?fbid={photo_id}&set={set_id}&type=3"
            edges.append({"node": {"__typename": "TimelineAppCollectionItem", "id": f"I:{photo_id}", "url": url,
                                   "node": {"__typename": "Photo", "id": photo_id}}, "cursor": None})
        data = {"user": {"__typename": "User", "id": UIDS.get(profile, HARBOUR_UID), "name": profile},
                "collection": {"id": f"C:{profile}:photos_by", "pageItems": {
                    "edges": edges, "page_info": {"has_next_page": False, "end_cursor": None}}}}
        return self._page(f"{profile} photos", [relay("ProfileCometAppCollectionPhotosRendererQuery_1", data)])

    def albums_tab_html(self, profile: str) -> str:
        edges = []
        for n, set_id in enumerate(PROFILE_ALBUMS.get(profile, ())):
            title, _, ids = SETS[set_id]
            album_id = set_id.split(".", 1)[1]
            edges.append({"node": {"__typename": "TimelineAppCollectionItem",
                                   "node": {"__typename": "Album", "id": album_id,
                                            "url": f"https://www.facebook.com/media/set/?set={set_id}&type=3"},
                                   "image": {"uri": self.image_url(ids[0])} if ids else None,
                                   "title": {"text": title}, "id": f"I:{album_id}"},
                          "cursor": f"album:{n}"})
        renderer = {"__typename": "TimelineAppCollectionAlbumsRenderer",
                    "collection": {"id": f"C:{profile}:albums", "name": {"text": "Albums"},
                                   "pageItems": {"edges": edges, "page_info": {"has_next_page": False,
                                                                                 "end_cursor": f"album:{len(edges)}"}}},
                    "id": f"R:{profile}:albums"}
        return self._page(f"{profile} albums", [relay("ProfileCometAppSectionQuery_1",
                                                       {"renderer": renderer})])

    def videos_tab_html(self, profile: str, cursor: str) -> str | None:
        """A page of ``profile``'s videos tab from ``cursor`` (None: no such cursor)."""
        videos = list(VIDEOS) if profile == "harbourcouncil" else []
        start = 0
        if cursor:
            if not cursor.startswith("videos:") or not cursor[7:].isdigit():
                return None
            start = int(cursor[7:])
        shown = videos[start:start + VIDEOS_PER_TAB_PAGE]
        end = start + len(shown)
        edges = [{"node": {"__typename": "TimelineAppCollectionItem", "id": f"I:{v.id}",
                           "node": {"__typename": "Video", "id": v.id, "videoId": v.id,
                                    "url": f"https://www.facebook.com/{v.page}/videos/{v.id}/",
                                    "name": v.title, "owner": {"__typename": "Page", "id": HARBOUR_UID,
                                                               "name": "Harbour Council"},
                                    "playable_duration_in_ms": int(v.duration * 1000) if v.duration else None,
                                    "preferred_thumbnail": {"image": {"uri": self.site.media_url(v.id, "cover")}}}},
                  "cursor": f"videos:{start + n + 1}"} for n, v in enumerate(shown)]
        items = {"edges": edges, "page_info": {"has_next_page": end < len(videos), "end_cursor": f"videos:{end}"}}
        data = {"user": {"__typename": "User", "id": UIDS.get(profile, HARBOUR_UID)},
                "collection": {"id": f"C:{profile}:videos", "pageItems": items}}
        suggestion = {"__typename": "Video", "id": "9990000000000001", "videoId": "9990000000000001"}
        return self._page(f"{profile} videos", [relay("ProfileCometAppCollectionVideosRendererQuery_1", data),
                                                relay("CometVideoSuggestionsRelayPreloader_3",
                                                       {"suggested": [{"media": suggestion}]})])

    def reels_tab_html(self, profile: str, cursor: str) -> str | None:
        """A page of ``profile``'s reels tab from ``cursor`` (None: no such cursor): a pageItems
        list of Video nodes as on the videos tab, :data:`REELS_PER_TAB_PAGE` a page; keepersdiary's
        tab has no such list, only links to its reels (``<a href="/reel/<id>/">``)."""
        reels = list(REELS.get(profile, ()))
        if profile == "keepersdiary":
            links = "".join(f'<a href="/reel/{reel}/" role="link"><img alt=""></a>' for reel in reels)
            return self._page(f"{profile} reels", []).replace('<div id="mount_0_0"></div>',
                                                                f'<div id="mount_0_0">{links}</div>')
        start = 0
        if cursor:
            if not cursor.startswith("reels:") or not cursor[6:].isdigit():
                return None
            start = int(cursor[6:])
        shown = reels[start:start + REELS_PER_TAB_PAGE]
        end = start + len(shown)
        edges = [{"node": {"__typename": "TimelineAppCollectionItem", "id": f"I:{reel}",
                           "node": {"__typename": "Video", "id": reel, "videoId": reel,
                                    "url": f"https://www.facebook.com/reel/{reel}/"}},
                  "cursor": f"reels:{start + n + 1}"} for n, reel in enumerate(shown)]
        items = {"edges": edges, "page_info": {"has_next_page": end < len(reels), "end_cursor": f"reels:{end}"}}
        data = {"user": {"__typename": "User", "id": UIDS.get(profile, HARBOUR_UID)},
                "collection": {"id": f"C:{profile}:reels", "pageItems": items}}
        return self._page(f"{profile} reels", [relay("ProfileCometAppCollectionReelsRendererQuery_1", data)])

    # -- serving -----------------------------------------------------------------------------
    def site_login_wall(self) -> str:
        return LOGIN_WALL

    def _page(self, title: str, blocks: list[dict[str, Any]]) -> str:
        scripts = "\n".join(script(block) for block in blocks)
        # Anonymous real pages carry a login form in their header beside the content.
        return (f'<!DOCTYPE html><html lang="en"><head><title>{html.escape(title)} | Facebook</title></head><body>'
                f'<form id="login_form" action="/login/" method="post"></form><div id="mount_0_0"></div>\n'
                f"{scripts}\n</body></html>")

    def _html(self, body: str, status: int = 200) -> Response:
        return Response(status, {"Content-Type": "text/html; charset=utf-8"}, body.encode())

    def _not_found(self) -> Response:
        return self._html("<!DOCTYPE html><html><head><title>Page Not Found</title></head>"
                          "<body>This page isn't available</body></html>", 404)

    def _count(self, req: Request) -> None:
        with self._lock:
            self.tab_requests[req.path] = self.tab_requests.get(req.path, 0) + 1

    def _login_redirect(self, req: Request) -> Response:
        target = self.sim.url("/login/?" + urlencode({"next": "https://www.facebook.com" + req.path}))
        return Response(302, {"Location": target, "Content-Length": "0"}, b"")

    def _serve_photo(self, req: Request) -> Response:
        photo_id = req.arg("fbid") or ""
        anonymous = "c_user=" not in req.headers.get("cookie", "")
        with self._lock:
            self.photo_page_requests += 1
            self.anonymous_photo_views += anonymous
            walled = (anonymous and self.max_anonymous_photo_views is not None
                      and self.anonymous_photo_views > self.max_anonymous_photo_views)
        if walled or photo_id == LOGIN_PHOTO_ID:
            return self._login_redirect(req)
        if photo_id == BLOCKED_PHOTO_ID:
            return self._html(_BLOCKED)
        if photo_id not in PHOTOS:
            return self._html(UNAVAILABLE)
        return self._html(self.photo_html(photo_id, req.arg("set") or ""))

    def _serve_set(self, req: Request) -> Response:
        self._count(req)
        set_id = req.arg("set") or ""
        if set_id not in SETS:
            return self._html(UNAVAILABLE)
        return self._html(self.set_html(set_id))

    def _tab(self, req: Request) -> tuple[str, Response | None]:
        self._count(req)
        profile = req.match.group("profile") if req.match else ""
        if profile == LOGIN_PROFILE:
            return profile, self._html(LOGIN_WALL)
        if profile == HIDDEN_PROFILE:
            return profile, self._html(_HIDDEN)
        if profile not in UIDS:
            return profile, self._not_found()
        return profile, None

    def _serve_videos_tab(self, req: Request) -> Response:
        profile, refused = self._tab(req)
        if refused is not None:
            return refused
        page = self.videos_tab_html(profile, req.arg("cursor") or "")
        return self._html(page) if page is not None else self._not_found()

    def _serve_reels_tab(self, req: Request) -> Response:
        profile, refused = self._tab(req)
        if refused is not None:
            return refused
        page = self.reels_tab_html(profile, req.arg("cursor") or "")
        return self._html(page) if page is not None else self._not_found()

    def _serve_photos_tab(self, req: Request) -> Response:
        profile, refused = self._tab(req)
        return refused or self._html(self.photos_tab_html(profile))

    def _serve_albums_tab(self, req: Request) -> Response:
        profile, refused = self._tab(req)
        return refused or self._html(self.albums_tab_html(profile))

    @staticmethod
    def _image_name(photo_id: str) -> str:
        return f"4{photo_id[-6:]}_{photo_id}_{int(photo_id[-4:]) * 7919}_n.jpg"
