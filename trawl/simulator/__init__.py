"""trawl's simulator of the web it crawls: a real HTTP server on loopback.

It serves generated media files (real container headers, deterministic bytes, any size) with
Range, ETag/If-Range, Last-Modified and HEAD, HTML pages that point at them, and per-file
behaviours (throttling, cut bodies, changing content, expiring URLs) for the failure paths.
Sites (the demo's here, each platform's in its module's ``site``) install their routes through
:meth:`Simulator.add_route`.
"""

from trawl.simulator.media import MediaFile
from trawl.simulator.server import FileBehaviour, Request, Response, Simulator

__all__ = ["FileBehaviour", "MediaFile", "Request", "Response", "Simulator"]
