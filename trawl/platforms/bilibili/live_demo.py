"""A simulated Bilibili live room on loopback, to try recordings, live comments and watches offline.

``python3 -m trawl.platforms.bilibili.live_demo --port 18512 > room.env`` serves the simulated
Bilibili site (:mod:`.site`, with its rooms and comment server) and prints the settings that point
trawl at it, as ``export`` lines for a shell to source. Room 76 (long id 14073662) goes on air
``--after`` seconds after it is first asked about, for ``--length`` seconds, its audience sending
``--comments-per-second`` comments; then it is off air. Ctrl-C stops it.
"""

from __future__ import annotations

import argparse

from pydantic import BaseModel

from trawl.platforms.bilibili.room_site import ROOM_LONG, ROOM_SHORT
from trawl.platforms.bilibili.site import install_bilibili_site
from trawl.simulator import Simulator
from trawl.simulator.demo_site import serve_demo_site
from trawl.simulator.live_site import LiveStream


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m trawl.platforms.bilibili.live_demo", description=__doc__)
    parser.add_argument("--port", type=int, default=18512)
    parser.add_argument("--after", type=float, default=0.0, help="seconds from the first ask to the broadcast")
    parser.add_argument("--length", type=float, default=12.0, help="the broadcast's seconds")
    parser.add_argument("--comments-per-second", type=float, default=4.0)
    args = parser.parse_args(argv)

    def install(sim: Simulator) -> tuple[BaseModel, list[str]]:
        site = install_bilibili_site(sim)
        site.rooms.comments_per_second = args.comments_per_second
        site.rooms.go_live_when_asked(ROOM_LONG, LiveStream(length=args.length, window=9), after=args.after)
        return site.settings(), [f"# the room: {site.rooms.url(ROOM_SHORT)}"]

    return serve_demo_site(args.port, "bilibili", install)


if __name__ == "__main__":
    raise SystemExit(main())
