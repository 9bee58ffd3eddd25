"""A careless change to MediaItemWorkflow (a timer before fetch, no workflow.patched guard), kept in
a module of its own because the workflow sandbox re-imports the module that defines a workflow."""

from datetime import timedelta

from temporalio import workflow

from trawl.workflows.media_item import ItemInput, ItemResult, MediaItemWorkflow


@workflow.defn(name="MediaItemWorkflow")
class TimerBeforeFetch(MediaItemWorkflow):
    @workflow.run
    async def run(self, inp: ItemInput) -> ItemResult:
        await workflow.sleep(timedelta(seconds=1))
        return await super().run(inp)
