"""The package's layers, as an import graph: data flows one way and nothing imports upward.

From the bottom: the domain core (``trawl``'s own modules, ``trawl.storage``, ``trawl.platforms``,
``trawl.simulator``; it never imports ``temporalio``), ``trawl.contracts`` (what crosses
Temporal), ``trawl.activities``, ``trawl.workflows``, ``trawl.worker``, ``trawl.starter`` (the
Temporal client side: starting, reading, the embedded server) and, on top, ``trawl.cli`` and
``trawl.api``. A module imports its own layer and those below, lazily imported modules included.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "trawl"
LAYERS = ("core", "contracts", "activities", "workflows", "worker", "starter", "top")


def layer(module: str) -> str:
    part = module.split(".")[1] if module.count(".") else ""
    return {"contracts": "contracts", "activities": "activities", "workflows": "workflows", "worker": "worker",
            "starter": "starter", "cli": "top", "api": "top"}.get(part, "core")


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
