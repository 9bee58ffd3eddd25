"""Media behind expiring signed URLs, the way platform CDNs serve it.

A URL carries an expiry in the parameter its platform's site names (``deadline=<unix s>``,
``Expires=<unix s>``, ``oe=<hex unix s>``...) and a signature over path and expiry. Past the expiry
the CDN answers 403 ``URL signature expired``; a wrong signature or a missing Referer (when
one is required) is a plain 403.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass
from urllib.parse import urlencode

from trawl.simulator.media import MediaFile
from trawl.simulator.server import FileBehaviour, Request, Response, Simulator


@dataclass
class _Entry:
    media: MediaFile
    behaviour: FileBehaviour


class SignedMedia:
    def __init__(self, sim: Simulator, prefix: str, *, ttl: float = 7200, expiry_param: str = "deadline",
                 hex_expiry: bool = False, sig_param: str = "upsig", require_referer: str | None = None,
                 secret: bytes = b"trawl-simulator") -> None:
        self.sim = sim
        self.prefix = prefix.rstrip("/")
        self.ttl = ttl
        self.expiry_param = expiry_param
        self.hex_expiry = hex_expiry
        self.sig_param = sig_param
        self.require_referer = require_referer
        self.secret = secret
        self.files: dict[str, _Entry] = {}
        self.forbidden = 0  # 403s answered, for tests
        sim.add_route(rf"{self.prefix}/(?P<name>.+)", self._serve)

    def add(self, name: str, media: MediaFile, behaviour: FileBehaviour | None = None) -> FileBehaviour:
        behaviour = behaviour or FileBehaviour()
        self.files[name] = _Entry(media, behaviour)
        return behaviour

    def _sign(self, name: str, expiry: int) -> str:
        return hmac.new(self.secret, f"{name}:{expiry}".encode(), hashlib.sha256).hexdigest()[:32]

    def url(self, name: str, ttl: float | None = None, **extra: str) -> str:
        expiry = int(time.time() + (self.ttl if ttl is None else ttl))
        shown = format(expiry, "x") if self.hex_expiry else str(expiry)
        query = urlencode({**extra, self.expiry_param: shown, self.sig_param: self._sign(name, expiry)})
        return self.sim.url(f"{self.prefix}/{name}?{query}")

    def _serve(self, req: Request) -> Response:
        name = req.match.group("name") if req.match else ""
        entry = self.files.get(name)
        if entry is None:
            return Response(404, {"Content-Type": "text/plain"}, b"not found")
        shown = req.arg(self.expiry_param) or ""
        try:
            expiry = int(shown, 16) if self.hex_expiry else int(shown)
        except ValueError:
            expiry = -1
        if not hmac.compare_digest(req.arg(self.sig_param) or "", self._sign(name, expiry)):
            self.forbidden += 1
            return Response(403, {"Content-Type": "text/plain"}, b"Bad signature")
        if time.time() > expiry:
            self.forbidden += 1
            return Response(403, {"Content-Type": "text/plain"}, b"URL signature expired")
        if self.require_referer and not req.headers.get("referer", "").startswith(self.require_referer):
            self.forbidden += 1
            return Response(403, {"Content-Type": "text/plain"}, b"Forbidden: Referer required")
        return self.sim.serve_media(req, entry.media, entry.behaviour)
