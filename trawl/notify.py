"""Notifications: each configured webhook (``[[notify.webhooks]]``) gets a JSON POST for the events
it asks for; each Apprise URL (``[[notify.apprise]]``) a short message (:mod:`trawl.notify_apprise`).

Events (:data:`trawl.settings.NOTIFY_EVENTS`):

- ``watch_item``: a watch's run committed a new item (``data``: the watch, the run's crawl id, the
  item's key, title, uploader, platform, URL); sent by the worker that commits it.
- ``needs_person``: an item failed for good for a reason a person must fix (``login_required``,
  ``forbidden``, ``blocked_address``: cookies to give, an address to allow); sent by the worker
  whose activity failed, with the stage, the error class and message, the workflow id.
- ``live_recording``: a live recording committed (a part, or the broadcast's end: ``ended`` says
  why it ended), with its record (seconds, gaps).

The body: ``{"event", "id", "at", "data"}``. Headers: ``X-Trawl-Event``, ``X-Trawl-Delivery`` (the
id, the same on every retry of one event, so a receiver can drop repeats), and with a ``secret``
``X-Trawl-Signature: sha256=<HMAC-SHA256 of the body with the secret, hex>``.

Delivery is a background thread of the process (events wait in a bounded queue; past it they are
dropped and logged): a slow or dead receiver never holds a commit. A 2xx answer delivers; a
network error, 408, 429 or 5xx is tried again after 1 s, 2 s, 4 s ... (at most 60 s) up to the
webhook's ``attempts``; any other answer, or an address the guard refuses, gives up at once. An
event still queued when the process stops is lost: notifications say what happened, the catalog
and Temporal are the record.

A webhook's address passes the same guard as every request (:func:`trawl.http_client.make_client`):
loopback and private addresses are refused unless ``net.allow_private`` or ``net.allowed_networks``
allow them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import queue
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx

from trawl.errors import BlockedAddress, TrawlError
from trawl.logs import get_logger
from trawl.settings import AppriseSettings, NetSettings, Settings, WebhookSettings

log = get_logger(__name__)

MAX_QUEUED = 1000
MAX_BACKOFF_S = 60.0
RETRIED_STATUSES = frozenset({408, 429})
# The error classes a person must act on (cookies, an account, an address to allow).
NEEDS_PERSON = frozenset({"login_required", "forbidden", "paid_only", "blocked_address"})


def signature(secret: str, body: bytes) -> str:
    """The ``X-Trawl-Signature`` value of ``body``: ``sha256=`` and the HMAC's hex digest."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def payload(event: str, data: dict[str, Any], delivery: str | None = None) -> tuple[str, bytes]:
    """An event's delivery id and JSON body."""
    delivery = delivery or uuid.uuid4().hex
    body = {"event": event, "id": delivery, "at": datetime.now(UTC).isoformat(), "data": data}
    return delivery, json.dumps(body, ensure_ascii=False, default=str).encode()


def deliver(client: httpx.Client, hook: WebhookSettings, event: str, delivery: str, body: bytes,
            sleep: Callable[[float], None] = time.sleep) -> str:
    """POST one event to one webhook, retried as the module says. Returns what became of it:
    ``delivered``, ``refused`` (an answer not worth retrying, or an address the guard refuses)
    or ``gave up`` (attempts spent)."""
    headers = {"Content-Type": "application/json", "X-Trawl-Event": event, "X-Trawl-Delivery": delivery}
    if hook.secret:
        headers["X-Trawl-Signature"] = signature(hook.secret, body)
    wait = 1.0
    for attempt in range(1, hook.attempts + 1):
        try:
            answer = client.post(hook.url, content=body, headers=headers)
        except BlockedAddress as err:
            log.warning("webhook_refused", url=hook.url, notification=event, error=err.message)
            return "refused"
        except (httpx.TransportError, TrawlError) as err:
            problem = f"{type(err).__name__}: {err}"
        else:
            if answer.is_success:
                return "delivered"
            if answer.status_code not in RETRIED_STATUSES and answer.status_code < 500:
                log.warning("webhook_refused", url=hook.url, notification=event, status=answer.status_code)
                return "refused"
            problem = f"HTTP {answer.status_code}"
        if attempt < hook.attempts:
            log.info("webhook_retry", url=hook.url, notification=event, attempt=attempt, error=problem, wait_s=wait)
            sleep(wait)
            wait = min(wait * 2, MAX_BACKOFF_S)
    log.warning("webhook_gave_up", url=hook.url, notification=event, attempts=hook.attempts, error=problem)
    return "gave up"


