"""Weibo: posts (statuses) with their video or pictures, and a user's posts (all of them, their
videos, their pictures) and post searches (:mod:`.search`) as sources and as listing URLs.

The package holds everything trawl knows about Weibo: its settings (:mod:`.config`), its URL
forms (:mod:`.forms`), its resolver (:mod:`.resolver`) and listings (:mod:`.listings`), what its
answers state (:mod:`.errors`) and its simulated site (:mod:`.site`); :data:`PLATFORM` is what
the registry lists.
"""

from trawl.platforms.platform import ListingForm, Platform, imported_when_called
from trawl.platforms.weibo.config import WeiboSettings
from trawl.platforms.weibo.errors import ANSWERS
from trawl.platforms.weibo.extras import EXTRAS
from trawl.platforms.weibo.forms import listing_forms
from trawl.platforms.weibo.listings import album_listing, user_listing, video_listing
from trawl.platforms.weibo.resolver import resolvers
from trawl.platforms.weibo.search import SEARCH_LISTINGS, search_forms


def _listing_forms(config: WeiboSettings) -> list[ListingForm]:
    """The searches' URL forms (:mod:`.search`), then the user listings'."""
    return [*search_forms(config), *listing_forms(config)]


PLATFORM = Platform(
    name="weibo",
    title="Weibo",
    settings=WeiboSettings,
    resolvers=resolvers,
    # Every kind's id: the uid, n:<screen name> or custom:<personal domain>; weibo_search's: its text.
    listings={"weibo_user": user_listing, "weibo_videos": video_listing, "weibo_album": album_listing,
              **SEARCH_LISTINGS},
    listing_forms=_listing_forms,
    errors=ANSWERS,
    cookie_domains=("weibo.com", "weibo.cn", "sina.com.cn", "sinaimg.cn"),
    login_cookie="SUB",
    demo=imported_when_called("trawl.platforms.weibo.site:install_demo"),
    extras=EXTRAS,
)

__all__ = ["PLATFORM", "WeiboSettings"]
