"""Weibo's URL forms, recognised offline: single posts, user listings, and pages that are neither.

Posts (:func:`status_patterns`, the resolver's ``url_patterns``; every one routes to the key
``weibo:<numeric mid>`` except the two video-page forms, whose object id is not the mid):

- ``weibo.com/<uid>/<mblogid or mid>`` (``uid`` may be ``0``), ``m.weibo.cn/<uid>/<mid>``;
- ``m.weibo.cn/status/<id>`` and ``/detail/<id>``, ``weibo.cn/detail/<mid>``, ``weibo.com/detail/<mid>``
  (gallery-dl's status pattern takes ``detail``, ``status`` and ``<uid>`` on ``weibo.com``,
  ``weibo.cn`` and their ``www.``/``m.`` hosts alike);
- ``weibo.com/u/<uid>?tabtype=newVideo&layerid=<mid>``: a post opened as a layer over the video
  tab (yt-dlp's ``WeiboUserIE`` test), the post of ``layerid``;
- ``weibo.com/tv/show/1034:<id>`` and ``video.weibo.com/show?fid=1034:<id>`` (``:`` also as
  ``%3A``; ``<id>`` digits or 32 hex digits), the video pages yt-dlp's ``WeiboVideoIE`` takes.

User listings (:func:`listing_forms`), from gallery-dl's ``USER_PATTERN`` and its tabs, yt-dlp's
``WeiboUserIE``, and the container ids m.weibo.cn pages carry. The listing id is the user's uid
(digits), or ``n:<screen name>``, or ``custom:<personal domain>``: the listing asks
``ajax/profile/info`` for the uid of those two, as gallery-dl does. Which listing a URL names:

- ``weibo_user`` (every post): ``weibo.com/u/<uid>``, ``weibo.com/<uid>``, ``weibo.com/p/<page id>``
  (``100505``/``100306``/``100606``/``100206`` + uid, or the uid; ``/home`` too),
  ``weibo.com/n/<screen name>``, ``weibo.com/<personal domain>`` (real hosts only),
  ``m.weibo.cn/u/<uid>``, ``m.weibo.cn/profile/<uid>``, ``m.weibo.cn/p/<container id>``
  (``107603``/``230413``/``230283``/``100505`` + uid, with ``_-_WEIBO_SECOND_PROFILE_WEIBO`` or
  ``..._ORI``), ``m.weibo.cn/p/index?containerid=...``; with no ``tabtype`` or
  ``tabtype=feed``/``home`` (``home``, the "hot" posts, is a part of all posts; gallery-dl notes
  that the site itself lists nothing there).
- ``weibo_videos`` (the video tab, ``ajax/profile/getWaterFallContent``): the same forms with
  ``tabtype=video`` or ``tabtype=newVideo`` (yt-dlp reads this API for every tab), and the
  container ``230413<uid>_-_WEIBO_SECOND_PROFILE_WEIBO_VIDEO``.
- ``weibo_album`` (the picture wall, ``ajax/profile/getImageWall``): ``tabtype=album`` and its
  sub-album forms (``album-<title>``, ``album_<n>``, ``album:all``...: the whole wall is listed,
  sub-albums are not told apart), and ``230413<uid>_-_WEIBO_SECOND_PROFILE_WEIBO_PIC``.

Neither a post nor a listing of media, claimed by the resolver only to refuse at once, saying
why (:func:`refusals`): ``weibo.com/u/page/<anything>`` (followers, follows, favourites, likes),
the article tab (``tabtype=article``, ``..._WEIBO_SECOND_PROFILE_WEIBO_ARTICAL``: articles are
text) and any other ``tabtype``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import unquote

from trawl.platforms.base import base_pattern
from trawl.platforms.platform import ListingForm
from trawl.platforms.weibo.config import WeiboSettings

MID = r"\d{16}"
MBLOGID = r"[0-9A-Za-z]{8,10}"
# A video object id: 1034:<16+ digits> or 1034:<32 hex digits> (newer videos).
FID = r"\d+(?::|%3[Aa])(?:[0-9a-f]{32}|\d+)"
TAIL = r"/?(?:[?#].*)?\Z"
# weibo.com, weibo.cn and their www./m. hosts: gallery-dl's BASE_PATTERN.
_ANY_HOST = r"(?:(?:www|m)\.)?weibo\.(?:com|cn)"
_UID = r"[1-9]\d{3,10}"
# Page and container ids that are a 6-digit prefix and the uid: weibo.com/p/100505<uid> (a
# person's page), 100306 (media), 100606 (organisations), 100206; m.weibo.cn's 107603<uid> (the
# post list), 230413<uid>_-_WEIBO_SECOND_PROFILE_WEIBO[_ORI|_VIDEO|_PIC|_ARTICAL] (the profile's
# tabs), 230283<uid> (the profile's head).
_PAGE_PREFIX = r"(?:100505|100306|100606|100206|107603|230413|230283)"
_SECOND = "_-_WEIBO_SECOND_PROFILE_WEIBO"
# First path segments of weibo.com that are not a personal domain.
_RESERVED = ("u", "n", "p", "profile", "tv", "detail", "status", "ajax", "aj", "api", "login", "logout",
             "signup", "signin", "newlogin", "hot", "search", "set", "at", "messages", "message", "fav", "like",
             "mygroups", "home", "topic", "a", "ttarticle", "article", "video", "user", "users", "sorry",
             "unfreeze", "security", "account", "settings", "setting", "setup", "help", "about", "common",
             "friends", "follow", "fans", "comment", "comments", "mblog", "compose", "explore", "discover",
             "gov", "lottery", "feed", "feeds", "show", "index", "lite", "static", "js", "css", "img",
             "image", "images", "beta", "page", "pages", "list", "group", "groups", "hottopic", "share",
             "pay", "vip", "mp", "live", "music", "game", "games", "interest", "notice", "ad", "ads")
_CUSTOM = rf"(?!(?i:{'|'.join(_RESERVED)})(?:[/?#]|\Z))[A-Za-z_][\w-]{{1,29}}"
_TABS_USER = r"(?:feed|home)"
_TABS_VIDEO = r"(?:video|newVideo)"
_TABS_ALBUM = r"album(?:[:_-][^&#]*)?"
_END = r"(?:/home)?/?(?:\?[^#]*)?(?:#.*)?\Z"
_NO_LAYER = r"(?![^#]*[?&]layerid=)"


def _tab(tabs: str) -> str:
    """A lookahead from the end of the path: the query's ``tabtype`` is one of ``tabs``."""
    return rf"(?=[^?#]*\?(?:[^#]*&)?tabtype={tabs}(?:[&#]|\Z))"


