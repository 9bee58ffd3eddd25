"""An item's extras on its page in a real browser (headless chromium): ``?t=`` starts the player
there, a chapter seeks it in place, its subtitle track is loaded and shows the cue of that moment,
a reply sits under its thread, and the danmaku fly over the video as text, all under the page's
content security policy."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.client import Client

from tests.api.test_api import serving
from tests.web.test_browser import until
from tests.web.test_item_extras import HOSTILE, add_extras, track
from tests.web.test_pages import VIDEO, base, open_settings, stored  # noqa: F401 - open_settings is a fixture
from trawl.platforms.bilibili.danmaku import Danmaku, danmaku_xml
from trawl.settings import Settings

COMMENTS = b"""{"version": 1, "platform": "bilibili", "id": "BVb", "total": 2, "count": 2, "truncated": false,
 "comments": [{"id": "1", "parent": "root", "text": "\xe5\xa5\xbd\xe5\x90\xac", "author": "first", "like_count": 9},
              {"id": "2", "parent": "1", "text": "+1 <b>me too</b>", "author": "second", "like_count": 1}]}"""


async def test_a_chapter_seeks_the_player_its_track_shows_and_a_reply_is_threaded(
        browser: Any, temporal_client: Client, open_settings: Settings) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    stored(open_settings, "bilibili:BVb", "Extras in a browser", {"video": ("video/mp4", VIDEO)}, platform="bilibili",
           metadata={"chapters": [{"start_time": 0, "end_time": 1.6, "title": "一"},
                                  {"start_time": 1.6, "end_time": 3, "title": "二"}]})
    add_extras(open_settings, "bilibili:BVb", [
        ("subtitles.zh-CN", "subtitles", "zh-CN", "application/json", track((0, 1.5, "第一句"), (1.5, 3, "第二句 <i>x</i>"))),
        ("danmaku", "danmaku", "", "application/xml", danmaku_xml([Danmaku(seconds=1.7, text=HOSTILE, color=0x00FF00)])),
        ("comments", "comments", "", "application/json", COMMENTS)])
    media = "return document.getElementById('media')"
    async with serving(open_settings, temporal_client):
        await asyncio.to_thread(browser.get, base(open_settings) + "/items/bilibili:BVb?t=1")
        # ?t=1: the player starts at that second
        await until(lambda: browser.execute_script(media + ".readyState") >= 1, "the video's metadata")
        assert abs(browser.execute_script(media + ".currentTime") - 1) < 0.1
        assert browser.find_element(By.ID, "danmaku-toggle").is_displayed()  # the script shows its button

        # A chapter's link seeks the player in place (no page load), then we hold it there.
        browser.execute_script("window.stayed = true")
        await asyncio.to_thread(browser.find_element(By.CSS_SELECTOR, "#chapters li:nth-child(2) a").click)
        await until(lambda: browser.execute_script(media + ".currentTime") >= 1.6, "the chapter's second")
        browser.execute_script(media + ".pause()")
        assert browser.execute_script("return window.stayed === true")
        assert "current" in browser.find_element(By.CSS_SELECTOR, "#chapters li:nth-child(2)").get_attribute("class")

        # The subtitle track (WebVTT from the stored track) shows the cue of that moment, as text.
        assert browser.execute_script(media + ".textTracks.length") == 1
        assert browser.execute_script(
            "const t = document.getElementById('media').textTracks[0]; t.mode = 'showing';"
            "return [t.kind, t.label, t.language]") == ["subtitles", "zh-CN", "zh-CN"]
        cue = await until(lambda: browser.execute_script(
            "const c = document.getElementById('media').textTracks[0].activeCues;"
            "return c && c.length ? c[0].text : null"), "the track's cue at the chapter")
        assert cue == "第二句 &lt;i&gt;x&lt;/i&gt;"  # WebVTT's escape: the player shows "<i>x</i>" as text

        # The reply sits under its thread, its text as text.
        thread = browser.find_element(By.CSS_SELECTOR, "#comments li.thread")
        assert thread.find_element(By.CSS_SELECTOR, ":scope > .comment .text").text == "好听"
        reply = thread.find_element(By.CSS_SELECTOR, ".replies .comment")
        assert reply.find_element(By.CSS_SELECTOR, ".author").text == "second"
        assert reply.find_element(By.CSS_SELECTOR, ".text").text == "+1 <b>me too</b>"

        # The danmaku fly over the video when asked: as text, in their colour, nothing of theirs run.
        await asyncio.to_thread(browser.find_element(By.ID, "danmaku-toggle").click)
        assert browser.find_element(By.ID, "danmaku-toggle").get_attribute("aria-pressed") == "true"
        browser.execute_script("const v = document.getElementById('media'); v.currentTime = 1.5; v.play()")
        flown = await until(lambda: browser.execute_script(
            "const b = document.querySelector('#danmaku-layer .bullet');"
            "return b ? [b.textContent, getComputedStyle(b).color, b.children.length] : null"), "a danmaku flown")
        assert flown == [HOSTILE, "rgb(0, 255, 0)", 0]
        assert browser.execute_script("return typeof window.alert === 'function' && !document.querySelector('main img')")
        refused = [entry["message"] for entry in browser.get_log("browser") if "Content Security Policy" in entry["message"]]
        assert refused == []
