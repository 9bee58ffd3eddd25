"""The archive's web page, served by the API process under ``/``: the library (browse and search what
was committed), an item's page (play it, its metadata, its files), the activity (crawls, watches,
running items, and the failures: what is failing, where, since when) and the steering forms.

Server-rendered HTML (Jinja2 templates in ``templates/``) that works without JavaScript; one small
script (``static/trawl.js``) refreshes the activity's live part. Nothing is loaded from elsewhere.

Access is the API's (``trawl.api.limits.RateLimit``): with ``api.token`` set, a browser signs in
once at ``/login``, which starts a session (:class:`Sessions`) and sets an HttpOnly,
SameSite=Strict cookie holding its id, which every request then carries. The id is random at each
sign-in, never the token nor derived from it (cookies go to every port of a host); the session
ends after ``api.session_lifetime`` or at ``/logout``, and the cookie's name has the API's port
(two trawls on one host keep their sign-ins apart). Without a token the API listens on loopback and answers loopback host names only. Every
form that changes something must come from the page itself (``same_origin``).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

HERE = Path(__file__).resolve().parent
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


def install(app: FastAPI) -> None:
    from trawl.web import pages, steering

    app.include_router(pages.router)
    app.include_router(steering.router)
    app.mount(STATIC_PATH, StaticFiles(directory=HERE / "static"), name="static")
