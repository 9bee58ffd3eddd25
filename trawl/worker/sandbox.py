"""The workflow sandbox, without a call into it for every payload of every workflow task.

Before a workflow task's payloads are decoded and its commands' payloads encoded, the SDK asks
the workflow instance for each payload's serialization context and external store context (the
command it belongs to: an activity's type and queue, a child workflow's id), so that a payload
codec or an external store can use them. In the sandbox each such question is an ``exec`` of
source text inside it (compiled again every time), three passes over an activation and three
over its completion: a tenth of a worker's Python time on tiny items (py-spy, 2026-12-06).

Those passes hand payloads only to a codec and an external store (the payload and failure
converters run inside the workflow, with contexts of their own), and trawl's data converter has
neither: every answer is thrown away. :func:`workflow_runner` answers without asking
the sandbox when that holds, and is the SDK's own sandboxed runner otherwise (a codec or store
added later gets its contexts as before). What runs in the sandbox, and so each workflow's
commands and its determinism checks, is unchanged.

The sandbox also imports each workflow's module again for every run it starts (its global state is
the run's own), with the packages above it: by default from disk, so a checkout edited or a
version installed over running workers changed the code of their next runs but not the modules
passed through, which stayed as the process loaded them (a crawl's new runs called a method its
loaded ``trawl.workflows.progress`` lacked, and stopped; docs/upgrading.md). :class:`LoadedCode`
hands the sandbox's imports the code of those modules as the worker process loaded them
instead: the code is read once, right after the process imported the modules, and a worker
refuses to start when a function of it differs from what was imported (the file changed in
between). A worker then runs one version of its workflow code for its whole life, and a run's
start reads no file (no path search, no ``.pyc`` decoded: 1.78-2.13 ms a MediaItemWorkflow run's start before,
1.30-1.67 ms after, in process, 2026-12-06). Each run still executes its module afresh in the
sandbox, with every restriction; imports outside the sandbox are left to the usual finders.
"""

from __future__ import annotations

import importlib.abc
import inspect
import importlib.machinery
import sys
import types
from collections.abc import Iterable
from typing import Any

from temporalio import workflow
from temporalio.bridge.proto.workflow_activation import WorkflowActivation
from temporalio.bridge.proto.workflow_completion import WorkflowActivationCompletion
from temporalio.converter import DataConverter, SerializationContext, StorageDriverStoreContext
from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner


def context_free(converter: DataConverter) -> bool:
    """Whether the SDK's passes over a workflow task's payloads have nothing that uses a context:
    they hand payloads only to a codec and an external store (the payload and failure converters
    run inside the workflow, with contexts of their own), and ``converter`` has neither."""
    return converter.payload_codec is None and converter.external_storage is None


def workflow_runner(converter: DataConverter) -> WorkflowRunner:
    """The sandboxed runner for workers whose client encodes with ``converter``."""
    return ContextFreeSandboxRunner() if context_free(converter) else SandboxedWorkflowRunner()


class ContextFreeSandboxRunner(SandboxedWorkflowRunner):
    """The SDK's sandboxed runner whose instances answer the converter's context questions
    themselves: no context, for a converter that would not use one (see :func:`context_free`)."""

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        return _ContextFreeInstance(super().create_instance(det))


class _ContextFreeInstance(WorkflowInstance):
    """A sandboxed instance; everything but the two context questions is its own."""

    def __init__(self, sandboxed: WorkflowInstance) -> None:
        self._sandboxed = sandboxed

    def activate(self, act: WorkflowActivation) -> WorkflowActivationCompletion:
        return self._sandboxed.activate(act)

    def get_serialization_context(self, command_info: Any) -> SerializationContext | None:
        return None

    def get_external_store_context(self, command_info: Any) -> StorageDriverStoreContext:
        return StorageDriverStoreContext(target=None)

    def get_info(self) -> workflow.Info:
        return self._sandboxed.get_info()

    def get_thread_id(self) -> int | None:  # the deadlock report reads the stuck thread's frames
        return self._sandboxed.get_thread_id()


AGAIN = "start the worker (or the command) again"


class CodeChanged(Exception):
    """A workflow module's file no longer holds the code the process imported from it."""


