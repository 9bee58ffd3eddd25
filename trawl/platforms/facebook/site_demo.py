"""The simulated Facebook on loopback, to try its pages offline (docs/platforms.md runs it).

``python3 -m trawl.platforms.facebook.site_demo --port 18523 > facebook.env`` serves the
simulated Facebook site (:mod:`.site` and :mod:`.listing_site`: videos, reels, photos and the
profile tabs) and prints the settings that point trawl at it, as ``export`` lines for a shell to
source. Ctrl-C stops it.
"""

from __future__ import annotations

import argparse

from pydantic import BaseModel

from trawl.platforms.facebook.site import install_facebook_site
from trawl.simulator import Simulator
from trawl.simulator.demo_site import serve_demo_site


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m trawl.platforms.facebook.site_demo", description=__doc__)
    parser.add_argument("--port", type=int, default=18523)
    args = parser.parse_args(argv)

    def install(sim: Simulator) -> tuple[BaseModel, list[str]]:
        return install_facebook_site(sim).settings(), [f"# the site: {sim.base_url}"]

    return serve_demo_site(args.port, "facebook", install,
                           lambda name: name.endswith("_base") or name == "requests_per_second")


if __name__ == "__main__":
    raise SystemExit(main())
