"""Apprise URLs (trawl.notify_apprise) against a receiver on 127.0.0.1: json:// and form:// messages
sent by the apprise library, retried when the receiver fails, refused by the address guard before
anything is sent, URLs apprise cannot read refused in the settings, and the Notifier sending one
event to a webhook and an Apprise URL alike."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

import apprise
import pytest

from tests.conftest import make_settings
from tests.polling import wait_until
from tests.trawl.test_notify import Receiver
from trawl.notify import Notifier
from trawl.notify_apprise import send, shown, summary, targets
from trawl.settings import AppriseSettings, NetSettings, NotifySettings, WebhookSettings

LOOPBACK_ALLOWED = NetSettings(allowed_networks=["127.0.0.0/8"])
NO_WAIT = {"sleep": lambda _: None}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    yield server
    server.server.shutdown()


def apprise_url(receiver: Receiver, scheme: str = "json") -> str:
    return receiver.url.replace("http://", f"{scheme}://", 1)


def test_a_json_message_reaches_the_receiver(receiver: Receiver) -> None:
    target = AppriseSettings(url=apprise_url(receiver))
    data = {"watch": "news", "title": "春天的两张照片", "canonical_key": "bilibili:BV1"}
    assert send(target, LOOPBACK_ALLOWED, "watch_item", data, **NO_WAIT) == "delivered"
    (headers, body), = receiver.received
    message = json.loads(body)
    assert message["title"] == "trawl: watch_item" and message["message"] == "watch news: new item 春天的两张照片"


def test_a_form_message_and_retries_when_the_receiver_fails(receiver: Receiver) -> None:
    receiver.answers = [500, 503]
    target = AppriseSettings(url=apprise_url(receiver, "form"), attempts=3)
    data = {"error_class": "login_required", "message": "give cookies", "workflow_id": "item-1"}
    assert send(target, LOOPBACK_ALLOWED, "needs_person", data, **NO_WAIT) == "delivered"
    assert len(receiver.received) == 3
    form = parse_qs(receiver.received[-1][1].decode())
    assert form["message"] == ["login_required: give cookies (item-1)"]
    receiver.answers = [500] * 2
    assert send(AppriseSettings(url=apprise_url(receiver), attempts=2), LOOPBACK_ALLOWED, "watch_item", {},
                **NO_WAIT) == "gave up"


def test_the_address_guard_refuses_a_target_before_apprise_sends(receiver: Receiver) -> None:
    target = AppriseSettings(url=apprise_url(receiver), attempts=3)
    assert send(target, NetSettings(allow_private=False), "watch_item", {}, **NO_WAIT) == "refused"
    assert receiver.received == []
    assert send(target, NetSettings(allow_private=True), "watch_item", {}, **NO_WAIT) == "delivered"


def test_what_an_apprise_url_sends_to() -> None:
    def of(url: str) -> list[tuple[str, int]]:
        return targets(apprise.Apprise.instantiate(url))

    assert of("tgram://123456789:abcdefg_hijklmnop/12315544/") == [("api.telegram.org", 443)]  # the service's own
    assert of("json://127.0.0.1:8080/path") == [("127.0.0.1", 8080)]
    assert of("jsons://hooks.example.com/x") == [("hooks.example.com", 443)]
    assert of("ntfys://ntfy.example.org/topic") == [("ntfy.example.org", 443)]
    assert "secret" not in shown("json://user:secret@127.0.0.1:8080/path")


def test_settings_refuse_what_apprise_cannot_read() -> None:
    with pytest.raises(ValueError, match="not an Apprise URL"):
        AppriseSettings(url="nosuchscheme://host/x")
    with pytest.raises(ValueError, match="not an Apprise URL"):
        AppriseSettings(url="just text")
    with pytest.raises(ValueError, match="unknown event"):
        AppriseSettings(url="json://127.0.0.1/x", events=["everything"])


def test_the_notifier_sends_an_event_to_webhooks_and_apprise_urls(receiver: Receiver, tmp_path: Path) -> None:
    chat = Receiver()
    settings = make_settings(tmp_path, "127.0.0.1:1", notify=NotifySettings(
        webhooks=[WebhookSettings(url=receiver.url)],
        apprise=[AppriseSettings(url=apprise_url(chat), events=["live_recording"]),
                 AppriseSettings(url=apprise_url(chat, "form"), events=["watch_item"])]))
    notifier = Notifier(settings)
    notifier.emit("live_recording", {"title": "room 1", "ended": "offline"})
    notifier.close()
    wait_until(lambda: len(receiver.received) == 1 and len(chat.received) == 1, "both deliveries")
    assert json.loads(chat.received[0][1])["message"] == "live recording room 1 ended: offline"
    assert [outcome for _, _, outcome in notifier.results] == ["delivered", "delivered"]
    chat.server.shutdown()


def test_a_summary_is_one_bounded_line() -> None:
    title, body = summary("watch_item", {"watch": "w", "title": "a\nb" + "x" * 5000})
    assert title == "trawl: watch_item" and "\n" not in body and len(body) <= 1000


def test_a_redirect_is_not_followed_past_the_guard() -> None:
    elsewhere = Receiver()  # where a redirect would lead: an address the guard never saw

    class Redirecting(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server name
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(307)
            self.send_header("Location", elsewhere.url)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    target = AppriseSettings(url=f"json://127.0.0.1:{server.server_address[1]}/hook?redirect=yes", attempts=1)
    assert send(target, LOOPBACK_ALLOWED, "watch_item", {}, **NO_WAIT) == "gave up"
    assert elsewhere.received == []
    server.shutdown()
    elsewhere.server.shutdown()
