"""The package's layers, as an import graph: data flows one way and nothing imports upward.

From the bottom: the domain core (``trawl``'s own modules, ``trawl.storage``, ``trawl.platforms``,
``trawl.simulator``; it never imports ``temporalio``), ``trawl.contracts`` (what crosses
Temporal: data and names) with ``trawl.routing`` (the core's answers made into contracts),
``trawl.activities``, ``trawl.workflows``, ``trawl.worker``, ``trawl.starter`` (the Temporal
client side: starting, reading, the embedded server) and, on top, ``trawl.cli`` and
``trawl.api`` with the web page it serves (``trawl.web``). A module imports its own layer and those below, lazily imported modules included.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "trawl"
LAYERS = ("core", "contracts", "activities", "workflows", "worker", "starter", "top")


def layer(module: str) -> str:
    part = module.split(".")[1] if module.count(".") else ""
    return {"contracts": "contracts", "routing": "contracts", "activities": "activities", "workflows": "workflows",
            "worker": "worker", "starter": "starter", "cli": "top", "api": "top", "web": "top"}.get(part, "core")


def _modules() -> dict[str, Path]:
    return {".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): path
            for path in PACKAGE.rglob("*.py")}


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def module_imports(module: str, source: str, modules: set[str], package: bool = False) -> set[str]:
    """The modules ``module`` imports, anywhere in it (a function's imports run at its first call),
    but not under ``if TYPE_CHECKING:``, which never runs. ``from a import b`` is an import of
    ``a.b`` where that is a module; a relative import is made absolute."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for other in child.orelse:
                    visit_one(other)
            else:
                visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: len(module.split(".")) - node.level + (1 if package else 0)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                names.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
        visit(node)

    visit(ast.parse(source))
    return names


def imports() -> dict[str, set[str]]:
    """Every module of the package and the modules it imports (see :func:`module_imports`)."""
    modules = _modules()
    return {module: module_imports(module, path.read_text(), set(modules), path.name == "__init__.py")
            for module, path in modules.items()}


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
    assert {layer(n) for n in imports()["trawl.routing"] if n.startswith("trawl.")} == {"core", "contracts"}


def test_contracts_are_data_and_names() -> None:
    """What crosses Temporal depends on no store, registry or settings: it is data and names."""
    assert sorted(n for n in imports()["trawl.contracts"] if n.startswith("trawl.")) == ["trawl.errors", "trawl.models"]


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


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: each a set of modules that all reach one another (a
    strongly connected component of two or more, or a module importing itself), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        # Tarjan's algorithm without recursion: (module, the names it has still to visit).
        work = [(root, iter(sorted(graph[root] & graph.keys())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            module, todo = work[-1]
            name = next(todo, None)
            if name is not None:
                if name not in index:
                    index[name] = low[name] = len(index)
                    stack.append(name)
                    work.append((name, iter(sorted(graph[name] & graph.keys()))))
                elif name in stack:
                    low[module] = min(low[module], index[name])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                part = stack[stack.index(module):]
                del stack[stack.index(module):]
                if len(part) > 1 or module in graph[module]:
                    found.append(sorted(part))
    return sorted(found)


def test_the_package_has_no_import_circle() -> None:
    """A module's lazy imports count (they run at the first call); ``TYPE_CHECKING`` ones do not."""
    assert [" <-> ".join(circle) for circle in circles(imports())] == []


def test_the_circle_check_bites() -> None:
    graph = {"trawl.errors": {"trawl.platforms.registry"}, "trawl.platforms.registry": {"trawl.platforms.base"},
             "trawl.platforms.base": {"trawl.http_client", "trawl.errors"}, "trawl.http_client": {"trawl.errors"},
             "trawl.api": {"trawl.web"}, "trawl.web": {"trawl.api"}, "trawl.urls": {"trawl.urls"}, "trawl.text": set()}
    assert circles(graph) == [["trawl.api", "trawl.web"],
                              ["trawl.errors", "trawl.http_client", "trawl.platforms.base", "trawl.platforms.registry"],
                              ["trawl.urls"]]


def test_imports_are_read_as_they_run() -> None:
    source = """
from __future__ import annotations
from typing import TYPE_CHECKING
from trawl import web, __version__
from trawl.platforms import base
from . import urls
if TYPE_CHECKING:
    from trawl.settings import Settings
else:
    import trawl.text

def late():
    from trawl.platforms.registry import PLATFORMS
"""
    modules = {"trawl", "trawl.web", "trawl.platforms", "trawl.platforms.base", "trawl.platforms.registry",
               "trawl.urls", "trawl.settings", "trawl.text", "trawl.errors"}
    assert module_imports("trawl.errors", source, modules) - {"__future__", "typing"} == {
        "trawl", "trawl.web", "trawl.platforms.base", "trawl.urls", "trawl.text", "trawl.platforms.registry"}
    graph = imports()
    assert "trawl.web" in graph["trawl.api"]  # from trawl import web: the web page's layer, not the core's
    assert "trawl.settings" not in graph["trawl.http_client"]  # a TYPE_CHECKING import


def test_the_http_client_loads_no_platform() -> None:
    """``import trawl.http_client`` (every downloader's client) loads no platform, nor the settings that list them."""
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, trawl.http_client; print(*sorted(m for m in sys.modules if m.startswith('trawl')))"],
        capture_output=True, text=True, check=True, cwd=PACKAGE.parent).stdout.split()
    assert "trawl.http_client" in loaded
    assert [m for m in loaded if m.startswith("trawl.platforms") or m == "trawl.settings"] == []
