"""``trawl demo``: the simulator, the embedded stack, and a crawl whose results are checked."""

from __future__ import annotations

import sys

from trawl.cli.common import page_address, session
from trawl.cli.crawl import crawl_urls
from trawl.cli.output import result_line
from trawl.platforms.platform import Platform
from trawl.platforms.registry import PLATFORMS, build_registry
from trawl.settings import Settings
from trawl.simulator import Simulator
from trawl.storage.blobs import BlobStore, hash_blob, open_blob_store
from trawl.storage.catalog import Catalog
from trawl.contracts import DEMO_QUEUE_SUFFIX, ItemResult


def check_demo(results: list[ItemResult], expected: dict[str, tuple[str, str | None]], catalog: Catalog,
               blobs: BlobStore) -> list[str]:
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
                if not blobs.exists(asset.key) or hash_blob(blobs, asset.key)[0] != asset.sha256:
                    problems.append(f"{result.url}: blob {blobs.location(asset.key)} is missing or does not "
                                    "match its name")
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


def demo_platforms(platforms: tuple[Platform, ...] = PLATFORMS) -> list[Platform]:
    """The platforms with a demo, each on its own simulator: generic first, then by name."""
    *named, catch_all = platforms
    return [p for p in (catch_all, *sorted(named, key=lambda p: p.name)) if p.demo is not None]


def _spoken(words: list[str]) -> str:
    """``a, b and c``."""
    return f"{', '.join(words[:-1])} and {words[-1]}" if len(words) > 1 else "".join(words)


async def run_demo(settings: Settings, sim_port: int) -> int:
    """Crawl the generic demo site and the simulated platforms (ports sim_port, sim_port+1, ...)."""
    platforms = demo_platforms()
    sims: list[Simulator] = []
    try:
        for offset in range(len(platforms)):
            sims.append(Simulator(port=sim_port + offset).start())
    except OSError as err:
        for sim in sims:
            sim.stop()
        print(f"trawl demo: cannot listen on 127.0.0.1:{sim_port + len(sims)} ({err.strerror}); try --sim-port",
              file=sys.stderr)
        return 2
    try:
        demos = [platform.demo(sim) for platform, sim in zip(platforms, sims) if platform.demo is not None]
        cases = [case for demo in demos for case in demo.cases]
        # The simulators listen on loopback, which trawl refuses by default.
        platforms_settings = settings.platforms.model_copy(update={
            platform.name: demo.settings for platform, demo in zip(platforms, demos) if demo.settings is not None})
        # Its own task queues too: the demo's settings (loopback allowed, simulated platforms)
        # differ from a running deployment's, and workers on one queue must be interchangeable.
        temporal = settings.temporal.model_copy(
            update={"task_queue_prefix": settings.temporal.task_queue_prefix + DEMO_QUEUE_SUFFIX})
        settings = settings.model_copy(update={
            "net": settings.net.model_copy(update={"allow_private": True}), "platforms": platforms_settings,
            "temporal": temporal})
        registry = build_registry(settings.platforms)
        expected = {c.url: (c.expect, c.group) for c in cases}
        print(f"trawl demo: crawling {len(cases)} URLs: {_spoken([p.title for p in platforms])}, from simulators "
              f"on 127.0.0.1:{sim_port}-{sim_port + len(sims) - 1}\n")
        async with session(settings, worker=True, registry=registry) as client:
            results = await crawl_urls(client, settings, registry, list(expected),
                                       lambda r: print(result_line(r), flush=True))
    finally:
        for sim in sims:
            sim.stop()
    catalog = Catalog(settings.catalog_url)
    blobs = open_blob_store(settings)
    problems = check_demo(results, expected, catalog, blobs)
    blobs.close()
    counts: dict[str, int] = {}
    for result in results:
        counts[result.outcome] = counts.get(result.outcome, 0) + 1
    print()
    print("outcomes: " + ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())))
    print(f"catalog:  {catalog.count()} item(s) in {settings.catalog_url}")
    remote = settings.storage.url.startswith("s3://")
    print(f"blobs:    {settings.storage.url if remote else settings.blobs_dir.resolve()}")
    print(f"Web UI:   http://127.0.0.1:{settings.temporal.ui_port}/namespaces/{settings.temporal.namespace}/workflows"
          " (while `trawl up` or `trawl server` runs)")
    catalog.close()
    if problems:
        print("\ndemo FAILED:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    print("\ndemo OK: every item is stored once, under whatever URL form it was given; the failures are the "
          f"expected ones ({', '.join(demo.failures for demo in demos)}). Run it again: all duplicates.")
    return 0


def library_line(settings: Settings) -> str:
    """The demo's last line: where to see what it stored."""
    return (f"library:  {page_address(settings)} (run `trawl up`, then open it: browse, search and play what the "
            "demo stored; its failures are under Activity)")

