"""What every request to the real Facebook shares, whichever resolver makes it: the hosts its
pages are on, and the headers a page request carries."""

from __future__ import annotations

from trawl.platforms.base import load_cookies
from trawl.platforms.facebook.config import FacebookSettings

# www., m., web., mbasic., touch. and locale hosts (de-de., pt-br.) all serve the same videos.
HOSTS = r"(?:(?:www|m|web|mbasic|touch|[a-z]{2}-[a-z]{2})\.)?facebook\.com"


def page_headers(config: FacebookSettings) -> dict[str, str]:
    """The headers of a page request: a browser, English pages (so the login and "not available"
    markers can be recognised), the settings' extra headers and the cookies file's cookies."""
    headers = {"User-Agent": config.user_agent, "Accept-Language": "en-US,en;q=0.9", **config.headers}
    # Read on every request so a refreshed cookies file is used without restarting workers.
    cookies = load_cookies(config.cookies_file)
    if cookies:
        headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
    return headers
