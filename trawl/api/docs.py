"""``/docs`` (Swagger UI) and ``/redoc`` served from the installed ``fastapi-offline`` package.

FastAPI's own pages load their JS and CSS from a CDN, so with no internet they are blank. The
same files ship in the ``fastapi-offline`` wheel (Swagger UI 5, ReDoc 2); the API serves them
under ``/docs/assets``, and the pages reference nothing else.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs/assets"
OAUTH2_REDIRECT = "/docs/oauth2-redirect"
ASSETS_DIR = Path(str(files("fastapi_offline") / "static"))

router = APIRouter(include_in_schema=False)


@router.get("/docs")
async def swagger_ui(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    app = request.app
    return get_swagger_ui_html(
        openapi_url=f"{root}{app.openapi_url}", title=f"{app.title} - Swagger UI",
        swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js", swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
        swagger_favicon_url=f"{root}{ASSETS}/favicon.png", oauth2_redirect_url=f"{root}{OAUTH2_REDIRECT}",
        # No badge from the online validator: the page asks nothing of the internet.
        swagger_ui_parameters={"validatorUrl": None})


@router.get(OAUTH2_REDIRECT)
async def swagger_ui_redirect() -> HTMLResponse:
    return get_swagger_ui_oauth2_redirect_html()


@router.get("/redoc")
async def redoc(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    app = request.app
    return get_redoc_html(openapi_url=f"{root}{app.openapi_url}", title=f"{app.title} - ReDoc",
                          redoc_js_url=f"{root}{ASSETS}/redoc.standalone.js",
                          redoc_favicon_url=f"{root}{ASSETS}/favicon.png", with_google_fonts=False)


def install(app: FastAPI) -> None:
    """Serve the docs pages and their assets; create the app with ``docs_url=None, redoc_url=None``."""
    app.mount(ASSETS, StaticFiles(directory=ASSETS_DIR), name="docs-assets")
    app.include_router(router)
