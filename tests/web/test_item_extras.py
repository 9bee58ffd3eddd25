"""The item page shows an item's extras (issue 41, point 8): subtitle tracks in the player (served
as WebVTT), the danmaku in time beside it, the chapters as links that seek it, the comments in
threads, bounded, and ``?t=SECONDS`` starts the player there. Hostile text in any of them stays
text. Real HTTP (the API app under uvicorn), a real catalog and blob store."""

from __future__ import annotations

import hashlib
import json
import re
from html import unescape
from pathlib import Path

import httpx
from temporalio.client import Client

from tests.api.test_api import serving
from tests.web.test_pages import HTML, READ_TOKEN, VIDEO, base, open_settings, stored  # noqa: F401 - open_settings is a fixture
from trawl.platforms.bilibili.danmaku import Danmaku, danmaku_xml
from trawl.settings import Settings
from trawl.storage.blobs import open_blob_store
from trawl.storage.catalog import Catalog, CommittedAsset
from trawl.storage.records import MissingExtra
from trawl.web.extras import LISTED_DANMAKU, REPLIES_SHOWN, THREADS_PER_PAGE

HOSTILE = '<img src=x onerror="alert(1)"><script>alert(2)</script>'


def track(*cues: tuple[float, float, str]) -> bytes:
    return json.dumps({"body": [{"from": a, "to": b, "content": text} for a, b, text in cues]},
                      ensure_ascii=False).encode()


def comments_document(threads: int, replies_of_first: int = 3) -> bytes:
    """``threads`` top-level comments, the first pinned with ``replies_of_first`` replies (the last
    answering the one before it), the second with a hostile text."""
    comments = []
    for n in range(threads):
        comments.append({"id": f"c{n}", "parent": "root", "text": HOSTILE if n == 1 else f"thread {n}",
                         "author": f"author {n}", "timestamp": 1700000000 + n, "like_count": n,
                         **({"is_pinned": True} if n == 0 else {})})
    for r in range(replies_of_first):
        comments.append({"id": f"r{r}", "parent": "c0" if r < replies_of_first - 1 else f"r{r - 1}",
                         "text": f"reply {r}", "author": f"replier {r}", "timestamp": 1700001000 + r, "like_count": 1})
    return json.dumps({"version": 1, "platform": "bilibili", "id": "BV1x", "total": len(comments) + 2,
                       "count": len(comments), "truncated": False, "comments": comments}, ensure_ascii=False).encode()


def add_extras(settings: Settings, key: str, files: list[tuple[str, str, str, str, bytes]],
               missing: list[MissingExtra] | None = None) -> None:
    """Extras of a committed item (name, kind, language, mime, bytes) into the store and catalog."""
    store = open_blob_store(settings)
    catalog = Catalog(settings.catalog_url)
    try:
        assets = []
        for name, kind, language, mime, data in files:
            sha = hashlib.sha256(data).hexdigest()
            source: Path = settings.data_dir / "extra-part"
            source.write_bytes(data)
            assets.append(CommittedAsset(name, kind, sha, len(data), mime, store.put(source, sha, len(data)),
                                         language=language or None))
        assert catalog.add_extras(key, assets, missing or [])
    finally:
        catalog.close()
        store.close()


CHAPTERS = [{"start_time": 0.0, "end_time": 162.0, "title": "开场"},
            {"start_time": 162.0, "end_time": 486.0, "title": "正片 <script>x</script>"}]


