"""The web page through real HTTP (uvicorn on loopback) with a real catalog and blob store, and a
real dev server and worker where the page shows or steers workflows: every page and form it
offers, and who may use them (the sign-in cookie, the form token, the origin)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from tests.conftest import make_settings
from tests.api.test_api import free_port, serving
from tests.polling import until
from trawl.settings import ApiSettings, Settings
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.storage.blobs import open_blob_store
from trawl.storage.catalog import Catalog, CommittedAsset
from trawl.web.pages import PAGE_SIZE, item_path
from trawl.worker.main import running_worker

TOKEN = "page-token"
READ_TOKEN = "page-read-token"
HTML = {"Accept": "text/html,application/xhtml+xml"}


def stored(settings: Settings, key: str, title: str, files: dict[str, tuple[str, bytes]], **fields: Any) -> None:
    """An item with its files in the blob store and the catalog, written directly."""
    store = open_blob_store(settings)
    catalog = Catalog(settings.catalog_url)
    try:
        catalog.create_schema()
        assets = []
        for name, (mime, data) in files.items():
            sha = hashlib.sha256(data).hexdigest()
            source = settings.data_dir / "part"
            source.parent.mkdir(parents=True, exist_ok=True)
            source.write_bytes(data)
            kind = name.split("-")[0]
            assets.append(CommittedAsset(name, kind, sha, len(data), mime, store.put(source, sha, len(data))))
        catalog.commit_item(canonical_key=key, platform=fields.pop("platform", "generic"),
                            # A web key's {id} in names is its URL's file name: the key's own word here.
                            canonical_url=f"https://example.com/{key.split(':', 1)[-1]}",
                            source_url=f"https://example.com/{key.split(':', 1)[-1]}?s=1",
                            title=title, uploader=fields.pop("uploader", None), duration=fields.pop("duration", None),
                            published_at=fields.pop("published_at", None), metadata=fields.pop("metadata", {}),
                            workflow_id=fields.pop("workflow_id", None), assets=assets)
        catalog.remember_urls([f"https://m.example.com/{key}"], key)
    finally:
        catalog.close()
        store.close()


VIDEO = MediaFile("mp4", "page-video", 200_000, playable=True).read(0, 200_000)
PICTURE = MediaFile("jpeg", "page-thumb", 20_000).read(0, 20_000)


@pytest.fixture
def open_settings(tmp_path: Path, temporal_address: str) -> Settings:
    return make_settings(tmp_path, temporal_address, api=ApiSettings(port=free_port()))


def base(settings: Settings) -> str:
    return f"http://127.0.0.1:{settings.api.port}"


async def test_library_search_filters_pages_and_an_item(temporal_client: Client, open_settings: Settings) -> None:
    stored(open_settings, "web:sunrise", "Sunrise over the bay", {"video": ("video/mp4", VIDEO),
                                                                  "thumbnail": ("image/jpeg", PICTURE)},
           uploader="harbour cam", duration=185, published_at="2026-11-20T07:00:00Z", workflow_id="item-sunrise",
           metadata={"description": "Morning light <b>on</b> the water", "tags": ["dawn", "sea"]})
    for n in range(PAGE_SIZE + 2):
        stored(open_settings, f"web:clip{n:02d}", f"Clip number {n:02d}", {"audio": ("audio/mpeg", b"ID3" + bytes([n]) * 500)},
               platform="otherplace", uploader="mass uploader")
    async with serving(open_settings, temporal_client), httpx.AsyncClient(base_url=base(open_settings),
                                                                          timeout=30) as web:
        first = await web.get("/", headers=HTML)
        assert first.status_code == 200 and first.headers["content-type"].startswith("text/html")
        assert f"{PAGE_SIZE + 3:,} items, page 1 of 2" in first.text
        assert first.text.count('class="card"') == PAGE_SIZE
        second = await web.get("/", params={"page": 2})
        assert second.text.count('class="card"') == 3 and "Sunrise over the bay" in second.text
        # The thumbnail stands for the item, from the blob store.
        thumb = re.search(r'<img src="(/api/v1/items/web:sunrise/assets/thumbnail)"', second.text)
        assert thumb, second.text
        assert (await web.get(thumb.group(1))).content == PICTURE

        found = await web.get("/", params={"q": "morning water"})  # words of the description
        assert "1 item<" in found.text and "Sunrise over the bay" in found.text
        assert (await web.get("/", params={"q": "dawn", "kind": "audio"})).text.count('class="card"') == 0
        by_platform = await web.get("/", params={"platform": "otherplace", "sort": "title"})
        assert f"{PAGE_SIZE + 2:,} items" in by_platform.text
        assert by_platform.text.index("Clip number 00") < by_platform.text.index("Clip number 01")
        assert "1 item<" in (await web.get("/", params={"uploader": "harbour cam"})).text
        dated = await web.get("/", params={"since": "2026-11-20", "until": "2026-11-20"})
        assert "1 item<" in dated.text
        bad = await web.get("/", params={"sort": "random"})
        assert bad.status_code == 422 and "sort must be one of relevance, new" in bad.text

        page = await web.get("/items/web:sunrise")
        assert page.status_code == 200
        text = page.text
        assert '<video id="media" controls preload="metadata" src="/api/v1/items/web:sunrise/assets/video"' in text
        assert 'poster="/api/v1/items/web:sunrise/assets/thumbnail"' in text
        assert "Morning light &lt;b&gt;on&lt;/b&gt; the water" in text  # metadata is text, never markup
        assert "dawn, sea" in text and "3:05" in text and "harbour cam" in text
        assert 'download="Sunrise over the bay [sunrise].mp4"' in text  # named as trawl export names it
        assert "https://m.example.com/web:sunrise" in text  # every URL form that led to it
        assert "/namespaces/default/workflows/item-sunrise" in text  # into the Temporal Web UI
        video = await web.get("/api/v1/items/web:sunrise/assets/video", headers={"Range": "bytes=0-99"})
        assert video.status_code == 206 and video.content == VIDEO[:100]
        missing = await web.get("/items/web:none")
        assert missing.status_code == 404 and "No item" in missing.text
        css = await web.get("/static/trawl.css")
        assert css.status_code == 200 and "grid" in css.text
        # Without a token it answers loopback names only: a site rebinding its name to 127.0.0.1
        # is not this site.
        rebound = await web.get("/activity", headers={"Host": f"evil.example:{open_settings.api.port}"})
        assert rebound.status_code == 421 and "loopback" in rebound.text
        assert (await web.get("/", headers={"Host": f"localhost:{open_settings.api.port}"})).status_code == 200


async def wait_for(web: httpx.AsyncClient, path: str, pattern: str, timeout: float = 60) -> str:
    async def page() -> str:
        return (await web.get(path)).text

    return await until(page, lambda text: f"{pattern!r} to show on {path}:\n{text}", timeout, every=0.3,
                       holds=lambda text: re.search(pattern, text, re.S))


def running_buttons(page: str) -> list[str]:
    """The steering buttons of the running items' table, in order."""
    section = re.search(r'<section id="running">.*?</section>', page, re.S)
    assert section, page
    return re.findall(r'action="/steer/(\w+)/item/', section.group(0))


