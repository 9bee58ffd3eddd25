"""The workflow sandbox without a call into it per payload (trawl.worker.sandbox): the same
results, far fewer calls into the sandbox, its refusals kept; the SDK's runner when a codec is set."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import sys
import types
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.converter import PayloadCodec
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner
from temporalio.worker.workflow_sandbox import _runner as sandbox_runner

from tests.worker.relay_workflow import Gambles, Relays, stamp
from trawl.contracts import ItemResult, StoredAsset
from trawl.worker.interceptors import DATA_CONVERTER
from trawl.worker.sandbox import (CodeChanged, ContextFreeSandboxRunner, LoadedCode, context_free, keep_loaded_code,
                                  workflow_runner)


class Reverses(PayloadCodec):
    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [Payload(metadata=p.metadata, data=p.data[::-1]) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return await self.encode(payloads)


def test_trawl_s_converter_needs_no_context_and_one_with_a_codec_does() -> None:
    assert context_free(DATA_CONVERTER)
    assert type(workflow_runner(DATA_CONVERTER)) is ContextFreeSandboxRunner
    with_codec = dataclasses.replace(DATA_CONVERTER, payload_codec=Reverses())
    assert not context_free(with_codec)
    assert type(workflow_runner(with_codec)) is SandboxedWorkflowRunner


async def run_relay(client: Client, runner: SandboxedWorkflowRunner, monkeypatch: pytest.MonkeyPatch
                    ) -> tuple[ItemResult, list[str]]:
    """Relays run on ``runner``; its answer and the code each call into the sandbox ran."""
    ran: list[str] = []
    real = sandbox_runner._Instance._run_code

    def counted(self: object, code: str, **extra: object) -> None:
        ran.append(code)
        real(self, code, **extra)

    monkeypatch.setattr(sandbox_runner._Instance, "_run_code", counted)
    queue = f"relay-{uuid.uuid4().hex[:8]}"
    sent = ItemResult("w", "http://127.0.0.1:9/a", "committed", "k",
                      assets=[StoredAsset("video", "video", "ab" * 32, 3, mime="video/mp4")])
    async with Worker(client, task_queue=queue, workflows=[Relays], activities=[stamp], workflow_runner=runner):
        got = await client.execute_workflow(Relays.run, sent, id=f"relay-{queue}", task_queue=queue,
                                            result_type=ItemResult)
    monkeypatch.undo()
    assert got == dataclasses.replace(sent, error="seen by stamp")
    return got, ran


async def test_a_workflow_runs_the_same_without_the_per_payload_calls(
        temporal_client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    client = Client(**{**temporal_client.config(), "data_converter": DATA_CONVERTER})
    before, sdk_calls = await run_relay(client, SandboxedWorkflowRunner(), monkeypatch)
    after, own_calls = await run_relay(client, workflow_runner(DATA_CONVERTER), monkeypatch)
    assert before == after
    asked = [code for code in sdk_calls if "_context(" in code]
    assert asked  # the SDK's runner asks the sandbox for contexts ...
    assert not [code for code in own_calls if "_context(" in code]  # ... this one never does
    assert len(own_calls) == len(sdk_calls) - len(asked)  # and runs everything else as before


async def test_the_sandbox_still_refuses_what_is_not_deterministic(temporal_client: Client) -> None:
    client = Client(**{**temporal_client.config(), "data_converter": DATA_CONVERTER})
    queue = f"gamble-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=queue, workflows=[Gambles], workflow_runner=workflow_runner(DATA_CONVERTER)):
        handle = await client.start_workflow(Gambles.run, id=f"gamble-{queue}", task_queue=queue)
        try:
            failure = None
            for _ in range(200):
                async for event in handle.fetch_history_events():
                    if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                        failure = event.workflow_task_failed_event_attributes.failure.message
                if failure:
                    break
                await asyncio.sleep(0.05)
        finally:
            await handle.terminate()
    assert failure and "random" in failure.lower(), failure


def test_the_instance_answers_every_question_the_sdk_asks_an_instance() -> None:
    """A method the SDK's instance interface gains later (one with a default, not abstract) would
    otherwise answer for the sandboxed instance without asking it."""
    from temporalio.worker import WorkflowInstance

    from trawl.worker.sandbox import _ContextFreeInstance

    asked = {name for name in vars(WorkflowInstance) if not name.startswith("_")}
    assert asked == {"activate", "get_serialization_context", "get_external_store_context", "get_info",
                     "get_thread_id"}
    assert asked <= set(vars(_ContextFreeInstance))


ANSWERS = '''
from temporalio import workflow


@workflow.defn(name="Answers")
class Answers:
    @workflow.run
    async def run(self) -> str:
        return {answer!r}

    @property
    def said(self) -> str:
        return {said!r}
'''


def answers_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, types.ModuleType]:
    """A package of its own holding the Answers workflow, imported (from source: no .pyc is
    written, so a file rewritten within the same second is never taken for the old one)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    package = f"kept_{uuid.uuid4().hex[:8]}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    module = tmp_path / package / "answers.py"
    module.write_text(ANSWERS.format(answer="as loaded", said=""))
    monkeypatch.syspath_prepend(str(tmp_path))
    return module, importlib.import_module(f"{package}.answers")