def extras_item(settings: Settings, key: str = "bilibili:BV1x", threads: int = 3, replies: int = 3) -> None:
    stored(settings, key, f"Extras {HOSTILE}", {"video": ("video/mp4", VIDEO)}, platform="bilibili",
           metadata={"chapters": CHAPTERS})
    bullets = [Danmaku(seconds=2.5, text="second one", color=0xFF0000), Danmaku(seconds=0.5, text=HOSTILE)]
    add_extras(settings, key, [
        ("danmaku", "danmaku", "", "application/xml", danmaku_xml(bullets, chat_id=1)),
        ("subtitles.zh-CN", "subtitles", "zh-CN", "application/json", track((0, 1.5, "你好 <i>原样</i>"),
                                                                              (1.5, 3, "--> 不是时间"))),
        ("subtitles.ai-zh", "subtitles", "ai-zh", "application/json", track((0, 3, "自动"))),
        ("subtitles.xx", "subtitles", "xx", "application/json", b"not a track"),
        ("comments", "comments", "", "application/json", comments_document(threads, replies)),
    ], [MissingExtra("subtitles.ai-en", "subtitles", "ai-en", "login_required", "give cookies")])


async def test_subtitle_tracks_are_in_the_player_and_served_as_webvtt(temporal_client: Client,
                                                                    open_settings: Settings) -> None:  # noqa: F811
    extras_item(open_settings)
    async with serving(open_settings, temporal_client), httpx.AsyncClient(base_url=base(open_settings),
                                                                          timeout=30) as web:
        page = (await web.get("/items/bilibili:BV1x", headers=HTML)).text
        found = re.findall(r'<track kind="subtitles" src="([^"]+)" srclang="([^"]+)" label="([^"]+)">', page)
        # the uploader's tracks first, the automatic one after; the broken one is offered (and refused below)
        assert found == [("/items/bilibili:BV1x/subtitles/subtitles.xx.vtt", "xx", "xx"),
                         ("/items/bilibili:BV1x/subtitles/subtitles.zh-CN.vtt", "zh-CN", "zh-CN"),
                         ("/items/bilibili:BV1x/subtitles/subtitles.ai-zh.vtt", "zh", "zh (automatic)")], found
        vtt = await web.get("/items/bilibili:BV1x/subtitles/subtitles.zh-CN.vtt")
        assert vtt.status_code == 200 and vtt.headers["content-type"] == "text/vtt; charset=utf-8"
        assert vtt.text == ("WEBVTT\n\n00:00:00.000 --> 00:00:01.500\n你好 &lt;i&gt;原样&lt;/i&gt;\n\n"
                            "00:00:01.500 --> 00:00:03.000\n--&gt; 不是时间\n")
        broken = await web.get("/items/bilibili:BV1x/subtitles/subtitles.xx.vtt")
        assert broken.status_code == 422 and "cannot be shown: subtitle track is not JSON" in broken.text
        assert (await web.get("/items/bilibili:BV1x/subtitles/subtitles.nope.vtt")).status_code == 404
        assert (await web.get("/items/bilibili:BV1x/subtitles/danmaku.vtt")).status_code == 404  # not a track
        assert (await web.get("/items/web:none/subtitles/subtitles.zh-CN.vtt")).status_code == 404
        # what was not archived, and why
        assert "subtitles.ai-en (login_required: give cookies)" in page


async def test_danmaku_chapters_and_hostile_text_stay_text(temporal_client: Client,
                                                          open_settings: Settings) -> None:  # noqa: F811
    extras_item(open_settings)
    async with serving(open_settings, temporal_client), httpx.AsyncClient(base_url=base(open_settings),
                                                                          timeout=30) as web:
        answer = await web.get("/items/bilibili:BV1x", headers=HTML)
        page = answer.text
        policy = answer.headers["content-security-policy"]
        assert "script-src 'self';" in policy and "style-src 'self';" in policy
        # No element came out of any stored text: the page's only script is its own.
        assert re.findall(r"<script\b[^>]*>", page) == ['<script src="/static/trawl.js" defer>']
        assert "<img src=x" not in page and "onerror=\"alert" not in page
        # the title (twice: <title> and <h1>), a danmaku and a comment, each as text
        assert page.count("&lt;img src=x onerror=&#34;alert(1)&#34;&gt;&lt;script&gt;alert(2)&lt;/script&gt;") == 4
        # the danmaku in time, each a link that seeks (the page again at that second without the script)
        bullets = re.findall(r'<li data-t="([^"]+)" data-color="([^"]+)" data-mode="scroll">'
                             r'<a href="([^"]+)" data-seek="[^"]+">([^<]+)</a> <span class="text">([^<]*)</span>', page)
        assert [(t, color, href, shown, unescape(text)) for t, color, href, shown, text in bullets] == [
            ("0.5", "#ffffff", "/items/bilibili:BV1x?t=0.5", "0:00", HOSTILE),
            ("2.5", "#ff0000", "/items/bilibili:BV1x?t=2.5", "0:02", "second one")]
        assert 'id="danmaku-toggle" aria-pressed="false" aria-controls="danmaku-layer" hidden' in page
        # the chapters seek the player in place
        assert ('<a href="/items/bilibili:BV1x?t=162" data-seek="162">2:42</a>\n      '
                '<span class="text">正片 &lt;script&gt;x&lt;/script&gt;</span>') in page


