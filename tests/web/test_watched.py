"""Watched state per browser (issue 42, point 5): its place in a video kept and gone on from, a
"Mark watched" button, the library's "unwatched" filter; through real HTTP and in a real browser."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from tests.api.test_api import free_port, serving
from tests.conftest import make_settings
from tests import polling
from tests.web.test_browser import until
from tests.web.test_pages import HTML, form_token, stored
from trawl.settings import ApiSettings, Settings
from trawl.simulator import MediaFile

VIDEO = MediaFile("mp4", "watched-video", 3 * 1024 * 1024, playable=True).read(0, 3 * 1024 * 1024)


@pytest.fixture
def watched_settings(tmp_path: Path, temporal_address: str) -> Settings:
    settings = make_settings(tmp_path, temporal_address, api=ApiSettings(port=free_port()))
    for key, title in (("web:one", "First clip"), ("web:two", "Second clip")):
        stored(settings, key, title, {"video": ("video/mp4", VIDEO)})
    return settings


def titles(page: str) -> list[str]:
    return re.findall(r'<a class="title" href="[^"]+">([^<]*)</a>', page)


async def test_a_browser_keeps_its_place_and_what_it_watched(temporal_client: Client,
                                                             watched_settings: Settings) -> None:
    base = f"http://127.0.0.1:{watched_settings.api.port}"
    async with serving(watched_settings, temporal_client), httpx.AsyncClient(
            base_url=base, headers={**HTML, "Origin": base}, timeout=30) as web, httpx.AsyncClient(
            base_url=base, headers=HTML, timeout=30) as other:
        token = form_token((await web.get("/items/web:one")).text)  # the page gives this browser its id
        saved = await web.post("/steer/viewing/web:one", data={"form_token": token, "position": "42.5"})
        assert saved.status_code == 204
        page = (await web.get("/items/web:one")).text
        assert "You stopped at 0:42" in page and 'data-resume="42.5"' in page
        assert "0:42 in</span>" in (await web.get("/")).text
        marked = await web.post("/steer/viewing/web:one", data={"form_token": token, "watched": "1"})
        assert marked.status_code == 303 and marked.headers["location"] == "/items/web:one"
        page = (await web.get("/items/web:one")).text
        assert '<span id="watched">Watched ' in page and "data-resume" not in page
        assert titles((await web.get("/", params={"unwatched": 1})).text) == ["Second clip"]
        assert titles((await web.get("/")).text) == ["Second clip", "First clip"]
        # another browser has its own state
        await other.get("/")
        assert titles((await other.get("/", params={"unwatched": 1})).text) == ["Second clip", "First clip"]
        await web.post("/steer/viewing/web:one", data={"form_token": token, "watched": "0"})
        assert titles((await web.get("/", params={"unwatched": 1})).text) == ["Second clip", "First clip"]
        # refused: no form token, a browser with no id yet, no such item, a bad value
        assert (await web.post("/steer/viewing/web:one", data={"position": "1"})).status_code == 403
        async with httpx.AsyncClient(base_url=base, headers={"Origin": base}) as stranger:
            assert (await stranger.post("/steer/viewing/web:one",
                                        data={"form_token": token, "position": "1"})).status_code == 403
        assert (await web.post("/steer/viewing/web:none", data={"form_token": token, "position": "1"})).status_code == 404
        assert (await web.post("/steer/viewing/web:one", data={"form_token": token, "watched": "2"})).status_code == 422


async def test_the_player_goes_on_where_it_stopped(browser: Any, temporal_client: Client,
                                                   watched_settings: Settings) -> None:
    from selenium.webdriver.common.by import By

    base = f"http://127.0.0.1:{watched_settings.api.port}"
    async with serving(watched_settings, temporal_client):
        await asyncio.to_thread(browser.get, base + "/items/web:two")
        await until(lambda: browser.execute_script(
            "const v = document.getElementById('media'); return v.readyState >= 3 && v.duration > 2"), "the video")
        stopped = await asyncio.to_thread(browser.execute_async_script,
                                          "const done = arguments[0]; const v = document.getElementById('media');"
                                          "v.muted = true; v.currentTime = 0.3; v.play().then(() => setTimeout(() =>"
                                          " { v.pause(); done(v.currentTime); }, 500)).catch(e => done(String(e)));")
            # (a place within the last second is the end: the 3 s video must stop before 2 s)
        assert isinstance(stopped, (int, float)) and 0.3 < stopped < 2, stopped

        async def resumed() -> bool:
            await asyncio.to_thread(browser.get, base + "/items/web:two")
            return bool(browser.find_elements(By.ID, "resume"))

        await polling.until(resumed, "the page saying where it stopped", 60, every=0.25)
        at = await until(lambda: browser.execute_script(
            "const v = document.getElementById('media'); return v.readyState >= 1 && v.currentTime > 0"
            " ? v.currentTime : null"), "the player at its place")
        assert abs(at - stopped) < 0.6, (at, stopped)
        # the button marks it watched, and the library's filter leaves it out
        await asyncio.to_thread(browser.find_element(By.CSS_SELECTOR, "#viewing button").click)
        await until(lambda: browser.find_elements(By.ID, "watched"), "the item marked watched")
        await asyncio.to_thread(browser.get, base + "/?unwatched=1")
        assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, "a.title")] == ["First clip"]
