"""The archive's web page, served by the API process under ``/``: the library (browse and search what
was committed), an item's page (play it, its metadata, its files), the activity (crawls, watches,
running items, and the failures: what is failing, where, since when) and the steering forms.

Server-rendered HTML (Jinja2 templates in ``templates/``) that works without JavaScript; one small
script (``static/trawl.js``) refreshes the activity's live part. Nothing is loaded from elsewhere.

Access is the API's (``trawl.api.limits.RateLimit``): with ``api.token`` set, a browser signs in
once at ``/login``, which keeps the token in an HttpOnly, SameSite=Strict cookie that every request
then carries; without a token the API listens on loopback only. Every form that changes something
must come from the page itself (``same_origin``).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

HERE = Path(__file__).resolve().parent
STATIC_PATH = "/static"
LOGIN_PATH = "/login"
TOKEN_COOKIE = "trawl_token"
# Paths a browser reaches before it has signed in.
OPEN_PATHS = (LOGIN_PATH, f"{STATIC_PATH}/")


def install(app: FastAPI) -> None:
    from trawl.web import pages, steering

    app.include_router(pages.router)
    app.include_router(steering.router)
    app.mount(STATIC_PATH, StaticFiles(directory=HERE / "static"), name="static")
