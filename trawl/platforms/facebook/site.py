"""A simulated Facebook: video pages with embedded JSON, short links and signed CDN media.

The classic video has captions (:data:`CAPTIONS`), listed in its node's
``video_available_captions_locales`` and served as SRT, as yt-dlp's extractor reads them.

No capture of a real Facebook page is in the references, so the pages are built from the field
names PLATFORMS.md documents: several ``<script type="application/json" data-sjs>`` blocks, the
video node nested a few levels deep inside ``require`` arrays the way real pages nest their
Relay payloads, a neighbouring video's node (which a resolver must not take), and OpenGraph tags.

Photos, photo sets and the profile tabs listings read are in :mod:`.listing_site`.

A video's files on the CDN are real clips (:func:`clip`) that a browser plays, padded to each
quality's size with a ``free`` box of bytes of their own.

Posts (:data:`POSTS`): a post's page carries its videos where public downloaders read them, the
story's ``attachments[].styles.attachment.media`` (one video) or
``...attachment.all_subattachments.nodes[].media`` (several), an event's
``event.cover_media_renderer.cover_video``, with a suggested neighbour outside them; the nesting
is modelled on those downloaders' code, not captured. Every video node has a cover
(``preferred_thumbnail.image.uri``); the OpenGraph-only video's page names it in ``og:image``.

fb.watch is another host, and a simulator is one host. Short links are therefore served on the
same simulator under :data:`SHORT_PREFIX`; :meth:`FacebookSite.settings` points ``short_base``
there, and the resolver matches configured bases exactly, so ``<short_base>/<code>/`` is a
short link to it just as ``https://fb.watch/<code>/`` is.
"""

from __future__ import annotations

import base64
import html
import json
import re
import threading
import time
from typing import Any

from trawl.platforms.facebook.config import FacebookSettings
from trawl.platforms.facebook.listing_site import FacebookMediaSite
from trawl.platforms.facebook.page_parts import LOGIN_WALL, UNAVAILABLE, VIDEOS, FbVideo, relay, script
from trawl.platforms.platform import PlatformDemo
from trawl.simulator.demo import DemoCase
from trawl.simulator.media import MediaFile
from trawl.simulator.server import FileBehaviour, Request, Response, Simulator
from trawl.simulator.signed import SignedMedia

SHORT_PREFIX = "/_fb.watch"
CDN_PREFIX = "/v/t42.1790-2"
CAPTIONS_PREFIX = "/v/t39.2093-6"  # captions files (real ones: video.xx.fbcdn.net/v/t39.2093-6/..._n.srt)
MEDIA_TTL = 24 * 3600.0  # real video URLs live ~24-48 h (facebook_cdn_urls_real.txt)

LOGIN_WALL_ID = "4012345678901234"  # a members-only video: always the login wall
REMOVED_ID = "5099887766554433"  # answers 404
UNAVAILABLE_ID = "5100000000000001"  # answers 200 "This content isn't available right now"
NO_VIDEO_ID = "6000000000000001"  # a page whose JSON only has a neighbour's video: parse error
BLOCKED_ID = "7000000000000001"  # answers 200 "You're Temporarily Blocked" (rate limiting)
CLASSIC_ID, REEL_ID = "1029384756473829", "2847561930284756"
# The classic video's captions (.captions): the uploader's English track and an automatic French
# one, SRT as Facebook serves them; the cue text kept as written (an <i> is text to trawl).
CAPTIONS = {
    "en_US": ("English (US)", None, "1\n00:00:00,000 --> 00:00:04,500\nHarbour lights at <i>dusk</i>\n\n"
              "2\n00:00:05,000 --> 00:00:09,250\nThe ferry leaves & the gulls follow\nsecond line\n"),
    "fr_FR": ("French (France)", "Auto-generated",
              "1\n00:00:00,000 --> 00:00:04,500\nLes lumières du port\n"),
}
# Post pages (path and query as served) -> the ids of the videos attached to them, in order.
POSTS: dict[str, tuple[str, ...]] = {
    "/harbourcouncil/posts/pfbid02Harbour7LightsAtDusk9x": (CLASSIC_ID,),  # one video
    "/groups/tidewatchers/posts/4048563708499330": (REEL_ID,),
    "/groups/tidewatchers/permalink/4048563708499331": (CLASSIC_ID,),
    "/permalink.php?story_fbid=pfbid0TwoClipsOfTheHarbour1&id=100064102938475": (CLASSIC_ID, REEL_ID),  # two
    "/events/1509582499515440": (REEL_ID,),  # the event's cover video
    "/harbourcouncil/posts/3141592653589793": (),  # a photo post: no video
}


