"""What Facebook's pages state when they carry no video: a block, a login wall, a removed video.

Facebook answers these with HTTP 200 and an HTML page, so only the resolver reads them
(:func:`classify_page`); nothing in its answers' JSON or headers is read by
:func:`trawl.errors.classify_response`. The markers come from public issue threads (see the
simulated site's docstring), not from captures.
"""

from __future__ import annotations

import html

from trawl.errors import LoginRequired, NotFound, RateLimited, TrawlError, cookies_advice

# Pages that state why there is no video: (markers, class, what to tell the user). Explicit
# statements come before the bare login form, which anonymous pages carry in their header even
# when the video plays or is gone.
PAGES: tuple[tuple[tuple[str, ...], type[TrawlError], str], ...] = (
    (("temporarily blocked", "going too fast"), RateLimited, ""),
    (("you must log in to continue",), LoginRequired, "; " + cookies_advice("facebook")),
    (("content isn't available", "content isn\u2019t available", "video isn't available",
      "link you followed may be broken", "page isn't available", "page isn\u2019t available"), NotFound, ""),
    (('id="login_form"',), LoginRequired, "; " + cookies_advice("facebook")),
)


def classify_page(text: str, where: str = "") -> TrawlError | None:
    """The error a Facebook page without a video states, quoting the page; None if it states none."""
    unescaped = html.unescape(text)
    lowered = unescaped.lower()
    for markers, cls, advice in PAGES:
        found = next(((lowered.find(m), m) for m in markers if m in lowered), None)
        if found is None:
            continue
        at, marker = found
        said = "a login form" if marker.startswith("id=") else f'"{_statement(unescaped, at)}"'
        return cls(f"facebook: the page says {said} instead of the video{where}{advice}")
    return None


def _statement(text: str, at: int) -> str:
    """The page's own words around ``text[at]``: the text of the element holding them."""
    start = max(text.rfind(">", 0, at) + 1, at - 200)
    stop = text.find("<", at, at + 300)
    return " ".join(text[start:stop if stop >= 0 else at + 300].split())
