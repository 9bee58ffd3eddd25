"""Version N+1 of MediaItemWorkflow for the upgrade test: a real change, made the way the versioning
policy says (behind workflow.patched). Its own module: the sandbox re-imports a workflow's module."""

from temporalio import workflow

from trawl.workflows.media_item import ItemInput, ItemResult, MediaItemWorkflow

UPGRADE_PATCH = "upgrade-test-finished-by"


@workflow.defn(name="MediaItemWorkflow")
class UpgradedMediaItemWorkflow(MediaItemWorkflow):
    @workflow.run
    async def run(self, inp: ItemInput) -> ItemResult:
        result = await super().run(inp)
        if workflow.patched(UPGRADE_PATCH):
            workflow.upsert_memo({"finished_by": "N+1"})
        return result
