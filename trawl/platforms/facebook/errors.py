"""What Facebook's pages state when they carry no video or photo: a block, a login wall, a removed item.

Facebook answers these with HTTP 200 and an HTML page, so only the resolver reads them
(:func:`classify_page`, :func:`classify_listing_page`); nothing in its answers' JSON or headers is
read by :func:`trawl.errors.classify_response`. The markers come from public issue threads (see the
simulated site's docstring) and from gallery-dl's Facebook extractor (``CometErrorRoot``, the
``/login`` redirect of photo pages, a profile's "This content isn't available right now"), not
from captures.
"""

from __future__ import annotations

import html

from trawl.errors import LoginRequired, NotFound, RateLimited, TrawlError, cookies_advice

# Pages that state why there is no video: (markers, class, what to tell the user). Explicit
# statements come before the bare login form, which anonymous pages carry in their header even
# when the video plays or is gone.
PAGES: tuple[tuple[tuple[str, ...], type[TrawlError], str], ...] = (
    (("temporarily blocked", "going too fast", '{"__dr":"cometerrorroot.react"}'), RateLimited, ""),
    (("you must log in to continue",), LoginRequired, "; " + cookies_advice("facebook")),
    (("content isn't available", "content isn\u2019t available", "video isn't available",
      "link you followed may be broken", "page isn't available", "page isn\u2019t available"), NotFound, ""),
    (('id="login_form"',), LoginRequired, "; " + cookies_advice("facebook")),
)


# Markers that are markup, not words: what the message says instead of quoting them.
_MARKUP = {'id="login_form"': "a login form", '{"__dr":"cometerrorroot.react"}': "it is an error page (CometErrorRoot)"}


def classify_page(text: str, where: str = "", what: str = "the video") -> TrawlError | None:
    """The error a Facebook page without ``what`` states, quoting the page; None if it states none."""
    unescaped = html.unescape(text)
    lowered = unescaped.lower()
    for markers, cls, advice in PAGES:
        found = next(((lowered.find(m), m) for m in markers if m in lowered), None)
        if found is None:
            continue
        at, marker = found
        said = _MARKUP.get(marker) or f'"{_statement(unescaped, at)}"'
        return cls(f"facebook: the page says {said} instead of {what}{where}{advice}")
    return None


def classify_listing_page(text: str, where: str, logged_in: bool) -> TrawlError | None:
    """The error a profile's tab page (videos, photos, albums) states instead of its list.

    A profile that "isn't available" to an anonymous visitor is one Facebook shows to logged-in
    accounts only (gallery-dl reads that page as "authenticated cookies" required), so without
    cookies it is ``login_required``; with them it is gone (``not_found``).
    """
    stated = classify_page(text, where, "the list")
    if isinstance(stated, NotFound) and not logged_in:
        return LoginRequired(f"{stated.message}; Facebook shows this profile to logged-in accounts only "
                             f"(or it is gone): {cookies_advice('facebook')}")
    return stated


def _statement(text: str, at: int) -> str:
    """The page's own words around ``text[at]``: the text of the element holding them."""
    # An element's text, or a JSON string's when the words sit in the page's JSON.
    start = max(text.rfind(">", 0, at) + 1, text.rfind('"', 0, at) + 1, at - 200)
    stops = [i for i in (text.find("<", at, at + 300), text.find('"', at, at + 300)) if i >= 0]
    return " ".join(text[start:min(stops) if stops else at + 300].split())
