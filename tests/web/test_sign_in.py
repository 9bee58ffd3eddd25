"""Issue 38, items 10 and 11: the sign-in cookie is a session (random at each sign-in, expiring,
ended on the server by signing out), and whenever it is what authenticates a request that changes
something, the request must come from this site, whatever ``Authorization`` header comes with it.

Real uvicorn on loopback, a real dev server and catalog.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client

from tests.conftest import make_settings
from tests.starter.test_api import free_port, serving
from tests.web.test_pages import READ_TOKEN, TOKEN, base, form_token
from trawl.settings import ApiSettings, Settings


def signed_in_settings(tmp_path: Path, temporal_address: str, **api: Any) -> Settings:
    return make_settings(tmp_path, temporal_address,
                         api=ApiSettings(port=free_port(), token=TOKEN, read_token=READ_TOKEN, **api))


def cookie_name(settings: Settings) -> str:
    return f"trawl_session_{settings.api.port}"


async def sign_in(web: httpx.AsyncClient, settings: Settings, token: str = TOKEN) -> str:
    """A fresh sign-in's cookie value (the client keeps none: each request says what it carries)."""
    web.cookies.clear()
    answer = await web.post("/login", data={"token": token, "next": "/"})
    assert answer.status_code == 303, answer.text
    value = answer.cookies[cookie_name(settings)]
    web.cookies.clear()
    return value


# -- item 10: the cookie and an empty Authorization header ------------------------------------------
async def test_the_origin_check_holds_whatever_authorization_header_comes_with_the_cookie(
        temporal_client: Client, tmp_path: Path, temporal_address: str) -> None:
    """The sign-in cookie plus an empty ``Authorization:`` header skipped the Origin check (a
    crawl was started with ``Origin: http://evil.example``)."""
    settings = signed_in_settings(tmp_path, temporal_address)
    async with serving(settings, temporal_client), httpx.AsyncClient(base_url=base(settings), timeout=30) as web:
        session = await sign_in(web, settings)
        jar = {"Cookie": f"{cookie_name(settings)}={session}"}
        token = form_token((await web.get("/activity", headers=jar)).text)
        for authorization in ("", "Bearer"):
            for origin in ({"Origin": "http://evil.example"}, {}):
                answer = await web.post("/api/v1/crawls", headers={**jar, **origin, "Authorization": authorization},
                                        json={"urls": ["http://127.0.0.1:9/x.mp4"]})
                assert answer.status_code in (401, 403), (authorization, origin, answer.status_code, answer.text)
                form = await web.post("/steer/crawl", headers={**jar, **origin, "Authorization": authorization},
                                      data={"form_token": token, "urls": "http://127.0.0.1:9/x.mp4"})
                assert form.status_code in (401, 403), (authorization, origin, form.status_code, form.text)
        assert (await web.get("/api/v1/crawls", headers={"Authorization": f"Bearer {TOKEN}"})).json()["crawls"] == []
