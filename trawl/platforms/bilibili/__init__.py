"""Bilibili: videos (BV and av ids, parts, b23.tv short links, festival, player and list pages) and
listings: an uploader's videos, collections (合集), series (系列) and public favourites folders.

The package holds everything trawl knows about Bilibili: its settings (:mod:`.config`), its
resolver (:mod:`.resolver`), its listings and their URL forms (:mod:`.listings`), what its
answers state (:mod:`.errors`) and its simulated site (:mod:`.site`); :data:`PLATFORM` is what
the registry lists.
"""

from trawl.platforms.bilibili.config import BilibiliSettings
from trawl.platforms.bilibili.errors import ANSWERS
from trawl.platforms.bilibili.listings import LISTINGS, listing_forms
from trawl.platforms.bilibili.resolver import resolvers
from trawl.platforms.platform import Platform, imported_when_called

PLATFORM = Platform(
    name="bilibili",
    title="Bilibili",
    settings=BilibiliSettings,
    resolvers=resolvers,
    listings=LISTINGS,
    listing_forms=listing_forms,
    errors=ANSWERS,
    cookie_domains=("bilibili.com", "b23.tv", "bilivideo.com", "hdslb.com"),
    demo=imported_when_called("trawl.platforms.bilibili.site:install_demo"),
)

__all__ = ["PLATFORM", "BilibiliSettings"]
