"""Weibo: posts (statuses) with their video or pictures, and a user's posts as a source.

The package holds everything trawl knows about Weibo: its settings (:mod:`.config`), its
resolver and listing (:mod:`.resolver`), what its answers state (:mod:`.errors`) and its
simulated site (:mod:`.site`); :data:`PLATFORM` is what the registry lists.
"""

from trawl.platforms.platform import Platform
from trawl.platforms.weibo import site
from trawl.platforms.weibo.config import WeiboSettings
from trawl.platforms.weibo.errors import ANSWERS
from trawl.platforms.weibo.resolver import resolvers, user_listing

PLATFORM = Platform(
    name="weibo",
    title="Weibo",
    settings=WeiboSettings,
    resolvers=resolvers,
    listings={"weibo_user": user_listing},
    errors=ANSWERS,
    cookie_domains=("weibo.com", "weibo.cn", "sina.com.cn", "sinaimg.cn"),
    demo=site.install_demo,
)

__all__ = ["PLATFORM", "WeiboSettings"]
