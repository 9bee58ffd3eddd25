"""Bilibili: videos (BV and av ids, parts, b23.tv short links, festival and player pages) and an
uploader's videos as a source.

The package holds everything trawl knows about Bilibili: its settings (:mod:`.config`), its
resolver and listing (:mod:`.resolver`), what its answers state (:mod:`.errors`) and its
simulated site (:mod:`.site`); :data:`PLATFORM` is what the registry lists.
"""

from trawl.platforms.bilibili import site
from trawl.platforms.bilibili.config import BilibiliSettings
from trawl.platforms.bilibili.errors import ANSWERS
from trawl.platforms.bilibili.resolver import resolvers, uploader_listing
from trawl.platforms.platform import Platform

PLATFORM = Platform(
    name="bilibili",
    title="Bilibili",
    settings=BilibiliSettings,
    resolvers=resolvers,
    listings={"bilibili_uploader": uploader_listing},
    errors=ANSWERS,
    cookie_domains=("bilibili.com", "b23.tv", "bilivideo.com", "hdslb.com"),
    demo=site.install_demo,
)

__all__ = ["PLATFORM", "BilibiliSettings"]
