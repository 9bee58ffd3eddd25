"""Bilibili: videos (BV and av ids, parts, b23.tv short links, festival, player and list pages),
live rooms (recorded: :mod:`.rooms`), bangumi and course episodes (:mod:`.pgc`), dynamics and opus
posts (:mod:`.opus`), audio (:mod:`.audio`) and listings: an uploader's videos, collections (合集), series
(系列), public favourites folders and video searches (:mod:`.search`).

The package holds everything trawl knows about Bilibili: its settings (:mod:`.config`), its
resolver (:mod:`.resolver`), its listings and their URL forms (:mod:`.listings`), what its
answers state (:mod:`.errors`) and its simulated site (:mod:`.site`); :data:`PLATFORM` is what
the registry lists.
"""

from trawl.platforms.bilibili.audio import audio_forms, audio_list_listing
from trawl.platforms.bilibili.config import BilibiliSettings
from trawl.platforms.bilibili.errors import ANSWERS
from trawl.platforms.bilibili.extras import EXTRAS
from trawl.platforms.bilibili.listings import LISTINGS, listing_forms
from trawl.platforms.bilibili.pgc import SEASON_LISTINGS, season_forms
from trawl.platforms.bilibili.resolver import resolvers
from trawl.platforms.bilibili.search import SEARCH_LISTINGS, search_forms
from trawl.platforms.platform import ListingForm, Platform, imported_when_called


def _listing_forms(config: BilibiliSettings) -> list[ListingForm]:
    """The listings' URL forms, the search's (:mod:`.search`), then the seasons' of episodes and
    courses (:mod:`.pgc`) and the audio lists' (:mod:`.audio`)."""
    more = [ListingForm(kind, pattern) for kind, pattern in (*season_forms(config), *audio_forms(config))]
    return [*listing_forms(config), *search_forms(config), *more]


PLATFORM = Platform(
    name="bilibili",
    title="Bilibili",
    settings=BilibiliSettings,
    resolvers=resolvers,
    listings={**LISTINGS, **SEARCH_LISTINGS, **SEASON_LISTINGS, "bilibili_audio_list": audio_list_listing},
    listing_forms=_listing_forms,
    errors=ANSWERS,
    cookie_domains=("bilibili.com", "b23.tv", "bilivideo.com", "hdslb.com"),
    login_cookie="SESSDATA",
    demo=imported_when_called("trawl.platforms.bilibili.site:install_demo"),
    extras=EXTRAS,
    live_comments=imported_when_called("trawl.platforms.bilibili.live_comments:live_comments"),
)

__all__ = ["PLATFORM", "BilibiliSettings"]
