"""Apprise URLs as notifications (``[[notify.apprise]]``): a short message for each event a webhook
would get (:mod:`trawl.notify`), sent by the apprise library to whatever its URL names
(``json://`` and ``form://`` a POST to a host of your own, ``ntfys://``, ``tgram://``,
``mailtos://``, ... : https://github.com/caronc/apprise/wiki).

apprise sends with its own client (requests, or SMTP), not trawl's guarded one; so before each
message the host it would send to is put to the address guard (:func:`trawl.netguard.check_host`,
as ``net.allow_private`` and ``net.allowed_networks`` say): the service's own API host for a URL
whose plugin always sends to one (``tgram://`` goes to ``api.telegram.org``), else the host the URL
names (``json://HOST``, ``ntfys://HOST``, ``mailtos://``' SMTP host). A URL whose target cannot be
told is refused. The message: ``title`` ``trawl: <event>``, ``body`` one line about it (the JSON
``data`` of a webhook is not sent: a chat is read by people).

Delivery is the webhooks' thread and schedule (:class:`trawl.notify.Notifier`): a failed send is
tried again after 1 s, 2 s, 4 s ... (at most 60 s) up to the URL's ``attempts``; a refused target
gives up at once. A URL's secrets (tokens, passwords) never reach the logs: apprise's private form
of the URL is logged instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from trawl.errors import BlockedAddress, NetworkError
from trawl.logs import get_logger
from trawl.netguard import check_host

if TYPE_CHECKING:
    from trawl.settings import AppriseSettings, NetSettings

log = get_logger(__name__)

MAX_BACKOFF_S = 60.0
MAX_BODY_CHARS = 1000


def _plugin(url: str) -> Any:
    import apprise

    return apprise.Apprise.instantiate(url, suppress_exceptions=True)


def check_apprise_url(url: str) -> None:
    """Refuse a URL apprise cannot read (an unknown scheme, a missing token).

    Raises:
        ValueError: saying so, with the scheme only (the rest may hold a token).
    """
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if not scheme or _plugin(url) is None:
        raise ValueError(f"not an Apprise URL apprise can read ({scheme + '://...' if scheme else 'no scheme'}): "
                         "see https://github.com/caronc/apprise/wiki for the forms")


def shown(url: str) -> str:
    """``url`` as the logs show it: apprise's private form (tokens and passwords hidden)."""
    plugin = _plugin(url)
    return plugin.url(privacy=True) if plugin is not None else url.split("://", 1)[0] + "://..."


def targets(plugin: Any) -> list[tuple[str, int]]:
    """The hosts (and ports) ``plugin`` sends to; [] when they cannot be told."""
    fixed = getattr(type(plugin), "notify_url", None)
    if isinstance(fixed, str) and "{" not in fixed and urlsplit(fixed).hostname:
        parts = urlsplit(fixed)
        return [(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))]
    found = []
    default = 443 if getattr(plugin, "secure", False) else 80
    for attribute in ("host", "smtp_host"):
        host = getattr(plugin, attribute, None)
        if isinstance(host, str) and host:
            found.append((host, int(getattr(plugin, "port", None) or default)))
    return found


def summary(event: str, data: dict[str, Any]) -> tuple[str, str]:
    """An event's title and one line about it."""
    what = data.get("title") or data.get("canonical_key") or data.get("key") or ""
    if event == "watch_item":
        body = f"watch {data.get('watch')}: new item {what}".strip()
    elif event == "needs_person":
        body = f"{data.get('error_class')}: {data.get('message') or ''} ({data.get('workflow_id') or what})"
    elif event == "live_recording":
        body = f"live recording {what}" + (f" ended: {data['ended']}" if data.get("ended") else "")
    else:
        body = f"{event}: {what}"
    return f"trawl: {event}", " ".join(body.split())[:MAX_BODY_CHARS]


def send(target: AppriseSettings, net: NetSettings, event: str, data: dict[str, Any],
         sleep: Callable[[float], None] = time.sleep) -> str:
    """Send one event's message to one Apprise URL. Returns ``delivered``, ``refused`` (the guard
    refused its target, or apprise cannot read it) or ``gave up`` (attempts spent)."""
    plugin = _plugin(target.url)
    if plugin is None:
        return "refused"
    private = plugin.url(privacy=True)
    hosts = targets(plugin)
    try:
        if not hosts:
            raise BlockedAddress(f"{private}: cannot tell which host it sends to")
        for host, port in hosts:
            check_host(host, port, allow_private=net.allow_private, allowed_networks=tuple(net.allowed_networks))
    except (BlockedAddress, NetworkError) as err:
        log.warning("apprise_refused", url=private, notification=event, error=err.message)
        return "refused"
    # A redirect would lead past the guard to an address it never saw: not followed (apprise's
    # own switch, which its HTTP plugins read).
    plugin.redirects = False
    title, body = summary(event, data)
    wait = 1.0
    for attempt in range(1, target.attempts + 1):
        if plugin.notify(body=body, title=title):
            return "delivered"
        if attempt < target.attempts:
            log.info("apprise_retry", url=private, notification=event, attempt=attempt, wait_s=wait)
            sleep(wait)
            wait = min(wait * 2, MAX_BACKOFF_S)
    log.warning("apprise_gave_up", url=private, notification=event, attempts=target.attempts)
    return "gave up"


__all__ = ["check_apprise_url", "send", "shown", "summary", "targets"]