async def test_a_danmaku_list_is_bounded_and_broken_extras_are_said(temporal_client: Client,
                                                                   open_settings: Settings) -> None:  # noqa: F811
    stored(open_settings, "bilibili:BVmany", "Many", {"video": ("video/mp4", VIDEO)}, platform="bilibili")
    many = [Danmaku(seconds=n / 10, text=f"n{n}") for n in range(LISTED_DANMAKU + 5)]
    add_extras(open_settings, "bilibili:BVmany", [
        ("danmaku", "danmaku", "", "application/xml", danmaku_xml(many)),
        ("live-danmaku", "danmaku", "", "application/xml", b"<i><d p='x'>broken</d></i>"),
        ("comments", "comments", "", "application/json", b'{"comments": [')])
    stored(open_settings, "bilibili:BVnone", "None", {"video": ("video/mp4", VIDEO)}, platform="bilibili")
    async with serving(open_settings, temporal_client), httpx.AsyncClient(base_url=base(open_settings),
                                                                          timeout=30) as web:
        page = (await web.get("/items/bilibili:BVmany")).text
        assert page.count('<li data-t="') == LISTED_DANMAKU
        assert f"The first {LISTED_DANMAKU:,} of {LISTED_DANMAKU + 5:,}, in time" in page
        assert "Not shown: danmaku p=&#39;x&#39; has 1 fields, not 8 or 9" in page
        assert ('Not shown: the comments document is not JSON. The stored document: '
                '<a href="/api/v1/items/bilibili:BVmany/assets/comments">comments.json</a> (14 B).') in page
        plain = (await web.get("/items/bilibili:BVnone")).text
        for absent in ("Danmaku", "Chapters", "Comments", "<track", "danmaku-layer"):
            assert absent not in plain