def form_token(page: str) -> str:
    found = re.search(r'name="form_token" value="([0-9a-f]{64})"', page)
    assert found, page
    return found.group(1)


async def test_activity_steers_a_crawl_and_shows_its_failure(temporal_client: Client, open_settings: Settings,
                                                             sim: Simulator) -> None:
    sim.add_page("/gone", "gone", status=404)
    sim.add_file("/v/slow.mp4", MediaFile("mp4", "page-slow", 4_000_000), FileBehaviour(throttle_bps=200_000))
    async with serving(open_settings, temporal_client), running_worker(temporal_client, open_settings), \
            httpx.AsyncClient(base_url=base(open_settings), timeout=30) as web:
        activity = await web.get("/activity")
        assert "No item has failed." in activity.text and "No crawls yet." in activity.text
        token = form_token(activity.text)
        refused = await web.post("/steer/crawl", data={"urls": sim.url("/v/slow.mp4"), "form_token": "0" * 64})
        assert refused.status_code == 403 and "not from this page" in refused.text
        foreign = await web.post("/steer/crawl", headers={"Origin": "http://evil.example"},
                                 data={"urls": sim.url("/v/slow.mp4"), "form_token": token})
        assert foreign.status_code == 403 and "another site" in foreign.text
        started = await web.post("/steer/crawl", data={"form_token": token,
                                                       "urls": f"{sim.url('/gone')}\n# a comment\n{sim.url('/v/slow.mp4')}\nnot a url"})
        assert started.status_code == 303
        said = (await web.get(started.headers["location"])).text
        crawl_id = re.search(r"Started crawl (crawl-[^ ]+) of 3 URL\(s\); refused 1", said)
        assert crawl_id, said
        crawl = crawl_id.group(1)
        # The failure, grouped by platform x stage x error class, with its example.
        text = await wait_for(web, "/activity/live", r"<td>generic</td><td>fetch</td>\s*<td><code>not_found</code>")
        assert re.search(r"<td class=\"num\">1</td>", text)
        # And named: its URL, class and message (no catalog item: it links to its workflow only).
        named = re.search(r'<table class="failed-items">.*?</table>', text, re.S)
        assert named and re.search(rf"<td>{re.escape(sim.url('/gone'))}</td>\s*<td><code>not_found</code></td>\s*"
                                   r"<td>[^<]*404[^<]*</td>", named.group(0)), text
        assert "/items/" not in named.group(0)
        text = await wait_for(web, "/activity/live", r"Running items.*<td>download</td>")
        assert running_buttons(text) == ["pause", "cancel"], text  # not paused: Pause, not Resume
        paused = await web.post(f"/steer/pause/crawl/{crawl}", data={"form_token": token})
        assert "pause sent" in (await web.get(paused.headers["location"])).text
        await wait_for(web, "/activity/live", r"running \(paused\)")
        text = await wait_for(web, "/activity/live", r"Running items.*\(paused\)</td>")
        assert running_buttons(text) == ["resume", "cancel"], text
        await web.post(f"/steer/resume/crawl/{crawl}", data={"form_token": token})
        await wait_for(web, "/activity/live", rf"<code>{crawl}</code></a></td>\s*<td>running</td>")
        cancelled = await web.post(f"/steer/cancel/crawl/{crawl}", data={"form_token": token})
        assert "cancel sent" in (await web.get(cancelled.headers["location"])).text
        await wait_for(web, "/activity/live", rf"<code>{crawl}</code></a></td>\s*<td>cancelled</td>")
        again = await web.post(f"/steer/pause/crawl/{crawl}", data={"form_token": token})
        assert "has finished (CANCELLED): nothing to pause" in (await web.get(again.headers["location"])).text
        unknown = await web.post("/steer/pause/item/no-such-item", data={"form_token": token})
        assert "Could not pause item no-such-item" in (await web.get(unknown.headers["location"])).text


