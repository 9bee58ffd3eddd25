"""The simulated Weibo on loopback, to try its posts offline (docs/platforms.md runs it).

``python3 -m trawl.platforms.weibo.site_demo --port 18522 > weibo.env`` serves the simulated
Weibo site (:mod:`.site`, with its Live Photo, mixed-media and long-text posts) and prints the
settings that point trawl at it, as ``export`` lines for a shell to source, then the posts' URLs
as comments. Ctrl-C stops it.
"""

from __future__ import annotations

import argparse

from pydantic import BaseModel

from trawl.platforms.weibo.site import install_weibo_site
from trawl.simulator import Simulator
from trawl.simulator.demo_site import serve_demo_site


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m trawl.platforms.weibo.site_demo", description=__doc__)
    parser.add_argument("--port", type=int, default=18522)
    args = parser.parse_args(argv)

    def install(sim: Simulator) -> tuple[BaseModel, list[str]]:
        site = install_weibo_site(sim)
        posts = [f"# {key}: {sim.url(f'/{post.uid}/{post.mblogid}')}" for key, post in site.posts.items()]
        return site.settings(), [*posts, "# the posts"]

    return serve_demo_site(args.port, "weibo", install, lambda name: name.endswith("_base") or name == "referer")


if __name__ == "__main__":
    raise SystemExit(main())
