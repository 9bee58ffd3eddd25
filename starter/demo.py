"""``trawl demo``: the simulator, the embedded stack, and a crawl whose results are checked."""

from __future__ import annotations

import sys
from pathlib import Path

from starter.cli import crawl_urls, result_line, session
from trawl.download import file_sha256
from trawl.platforms.registry import build_registry
from trawl.settings import Settings
from trawl.simulator import Simulator
from trawl.simulator.demo import install_demo_site
from trawl.storage.catalog import Catalog
from workflows.media_item import ItemResult


def check_demo(results: list[ItemResult], expected: dict[str, tuple[str, str | None]], catalog: Catalog) -> list[str]:
    """Compare a demo crawl with what it should give; return the problems found."""
    problems: list[str] = []
    groups: dict[str, set[str | None]] = {}
    committed_keys: set[str] = set()
    for result in results:
        expect, group = expected[result.url]
        if expect == "committed":
            if result.outcome not in ("committed", "duplicate"):
                problems.append(f"{result.url}: {result.outcome} ({result.error_class}: {result.error}), expected it stored")
                continue
            committed_keys.add(result.canonical_key or "")
            for asset in result.assets:
                path = Path(asset.path)
                if not path.is_file() or path.name != asset.sha256 or file_sha256(path) != asset.sha256:
                    problems.append(f"{result.url}: blob {asset.path} is missing or does not match its name")
        elif result.outcome != "failed" or result.error_class != expect:
            problems.append(f"{result.url}: {result.outcome}/{result.error_class}, expected failed/{expect}")
        if group:
            groups.setdefault(group, set()).add(result.canonical_key)
    for group, keys in groups.items():
        if len(keys) != 1:
            problems.append(f"URL forms of one item ({group}) gave {len(keys)} canonical keys")
    for key in committed_keys:
        if catalog.get(key) is None:
            problems.append(f"{key} is not in the catalog")
    return problems


async def run_demo(settings: Settings, sim_port: int) -> int:
    # The simulator listens on loopback, which trawl refuses by default.
    settings = settings.model_copy(update={"net": settings.net.model_copy(update={"allow_private": True})})
    registry = build_registry(settings.platforms)
    try:
        sim = Simulator(port=sim_port)
    except OSError as err:
        print(f"trawl demo: cannot listen on 127.0.0.1:{sim_port} ({err.strerror}); try --sim-port", file=sys.stderr)
        return 2
    with sim:
        cases = install_demo_site(sim)
        expected = {sim.url(c.path): (c.expect, c.group) for c in cases}
        print(f"trawl demo: crawling {len(cases)} URLs from the simulator at {sim.base_url}\n")
        async with session(settings, worker=True, registry=registry) as client:
            results = await crawl_urls(client, settings, registry, list(expected),
                                       lambda r: print(result_line(r), flush=True))
    catalog = Catalog(settings.catalog_url)
    problems = check_demo(results, expected, catalog)
    counts: dict[str, int] = {}
    for result in results:
        counts[result.outcome] = counts.get(result.outcome, 0) + 1
    print()
    print("outcomes: " + ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())))
    print(f"catalog:  {catalog.count()} item(s) in {settings.catalog_url}")
    print(f"blobs:    {settings.blobs_dir.resolve()}")
    print(f"Web UI:   http://127.0.0.1:{settings.temporal.ui_port}/namespaces/{settings.temporal.namespace}/workflows"
          " (while `trawl up` or `trawl server` runs)")
    catalog.close()
    if problems:
        print("\ndemo FAILED:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    print("\ndemo OK: every item is stored once; the 404 failed as not_found. Run it again: all duplicates.")
    return 0
