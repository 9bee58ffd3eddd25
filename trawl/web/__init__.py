"""The archive's web page, served by the API process under ``/``: the library (browse and search what
was committed), an item's page (play it, its metadata, its files), the activity (crawls, watches,
running items, and the failures: what is failing, where, since when) and the steering forms.

Server-rendered HTML (Jinja2 templates in ``templates/``) that works without JavaScript; one small
script (``static/trawl.js``) refreshes the activity's live part. Nothing is loaded from elsewhere.

Access is the API's (``trawl.api.limits.RateLimit``): with ``api.token`` set, a browser signs in
once at ``/login``, which sets an HttpOnly, SameSite=Strict cookie that every request then
carries. The cookie holds a value derived from the token, never the token (cookies go to every
port of a host), under a name with the API's port (two trawls on one host keep their sign-ins
apart). Without a token the API listens on loopback and answers loopback host names only. Every
form that changes something must come from the page itself (``same_origin``).
"""

from __future__ import annotations

import hmac
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


def session_value(token: str) -> str:
    """What a browser signed in with ``token`` carries in its cookie."""
    return hmac.new(token.encode(), b"trawl web session", "sha256").hexdigest()


def session_values(token: str, read_token: str) -> dict[str, str]:
    """Cookie value -> what it allows (``all``, ``read``), for the tokens configured."""
    return {session_value(t): access for t, access in ((token, "all"), (read_token, "read")) if t}


def install(app: FastAPI) -> None:
    from trawl.web import pages, steering

    app.include_router(pages.router)
    app.include_router(steering.router)
    app.mount(STATIC_PATH, StaticFiles(directory=HERE / "static"), name="static")
