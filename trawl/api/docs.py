"""``/docs`` (Swagger UI) and ``/redoc`` served from the installed ``fastapi-offline`` package.

FastAPI's own pages load their JS and CSS from a CDN, so with no internet they are blank. The
same files ship in the ``fastapi-offline`` wheel (Swagger UI 5, ReDoc 2); the API serves them
under ``/docs/assets``, and the pages reference nothing else. Each page's own inline script and
style are allowed by their hashes in its Content-Security-Policy, nothing else inline.
"""

from __future__ import annotations

import base64
import hashlib
import re
from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from trawl.api.limits import content_policy

ASSETS = "/docs/assets"
OAUTH2_REDIRECT = "/docs/oauth2-redirect"
ASSETS_DIR = Path(str(files("fastapi_offline") / "static"))

router = APIRouter(include_in_schema=False)
INLINE = re.compile(r"<(script|style)(\s[^>]*)?>(.*?)</\1>", re.S)


def hashed(page: HTMLResponse) -> HTMLResponse:
    """``page`` with a Content-Security-Policy that allows its own inline scripts and styles, by
    their hashes, and nothing else inline."""
    sources: dict[str, list[str]] = {"script": [], "style": []}
    for kind, attributes, text in INLINE.findall(bytes(page.body).decode()):
        if "src=" in (attributes or ""):
            continue  # a file of this site's, which the policy allows already
        digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
        sources[kind].append(f"'sha256-{digest}'")
    page.headers["content-security-policy"] = content_policy(
        **{f"{kind}_src": " ".join(found) for kind, found in sources.items() if found})
    return page


@router.get("/docs")
async def swagger_ui(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    app = request.app
    return hashed(get_swagger_ui_html(
        openapi_url=f"{root}{app.openapi_url}", title=f"{app.title} - Swagger UI",
        swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js", swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
        swagger_favicon_url=f"{root}{ASSETS}/favicon.png", oauth2_redirect_url=f"{root}{OAUTH2_REDIRECT}",
        # No badge from the online validator: the page asks nothing of the internet.
        swagger_ui_parameters={"validatorUrl": None}))


@router.get(OAUTH2_REDIRECT)
async def swagger_ui_redirect() -> HTMLResponse:
    return hashed(get_swagger_ui_oauth2_redirect_html())


@router.get("/redoc")
async def redoc(request: Request) -> HTMLResponse:
    """ReDoc. Its bundle writes styles into the page as it renders (styled-components, before any
    nonce it is given takes effect), so this page alone allows inline styles, which run no code;
    its search runs in a worker made from a ``blob:`` URL. Its scripts are held to the policy."""
    root = request.scope.get("root_path", "")
    app = request.app
    page = hashed(get_redoc_html(openapi_url=f"{root}{app.openapi_url}", title=f"{app.title} - ReDoc",
                                 redoc_js_url=f"{root}{ASSETS}/redoc.standalone.js",
                                 redoc_favicon_url=f"{root}{ASSETS}/favicon.png", with_google_fonts=False))
    page.headers["content-security-policy"] = content_policy(style_src="'unsafe-inline'", worker_src="'self' blob:")
    return page


def install(app: FastAPI) -> None:
    """Serve the docs pages and their assets; create the app with ``docs_url=None, redoc_url=None``."""
    app.mount(ASSETS, StaticFiles(directory=ASSETS_DIR), name="docs-assets")
    app.include_router(router)
