"""A download in segments whose signed URL expires keeps its bytes across the re-fetch (`trawl crawl`)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_cli import records, run, trawl_env
from trawl.download import file_sha256
from trawl.simulator import MediaFile, Request, Response, Simulator
from trawl.simulator.demo import og_page

MiB = 1 << 20
SIZE = 8 * MiB  # four segments of 2 MiB
CUT = 1 * MiB  # every answer of the first URL stops after this many bytes


def test_segments_survive_a_url_expired_refetch(sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    media = MediaFile("mp4", "segmented-signed", SIZE)
    issued: list[int] = []
    first_url_answers: list[str | None] = []

    def page(req: Request) -> Response:
        issued.append(len(issued) + 1)
        return Response(200, {"Content-Type": "text/html"}, og_page("Signed", f"/seg/{issued[-1]}.mp4").encode())

    def signed(req: Request) -> Response:
        token = int(req.match.group("token"))  # type: ignore[union-attr]
        if token < issued[-1] or (token == 1 and len(first_url_answers) >= 4):
            return Response(403, {"Content-Type": "text/plain"}, b"URL signature expired")
        answer = sim.serve_media(req, media)
        if token == 1:
            # The first URL gives each of the four segments half its bytes, then dies and expires:
            # the next requests are refused as signed URLs are when their signature ran out.
            first_url_answers.append(req.headers.get("range"))
            answer.cut_at = CUT
        return answer

    sim.add_exact("/p/seg", page)
    sim.add_route(r"/seg/(?P<token>\d+)\.mp4", signed)
    env = trawl_env(tmp_path, temporal_address, TRAWL_DOWNLOAD__SEGMENTS="4", TRAWL_DOWNLOAD__SEGMENT_MIN_SIZE="1MiB",
                    TRAWL_DOWNLOAD__SPLIT_AFTER="0s", TRAWL_DOWNLOAD__SMALL_ITEM_SIZE="0",
                    TRAWL_RETRY__DOWNLOAD__INITIAL_INTERVAL="100ms", TRAWL_RETRY__FETCH__INITIAL_INTERVAL="100ms")
    done = run(["crawl", "--json", sim.url("/p/seg")], env, tmp_path, timeout=180)
    assert done.returncode == 0, done.stderr
    [item] = records(done.stdout)
    assert item["outcome"] == "committed", item
    assert item["assets"][0]["sha256"] == media.sha256() == file_sha256(Path(item["assets"][0]["path"]))
    assert len(issued) == 2  # the page was fetched again for a fresh URL
    assert len(first_url_answers) == 4  # the run was split in four before the URL expired
    kept = sim.bytes_sent("/seg/1.mp4")
    fresh = sim.bytes_sent("/seg/2.mp4")
    assert kept >= 3 * MiB  # most of the four halves reached the disk before the cut
    # The fresh URL serves only what was missing: the segments were kept, not started over.
    assert fresh <= SIZE - kept + 64 * 1024, (kept, fresh)
    assert all(r is not None and not r.startswith("bytes=0-") for r in sim.stats["/seg/2.mp4"].ranges), \
        sim.stats["/seg/2.mp4"].ranges
