"""Issue 38, items 10 and 11: the sign-in cookie is a session (random at each sign-in, expiring,
ended on the server by signing out), and whenever it is what authenticates a request that changes
something, the request must come from this site, whatever ``Authorization`` header comes with it.

Real uvicorn on loopback, a real dev server and catalog.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client

from tests.conftest import make_settings
from tests.api.test_api import free_port, serving
from tests.web.test_pages import HTML, READ_TOKEN, TOKEN, base, form_token
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
# -- item 11: a session, not a copy of the token -------------------------------------------------------
async def test_a_sign_in_is_a_session_that_expires_and_that_signing_out_ends(
        temporal_client: Client, tmp_path: Path, temporal_address: str) -> None:
    settings = signed_in_settings(tmp_path, temporal_address, session_lifetime="3s")
    name = cookie_name(settings)
    async with serving(settings, temporal_client), httpx.AsyncClient(base_url=base(settings), timeout=30) as web:
        web.cookies.clear()
        signed = await web.post("/login", data={"token": TOKEN, "next": "/"})
        cookie = signed.headers["set-cookie"]
        assert "Max-Age=3;" in cookie + ";" and "HttpOnly" in cookie and "SameSite=strict" in cookie, cookie
        first, second = signed.cookies[name], await sign_in(web, settings)
        assert first != second  # random at each sign-in, never derived from the token
        assert TOKEN not in first and len(first) >= 32
        for session in (first, second):
            assert (await web.get("/api/v1/items", headers={"Cookie": f"{name}={session}"})).status_code == 200
        # Signing out ends that session on the server: the same cookie, replayed, is refused.
        out = await web.post("/logout", headers={"Cookie": f"{name}={first}", "Origin": base(settings)})
        assert out.status_code == 303 and f'{name}=""' in out.headers["set-cookie"]
        assert (await web.get("/api/v1/items", headers={"Cookie": f"{name}={first}"})).status_code == 401
        stale = await web.get("/", headers={"Cookie": f"{name}={first}", **HTML})
        assert stale.status_code == 303 and stale.headers["location"] == "/login?next=%2F"
        assert (await web.get("/api/v1/items", headers={"Cookie": f"{name}={second}"})).status_code == 200
        # And a session ends by itself once its lifetime is over.
        await asyncio.sleep(3.5)
        assert (await web.get("/api/v1/items", headers={"Cookie": f"{name}={second}"})).status_code == 401
        # A read-only sign-in is a session too, and reads only.
        reader = await sign_in(web, settings, READ_TOKEN)
        assert (await web.get("/api/v1/items", headers={"Cookie": f"{name}={reader}"})).status_code == 200
        steer = await web.post("/api/v1/crawls/crawl-none/pause",
                               headers={"Cookie": f"{name}={reader}", "Origin": base(settings)})
        assert steer.status_code == 403 and "read-only" in steer.text


def test_the_default_session_lasts_twelve_hours() -> None:
    assert ApiSettings().session_lifetime == timedelta(hours=12)


def test_sessions_are_bounded_and_forget_the_expired_first() -> None:
    from trawl.web import Sessions

    now = [0.0]
    sessions = Sessions(timedelta(seconds=10), clock=lambda: now[0])
    sessions.MAX = 3
    first = sessions.start("all")
    now[0] = 5
    held = [sessions.start("read") for _ in range(3)]  # the oldest goes to make room
    assert sessions.access(first) is None and [sessions.access(h) for h in held] == ["read"] * 3
    now[0] = 15.0
    assert [sessions.access(h) for h in held] == [None] * 3
    assert sessions.access("") is None and sessions.access(None) is None
