"""A workflow that returns its input, for payload tests in the sandbox (a module of its own: the
sandbox validates the whole module a workflow lives in)."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from trawl.contracts import ItemResult


@workflow.defn
class Echoes:
    @workflow.run
    async def run(self, result: ItemResult) -> ItemResult:
        return result
