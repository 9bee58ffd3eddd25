"""The archive's web page, served by the API process under ``/``: the library (browse and search what
was committed), an item's page (play it, its metadata, its files), the activity (crawls, watches,
running items, and the failures: what is failing, where, since when) and the steering forms.

Server-rendered HTML (Jinja2 templates in ``templates/``) that works without JavaScript; one small
script (``static/trawl.js``) refreshes the activity's live part, keeps a player's place, seeks it
from an item's chapters and danmaku and flies the danmaku over its video. Nothing is loaded from elsewhere.

Access is the API's (``trawl.api.limits.RateLimit``): with ``api.token`` set, a browser signs in
once at ``/login``, which starts a session (:class:`Sessions`) and sets an HttpOnly,
SameSite=Strict cookie holding its id, which every request then carries. The id is random at each
sign-in, never the token nor derived from it (cookies go to every port of a host); the session
ends after ``api.session_lifetime`` or at ``/logout``, and the cookie's name has the API's port
(two trawls on one host keep their sign-ins apart). Without a token the API listens on loopback and answers loopback host names only. Every
form that changes something must come from the page itself (``same_origin``).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from trawl.web.sessions import (  # noqa: F401  (the page's face: the API reads them here)
    LOGIN_PATH,
    LOGOUT_PATH,
    OPEN_PATHS,
    STATIC_PATH,
    Sessions,
    session_cookie,
)

HERE = Path(__file__).resolve().parent


def install(app: FastAPI) -> None:
    from trawl.web import pages, steering

    app.include_router(pages.router)
    app.include_router(steering.router)
    app.mount(STATIC_PATH, StaticFiles(directory=HERE / "static"), name="static")
