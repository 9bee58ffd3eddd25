"""Who may see the web page: the paths a browser reaches before signing in, the sign-in cookie's
name, and the sessions a sign-in starts (``trawl.web`` describes the whole arrangement). A leaf:
the API's state holds the sessions without loading the pages, which import the API's routes.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import timedelta

STATIC_PATH = "/static"
LOGIN_PATH = "/login"
LOGOUT_PATH = "/logout"
# Paths a browser reaches before it has signed in (or to sign out, whatever its token allows).
OPEN_PATHS = (LOGIN_PATH, LOGOUT_PATH, f"{STATIC_PATH}/")


def session_cookie(port: int) -> str:
    """The sign-in cookie's name for the API on ``port``."""
    return f"trawl_session_{port}"


class Sessions:
    """Signed-in browsers: a random id per sign-in -> what it allows (``all``, ``read``), until
    it expires or is ended.

    Kept in this API process's memory, by the id's hash (a lookup's timing tells nothing of the
    ids held): a restart signs every browser out, and several API processes behind one address
    each know only their own sign-ins. At most :attr:`MAX` are held; the oldest go first.
    """

    MAX = 10_000

    def __init__(self, lifetime: timedelta, clock: Callable[[], float] = time.monotonic) -> None:
        self.lifetime = lifetime
        self._clock = clock
        # Every session lives as long, so the oldest first is also the first to expire.
        self._held: OrderedDict[bytes, tuple[str, float]] = OrderedDict()

    def start(self, access: str) -> str:
        """A new session allowing ``access``; its id, for the cookie."""
        now = self._clock()
        while self._held and (len(self._held) >= self.MAX or next(iter(self._held.values()))[1] <= now):
            self._held.popitem(last=False)
        ident = secrets.token_urlsafe(32)
        self._held[_digest(ident)] = (access, now + self.lifetime.total_seconds())
        return ident

    def access(self, ident: str | bytes | None) -> str | None:
        """What the session ``ident`` allows; None when there is none, or it has ended."""
        if not ident:
            return None
        key = _digest(ident)
        held = self._held.get(key)
        if held is None:
            return None
        if held[1] <= self._clock():
            del self._held[key]
            return None
        return held[0]

    def end(self, ident: str | bytes | None) -> None:
        if ident:
            self._held.pop(_digest(ident), None)


def _digest(ident: str | bytes) -> bytes:
    return hashlib.sha256(ident.encode("latin-1", "replace") if isinstance(ident, str) else ident).digest()