async def test_a_failure_links_to_the_items_page_once_the_catalog_holds_it(
        temporal_client: Client, open_settings: Settings, sim: Simulator) -> None:
    """A URL that failed and was committed by a later crawl: its failure links to the item's page."""
    url = sim.url("/later/clip.mp4")
    async with serving(open_settings, temporal_client), running_worker(temporal_client, open_settings), \
            httpx.AsyncClient(base_url=base(open_settings), timeout=30) as web:
        token = form_token((await web.get("/activity")).text)
        await web.post("/steer/crawl", data={"form_token": token, "urls": url})
        text = await wait_for(web, "/activity/live", rf'<table class="failed-items">.*<td>{re.escape(url)}</td>')
        assert 'href="/items/' not in text, text
        sim.add_file("/later/clip.mp4", MediaFile("mp4", "page-later", 30_000))
        await web.post("/steer/crawl", data={"form_token": token, "urls": url})
        catalog = Catalog(open_settings.catalog_url)
        try:
            key = await until(lambda: _key_of(catalog, url), "the second crawl to commit the URL", 60)
        finally:
            catalog.close()
        await wait_for(web, "/activity/live",
                       rf'<table class="failed-items">.*<td><a href="{re.escape(item_path(key))}">{re.escape(url)}</a></td>')
        page = await web.get(item_path(key))
        assert page.status_code == 200


async def _key_of(catalog: Catalog, url: str) -> str | None:
    return catalog.keys_for_urls([url]).get(url)


