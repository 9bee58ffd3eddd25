"""Facebook: videos, reels and the videos of posts, read from the JSON their pages embed; photos;
a profile's videos, photos and albums and a photo set as listings.

The package holds everything trawl knows about Facebook: its settings (:mod:`.config`), its
resolvers (:mod:`.resolver` for videos and posts, :mod:`.photo` for photos), its captions extra
(:mod:`.captions_extra`), its listings and their URL forms (:mod:`.listings`), what its pages state
instead of a video (:mod:`.errors`) and its simulated site (:mod:`.site`, :mod:`.listing_site`);
:data:`PLATFORM` is what the registry lists.
"""

from trawl.platforms.facebook.captions_extra import EXTRAS
from trawl.platforms.facebook.config import FacebookSettings
from trawl.platforms.facebook.listings import LISTINGS, listing_forms
from trawl.platforms.facebook.resolver import resolvers
from trawl.platforms.platform import Platform, imported_when_called

PLATFORM = Platform(
    name="facebook",
    title="Facebook",
    settings=FacebookSettings,
    resolvers=resolvers,
    listings=LISTINGS,
    listing_forms=listing_forms,
    # Its refusals are HTML pages the resolver reads (.errors); nothing for classify_response.
    errors=None,
    cookie_domains=("facebook.com", "fb.watch", "fbcdn.net"),
    login_cookie="c_user",
    extras=EXTRAS,  # its captions, where a video has them (.captions)
    demo=imported_when_called("trawl.platforms.facebook.site:install_demo"),
)

__all__ = ["PLATFORM", "FacebookSettings"]