_NO_TAB = r"(?![^#]*[?&]tabtype=)"
_KNOWN_TAB = rf"(?:{_TABS_USER}|{_TABS_VIDEO}|{_TABS_ALBUM})"


def _hosts(config: WeiboSettings) -> tuple[str, str, str]:
    """(any Weibo host, desktop hosts, video page hosts) with the configured base URLs, case-blind."""
    any_host = "(?i:" + base_pattern(_ANY_HOST, config.page_base, config.mobile_base) + ")"
    desktop = "(?i:" + base_pattern(r"(?:www\.)?weibo\.com", config.page_base) + ")"
    video = "(?i:" + base_pattern(r"(?:h5\.)?video\.weibo\.com", config.video_base) + ")"
    return any_host, desktop, video


def status_patterns(config: WeiboSettings) -> tuple[re.Pattern[str], ...]:
    """The post forms, each with an ``id`` group (a mid, an mblogid or a video object id)."""
    any_host, desktop, video = _hosts(config)
    return (
        re.compile(rf"{any_host}/(?:detail|status|\d+)/(?P<id>{MID}|{MBLOGID}){TAIL}"),
        re.compile(rf"{desktop}/u/\d+/?\?(?:[^#]*&)?layerid=(?P<id>{MID}|{MBLOGID})(?:[&#].*)?\Z"),
        re.compile(rf"{desktop}/tv/show/(?P<id>{FID}){TAIL}"),
        re.compile(rf"{video}/show/?\?(?:[^#]*&)?fid=(?P<id>{FID})(?:[&#].*)?\Z"),
    )


