"""Serve a simulated platform on loopback for a person to try it (each platform's ``site_demo`` /
``live_demo`` module): print the settings that point trawl at it, as ``export`` lines a shell
sources, then serve until SIGINT or SIGTERM."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

from pydantic import BaseModel

from trawl.simulator.server import Simulator


def serve_demo_site(port: int, section: str, install: Callable[[Simulator], tuple[BaseModel, list[str]]],
                    exported: Callable[[str], bool] = lambda name: name.endswith("_base")) -> int:
    """``install`` sets the site up on the simulator and answers its platform settings and the
    comment lines to print after them; ``exported`` picks the settings printed (``section``'s)."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with Simulator(port=port) as sim:
        settings, comments = install(sim)
        for name, value in settings.model_dump().items():
            if exported(name):
                print(f"export TRAWL_PLATFORMS__{section.upper()}__{name.upper()}={value}")
        print("export TRAWL_NET__ALLOW_PRIVATE=true  # the simulator is on 127.0.0.1")
        print("\n".join(comments), flush=True)
        while not stop.wait(1.0):
            pass
    return 0
