"""Temporal's converter reads a dataclass's type hints once per class in a worker (trawl.worker.type_hints),
and payloads still decode whole, in the workflow sandbox too."""

from __future__ import annotations

import dataclasses
import typing
import uuid

import pytest
from temporalio.client import Client
from temporalio.converter import DataConverter
from temporalio.worker import Worker

from tests.worker.echo_workflow import Echoes
from trawl.contracts import ItemResult, StoredAsset
from trawl.worker import type_hints


def item_result() -> ItemResult:
    return ItemResult("w", "http://127.0.0.1:9/a", "committed", "k",
                      assets=[StoredAsset("video", "video", "ab" * 32, 3, mime="video/mp4")])


def test_the_converter_reads_a_class_s_hints_once(monkeypatch: pytest.MonkeyPatch) -> None:
    assert type_hints.install() and type_hints.install()  # twice: still one cache
    type_hints._hints.cache_clear()
    calls: list[object] = []
    real = typing.get_type_hints

    def counted(obj: object, *args: object, **kwargs: object) -> dict[str, object]:
        calls.append(obj)
        return real(obj, *args, **kwargs)

    monkeypatch.setattr(typing, "get_type_hints", counted)
    converter = DataConverter.default.payload_converter
    value = item_result()
    payloads = converter.to_payloads([value])
    for _ in range(50):
        [decoded] = converter.from_payloads(payloads, [ItemResult])
        assert decoded == value and dataclasses.is_dataclass(decoded.assets[0])
    assert sorted(c.__name__ for c in calls) == ["ItemResult", "StoredAsset"]  # once each, not 50 times


async def test_payloads_decode_whole_in_the_sandbox_with_the_cache(temporal_client: Client) -> None:
    assert type_hints.install()
    queue = f"hints-{uuid.uuid4().hex[:8]}"
    async with Worker(temporal_client, task_queue=queue, workflows=[Echoes]):
        sent = item_result()
        got = await temporal_client.execute_workflow(Echoes.run, sent, id=f"echo-{queue}", task_queue=queue,
                                                     result_type=ItemResult)
    assert got == sent