def refusals(config: WeiboSettings) -> tuple[tuple[re.Pattern[str], str], ...]:
    """Profile pages that list no media: (pattern with an ``id`` group, why they are refused)."""
    any_host, desktop, _ = _hosts(config)
    paths = "|".join(path.replace("(?P<id>", "(?:") for path, _, real_only in _USER_PATHS if not real_only)
    profile = (rf"(?:{any_host}/(?P<id>{paths})|(?i:https?://(?:www\.)?weibo\.com)/(?P<custom>{_CUSTOM}))"
               r"(?:/home)?/?\?")
    return (
        (re.compile(rf"{desktop}/u/page/(?P<id>[^/?#]+)"),
         "lists people or favourites, not media: give the user's profile (weibo.com/u/<uid>) to crawl their posts"),
        (re.compile(rf"{any_host}/p/(?:index\?(?:[^#]*&)?containerid=)?(?P<id>{_PAGE_PREFIX}{_UID}{_SECOND}_ARTICAL)"),
         "lists a user's articles, which are text: give the user's profile (weibo.com/u/<uid>) to crawl their posts"),
        (re.compile(rf"{profile}(?:[^#]*&)?tabtype=article(?:[&#]|\Z)"),
         "lists a user's articles, which are text: give the user's profile (weibo.com/u/<uid>) to crawl their posts"),
        (re.compile(rf"{profile}(?:[^#]*&)?tabtype=(?!{_KNOWN_TAB}(?:[&#]|\Z))[^&#]*"),
         "is a profile tab trawl does not list: it lists all posts (no tabtype), tabtype=video or newVideo "
         "(videos) and tabtype=album (pictures)"),
    )


def _uid(match: re.Match[str]) -> str:
    return match["id"]


def _screen_name(match: re.Match[str]) -> str:
    return "n:" + unquote(match["id"])


def _custom(match: re.Match[str]) -> str:
    return "custom:" + match["id"]


# A profile's paths: (regex with an ``id`` group, the listing id of a match, real hosts only).
_USER_PATHS: tuple[tuple[str, Callable[[re.Match[str]], str], bool], ...] = (
    (rf"(?:u|profile)/(?P<id>{_UID})", _uid, False),
    (rf"p/{_PAGE_PREFIX}?(?P<id>\d{{10}})", _uid, False),
    (rf"(?P<id>{_UID})", _uid, False),
    (r"n/(?P<id>[^/?#]+)", _screen_name, False),
    (rf"(?P<id>{_CUSTOM})", _custom, True),  # weibo.com/<personal domain>, never on a configured base
)


def listing_forms(config: WeiboSettings) -> list[ListingForm]:
    """The user listing forms (see the module docstring), real hosts and configured base URLs."""
    any_host, _, _ = _hosts(config)
    real_desktop = r"(?i:https?://(?:www\.)?weibo\.com)"
    forms: list[ListingForm] = []
    by_tab = (("weibo_user", rf"(?:{_NO_TAB}|{_tab(_TABS_USER)})"),
              ("weibo_videos", _tab(_TABS_VIDEO)),
              ("weibo_album", _tab(_TABS_ALBUM)))
    for kind, tab in by_tab:
        for path, listing_id, real_only in _USER_PATHS:
            host = real_desktop if real_only else any_host
            pattern = re.compile(rf"{host}/{path}{_NO_LAYER}{tab}{_END}")
            forms.append(ListingForm(kind, pattern, listing_id))
    for kind, suffix in (("weibo_user", rf"(?:{_SECOND}(?:_ORI)?)?"), ("weibo_videos", f"{_SECOND}_VIDEO"),
                         ("weibo_album", f"{_SECOND}_PIC")):
        # m.weibo.cn containers: the container names the tab, whatever the query says.
        container = rf"{_PAGE_PREFIX}(?P<id>\d{{10}}){suffix}"
        forms.append(ListingForm(kind, re.compile(rf"{any_host}/p/{container}{_NO_LAYER}{_END}"), _uid))
        forms.append(ListingForm(kind, re.compile(
            rf"{any_host}/p/index\?(?:[^#]*&)?containerid={container}(?:[&#].*)?\Z"), _uid))
    return forms
