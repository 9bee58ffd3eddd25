"""Webhooks (trawl.notify) against a receiver on 127.0.0.1: a signed JSON POST per event, retried
with backoff on 5xx and network errors, given up on a 4xx; the address guard's refusal (decided
on the address alone); and the worker's events end to end: a watch's new item, a failure that
needs a person, on a real dev server, worker and API."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from tests.api.test_api import free_port, serving
from tests.conftest import make_settings
from tests.polling import until
from trawl.http_client import make_client
from trawl.notify import Notifier, deliver, payload, refusal, signature
from trawl.platforms.bilibili.site import PRIVATE_VIDEO, install_bilibili_site
from trawl.settings import ApiSettings, NetSettings, NotifySettings, Settings, WebhookSettings
from trawl.simulator import MediaFile, Simulator
from trawl.worker.main import running_worker


class Receiver:
    """An HTTP server on 127.0.0.1 that answers each POST with the next status of ``answers``
    (then 200), keeping what it received."""

    def __init__(self, answers: list[int] | None = None) -> None:
        self.answers = list(answers or [])
        self.received: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(receiver.answers.pop(0) if receiver.answers else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body in self.received]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    yield server
    server.server.shutdown()


def test_a_signed_post_retried_on_5xx_with_backoff(receiver: Receiver) -> None:
    receiver.answers = [503, 500]
    hook = WebhookSettings(url=receiver.url, secret="s3cret", attempts=4)
    waits: list[float] = []
    delivery, body = payload("watch_item", {"title": "春天的两张照片"})
    with make_client(NetSettings(allow_private=True)) as client:
        assert deliver(client, hook, "watch_item", delivery, body, waits.append) == "delivered"
    assert waits == [1.0, 2.0] and len(receiver.received) == 3
    for headers, got in receiver.received:  # each attempt: the same delivery, signed
        assert got == body and headers["x-trawl-delivery"] == delivery and headers["x-trawl-event"] == "watch_item"
        expected = "sha256=" + hmac.new(b"s3cret", got, hashlib.sha256).hexdigest()
        assert headers["x-trawl-signature"] == expected == signature("s3cret", got)
    sent = json.loads(body)
    assert sent["event"] == "watch_item" and sent["id"] == delivery and sent["data"] == {"title": "春天的两张照片"}


def test_a_4xx_is_not_retried_and_attempts_end(receiver: Receiver) -> None:
    receiver.answers = [410]
    hook = WebhookSettings(url=receiver.url, attempts=3)
    with make_client(NetSettings(allow_private=True)) as client:
        assert deliver(client, hook, "needs_person", *payload("needs_person", {}), sleep=lambda _: None) == "refused"
        assert len(receiver.received) == 1 and "x-trawl-signature" not in receiver.received[0][0]  # no secret
        receiver.answers = [502, 502, 502]
        waits: list[float] = []
        assert deliver(client, hook, "needs_person", *payload("needs_person", {}), sleep=waits.append) == "gave up"
        assert waits == [1.0, 2.0] and len(receiver.received) == 4
        closed = WebhookSettings(url=f"http://127.0.0.1:{free_port()}/nothing-listens", attempts=2)
        assert deliver(client, closed, "needs_person", *payload("needs_person", {}), sleep=lambda _: None) == "gave up"


def test_the_address_guard_decides_on_a_webhook_s_address() -> None:
    guarded = NetSettings()
    for url in ("http://10.1.2.3/hook", "http://192.168.0.9:8080/x", "http://169.254.169.254/latest",
                "http://[::1]:9/x", "https://127.0.0.1/x"):
        assert "not a public address" in (refusal(url, guarded) or ""), url
    assert refusal("https://93.184.216.34/hook", guarded) is None
    assert refusal("http://10.1.2.3/hook", NetSettings(allowed_networks=["10.1.0.0/16"])) is None
    assert refusal("http://10.1.2.3/hook", NetSettings(allow_private=True)) is None
    assert refusal("https://hooks.example.com/x", guarded) is None  # a name: judged when connecting


def test_a_guarded_client_refuses_a_loopback_webhook_before_sending(receiver: Receiver) -> None:
    hook = WebhookSettings(url=receiver.url, attempts=3)
    with make_client(NetSettings(allow_private=False)) as client:
        assert deliver(client, hook, "watch_item", *payload("watch_item", {}), sleep=lambda _: None) == "refused"
    assert receiver.received == []


def test_settings_validate_webhooks() -> None:
    with pytest.raises(ValueError, match="http:// or https://"):
        WebhookSettings(url="ftp://example.com/x")
    with pytest.raises(ValueError, match="unknown event"):
        WebhookSettings(url="https://example.com/x", events=["everything"])


def test_events_go_to_the_webhooks_that_ask_for_them(receiver: Receiver, tmp_path: Path) -> None:
    other = Receiver()
    settings = make_settings(tmp_path, "127.0.0.1:1", notify=NotifySettings(webhooks=[
        WebhookSettings(url=receiver.url), WebhookSettings(url=other.url, events=["live_recording"])]))
    notifier = Notifier(settings)
    notifier.emit("watch_item", {"n": 1})
    notifier.emit("live_recording", {"n": 2})
    notifier.close()
    assert [e["event"] for e in receiver.events()] == ["watch_item", "live_recording"]
    assert [e["event"] for e in other.events()] == ["live_recording"]
    other.server.shutdown()


async def test_the_worker_tells_of_a_watch_s_new_item_and_a_failure_that_needs_a_person(
        temporal_client: Client, tmp_path: Path, temporal_address: str, sim: Simulator, receiver: Receiver) -> None:
    site = install_bilibili_site(sim)
    sim.add_file("/v/new.mp4", MediaFile("mp4", "notify-new", 40_000))
    settings: Settings = make_settings(tmp_path, temporal_address, api=ApiSettings(port=free_port()),
                                       notify=NotifySettings(webhooks=[WebhookSettings(url=receiver.url,
                                                                                       secret="k")]))
    settings = settings.model_copy(update={"platforms": settings.platforms.model_copy(
        update={"bilibili": site.settings()})})
    async with serving(settings, temporal_client), running_worker(temporal_client, settings), \
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{settings.api.port}", timeout=30) as api:
        created = await api.post("/api/v1/watches", json={"name": "news", "urls": [sim.url("/v/new.mp4")],
                                                          "every": "1h", "paused": True})
        assert created.status_code == 201, created.text
        assert (await api.post("/api/v1/watches/news/trigger")).status_code == 202
        crawl = await api.post("/api/v1/crawls", json={"urls": [site.url(PRIVATE_VIDEO)]})
        assert crawl.status_code == 202, crawl.text

        def heard() -> set[str]:
            return {e["event"] for e in receiver.events()}

        await until(lambda: asyncio.to_thread(heard), "both events at the receiver", 90, every=0.3,
                    holds=lambda events: {"watch_item", "needs_person"} <= events)
    events = {e["event"]: e["data"] for e in receiver.events()}
    assert events["watch_item"]["watch"] == "news" and events["watch_item"]["url"] == sim.url("/v/new.mp4")
    assert events["watch_item"]["crawl_id"].startswith(f"crawl-{settings.temporal.task_queue_prefix}-watch-news-")
    person = events["needs_person"]
    assert person["error_class"] == "forbidden" and "62012" in person["message"] and person["stage"] == "fetch"
    for headers, body in receiver.received:
        assert headers["x-trawl-signature"] == signature("k", body)
