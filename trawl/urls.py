"""URL validation and canonicalisation.

The canonical URL keeps what identifies a resource and drops what does not: scheme and host are
lower-cased, the default port, the fragment and tracking parameters are dropped, and the rest of
the query is sorted. The path is never lower-cased: platform ids are case-sensitive.
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from trawl.errors import UnsupportedUrl

MAX_URL_LENGTH = 8192
CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")  # one search, not a Python step per character
DEFAULT_PORTS = {"http": 80, "https": 443}
TRACKING_PARAMS = frozenset({
    "fbclid", "gclid", "dclid", "msclkid", "igshid", "mc_cid", "mc_eid", "spm_id_from",
    "vd_source", "from_spmid", "unique_k", "share_medium", "share_plat", "share_session_id",
    "share_source", "share_tag", "share_from", "is_story_h5", "mibextid", "ref_src", "_rdr",
    "__tn__",
})
TRACKING_PREFIXES = ("utm_", "share_", "__cft__")
# Characters left as they are when re-quoting a path or query (RFC 3986 sub-delims and friends).
_SAFE_PATH = "/:@!$&'()*+,;=-._~%"
_ESCAPE = re.compile(r"%[0-9a-fA-F]{2}")


def validate_url(url: str) -> str:
    """Check that ``url`` is an absolute http(s) URL with a host; return it stripped.

    Raises:
        UnsupportedUrl: with a message saying what is wrong.
    """
    if not isinstance(url, str):
        raise UnsupportedUrl(f"not a URL: {url!r}")
    url = url.strip()
    if not url:
        raise UnsupportedUrl("empty URL")
    if len(url) > MAX_URL_LENGTH:
        raise UnsupportedUrl(f"URL longer than {MAX_URL_LENGTH} characters ({len(url)})")
    if CONTROL_CHARACTER.search(url):
        raise UnsupportedUrl(f"URL contains control characters: {url[:200]!r}")
    try:
        url.encode("utf-8")
    except UnicodeEncodeError:
        raise UnsupportedUrl(f"URL is not valid text (a lone surrogate?): {url[:200]!r}") from None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsupportedUrl(f"malformed URL {url[:200]!r}: {exc}") from None
    if parts.scheme.lower() not in DEFAULT_PORTS:
        raise UnsupportedUrl(f"unsupported scheme {parts.scheme or '(none)'!r} in {url[:200]!r}: only http and https")
    if not parts.hostname:
        raise UnsupportedUrl(f"URL has no host: {url[:200]!r}")
    if port == 0:
        raise UnsupportedUrl(f"URL has port 0: {url[:200]!r}")
    return url


def is_tracking_param(name: str) -> bool:
    lowered = name.lower()
    return lowered in TRACKING_PARAMS or lowered.startswith(TRACKING_PREFIXES)


def canonicalize(url: str, *, keep_params: frozenset[str] | None = None) -> str:
    """Return the canonical form of ``url``.

    Args:
        url: an absolute http(s) URL.
        keep_params: if given, only these query parameters are kept (platform resolvers use it).

    Raises:
        UnsupportedUrl: the URL is malformed.
    """
    url = validate_url(url)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise UnsupportedUrl(f"URL has no host: {url[:200]!r}")
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host
    if parts.port is not None and parts.port != DEFAULT_PORTS[scheme]:
        netloc = f"{host}:{parts.port}"
    if parts.username or parts.password:
        raise UnsupportedUrl(f"URL with credentials is refused: {scheme}://...@{host}")
    # Re-quote without unquoting first: decoding %2F would change what the path means.
    path = _ESCAPE.sub(lambda m: m.group(0).upper(), quote(parts.path, safe=_SAFE_PATH)) or "/"
    query_pairs = []
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if keep_params is not None:
            if name in keep_params:
                query_pairs.append((name, value))
        elif not is_tracking_param(name):
            query_pairs.append((name, value))
    query_pairs.sort()
    query = urlencode(query_pairs, quote_via=quote, safe="-._~:/")
    return urlunsplit((scheme, netloc, path, query, ""))


def url_sha1(url: str) -> str:
    return hashlib.sha1(url.encode("utf-8")).hexdigest()


WEB_KEY_PREFIX = "web:"  # a key that is a hash of the URL: it names nothing a person would recognise


def web_key(canonical_url: str) -> str:
    """Canonical key of a generic web resource."""
    return f"{WEB_KEY_PREFIX}{url_sha1(canonical_url)}"
