"""Issue 38, item 9: no page or answer of the API process can be framed by another site, and what
the pages need still runs under their content security policy (checked in a real browser).

Real uvicorn on loopback, a real dev server, catalog and blob store; the browser reaches loopback
only.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client

from tests.conftest import make_settings
from tests.api.test_api import free_port, serving
from tests.polling import until
from tests.web.test_pages import HTML, VIDEO, base, stored
from trawl.settings import ApiSettings


# -- item 9: framing -----------------------------------------------------------------------------
def assert_unframeable(answer: httpx.Response) -> None:
    assert answer.headers.get("x-frame-options") == "DENY", (answer.url, dict(answer.headers))
    policy = answer.headers.get("content-security-policy", "")
    directives = {d.split()[0]: d.split()[1:] for d in policy.split(";") if d.strip()}
    assert directives.get("frame-ancestors") == ["'none'"], (answer.url, policy)
    for kind in ("script-src", "style-src"):
        sources = directives.get(kind) or directives.get("default-src") or []
        assert sources and sources[0] == "'self'", (answer.url, policy)
        # ReDoc's bundle writes its styles inline as it renders: that page alone allows them.
        if not (kind == "style-src" and answer.url.path == "/redoc"):
            assert "'unsafe-inline'" not in sources, (answer.url, policy)
        assert all(s in ("'self'", "'unsafe-inline'") or s.startswith("'sha256-") for s in sources), policy


async def test_no_page_or_answer_can_be_framed(temporal_client: Client, tmp_path: Path,
                                               temporal_address: str) -> None:
    """With no token (the default, on loopback) another site could frame /activity and have the
    person click Cancel or Run now: every answer now forbids framing, errors and files included."""
    settings = make_settings(tmp_path, temporal_address, api=ApiSettings(port=free_port()))
    stored(settings, "web:framed", "Framed", {"video": ("video/mp4", VIDEO)})
    async with serving(settings, temporal_client), httpx.AsyncClient(base_url=base(settings), timeout=30) as web:
        for path in ("/", "/activity", "/activity/live", "/items/web:framed", "/items/web:none", "/login",
                     "/static/trawl.css", "/static/trawl.js", "/api/v1/items", "/api/v1/items/web:framed/assets/video",
                     "/docs", "/redoc", "/docs/oauth2-redirect", "/openapi.json", "/healthz", "/no/such/path"):
            assert_unframeable(await web.get(path, headers=HTML))
        assert_unframeable(await web.post("/steer/crawl", data={"urls": "x", "form_token": "0"}))  # 403
        assert_unframeable(await web.get("/", headers={"Host": "evil.example"}))  # 421, before any route


async def test_the_pages_run_under_their_policy_in_a_browser(browser: Any, temporal_client: Client,
                                                             tmp_path: Path, temporal_address: str) -> None:
    """Nothing a page needs is refused by its own policy: no inline script or style on the web
    page, and the docs pages' own inline parts allowed by their hashes only."""
    settings = make_settings(tmp_path, temporal_address, api=ApiSettings(port=free_port()))
    stored(settings, "web:policy", "Under policy", {"video": ("video/mp4", VIDEO)})
    async with serving(settings, temporal_client):
        for path, ready in (("/", "#items"), ("/activity", "#live"), ("/items/web:policy", "#media"),
                            ("/docs", ".swagger-ui .info"), ("/redoc", "[role=search], .api-content")):
            await asyncio.to_thread(browser.get, base(settings) + path)
            from selenium.webdriver.common.by import By
            await until(lambda: asyncio.to_thread(browser.find_elements, By.CSS_SELECTOR, ready),
                        lambda _: f"{path} to show {ready!r}: {browser.get_log('browser')}", 10)
            # Something from elsewhere (ReDoc's logo, from its makers' site) is refused, as meant.
            refused = [entry["message"] for entry in await asyncio.to_thread(browser.get_log, "browser")
                       if "Content Security Policy" in entry["message"]
                       and not re.search(r"Loading the \w+ '(?!http://127\.0\.0\.1[:/])", entry["message"])]
            assert refused == [], (path, refused)