# The wording of Facebook's block page as public reports quote it; the markup is an assumption.
_BLOCKED = """<!DOCTYPE html><html lang="en"><head><title>Facebook</title></head>
<body><h2>You’re Temporarily Blocked</h2>
<p>It looks like you were misusing this feature by going too fast. You’ve been temporarily blocked from
using it.</p></body></html>"""
_NOT_FOUND = b"<!DOCTYPE html><html><head><title>Page not found</title></head><body>Page not found</body></html>"


def clip(video: FbVideo, quality: str) -> str:
    """The real clip (trawl/simulator/samples/make-clips.sh) a video's file starts with: one as
    long as its page says (the classic video 42.5 s, the reel 15.2 s), each quality its own
    size of picture; the OpenGraph-only video, whose page gives no length, has the classic one's."""
    return f"facebook-{'reel' if video.layout == 'reel' else 'classic'}-{quality}.mp4"


class FacebookSite:
    """Facebook's pages, short links and CDN on a :class:`Simulator`.

    Attributes:
        videos: the videos that play, by id.
        short_links: fb.watch code -> path on the site (served under :data:`SHORT_PREFIX`).
        share_links: ``(kind, code)`` of ``/share/<kind>/<code>/`` -> path on the site.
        max_anonymous_requests: after this many page requests without a ``c_user`` cookie,
            pages answer with the login wall (the real site's soft ban); None: never.
        page_requests: video page requests served, anonymous or not.
        cdn: the signed media host (``oe`` hex expiry, ``oh`` signature).
        media: photo pages, photo sets and the profile tabs
            (:class:`trawl.platforms.facebook.listing_site.FacebookMediaSite`).
    """

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.videos = {video.id: video for video in VIDEOS}
        classic, reel = VIDEOS[0], VIDEOS[1]
        self.short_links = {"aBc12XyZ9": f"/watch/?v={classic.id}", "Pr0f1le7": f"/{classic.page}"}
        self.share_links = {
            ("v", "1AbCdEfGhJ"): f"/{classic.page}/videos/harbour-lights/{classic.id}/",
            ("r", "9ZyXwVuTsR"): f"/reel/{reel.id}/",
        }
        self.max_anonymous_requests: int | None = None
        self.page_requests = 0
        self.anonymous_requests = 0
        self.cdn = SignedMedia(sim, CDN_PREFIX, ttl=MEDIA_TTL, expiry_param="oe", hex_expiry=True, sig_param="oh")
        self._lock = threading.Lock()
        self._generation = 0
        self._behaviours: list[FileBehaviour] = []
        self._media = {(v.id, q): MediaFile("mp4", f"facebook-{v.id}-{q}", size, sample=clip(v, q))
                       for v in VIDEOS for q, size in (("hd", v.hd_size), ("sd", v.sd_size)) if size}
        self._publish_media()
        sim.add_route(r"/watch/?", self._serve_page)
        sim.add_route(r"/video\.php", self._serve_page)
        sim.add_route(r"/reel/(?P<id>\d+)/?", self._serve_page)
        sim.add_route(r"/[^/]+/videos/(?:[^/]+/)?(?P<id>\d+)/?", self._serve_page)
        sim.add_route(r"/share/(?P<kind>[vr])/(?P<code>[\w-]+)/?", self._serve_share)
        sim.add_route(r"/[^/]+/posts/[^/]+/?|/groups/.+|/permalink\.php|/story\.php|/events/.+", self._serve_post)
        sim.add_route(rf"{re.escape(SHORT_PREFIX)}/(?P<code>[\w-]+)/?", self._serve_short)
        sim.add_route(rf"{re.escape(CAPTIONS_PREFIX)}/(?P<name>[\w.-]+)", self._serve_captions)
        for video in VIDEOS:  # a page's own profile: no video on it
            sim.add_page(f"/{video.page}", f"<html><head><title>{video.uploader or video.page}</title></head></html>")
        # Photo pages, photo sets and profile tabs (videos, photos, albums).
        self.media = FacebookMediaSite(sim, self)

    # -- what tests use ----------------------------------------------------------------------
    def settings(self, **overrides: Any) -> FacebookSettings:
        """Settings whose page and short-link bases point at this simulator, asked at the pace a
        local simulator takes (20 requests per second; the real site's default is 0.5)."""
        return FacebookSettings(**{"page_base": self.sim.base_url, "short_base": self.sim.url(SHORT_PREFIX),
                                   "requests_per_second": 20.0, **overrides})

    def short_url(self, code: str) -> str:
        """The simulator's stand-in for ``https://fb.watch/<code>/``."""
        return self.sim.url(f"{SHORT_PREFIX}/{code}/")

    def media_url(self, video_id: str, quality: str, ttl: float | None = None) -> str:
        """A freshly signed CDN URL for ``quality`` (``hd`` or ``sd``), as a page would carry it."""
        # The parameters real video URLs carry besides the signature; nothing checks them.
        efg = base64.b64encode(json.dumps({"vencode_tag": f"sve_{quality}"}, separators=(",", ":")).encode())
        noise = {"_nc_cat": "104", "ccb": "1-5", "_nc_sid": "985c63", "efg": efg.decode(),
                 "_nc_ohc": "aIF7h__NmCIAX-gTN_9", "_nc_ht": "video-bos3-1.xx"}
        return self.cdn.url(self._media_name(video_id, quality), ttl=ttl, **noise)

    def expire_media_urls(self) -> None:
        """Make every media URL issued so far answer 403 ``URL signature expired``.

        Pages served from now on carry URLs under new names that work, as after a real expiry
        a fresh page load does.
        """
        with self._lock:
            for behaviour in self._behaviours:
                behaviour.expires_at = time.time() - 1
            self._behaviours = []
            self._generation += 1
            self._publish_media()

    def page_html(self, video_id: str) -> str:
        """The video page for ``video_id`` with freshly signed media URLs."""
        video = self.videos.get(video_id)
        neighbour = self._neighbour_node(video_id)
        blocks = [{"define": [["SiteData", [], {"server_revision": 1012345678, "locale": "en_US"}, 317]]}]
        og = {"og:site_name": "Facebook", "og:type": "video.other"}
        header_login = ""
        if video is None:  # NO_VIDEO_ID: only a suggestion for another video is on the page
            og["og:title"] = "Facebook"
        else:
            og |= {"og:title": video.title, "og:url": f"https://www.facebook.com/watch/?v={video.id}"}
            if video.layout == "og":
                url = self.media_url(video.id, "sd")
                og |= {"og:video": url, "og:video:secure_url": url, "og:video:type": "video/mp4",
                       "og:image": self.media_url(video.id, "cover")}
            else:
                blocks.append(relay("CometVideoRootQueryRelayPreloader_1",
                                     {"video": {"story": {"attachments": [{"media": self._video_node(video)}]}}}))
            if video.layout == "classic":
                # Anonymous real pages have a login form in their header while the video plays.
                header_login = '<form id="login_form" action="/login/" method="post"></form>'
                title_node = {"__typename": "Video", "id": video.id, "title": {"text": video.title}}
                blocks.append(relay("CometVideoRootQueryRelayPreloader_2",
                                     {"creation_story": {"attachments": [{"media": title_node}]}}))
        blocks.append(relay("CometVideoSuggestionsRelayPreloader_3", {"suggested": [{"media": neighbour}]}))
        meta = "\n".join(f'<meta property="{k}" content="{html.escape(v)}" />' for k, v in og.items())
        scripts = "\n".join(script(block) for block in blocks)
        return (f'<!DOCTYPE html><html lang="en"><head><title>{html.escape(og["og:title"])} | Facebook</title>\n'
                f"{meta}\n</head><body>{header_login}<div id=\"mount_0_0\"></div>\n{scripts}\n</body></html>")

    # -- internals ---------------------------------------------------------------------------
    def _media_name(self, video_id: str, quality: str) -> str:
        return f"{video_id}_{quality}_g{self._generation}_n.{'jpg' if quality == 'cover' else 'mp4'}"

    def _publish_media(self) -> None:
        for (video_id, quality), media in self._media.items():
            self._behaviours.append(self.cdn.add(self._media_name(video_id, quality), media))
        for video in VIDEOS:
            media = MediaFile("jpeg", f"facebook-{video.id}-cover", 30_000 + int(video.id[-3:]))
            self._behaviours.append(self.cdn.add(self._media_name(video.id, "cover"), media))

    def post_html(self, path: str) -> str | None:
        """The page of a post in :data:`POSTS` (None for another path), its videos attached."""
        ids = POSTS.get(path)
        if ids is None:
            return None
        nodes = [{**self._video_node(self.videos[i]), "name": self.videos[i].title} for i in ids]
        if path.startswith("/events/"):
            data: dict[str, Any] = {"event": {"name": "Harbour festival", "cover_media_renderer": {
                "cover_video": nodes[0]}}}
        else:
            if len(nodes) == 1:
                attachment: dict[str, Any] = {"media": nodes[0]}
            else:
                attachment = {"all_subattachments": {"count": len(nodes), "nodes": [{"media": n} for n in nodes]}}
            data = {"node": {"__typename": "Story", "comet_sections": {"content": {"story": {
                "attachments": [{"styles": {"attachment": attachment}}] if nodes else []}}}}}
        blocks = [{"define": [["SiteData", [], {"server_revision": 1012345678, "locale": "en_US"}, 317]]},
                  relay("CometSinglePostContentQueryRelayPreloader_1", data),
                  relay("CometVideoSuggestionsRelayPreloader_3", {"suggested": [{"media": self._neighbour_node(
                      ids[0] if ids else "")}]})]
        scripts = "\n".join(script(block) for block in blocks)
        return (f'<!DOCTYPE html><html lang="en"><head><title>Harbour Council | Facebook</title>'
                f'<meta property="og:title" content="Harbour Council" /></head><body><div id="mount_0_0"></div>\n'
                f"{scripts}\n</body></html>")

    def _video_node(self, video: FbVideo) -> dict[str, Any]:
        hd = self.media_url(video.id, "hd") if video.hd_size else None
        sd = self.media_url(video.id, "sd") if video.sd_size else None
        node: dict[str, Any] = {
            "__typename": "Video", "id": video.id, "videoId": video.id, "is_live_streaming": False,
            "owner": {"__typename": "Page", "id": "100064" + video.id[:8], "name": video.uploader},
            "playable_duration_in_ms": int(video.duration * 1000) if video.duration else None,
            "preferred_thumbnail": {"image": {"uri": self.media_url(video.id, "cover")}},
        }
        if video.id == CLASSIC_ID:
            base = self.sim.url(CAPTIONS_PREFIX)
            node["captions_url"] = f"{base}/{video.id}_en_US_n.srt?_nc_cat=1&oe=61370849"
            node["video_available_captions_locales"] = [
                {"locale": locale, "localized_language": name, "localized_creation_method": method,
                 "captions_url": f"{base}/{video.id}_{locale}_n.srt?_nc_cat=1&oe=61370849"}
                for locale, (name, method, _) in CAPTIONS.items()]
        if video.layout == "classic":
            node |= {"playable_url": sd, "playable_url_quality_hd": hd, "browser_native_sd_url": sd,
                     "browser_native_hd_url": hd, "dash_manifest": '<?xml version="1.0"?><MPD></MPD>'}
        else:
            node["progressive_urls"] = [
                {"progressive_url": url, "failure_reason": None, "metadata": {"quality": quality}}
                for url, quality in ((hd, "HD"), (sd, "SD")) if url
            ]
            node["manifest_xml"] = '<?xml version="1.0"?><MPD></MPD>'
        return node

    def _neighbour_node(self, video_id: str) -> dict[str, Any]:
        # A suggested video with working URLs: taking it instead of the wanted one is the bug
        # this node is here to catch.
        other = next(v for v in VIDEOS if v.id != video_id)
        url = self.media_url(other.id, "sd")
        return {"__typename": "Video", "id": other.id, "videoId": other.id, "name": other.title,
                "playable_url": url, "browser_native_sd_url": url}

    def _html(self, body: str | bytes, status: int = 200) -> Response:
        data = body.encode() if isinstance(body, str) else body
        return Response(status, {"Content-Type": "text/html; charset=utf-8"}, data)

    def _serve_page(self, req: Request) -> Response:
        groups = req.match.groupdict() if req.match else {}
        video_id = groups.get("id") or req.arg("v") or ""
        anonymous = "c_user=" not in req.headers.get("cookie", "")
        with self._lock:
            self.page_requests += 1
            self.anonymous_requests += anonymous
            limited = (anonymous and self.max_anonymous_requests is not None
                       and self.anonymous_requests > self.max_anonymous_requests)
        if limited or video_id == LOGIN_WALL_ID:
            return self._html(LOGIN_WALL)
        if video_id == UNAVAILABLE_ID:
            return self._html(UNAVAILABLE)
        if video_id == BLOCKED_ID:
            return self._html(_BLOCKED)
        if video_id in self.videos or video_id == NO_VIDEO_ID:
            with self._lock:
                return self._html(self.page_html(video_id))
        return self._html(_NOT_FOUND, 404)  # REMOVED_ID and every unknown id

    def _serve_post(self, req: Request) -> Response:
        query = "&".join(f"{k}={v}" for k, values in req.query.items() for v in values)
        path = req.path.rstrip("/") + (f"?{query}" if query else "")
        with self._lock:
            self.page_requests += 1
            page = self.post_html(path)
        return self._html(page) if page is not None else self._html(_NOT_FOUND, 404)

    def _redirect(self, target: str | None) -> Response:
        if target is None:
            return self._html(_NOT_FOUND, 404)
        return Response(302, {"Location": self.sim.url(target), "Content-Length": "0"}, b"")

    def _serve_share(self, req: Request) -> Response:
        groups = req.match.groupdict() if req.match else {}
        return self._redirect(self.share_links.get((groups.get("kind", ""), groups.get("code", ""))))

    def _serve_captions(self, req: Request) -> Response:
        name = (req.match.groupdict() if req.match else {}).get("name", "")
        found = re.fullmatch(rf"{CLASSIC_ID}_(?P<locale>\w+?)_n\.srt", name)
        body = CAPTIONS.get(found["locale"]) if found else None
        if body is None:
            return Response(404, {"Content-Type": "text/plain"}, b"Not Found")
        return Response(200, {"Content-Type": "application/x-subrip"}, body[2].encode())

    def _serve_short(self, req: Request) -> Response:
        groups = req.match.groupdict() if req.match else {}
        return self._redirect(self.short_links.get(groups.get("code", "")))


def install_facebook_site(sim: Simulator) -> FacebookSite:
    """Register Facebook's routes on ``sim``; tests resolve against ``site.settings()``."""
    return FacebookSite(sim)


def install_demo(sim: Simulator) -> PlatformDemo:
    """The site with the demo's cases: a video under two URL forms, a reel, a login wall."""
    site = install_facebook_site(sim)
    classic, reel = VIDEOS[0], VIDEOS[1]
    return PlatformDemo(settings=site.settings(requests_per_second=20), failures="a Facebook login wall", cases=[
        DemoCase(sim.url(f"/watch/?v={classic.id}"), "committed", "Facebook video, HD + SD", "fb"),
        DemoCase(site.short_url("aBc12XyZ9"), "committed", "same video by fb.watch link", "fb"),
        DemoCase(sim.url(f"/reel/{reel.id}"), "committed", "Facebook reel"),
        DemoCase(sim.url(f"/watch/?v={LOGIN_WALL_ID}"), "login_required", "Facebook login wall"),
    ])