def refusal(url: str, net: NetSettings) -> str | None:
    """Why the address guard refuses a webhook URL whose host is an address (None: it does not, or
    the host is a name: names are judged when connecting). Connects to nothing."""
    import ipaddress
    from urllib.parse import urlsplit

    from trawl.netguard import is_allowed

    host = urlsplit(url).hostname or ""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return None
    if net.allow_private or is_allowed(host, tuple(net.allowed_networks)):
        return None
    return f"{host} is not a public address (set net.allow_private or net.allowed_networks)"


Target = WebhookSettings | AppriseSettings


class Notifier:
    """The process's webhooks and Apprise URLs: ``emit`` queues an event for each that asks for it;
    a thread delivers them in order. Without any it does nothing."""

    def __init__(self, settings: Settings, sleep: Callable[[float], None] = time.sleep) -> None:
        self.hooks: list[Target] = [*settings.notify.webhooks, *settings.notify.apprise]
        self.net = settings.net
        self.sleep = sleep
        self.results: list[tuple[str, str, str]] = []  # (url, event, what became of it), the latest 100
        self._queue: queue.Queue[tuple[Target, str, str, bytes, dict[str, Any]] | None] = queue.Queue(MAX_QUEUED)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def emit(self, event: str, data: dict[str, Any]) -> None:
        hooks = [hook for hook in self.hooks if not hook.events or event in hook.events]
        if not hooks:
            return
        delivery, body = payload(event, data)
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="trawl-webhooks", daemon=True)
                self._thread.start()
        for hook in hooks:
            try:
                self._queue.put_nowait((hook, event, delivery, body, data))
            except queue.Full:
                log.warning("webhook_dropped", url=_shown(hook), notification=event, why=f"{MAX_QUEUED} events queued")

    def close(self, timeout: float = 5.0) -> None:
        """Deliver what is queued, waiting at most ``timeout`` seconds, then stop the thread."""
        with self._lock:
            thread = self._thread
            self._thread = None
        if thread is None:
            return
        self._queue.put(None)
        thread.join(timeout)

    def _run(self) -> None:
        from trawl.http_client import make_client
        from trawl.notify_apprise import send

        with make_client(self.net) as client:
            while (job := self._queue.get()) is not None:
                hook, event, delivery, body, data = job
                try:
                    outcome = (deliver(client, hook, event, delivery, body, self.sleep)
                               if isinstance(hook, WebhookSettings) else send(hook, self.net, event, data, self.sleep))
                except Exception as err:  # noqa: BLE001 - the thread must go on with the next event
                    log.warning("webhook_failed", url=_shown(hook), notification=event,
                                error=f"{type(err).__name__}: {err}")
                    outcome = "failed"
                self.results = [*self.results[-99:], (_shown(hook), event, outcome)]


def _shown(hook: Target) -> str:
    """A target's URL as logs show it: an Apprise URL without its scheme's secrets (tokens, passwords)."""
    from trawl.notify_apprise import shown

    return hook.url if isinstance(hook, WebhookSettings) else shown(hook.url)


def watch_of(crawl_id: str, prefix: str) -> str | None:
    """The watch whose run ``crawl_id`` is (``crawl-<prefix>-watch-<name>-<second due>``), or None."""
    start = f"crawl-{prefix}-watch-"
    if not crawl_id.startswith(start):
        return None
    # the second due is ISO (2026-12-05T10:00:00Z): three dashes of its own
    name = crawl_id[len(start):]
    for _ in range(3):
        name = name.rpartition("-")[0]
    return name or None