async def test_comments_in_threads_bounded_with_pages_and_a_thread_alone(temporal_client: Client,
                                                                        open_settings: Settings) -> None:  # noqa: F811
    threads, replies = THREADS_PER_PAGE + 30, REPLIES_SHOWN + 5
    extras_item(open_settings, threads=threads, replies=replies)
    async with serving(open_settings, temporal_client), httpx.AsyncClient(base_url=base(open_settings),
                                                                          timeout=30) as web:
        page = (await web.get("/items/bilibili:BV1x")).text
        comments = page[page.index('<section class="comments"'):]
        assert comments.count('<li class="thread">') == THREADS_PER_PAGE
        assert f"{threads + replies:,} archived (the platform stated {threads + replies + 2:,})" in comments
        assert f"Threads 1–{THREADS_PER_PAGE} of {threads}." in comments
        first = comments[:comments.index('<li class="thread">', comments.index('<li class="thread">') + 1)]
        # the pinned thread: author, time, likes, then its replies under it, as many as a page shows
        assert re.search(r'<span class="author">author 0</span>\s*· <time datetime="2023-11-14T22:13:20\+00:00">'
                         r'2023-11-14 22:13:20 UTC</time>\s*· <span class="likes">0 likes</span>\s*'
                         r'<span class="badge pinned">pinned</span>', first), first
        assert first.count('<ol class="replies">') == 1 and first.count('<span class="author">replier ') == REPLIES_SHOWN
        assert f'<a class="more" href="/items/bilibili:BV1x?thread=c0#comments">All {replies} replies</a>' in first
        assert "&lt;script&gt;alert(2)&lt;/script&gt;" in comments
        assert '<a href="/items/bilibili:BV1x?comments=2#comments" rel="next">More comments</a>' in comments

        second = (await web.get("/items/bilibili:BV1x", params={"comments": 2})).text
        assert second.count('<li class="thread">') == threads - THREADS_PER_PAGE
        assert f"Threads {THREADS_PER_PAGE + 1}–{threads} of {threads}." in second
        assert f"author {THREADS_PER_PAGE}<" in second and "author 0<" not in second

        alone = (await web.get("/items/bilibili:BV1x", params={"thread": "c0"})).text
        assert alone.count('<li class="thread">') == 1 and alone.count('<span class="author">replier ') == replies
        # the last reply answers the one before it, inside the thread
        assert re.search(rf'<span class="author">replier {replies - 1}</span> <span class="to">↪ replier {replies - 2}</span>',
                         alone)
        assert "No thread of that id." in (await web.get("/items/bilibili:BV1x", params={"thread": "x"})).text
        assert (await web.get("/items/bilibili:BV1x", params={"comments": 0})).status_code == 422


async def test_the_newest_snapshot_of_the_comments_is_shown(temporal_client: Client,
                                                           open_settings: Settings) -> None:  # noqa: F811
    extras_item(open_settings, threads=2, replies=0)
    add_extras(open_settings, "bilibili:BV1x", [("comments@20261205T130800Z", "comments", "", "application/json",
                                                 comments_document(5, 0))])
    async with serving(open_settings, temporal_client), httpx.AsyncClient(base_url=base(open_settings),
                                                                          timeout=30) as web:
        page = (await web.get("/items/bilibili:BV1x")).text
        assert "5 archived (the platform stated 7), as of 2026-12-05 13:08:00 UTC." in page
        assert page.count('<li class="thread">') == 5


async def test_t_starts_the_player_at_that_second(temporal_client: Client, open_settings: Settings) -> None:  # noqa: F811
    extras_item(open_settings)
    async with serving(open_settings, temporal_client), httpx.AsyncClient(base_url=base(open_settings),
                                                                          timeout=30) as web:
        page = (await web.get("/items/bilibili:BV1x", params={"t": "12.5"})).text
        assert '<video id="media" controls preload="metadata" src="/api/v1/items/bilibili:BV1x/assets/video#t=12.5"' in page
        assert 'data-start="12.5"' in page
        for ignored in ("abc", "-3", "nan", "1e99", "0"):
            page = (await web.get("/items/bilibili:BV1x", params={"t": ignored})).text
            assert 'src="/api/v1/items/bilibili:BV1x/assets/video"' in page and "data-start" not in page, ignored
        assert (await web.get("/items/bilibili:BV1x", params={"t": "9" * 40})).status_code == 422  # too long a value


async def test_a_track_is_behind_the_sign_in_as_the_page_is(temporal_client: Client, tmp_path: Path,
                                                            temporal_address: str) -> None:
    from tests.web.test_sign_in import cookie_name, sign_in, signed_in_settings

    settings = signed_in_settings(tmp_path, temporal_address)
    extras_item(settings)
    async with serving(settings, temporal_client), httpx.AsyncClient(base_url=base(settings), timeout=30) as web:
        path = "/items/bilibili:BV1x/subtitles/subtitles.zh-CN.vtt"
        assert (await web.get(path)).status_code in (303, 401)
        reader = await sign_in(web, settings, READ_TOKEN)
        web.cookies.set(cookie_name(settings), reader)
        answer = await web.get(path)
        assert answer.status_code == 200 and answer.text.startswith("WEBVTT")
