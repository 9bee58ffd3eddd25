"""The web page in a real browser (headless chromium): the library with its thumbnails, a search,
an item whose video plays, a crawl started and steered from the activity page, and a failure
showing up there without a reload. Real uvicorn, dev server, worker, catalog and blob store."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from tests.conftest import make_settings
from tests.api.test_api import free_port, serving
from tests.web.conftest import ARTIFACTS
from tests import polling
from trawl.settings import ApiSettings, Settings
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.simulator.demo import og_page
from trawl.worker.main import running_worker

MiB = 1024 * 1024


REPLACED_PAGE = ("does not belong to the document", "Execution context was destroyed",
                 "Cannot find context with specified id")


async def until(check: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    """Poll ``check`` (run in a thread: Selenium blocks) until it returns something true; an element
    missing or stale while the page is replaced (a typed search navigates) is a "not yet"."""
    from selenium.common.exceptions import (NoSuchElementException, StaleElementReferenceException,
                                            WebDriverException)

    def look() -> Any:
        try:
            return check()
        except (NoSuchElementException, StaleElementReferenceException):
            return None
        except WebDriverException as error:
            # chromedriver reports an element of the page being replaced as an "unknown error"
            # of the inspector rather than as a stale reference; anything else is a failure
            if any(sign in str(error) for sign in REPLACED_PAGE):
                return None
            raise

    return await polling.until(lambda: asyncio.to_thread(look), what, timeout, every=0.25)


def site(sim: Simulator) -> list[str]:
    sim.add_file("/cdn/sunrise.mp4", MediaFile("mp4", "browser-sunrise", 3 * MiB, playable=True))
    sim.add_file("/cdn/sunrise.jpg", MediaFile("jpeg", "browser-sunrise-cover", 40_000))
    sim.add_file("/cdn/gull.mp4", MediaFile("mp4", "browser-gull", 2 * MiB, playable=True))
    sim.add_file("/cdn/slow.mp4", MediaFile("mp4", "browser-slow", 6 * MiB), FileBehaviour(throttle_bps=150_000))
    sim.add_page("/watch/sunrise", og_page("Sunrise over the bay", "/cdn/sunrise.mp4", image="/cdn/sunrise.jpg"))
    sim.add_page("/watch/gull", og_page("A gull, up close", "/cdn/gull.mp4"))
    sim.add_file("/cdn/lighthouse.png", MediaFile("png", "browser-lighthouse", 60_000))
    sim.add_file("/media/field-recording.mp3", MediaFile("mp3", "browser-field", 500_000, playable=True))
    sim.add_page("/photo/lighthouse", og_page("The lighthouse", None, image="/cdn/lighthouse.png"))
    sim.add_page("/watch/gone", "gone", status=404)
    return [sim.url(p) for p in ("/watch/sunrise", "/watch/gull", "/photo/lighthouse", "/media/field-recording.mp3")]


@pytest.fixture
def web_settings(tmp_path: Path, temporal_address: str) -> Settings:
    return make_settings(tmp_path, temporal_address, api=ApiSettings(port=free_port()))


async def test_browse_search_play_steer_and_see_a_failure(browser: Any, temporal_client: Client,
                                                          web_settings: Settings, sim: Simulator) -> None:
    from selenium.webdriver.common.by import By

    base = f"http://127.0.0.1:{web_settings.api.port}"
    urls = site(sim)
    async with serving(web_settings, temporal_client), running_worker(temporal_client, web_settings), \
            httpx.AsyncClient(base_url=base, timeout=30) as api:
        created = await api.post("/api/v1/crawls", json={"urls": urls})
        assert created.status_code == 202, created.text
        crawl = created.json()["id"]

        async def finished() -> bool:
            body = (await api.get(f"/api/v1/crawls/{crawl}")).json()
            return body["status"] == "COMPLETED"

        await polling.until(finished, "the crawl of four URLs to finish", 90, every=0.3)

        # The library: every item, their pictures drawn by the browser.
        await asyncio.to_thread(browser.get, base + "/")
        cards = await until(lambda: browser.find_elements(By.CSS_SELECTOR, "li.card"), "the library's cards")
        assert len(cards) == 4
        drawn = await until(lambda: browser.execute_script(
            "const all = [...document.querySelectorAll('li.card img')];"
            "return all.every(i => i.complete) ? all.filter(i => i.naturalWidth > 0).length : 0"), "the pictures drawn")
        assert drawn == 2  # the sunrise's thumbnail and the lighthouse; the gull's page and the mp3 have none
        ARTIFACTS.mkdir(exist_ok=True)
        await asyncio.to_thread(browser.save_screenshot, str(ARTIFACTS / "library.png"))

        # Search, as a person types it.
        box = browser.find_element(By.NAME, "q")
        box.send_keys("sunrise")
        await asyncio.to_thread(box.submit)
        await until(lambda: "1 item" in browser.find_element(By.ID, "count").text, "the search's count")
        assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, "a.title")] == ["Sunrise over the bay"]

        # The item: its video plays from the blob store.
        await asyncio.to_thread(browser.find_element(By.CSS_SELECTOR, "a.title").click)
        await until(lambda: browser.find_elements(By.ID, "media"), "the item's player")
        state = await until(lambda: browser.execute_script(
            "const v = document.getElementById('media');"
            "return v.readyState >= 3 && v.duration > 0 ? {duration: v.duration, type: v.currentSrc,"
            " can: v.canPlayType('video/mp4; codecs=\"vp09.00.10.08\"'), error: v.error} : null"), "the video can play")
        assert state["duration"] > 2 and state["can"] in ("probably", "maybe") and state["error"] is None
        played = await asyncio.to_thread(browser.execute_async_script,
                                         "const done = arguments[0]; const v = document.getElementById('media');"
                                         "v.muted = true; v.play().then(() => setTimeout(() => done(v.currentTime),"
                                         " 700)).catch(e => done(String(e)));")
        assert isinstance(played, (int, float)) and played > 0, played
        await asyncio.to_thread(browser.save_screenshot, str(ARTIFACTS / "item.png"))

        # The activity: start a crawl from pasted URLs, pause it, resume it, cancel it.
        await asyncio.to_thread(browser.get, base + "/activity")
        browser.find_element(By.ID, "urls").send_keys(sim.url("/cdn/slow.mp4"))
        await asyncio.to_thread(browser.find_element(By.CSS_SELECTOR, ".newcrawl button").click)
        said = await until(lambda: browser.find_elements(By.CSS_SELECTOR, ".said"), "the page saying what it did")
        assert "Started crawl" in said[0].text
        started = said[0].text.split()[2]

        # The live part is replaced every 3 s: an element found in one call may be gone by the
        # next, so each look and each click is one script, run at once in the page.
        def click(label: str) -> bool:
            return browser.execute_script(
                "const b = [...document.querySelectorAll(`form[action$='/crawl/${arguments[0]}'] button`)]"
                ".find(b => b.textContent.trim() == arguments[1]); if (b) { b.click(); } return !!b;",
                started, label)

        def text(element_id: str) -> str:
            return browser.execute_script("const e = document.getElementById(arguments[0]);"
                                          "return e ? e.innerText : '';", element_id)

        await until(lambda: click("Pause"), "the crawl's Pause button")
        await until(lambda: "(paused)" in text("crawls"), "the crawl shown paused")
        await until(lambda: click("Resume"), "the crawl's Resume button")
        await until(lambda: "(paused)" not in text("crawls") and "running" in text("crawls"), "the crawl running again")
        await until(lambda: click("Cancel"), "the crawl's Cancel button")
        await until(lambda: "cancelled" in text("crawls"), "the crawl shown cancelled")

        # A failure shows up on the open page, with no reload.
        assert "No item has failed." in text("failures")
        marker = browser.execute_script("window.notReloaded = true; return window.notReloaded")
        assert marker is True
        failing = await api.post("/api/v1/crawls", json={"urls": [sim.url("/watch/gone")]})
        assert failing.status_code == 202
        row = await until(lambda: browser.execute_script(
            "const r = [...document.querySelectorAll('#failures tbody tr')].find(r => r.innerText.includes('not_found'));"
            "return r ? r.innerText : null;"), "the failure in the failures view")
        assert row.split()[:3] == ["generic", "fetch", "not_found"], row
        assert browser.execute_script("return window.notReloaded") is True
        await asyncio.to_thread(browser.save_screenshot, str(ARTIFACTS / "activity.png"))

        # The audio item plays too.
        await asyncio.to_thread(browser.get, base + "/?kind=audio")
        await asyncio.to_thread((await until(lambda: browser.find_elements(By.CSS_SELECTOR, "a.title"), "the audio"))[0].click)
        audio = await until(lambda: browser.execute_script(
            "const a = document.getElementById('media');"
            "return a && a.tagName == 'AUDIO' && a.readyState >= 1 && a.duration > 0 ? a.duration : null"),
            "the audio's duration")
        assert audio > 2
