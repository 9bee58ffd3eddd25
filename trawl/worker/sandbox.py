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
"""

from __future__ import annotations

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