async def test_a_token_asks_the_browser_to_sign_in_and_guards_every_form(
        temporal_client: Client, tmp_path: Path, temporal_address: str) -> None:
    settings = make_settings(tmp_path, temporal_address,
                             api=ApiSettings(port=free_port(), token=TOKEN, read_token=READ_TOKEN))
    stored(settings, "web:private", "Private film", {"video": ("video/mp4", VIDEO)})
    async with serving(settings, temporal_client), httpx.AsyncClient(base_url=base(settings), timeout=30) as web:
        to_login = await web.get("/items/web:private", headers=HTML)
        assert to_login.status_code == 303 and to_login.headers["location"] == "/login?next=%2Fitems%2Fweb%3Aprivate"
        assert (await web.get("/")).status_code == 401  # not a browser: the API's answer
        assert (await web.get("/api/v1/items/web:private/assets/video", headers=HTML)).status_code == 401
        assert (await web.get("/login")).status_code == 200
        assert (await web.get("/static/trawl.js")).status_code == 200
        wrong = await web.post("/login", data={"token": "guess", "next": "/"})
        assert wrong.status_code == 401 and "That token is not this trawl&#39;s api.token" in wrong.text and not wrong.cookies
        elsewhere = await web.post("/login", data={"token": TOKEN, "next": "https://evil.example/"})
        assert elsewhere.headers["location"] == "/"  # never sent to another site
        web.cookies.clear()  # each request below says what it carries
        signed = await web.post("/login", data={"token": TOKEN, "next": "/items/web:private"})
        assert signed.status_code == 303 and signed.headers["location"] == "/items/web:private"
        cookie = signed.headers["set-cookie"]
        name = f"trawl_session_{settings.api.port}"  # one per port: two trawls on a host keep theirs apart
        assert cookie.startswith(f"{name}=") and "HttpOnly" in cookie and "SameSite=strict" in cookie
        session = signed.cookies[name]
        assert TOKEN not in cookie and len(session) == 43  # cookies go to every port: never the token
        web.cookies.clear()

        jar = {"Cookie": f"{name}={session}"}
        assert "Private film" in (await web.get("/items/web:private", headers=jar)).text
        assert (await web.get("/api/v1/items/web:private/assets/video", headers=jar)).content == VIDEO
        page = (await web.get("/activity", headers=jar)).text
        assert "Sign out" in page
        token = form_token(page)
        form = {"form_token": token, "urls": "https://example.com/watch?v=1"}
        # On the cookie alone, a change must come from this site's pages.
        no_origin = await web.post("/steer/crawl", headers=jar, data=form)
        assert no_origin.status_code == 403 and "sign-in cookie" in no_origin.text
        foreign = await web.post("/steer/crawl", headers={**jar, "Origin": "http://evil.example"}, data=form)
        assert foreign.status_code == 403
        same = {**jar, "Origin": base(settings)}
        assert (await web.post("/steer/pause/crawl/crawl-none", headers=same, data={"form_token": "x"})).status_code == 403
        steered = await web.post("/steer/pause/crawl/crawl-none", headers=same, data={"form_token": token})
        assert steered.status_code == 303  # let through: the crawl is unknown, said on the page
        read = (await web.post("/login", data={"token": READ_TOKEN, "next": "/"})).cookies[name]
        web.cookies.clear()
        reader = {"Cookie": f"{name}={read}", "Origin": base(settings)}
        assert (await web.get("/", headers=reader)).status_code == 200
        assert (await web.post("/steer/pause/crawl/crawl-none", headers=reader, data={"form_token": token})
                ).status_code == 403  # the read token reads only
        assert (await web.post("/logout", headers=reader)).status_code == 303  # but may sign out
        assert (await web.get("/api/v1/items", headers={"Cookie": f"{name}={TOKEN}"})).status_code == 401
        # A stale sign-in (the token changed) reaches the sign-in page, and no further.
        stale = {"Cookie": f"{name}={'0' * 64}", **HTML}
        assert (await web.get("/", headers=stale)).headers["location"] == "/login?next=%2F"
        assert (await web.get("/login", headers=stale)).status_code == 200
        out = await web.post("/logout", headers=same)
        assert out.status_code == 303 and f'{name}=""' in out.headers["set-cookie"]


async def test_a_watch_is_paused_resumed_and_run_from_the_page(temporal_client: Client, open_settings: Settings,
                                                                sim: Simulator) -> None:
    sim.add_file("/v/w.mp4", MediaFile("mp4", "page-watch", 50_000))
    async with serving(open_settings, temporal_client), running_worker(temporal_client, open_settings), \
            httpx.AsyncClient(base_url=base(open_settings), timeout=30) as web:
        created = await web.post("/api/v1/watches", json={"name": "harbour", "urls": [sim.url("/v/w.mp4")],
                                                          "every": "1h"})
        assert created.status_code == 201, created.text
        page = await wait_for(web, "/activity", r'<td><a href="/watches/harbour">harbour</a><br>')
        token = form_token(page)
        paused = await web.post("/steer/pause/watch/harbour", data={"form_token": token})
        assert "Watch harbour: pause sent" in (await web.get(paused.headers["location"])).text
        await wait_for(web, "/activity/live", r'<td><a href="/watches/harbour">harbour</a> \(paused\)<br>')
        await web.post("/steer/resume/watch/harbour", data={"form_token": token})
        await wait_for(web, "/activity/live", r'<td><a href="/watches/harbour">harbour</a><br>')
        run = await web.post("/steer/trigger/watch/harbour", data={"form_token": token})
        assert "Watch harbour: run started" in (await web.get(run.headers["location"])).text
        # The run is a crawl of the watch's URLs: it shows, and commits the file.
        await wait_for(web, "/activity/live", r"1 committed")
        # The watch's page: each run, with what it brought (the file, committed by the run's crawl).
        watch = await wait_for(web, "/watches/harbour", r": completed, 1 new, 0 known, 0 failed</h3>")
        assert re.search(r'<a class="title" href="/items/[^"]+">w.mp4</a>', watch), watch
        assert (await web.get("/watches/nowhere")).status_code == 404
        wrong = await web.post("/steer/cancel/watch/harbour", data={"form_token": token})
        assert wrong.status_code == 404  # a watch is paused, not cancelled
        gone = await web.post("/steer/pause/watch/nowhere", data={"form_token": token})
        assert "Could not pause watch nowhere" in (await web.get(gone.headers["location"])).text