class LoadedCode(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The workflow sandbox's imports of the given modules (and of the packages above them) from
    their code as this process loaded it, never from disk again (see the module's docstring).
    Only imports in the sandbox find it: elsewhere (a reload, a test) the usual finders answer."""

    def __init__(self, modules: Iterable[str] = ()) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec] = {}
        self._code: dict[str, types.CodeType] = {}
        self.add(modules)

    def add(self, modules: Iterable[str]) -> None:
        """Keep the code of ``modules`` and of the packages above them: read from their files
        now, so called right after they were imported, and compared with what was imported.

        Raises:
            CodeChanged: a module's file changed since the process imported it.
        """
        for name in modules:
            parts = name.split(".")
            for depth in range(1, len(parts) + 1):
                self._keep(".".join(parts[:depth]))

    def _keep(self, name: str) -> None:
        if name in self._code:
            return
        module = sys.modules.get(name)  # loaded by this process: the version it runs
        spec = getattr(module, "__spec__", None)
        loader = getattr(spec, "loader", None)
        try:
            code = loader.get_code(name) if isinstance(loader, importlib.abc.InspectLoader) else None
        except ImportError:  # __main__: its loader knows it by its file's name
            code = None
        except (OSError, SyntaxError, ValueError) as exc:  # a file gone, or being written over
            raise CodeChanged(f"{spec.origin}: {exc}; {AGAIN}") from None
        if spec is None or code is None:
            return  # a module without code to keep (__main__, a test's rewritten module) loads as before
        if not _defines_what_was_loaded(code, module):
            raise CodeChanged(f"{spec.origin} changed since this process imported it; {AGAIN}")
        self._code[name] = code  # before its spec: a sandbox that finds the spec finds the code
        self._specs[name] = spec

    def names(self) -> frozenset[str]:
        return frozenset(self._code)

    def install(self) -> LoadedCode:
        """On the import path of this process, first; idempotent."""
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)
        return self

    def remove(self) -> None:
        # A new list, not an edit of the one an import in another thread may be walking.
        sys.meta_path = [finder for finder in sys.meta_path if finder is not self]

    def find_spec(self, fullname: str, path: Any = None, target: types.ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        loaded = self._specs.get(fullname)
        if loaded is None or not workflow.unsafe.in_sandbox():
            return None
        spec = importlib.machinery.ModuleSpec(fullname, self, origin=loaded.origin,
                                              is_package=loaded.submodule_search_locations is not None)
        if loaded.submodule_search_locations is not None:
            spec.submodule_search_locations = list(loaded.submodule_search_locations)
        spec.has_location = loaded.has_location  # __file__ as before: tracebacks name the file
        spec.cached = loaded.cached
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        exec(self._code[module.__name__], module.__dict__)  # noqa: S102 - this process's own code


def _defines_what_was_loaded(code: types.CodeType, module: types.ModuleType) -> bool:
    """Whether every function and method ``module`` defines (as imported, compiled from its file:
    its methods, class and static methods, properties) has its code among ``code``'s: code objects
    compare by their bytecode, constants, names and line numbers, so a body edited or moved in the
    file since shows as missing. Not seen: a change to module constants, class attributes or
    decorator arguments alone (the file is read milliseconds after its import)."""
    nested: set[types.CodeType] = set()
    pending = [code]
    while pending:
        current = pending.pop()
        nested.add(current)
        pending.extend(const for const in current.co_consts if isinstance(const, types.CodeType))
    members: list[Any] = []
    for value in vars(module).values():
        members.append(value)
        if isinstance(value, type) and value.__module__ == module.__name__:
            for member in vars(value).values():
                members.append(getattr(member, "__func__", member))  # classmethod, staticmethod
                members.extend(getattr(member, part, None) for part in ("fget", "fset", "fdel", "func"))  # property
    functions = [inspect.unwrap(member) for member in members if callable(member)]
    compiled = [function.__code__ for function in functions if isinstance(function, types.FunctionType)]
    # Others' functions (imported names) and generated ones (a dataclass's __init__) come from
    # other files; only this file's must be the kept code's.
    return all(function in nested for function in compiled if function.co_filename == code.co_filename)


_process_code = LoadedCode()


def keep_loaded_code(workflows: Iterable[type]) -> LoadedCode:
    """This process's :class:`LoadedCode`, installed, holding the modules of ``workflows`` (a
    module it holds already keeps the code it was given first).

    Raises:
        CodeChanged: a module's file changed since the process imported it.
    """
    _process_code.add(workflow.__module__ for workflow in workflows)
    return _process_code.install()