async def test_a_worker_runs_the_workflow_code_it_loaded_whatever_is_on_disk(
        temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A workflow module replaced on disk under a running worker (an upgrade installed over it, a
    checkout edited) does not change its next runs while the code it loaded is kept; without it the
    sandbox imports the new file for each new run, beside the modules it passes through as loaded."""
    module, answers = answers_module(tmp_path, monkeypatch)
    kept = LoadedCode([answers.__name__]).install()
    assert kept.names() == {answers.__package__, answers.__name__}
    client = Client(**{**temporal_client.config(), "data_converter": DATA_CONVERTER})
    queue = f"answers-{uuid.uuid4().hex[:8]}"
    try:
        module.write_text(ANSWERS.format(answer="replaced on disk", said=""))
        async with Worker(client, task_queue=queue, workflows=[answers.Answers],
                          workflow_runner=workflow_runner(DATA_CONVERTER)):
            async def answer(run: int) -> str:
                return await client.execute_workflow("Answers", id=f"{queue}-{run}", task_queue=queue,
                                                     result_type=str)

            assert [await answer(1), await answer(2)] == ["as loaded", "as loaded"]
            # Outside the sandbox the usual finders answer: a reload reads the file.
            assert importlib.reload(answers).__loader__ is not kept
            kept.remove()
            assert await answer(3) == "replaced on disk"  # what keeping the code prevents
    finally:
        kept.remove()
    assert kept not in sys.meta_path


def test_a_file_changed_since_its_import_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The code is read from the file after the import: a body changed in between would be a
    version the process never imported, beside modules it did."""
    module, answers = answers_module(tmp_path, monkeypatch)
    module.write_text(ANSWERS.format(answer="written after the import", said=""))
    with pytest.raises(CodeChanged, match=r"answers\.py changed since this process imported it"):
        LoadedCode([answers.__name__])
    module.write_text(ANSWERS.format(answer="as loaded", said="a property's body changed"))
    with pytest.raises(CodeChanged):
        LoadedCode([answers.__name__])
    module.write_text(ANSWERS.format(answer="as loaded", said=""))  # the same code again: kept
    assert answers.__name__ in LoadedCode([answers.__name__]).names()
    module.write_text("def broken(:\n")
    with pytest.raises(CodeChanged, match=r"start the worker \(or the command\) again"):
        LoadedCode([answers.__name__])
    module.unlink()
    with pytest.raises(CodeChanged, match="No such file"):  # a file gone: its runs would fail on it
        LoadedCode([answers.__name__])


def test_the_process_keeps_the_code_of_trawl_s_workflows() -> None:
    from trawl.workflows.crawl import CrawlWorkflow
    from trawl.workflows.media_item import MediaItemWorkflow

    importlib.import_module("trawl.worker.main")  # which keeps them as it imports them
    kept = keep_loaded_code([MediaItemWorkflow, CrawlWorkflow])
    assert {"trawl", "trawl.workflows", "trawl.workflows.media_item", "trawl.workflows.crawl",
            "trawl.workflows.extras"} <= kept.names()
    assert sys.meta_path.count(kept) == 1
    assert "__main__" not in LoadedCode(["__main__"]).names()  # no code to keep: skipped, not refused


def test_a_worker_whose_files_changed_says_so_in_one_line_and_may_be_started_again() -> None:
    from trawl.cli import _mistake

    line, code = _mistake(CodeChanged("trawl/workflows/crawl.py changed since this process imported it; start the "
                                      "worker again"), None)
    assert line.startswith("trawl/workflows/crawl.py changed") and "\n" not in line
    assert code == 1  # not 2: the supervisor gives up on a worker whose settings cannot work, not on this one
