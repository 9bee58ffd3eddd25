"""The package's layers, as an import graph: data flows one way and nothing imports upward.

From the bottom: the domain core (``trawl``'s own modules, ``trawl.storage``, ``trawl.platforms``,
``trawl.simulator``; it never imports ``temporalio``), ``trawl.contracts`` (what crosses
Temporal), ``trawl.activities``, ``trawl.workflows``, ``trawl.worker``, ``trawl.starter`` (the
Temporal client side: starting, reading, the embedded server) and, on top, ``trawl.cli`` and
``trawl.api`` with the web page it serves (``trawl.web``). A module imports its own layer and those below, lazily imported modules included.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "trawl"
LAYERS = ("core", "contracts", "activities", "workflows", "worker", "starter", "top")


def layer(module: str) -> str:
    part = module.split(".")[1] if module.count(".") else ""
    return {"contracts": "contracts", "activities": "activities", "workflows": "workflows", "worker": "worker",
            "starter": "starter", "cli": "top", "api": "top", "web": "top"}.get(part, "core")


def imports() -> dict[str, set[str]]:
    """Every module of the package and the modules it imports (absolute imports, anywhere in it)."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
        found[module] = names
    return found


def upward(graph: dict[str, set[str]]) -> list[str]:
    rank = {name: i for i, name in enumerate(LAYERS)}
    return sorted(f"{module} ({layer(module)}) imports {name} ({layer(name)})"
                  for module, names in graph.items() for name in names
                  if name.split(".")[0] == "trawl" and rank[layer(name)] > rank[layer(module)])


def test_nothing_imports_upward() -> None:
    assert upward(imports()) == []


def test_the_domain_core_imports_no_temporal() -> None:
    graph = imports()
    core = {m for m in graph if layer(m) == "core"}
    assert len(core) > 40  # the walk found the package
    assert sorted(f"{m} imports {n}" for m in core for n in graph[m] if n.split(".")[0] == "temporalio") == []


def test_contracts_import_only_the_core() -> None:
    assert {layer(n) for n in imports()["trawl.contracts"] if n.startswith("trawl.")} == {"core"}


def test_the_check_bites() -> None:
    graph = {"trawl.download": {"trawl.workflows.media_item"}, "trawl.cli.crawl": {"trawl.download"},
             "trawl.activities.crawl": {"trawl.contracts", "trawl.workflows.crawl"}}
    assert upward(graph) == [
        "trawl.activities.crawl (activities) imports trawl.workflows.crawl (workflows)",
        "trawl.download (core) imports trawl.workflows.media_item (workflows)",
    ]


def cycles(graph: dict[str, set[str]], package: str) -> list[str]:
    """Import cycles among ``package`` and its modules, each as ``a -> b -> ... -> a``."""
    inside = {m for m in graph if m == package or m.startswith(package + ".")}
    found: set[str] = set()

    def walk(module: str, path: list[str]) -> None:
        for name in sorted(graph.get(module, set()) & inside):
            if name in path:
                loop = path[path.index(name):]
                start = loop.index(min(loop))  # one spelling per cycle, whichever module it was met from
                found.add(" -> ".join(loop[start:] + loop[:start] + [min(loop)]))
            else:
                walk(name, [*path, name])

    for module in sorted(inside):
        walk(module, [module])
    return sorted(found)


def reached(graph: dict[str, set[str]], module: str, package: str) -> set[str]:
    """The modules of ``package`` that ``module`` imports, directly or through others of it."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        for name in graph.get(todo.pop(), set()):
            if name.startswith(package + ".") and name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


def test_the_download_package_has_no_import_cycle() -> None:
    graph = imports()
    assert {"trawl.download.state", "trawl.download.http", "trawl.download.hls"} <= set(graph)
    assert cycles(graph, "trawl.download") == []


def test_hls_shares_the_primitives_and_nothing_of_the_http_downloaders() -> None:
    assert reached(imports(), "trawl.download.hls", "trawl.download") <= {
        "trawl.download.state", "trawl.download.throttle", "trawl.download.fastpath"}


def test_the_cycle_check_bites() -> None:
    graph = {"trawl.download": {"trawl.download.http"}, "trawl.download.http": {"trawl.download.segmented"},
             "trawl.download.segmented": {"trawl.download.state", "trawl.download.http"},
             "trawl.download.hls": {"trawl.download.state", "trawl.errors"}, "trawl.download.state": set()}
    assert cycles(graph, "trawl.download") == ["trawl.download.http -> trawl.download.segmented -> trawl.download.http"]
    assert reached(graph, "trawl.download", "trawl.download") == {
        "trawl.download.http", "trawl.download.segmented", "trawl.download.state"}
